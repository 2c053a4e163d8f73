import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DEFAULT_PORT, defaultDataDir } from '../server/config.js';
import type { HostSettings } from '../server/protocol/host-bridge.js';
import { writeFileAtomic } from '../server/store/durable-file.js';
import { IpcArgumentError, parseSettingsPatch } from './ipc-validation.js';

export const HOST_SETTINGS_FILE_NAME = 'host-settings.json';

export function defaultHostSettings(): HostSettings {
  return { host: '127.0.0.1', port: DEFAULT_PORT, dataDir: defaultDataDir() };
}

export interface HostSettingsFile {
  readonly path: string;
  /** The saved settings over the defaults; a missing or broken file gives the defaults (and a reason). */
  load(): Promise<{ settings: HostSettings; problem: string | null }>;
  save(settings: HostSettings): Promise<void>;
}

/** The desktop host's own settings (address, port, data folder), kept apart from the data folder they name. */
export function createHostSettingsFile(
  path: string,
  defaults: HostSettings = defaultHostSettings(),
): HostSettingsFile {
  return {
    path,
    async load() {
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT')
          return { settings: { ...defaults }, problem: null };
        return { settings: { ...defaults }, problem: `cannot read ${path}: ${(error as Error).message}` };
      }
      // A hand-edited or torn file must not keep the app from opening: fall back to defaults, say why, and leave
      // the file alone until the user saves new settings.
      try {
        const patch = parseSettingsPatch(knownFields(JSON.parse(text)));
        return { settings: { ...defaults, ...patch }, problem: null };
      } catch (error) {
        const reason =
          error instanceof IpcArgumentError || error instanceof SyntaxError ? error.message : String(error);
        return { settings: { ...defaults }, problem: `ignored ${path} (${reason}); using the defaults` };
      }
    },
    async save(settings) {
      const clean = { ...defaults, ...parseSettingsPatch(settings) };
      await mkdir(dirname(path), { recursive: true });
      await writeFileAtomic(path, JSON.stringify(clean, null, 2) + '\n', true);
    },
  };
}

// Fields a later version may add are not a reason to drop the ones this version understands.
function knownFields(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const { host, port, dataDir } = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries({ host, port, dataDir }).filter(([, field]) => field !== undefined),
  );
}
