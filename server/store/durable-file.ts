import { open, readFile, rename, unlink } from 'node:fs/promises';
import { closeSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';

/**
 * Writes `text` to `path` so that a reader sees either the old or the new content, never a mix: write a
 * temporary file beside it, fsync it, then rename it over the target (steno's idea, plus the fsync that makes an
 * acknowledged write survive a power cut, not only a killed process).
 */
export async function writeFileAtomic(
  path: string,
  text: string,
  fsync: boolean,
  syncFolder = fsync,
): Promise<void> {
  const temp = `${path}.tmp`;
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    if (fsync) await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
  // The rename itself lives in the folder: sync it too, or a power cut can undo an acknowledged write. (A caller
  // writing many files of one folder passes syncFolder false and syncs the folder once after them.)
  if (syncFolder) await syncDir(dirname(path));
}

/**
 * Folder syncs are shared: up to MAX_DIR_SYNCS run at once per folder (the file system batches concurrent syncs
 * into one journal commit); past that, writes wait for one more sync that starts after a running one ends (so
 * after their rename). A burst of writes then costs a few folder syncs, neither one each nor one at a time.
 */
const MAX_DIR_SYNCS = 4;
interface DirSyncs {
  running: number;
  /** The one extra sync later writers share, started when a running one ends. */
  queued: Promise<void> | null;
  wake: (() => void) | null;
}
const dirSyncs = new Map<string, DirSyncs>();

export function syncDir(dir: string): Promise<void> {
  let state = dirSyncs.get(dir);
  if (!state) dirSyncs.set(dir, (state = { running: 0, queued: null, wake: null }));
  const entry = state;
  const run = (): Promise<void> => {
    entry.running++;
    return syncDirNow(dir).finally(() => {
      entry.running--;
      const wake = entry.wake;
      entry.wake = null;
      if (wake) wake();
      else if (entry.running === 0 && entry.queued === null) dirSyncs.delete(dir);
    });
  };
  if (entry.running < MAX_DIR_SYNCS && entry.queued === null) return run();
  entry.queued ??= new Promise<void>((resolve) => {
    entry.wake = resolve;
  }).then(() => {
    entry.queued = null;
    return run();
  });
  return entry.queued;
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

/** One buffer reused by every synchronous read (startup reads thousands of small files one after another). */
let readBuffer = Buffer.allocUnsafe(64 * 1024);

/**
 * A file's text: open, read into the shared buffer (grown when needed), close; three system calls for a small
 * file (no stat, no read to see the end), no buffer per file.
 */
function readTextSync(path: string): string {
  const fd = openSync(path, 'r');
  try {
    let length = 0;
    for (;;) {
      if (length === readBuffer.length) {
        const bigger = Buffer.allocUnsafe(readBuffer.length * 2);
        readBuffer.copy(bigger, 0, 0, length);
        readBuffer = bigger;
      }
      const room = readBuffer.length - length;
      const read = readSync(fd, readBuffer, length, room, null);
      length += read;
      // A regular file gives less than asked only at its end: no extra read to see 0.
      if (read < room) break;
    }
    return readBuffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}

export function readJsonFileSync<T>(path: string): T | null {
  let text: string;
  try {
    text = readTextSync(path);
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
    // The previous write's failure went to its own caller; this write starts after it either way.
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
    // Only waits for the write in flight to settle; its failure went to its own caller.
    await this.#inFlight.catch(() => undefined);
    await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
