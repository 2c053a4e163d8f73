import { mkdir, open, readdir, readFile } from 'node:fs/promises';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { CorruptDataFileError, syncDir } from './durable-file.js';
import { StorageWriteError } from '../errors.js';

export { StorageWriteError } from '../errors.js';

/** One record version or log entry as a log line carries it. */
export type WalEntry =
  /** A record version: collection, id, and the record file's content. */
  | { c: string; i: string; r: { seq: number; data: unknown } }
  /** An entry of a store log (the moderation log), with the store sequence number of its commit. */
  | { l: string; s: number; e: unknown };

/** What the log needs of an open file; tests pass one that injects short writes, ENOSPC and EIO. */
export interface LogFileHandle {
  write(buffer: Uint8Array, offset: number, length: number): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

export interface LogFileSystem {
  /** Opens `path` for appending, creating it. */
  openAppend(path: string): Promise<LogFileHandle>;
}

export const realLogFileSystem: LogFileSystem = { openAppend: (path) => open(path, 'a') };

interface Batch {
  lines: string[];
  onDurable: Array<() => void>;
  onFailed: Array<() => void>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const SEGMENT = /^(\d{1,15})\.log$/;
const FRAMED = /^([0-9a-f]{8}) /;

/** A line as written: the CRC-32 of its JSON (8 hex digits), a space, the JSON. */
export function frameLine(json: string): string {
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}`;
}

/** Checks one entry of line `line` (from 1) of segment `path` at start; throws to refuse it. */
export type WalEntryCheck = (entry: WalEntry, path: string, line: number) => void;

/** The segments found at start, read and checked, before anything is written. */
export interface WalContents {
  lines: WalEntry[][];
  /** Paths of the segments read (all to be replayed, then retired by the first checkpoint). */
  segments: string[];
  /** The number for the segment this run writes. */
  next: number;
  /** Segments whose last line was torn (a write cut off by a crash: never acknowledged), for the log. */
  torn: string[];
}

/**
 * The store's write-ahead log with group commit. A commit is one line (a JSON array of the record versions and
 * log entries it changes, so a multi-record change is all or nothing), framed with its CRC-32; every line that
 * arrives while a write is on its way joins the next one, and a whole batch costs one write and one fdatasync.
 * The log is cut into segments: a checkpoint starts a new segment, writes the record files, and only then deletes
 * the segments it covered.
 *
 * A failed or short write fails its batch and every batch queued behind it (their commits may have read its
 * versions); the segment is cut back to its last good byte at once, and again before the next write if that did
 * not work, so the log recovers by itself once space returns and a refused commit never comes back.
 */
export class WriteAheadLog {
  readonly #dir: string;
  readonly #fsync: boolean;
  readonly #fs: LogFileSystem;
  #handle: LogFileHandle;
  #segment: number;
  #entries = 0;
  /** Bytes of the current segment that hold acknowledged lines; anything past it is cut before a write. */
  #bytes = 0;
  #pending: Batch | null = null;
  /** Every write and rotation runs on this chain, one after another. */
  #tail: Promise<unknown> = Promise.resolve();
  /** Set after a failed write until the segment is cut back to #bytes. */
  #damaged: unknown = null;

  private constructor(
    dir: string,
    fsync: boolean,
    fs: LogFileSystem,
    handle: LogFileHandle,
    segment: number,
  ) {
    this.#dir = dir;
    this.#fsync = fsync;
    this.#fs = fs;
    this.#handle = handle;
    this.#segment = segment;
  }

  /**
   * Reads every segment left by the previous runs, oldest first, writing nothing. A torn last line in any
   * segment (a write cut off by a crash) is dropped; any other bad line, a failed checksum or a line that is not
   * a list of entries stops startup naming the segment. `check` validates each entry with the segment and line it
   * is on (throws to refuse it; a CorruptDataFileError it throws already names its file and goes through as is).
   */
  static async read(dir: string, check: WalEntryCheck): Promise<WalContents> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      names = [];
    }
    const numbers: number[] = [];
    for (const name of names) {
      const match = SEGMENT.exec(name);
      if (match) numbers.push(Number(match[1]));
    }
    numbers.sort((a, b) => a - b);
    const lines: WalEntry[][] = [];
    const segments: string[] = [];
    const torn: string[] = [];
    for (const number of numbers) {
      const path = join(dir, `${number}.log`);
      segments.push(path);
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        throw new CorruptDataFileError(path, error);
      }
      const parts = text.split('\n');
      // The part after the last newline is a write that never finished (or nothing): never acknowledged.
      const tail = parts.pop()!;
      if (tail.length > 0) torn.push(path);
      for (const [at, part] of parts.entries()) {
        if (part.length === 0) continue;
        try {
          lines.push(parseLine(part, check, path, at + 1));
        } catch (error) {
          if (error instanceof CorruptDataFileError) throw error;
          throw new CorruptDataFileError(path, new Error(`line ${at + 1}: ${(error as Error).message}`));
        }
      }
    }
    return { lines, segments, torn, next: (numbers.at(-1) ?? 0) + 1 };
  }

  /** Starts a new segment numbered `next` (from read); the folder is created if needed. */
  static async start(
    dir: string,
    next: number,
    options: { fsync: boolean; fs?: LogFileSystem },
  ): Promise<WriteAheadLog> {
    await mkdir(dir, { recursive: true });
    const fs = options.fs ?? realLogFileSystem;
    const handle = await fs.openAppend(join(dir, `${next}.log`));
    if (options.fsync) await syncDir(dir);
    return new WriteAheadLog(dir, options.fsync, fs, handle, next);
  }

  /** Lines and bytes in the current segment. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries, bytes: this.#bytes };
  }

  /**
   * Appends `line` (one JSON array, no newline) with the next batch; resolves once it is on disk, after
   * `onDurable` ran. If the batch fails, `onFailed` runs (for every commit of it and of the batches queued
   * behind it, before any later append) and the promise rejects with a StorageWriteError.
   */
  append(json: string, onDurable: () => void, onFailed: () => void): Promise<void> {
    let batch = this.#pending;
    if (!batch) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      batch = { lines: [], onDurable: [], onFailed: [], promise, resolve, reject };
      this.#pending = batch;
      // The batch's own promise carries a failure to every commit in it.
      this.#run(() => this.#write()).catch(() => undefined);
    }
    batch.lines.push(frameLine(json));
    batch.onDurable.push(onDurable);
    batch.onFailed.push(onFailed);
    return batch.promise;
  }

  async #write(): Promise<void> {
    // Everything appended until now (also while the previous write was on its way) goes in this one.
    const batch = this.#pending;
    this.#pending = null;
    if (!batch) return;
    try {
      if (this.#damaged) await this.#repair();
      const buffer = Buffer.from(`${batch.lines.join('\n')}\n`, 'utf8');
      await writeAll(this.#handle, buffer);
      if (this.#fsync) await this.#handle.datasync();
      this.#entries += batch.lines.length;
      this.#bytes += buffer.length;
    } catch (error) {
      this.#damaged ??= error;
      // Batches queued behind this one were validated against its versions: they fail with it, now, so no
      // commit made after this point can have read them.
      const queued = this.#pending;
      this.#pending = null;
      const failure = new StorageWriteError(error);
      for (const failed of queued ? [batch, queued] : [batch]) {
        for (const undo of failed.onFailed) undo();
        failed.reject(failure);
      }
      // Cut the torn bytes off now: a crash before the next write must not replay a refused commit.
      await this.#repair().catch(() => undefined);
      return;
    }
    for (const done of batch.onDurable) done();
    batch.resolve();
  }

  /** Cuts the segment back to its acknowledged bytes (after a failed write). */
  async #repair(): Promise<void> {
    await this.#handle.truncate(this.#bytes);
    if (this.#fsync) await this.#handle.datasync();
    this.#damaged = null;
  }

  /**
   * Starts a new segment once every earlier batch is written, runs `atCut` right there (nothing is being written
   * then) and returns its result with the paths of the segments before the cut. The new segment is opened before
   * the old one is closed, so a failure (a full disk) leaves the log writing where it was.
   */
  rotate<T>(atCut: () => T): Promise<{ value: T; closed: string[] }> {
    return this.#run(async () => {
      if (this.#entries === 0) return { value: atCut(), closed: [] };
      if (this.#damaged) await this.#repair();
      const next = this.#segment + 1;
      const handle = await this.#fs.openAppend(join(this.#dir, `${next}.log`));
      if (this.#fsync) await syncDir(this.#dir);
      const closed = [join(this.#dir, `${this.#segment}.log`)];
      const old = this.#handle;
      this.#handle = handle;
      this.#segment = next;
      this.#entries = 0;
      this.#bytes = 0;
      const value = atCut();
      // Every batch of the old segment finished (this runs in turn after them); closing its handle loses nothing.
      await old.close().catch(() => undefined);
      return { value, closed };
    });
  }

  /** Deletes segments a checkpoint has covered. */
  async drop(paths: string[]): Promise<void> {
    for (const path of paths) {
      await unlink(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    }
    if (paths.length > 0 && this.#fsync) await syncDir(this.#dir);
  }

  /** Waits for every batch, closes the current segment and deletes it when it holds nothing. */
  async close(deleteIfEmpty: boolean): Promise<void> {
    await this.#run(async () => {
      // Best effort at a stop: the failure that damaged the segment already refused its commit, and the handle must
      // still be released. If this repair fails too, the next start reads the segment as it is (a torn last line is
      // dropped there; bytes of a refused commit that reached the disk whole would be replayed).
      if (this.#damaged) await this.#repair().catch(() => undefined);
      await this.#handle.close();
      if (deleteIfEmpty && this.#entries === 0) {
        // An empty segment left behind holds nothing to replay; the next start removes it.
        await unlink(join(this.#dir, `${this.#segment}.log`)).catch(() => undefined);
      }
    });
  }

  #run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    // Only keeps the chain going: `result`, failure included, goes back to the caller.
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/** Writes all of `buffer`, continuing after short writes; a write that makes no progress is an error. */
export async function writeAll(handle: LogFileHandle, buffer: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset);
    if (!(bytesWritten > 0)) {
      const error = new Error(
        `short write: ${offset} of ${buffer.length} bytes written`,
      ) as NodeJS.ErrnoException;
      error.code = 'ENOSPC';
      throw error;
    }
    offset += bytesWritten;
  }
}

function parseLine(part: string, check: WalEntryCheck, path: string, line: number): WalEntry[] {
  let json = part;
  const framed = FRAMED.exec(part);
  if (framed) {
    json = part.slice(9);
    const expected = crc32(json).toString(16).padStart(8, '0');
    if (expected !== framed[1])
      throw new Error(`checksum mismatch (${framed[1]}, content gives ${expected})`);
  } else if (!part.startsWith('[')) {
    // Lines of the first log format carry no checksum and start with the list itself.
    throw new Error('not a log line');
  }
  const entries = JSON.parse(json) as unknown;
  if (!Array.isArray(entries)) throw new Error('not a list of entries');
  for (const entry of entries as unknown[]) {
    if (!entry || typeof entry !== 'object') throw new Error('an entry is not an object');
    check(entry as WalEntry, path, line);
  }
  return entries as WalEntry[];
}
