import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../shared/atomic-file.js';

export const PREFERENCES_FILE_NAME = 'preferences.json';

/** The desktop shell's own choices (tray menu), apart from the host settings. */
export interface DesktopPreferences {
  /** Start at login, window hidden, host running. */
  startWithComputer: boolean;
  notifyInviteRequests: boolean;
  notifyFriendRequests: boolean;
  /** The first close to the tray was explained in a notification. */
  closeToTrayExplained: boolean;
}

export const DEFAULT_PREFERENCES: DesktopPreferences = {
  startWithComputer: false,
  notifyInviteRequests: true,
  notifyFriendRequests: true,
  closeToTrayExplained: false,
};

/** Known boolean fields of `value` over the defaults; anything else (a torn file, a later version's keys) is ignored. */
export function parsePreferences(value: unknown): DesktopPreferences {
  const out = { ...DEFAULT_PREFERENCES };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return out;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(DEFAULT_PREFERENCES) as (keyof DesktopPreferences)[]) {
    const field = record[key];
    if (typeof field === 'boolean') out[key] = field;
  }
  return out;
}

export interface PreferencesFile {
  readonly path: string;
  load(): Promise<DesktopPreferences>;
  save(preferences: DesktopPreferences): Promise<void>;
}

export function createPreferencesFile(path: string): PreferencesFile {
  return {
    path,
    async load() {
      try {
        return parsePreferences(JSON.parse(await readFile(path, 'utf8')));
      } catch {
        // Missing or unreadable: the defaults; the next change writes a good file.
        return { ...DEFAULT_PREFERENCES };
      }
    },
    async save(preferences) {
      await mkdir(dirname(path), { recursive: true });
      await writeFileAtomic(path, JSON.stringify(parsePreferences(preferences), null, 2) + '\n', true);
    },
  };
}

/** The preferences in use, saved as they change. */
export interface Preferences {
  get(): DesktopPreferences;
  /** Applies `patch` at once and saves it; saves run one after another, so the last change is the one on disk. */
  set(patch: Partial<DesktopPreferences>): void;
  /** Resolves once every save asked for so far is done (quitting waits for it). */
  saved(): Promise<void>;
}

/** Loads the file's preferences; a save that fails is reported to `saveFailed` (the next change tries again). */
export async function openPreferences(
  file: PreferencesFile,
  saveFailed: (error: unknown) => void,
): Promise<Preferences> {
  let preferences = await file.load();
  let saving: Promise<void> = Promise.resolve();
  return {
    get: () => preferences,
    set(patch) {
      preferences = { ...preferences, ...patch };
      const snapshot = preferences;
      saving = saving.then(() => file.save(snapshot)).catch(saveFailed);
    },
    saved: () => saving,
  };
}
