import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DEFAULT_PORT, defaultDataDir } from '../shared/host-defaults.js';
import type { HostSettings } from '../server/protocol/host-bridge.js';
import { writeFileAtomic } from '../shared/atomic-file.js';
import { z } from 'zod';
import {
  IpcArgumentError,
  parseDataDir,
  parseHost,
  parsePort,
  parseSettingsPatch,
} from './ipc-validation.js';

export const HOST_SETTINGS_FILE_NAME = 'host-settings.json';

export function defaultHostSettings(): HostSettings {
  return { host: '127.0.0.1', port: DEFAULT_PORT, dataDir: defaultDataDir() };
}

/** The settings file cannot be used as it is (unreadable, not JSON, an unknown key, a wrong value): says which. */
export class HostSettingsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HostSettingsFileError';
  }
}

/** One field of the file, checked as the settings screen's are (ipc-validation.ts), its words kept. */
function field<T>(parse: (value: unknown) => T) {
  return z.unknown().transform((value, ctx) => {
    try {
      return parse(value);
    } catch (error) {
      if (!(error instanceof IpcArgumentError)) throw error;
      ctx.addIssue({ code: 'custom', message: error.message });
      return z.NEVER;
    }
  });
}

/** The file: any of the three settings, nothing else (checked with zod, as --config is in server/config.ts). */
const SettingsFileSchema = z
  .strictObject({ host: field(parseHost), port: field(parsePort), dataDir: field(parseDataDir) })
  .partial();

/** The file's settings, or a HostSettingsFileError naming the file and each unknown key or wrong value. */
export function parseHostSettingsFile(text: string, path: string): Partial<HostSettings> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new HostSettingsFileError(`${path}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = SettingsFileSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => `unknown key "${key}"`);
    // "port must be ..." from the field's check reads "port": must be ...
    const what = issue.message.replace(/^Invalid input: /, '').replace(new RegExp(`^${at} `), '');
    return [at.length > 0 ? `"${at}": ${what}` : `must be a JSON object (${what})`];
  });
  throw new HostSettingsFileError(`${path}: ${problems.join('; ')}`);
}

export interface HostSettingsFile {
  readonly path: string;
  /**
   * The saved settings over the defaults; a missing file gives the defaults. A file that cannot be used gives the
   * defaults too, with the problem (naming the file and the key): the host must not start on settings the user
   * did not choose, and saving settings replaces the file.
   */
  load(): Promise<{ settings: HostSettings; problem: HostSettingsFileError | null }>;
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
        const problem = new HostSettingsFileError(`cannot read ${path}: ${(error as Error).message}`);
        return { settings: { ...defaults }, problem };
      }
      // The file is left alone until the user saves new settings (or fixes it by hand).
      try {
        return { settings: { ...defaults, ...parseHostSettingsFile(text, path) }, problem: null };
      } catch (error) {
        if (!(error instanceof HostSettingsFileError)) throw error;
        return { settings: { ...defaults }, problem: error };
      }
    },
    async save(settings) {
      const clean = { ...defaults, ...parseSettingsPatch(settings) };
      await mkdir(dirname(path), { recursive: true });
      await writeFileAtomic(path, JSON.stringify(clean, null, 2) + '\n', true);
    },
  };
}
