import { open, readFile, rename, unlink } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';

/**
 * Writes `text` to `path` so that a reader sees either the old or the new content, never a mix: write a
 * temporary file beside it, fsync it, then rename it over the target (steno's idea, plus the fsync that makes an
 * acknowledged write survive a power cut, not only a killed process).
 */
export async function writeFileAtomic(path: string, text: string, fsync: boolean): Promise<void> {
  const temp = `${path}.tmp`;
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    if (fsync) await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
  // The rename itself lives in the folder: sync it too, or a power cut can undo an acknowledged write.
  if (fsync) await syncDir(dirname(path));
}

/**
 * Folder syncs are shared: writes landing in one folder while a sync is queued all wait for that one sync (which
 * starts after their renames), so a burst of writes costs a handful of folder syncs, not one each.
 */
const dirSyncs = new Map<string, { running: Promise<void>; queued: Promise<void> | null }>();

function syncDir(dir: string): Promise<void> {
  const state = dirSyncs.get(dir);
  if (state?.queued) return state.queued;
  const start = (): Promise<void> => {
    const running = syncDirNow(dir);
    const entry = dirSyncs.get(dir);
    if (entry) {
      entry.running = running;
      entry.queued = null;
    } else {
      dirSyncs.set(dir, { running, queued: null });
    }
    void running.finally(() => {
      const current = dirSyncs.get(dir);
      if (current && current.running === running && current.queued === null) dirSyncs.delete(dir);
    });
    return running;
  };
  if (!state) return start();
  const queued = state.running.then(start, start);
  state.queued = queued;
  return queued;
}

async function syncDirNow(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse to sync a folder; the file itself was synced.
  } finally {
    await handle.close();
  }
}

/** Thrown when a data file exists but cannot be read as JSON. Startup stops; the file is left as it is. */
export class CorruptDataFileError extends Error {
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(
      `Data file ${path} is corrupt or unreadable (${cause instanceof Error ? cause.message : String(cause)}). ` +
        'It was left untouched: restore it from a backup or move it away, then start again.',
    );
    this.name = 'CorruptDataFileError';
  }
}

export async function readJsonFile<T>(path: string): Promise<T | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CorruptDataFileError(path, error);
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new CorruptDataFileError(path, error);
  }
}

export function readJsonFileSync<T>(path: string): T | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CorruptDataFileError(path, error);
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new CorruptDataFileError(path, error);
  }
}

/**
 * A lowdb adapter over one JSON file with atomic, fsynced writes. Writes to the same file are serialised; while
 * one is in flight, later calls share one follow-up write of the newest data, so every caller resolves only once
 * data at least as new as its own is on disk.
 */
export class DurableJSONFile<T> implements Adapter<T> {
  #inFlight: Promise<void> = Promise.resolve();
  #queued: { data: T; promise: Promise<void> } | null = null;

  constructor(
    readonly path: string,
    private readonly fsync = true,
  ) {}

  read(): Promise<T | null> {
    return readJsonFile<T>(this.path);
  }

  write(data: T): Promise<void> {
    if (this.#queued) {
      this.#queued.data = data;
      return this.#queued.promise;
    }
    const queued: { data: T; promise: Promise<void> } = { data, promise: Promise.resolve() };
    queued.promise = this.#inFlight
      .catch(() => undefined)
      .then(() => {
        this.#queued = null;
        const writing = writeFileAtomic(this.path, JSON.stringify(queued.data), this.fsync);
        this.#inFlight = writing;
        return writing;
      });
    this.#queued = queued;
    return queued.promise;
  }

  async remove(): Promise<void> {
    await this.#inFlight.catch(() => undefined);
    await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
