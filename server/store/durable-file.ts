import { readFile, unlink } from 'node:fs/promises';
import { closeSync, openSync, readSync } from 'node:fs';
import type { Adapter } from 'lowdb';
import { syncDir, writeFileAtomic } from '../../shared/atomic-file.js';

// The atomic write and the shared folder sync live in shared/ (the desktop shell writes its settings with them too).
export { syncDir, writeFileAtomic };

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
