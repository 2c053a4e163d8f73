import { mkdir, open, readdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptDataFileError, syncDir } from './durable-file.js';

/** One record version as the log carries it: collection, id, and the record file's content. */
export interface WalEntry {
  c: string;
  i: string;
  r: { seq: number; data: unknown };
}

interface Batch {
  lines: string[];
  onDurable: Array<() => void>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const SEGMENT = /^(\d{1,15})\.log$/;

/**
 * The store's write-ahead log with group commit. A commit is one line (a JSON array of the record versions it
 * changes, so a multi-record change is all or nothing); every line that arrives while a write is on its way joins
 * the next one, and a whole batch costs one append and one fdatasync. The log is cut into segments: a checkpoint
 * starts a new segment, writes the record files, and only then deletes the segments it covered.
 */
export class WriteAheadLog {
  readonly #dir: string;
  readonly #fsync: boolean;
  #handle: FileHandle;
  #segment: number;
  #entries = 0;
  #bytes = 0;
  #pending: Batch | null = null;
  /** Every write and rotation runs on this chain, one after another. */
  #tail: Promise<unknown> = Promise.resolve();
  #failed: unknown = null;

  private constructor(dir: string, fsync: boolean, handle: FileHandle, segment: number) {
    this.#dir = dir;
    this.#fsync = fsync;
    this.#handle = handle;
    this.#segment = segment;
  }

  /**
   * Opens the log folder: reads every segment left by the previous run (the lines to replay, oldest first) and
   * starts a new segment. A torn last line (a write cut off by a crash, never acknowledged) is dropped; any other
   * unreadable line stops startup with the file left as it is.
   */
  static async open(
    dir: string,
    fsync: boolean,
  ): Promise<{ wal: WriteAheadLog; lines: WalEntry[][]; retired: string[] }> {
    await mkdir(dir, { recursive: true });
    const numbers: number[] = [];
    for (const name of await readdir(dir)) {
      const match = SEGMENT.exec(name);
      if (match) numbers.push(Number(match[1]));
    }
    numbers.sort((a, b) => a - b);
    const lines: WalEntry[][] = [];
    const retired: string[] = [];
    for (const [index, number] of numbers.entries()) {
      const path = join(dir, `${number}.log`);
      retired.push(path);
      const text = await readFile(path, 'utf8');
      const parts = text.split('\n');
      const last = index === numbers.length - 1;
      for (const [at, part] of parts.entries()) {
        if (part.length === 0) continue;
        const finalLine = at === parts.length - 1; // no newline after it: the write did not finish
        try {
          const entries = JSON.parse(part) as WalEntry[];
          if (!Array.isArray(entries) || finalLine) throw new Error('incomplete line');
          lines.push(entries);
        } catch (error) {
          if (last && finalLine) break;
          throw new CorruptDataFileError(path, error);
        }
      }
    }
    const segment = (numbers.at(-1) ?? 0) + 1;
    const handle = await open(join(dir, `${segment}.log`), 'a');
    if (fsync) await syncDir(dir);
    return { wal: new WriteAheadLog(dir, fsync, handle, segment), lines, retired };
  }

  /** Lines and bytes in the current segment. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries, bytes: this.#bytes };
  }

  /**
   * Appends `line` (one JSON array, no newline) with the next batch; resolves once it is on disk, after
   * `onDurable` ran.
   */
  append(line: string, onDurable: () => void): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed as Error);
    let batch = this.#pending;
    if (!batch) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      batch = { lines: [], onDurable: [], promise, resolve, reject };
      this.#pending = batch;
      this.#run(() => this.#write());
    }
    batch.lines.push(line);
    batch.onDurable.push(onDurable);
    return batch.promise;
  }

  async #write(): Promise<void> {
    // Everything appended until now (also while the previous write was on its way) goes in this one.
    const batch = this.#pending;
    this.#pending = null;
    if (!batch) return;
    try {
      const text = `${batch.lines.join('\n')}\n`;
      await this.#handle.write(text);
      if (this.#fsync) await this.#handle.datasync();
      this.#entries += batch.lines.length;
      this.#bytes += Buffer.byteLength(text);
    } catch (error) {
      // A log that failed a write may hold a torn line: later lines could not be read back past it.
      this.#failed = error;
      batch.reject(error);
      return;
    }
    for (const done of batch.onDurable) done();
    batch.resolve();
  }

  /**
   * Starts a new segment once every earlier batch is written, runs `atCut` right there (nothing is being written
   * then) and returns its result with the paths of the segments before the cut.
   */
  rotate<T>(atCut: () => T): Promise<{ value: T; closed: string[] }> {
    return this.#run(async () => {
      const closed = [join(this.#dir, `${this.#segment}.log`)];
      const value = atCut();
      if (this.#entries === 0) return { value, closed: [] };
      await this.#handle.close();
      this.#segment++;
      this.#handle = await open(join(this.#dir, `${this.#segment}.log`), 'a');
      if (this.#fsync) await syncDir(this.#dir);
      this.#entries = 0;
      this.#bytes = 0;
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
      await this.#handle.close();
      if (deleteIfEmpty && this.#entries === 0) {
        await unlink(join(this.#dir, `${this.#segment}.log`)).catch(() => undefined);
      }
    });
  }

  #run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
