import { open, readFile, type FileHandle } from 'node:fs/promises';
import { CorruptDataFileError } from './durable-file.js';
import { writeAll } from './wal.js';
import { queryByKeys } from './log-query.js';
import type { LogFilter, LogPage, ReadLog } from './seam.js';

export interface LogIndexEntry<K> {
  offset: number;
  length: number;
  key: K;
}

/** A store log's file as read and checked at start, before anything is written. */
export interface StoreLogContents<K> {
  index: Array<LogIndexEntry<K>>;
  /** The highest commit sequence number among the entries (0 when empty). */
  maxSeq: number;
  /** Bytes of the file that hold whole lines. */
  good: number;
  /** Bytes follow the last whole line (a write cut off by a crash): cut before the next write. */
  torn: boolean;
}

/**
 * An append-only JSON-lines history kept by the store (the moderation log). Its entries are made durable by the
 * write-ahead log, in the same commit as the records they describe; this file is where they live afterwards.
 * An entry is readable as soon as its commit is durable: from memory until its bytes are in the file, from the
 * file after. Writes go behind the file's last good byte (cutting off whatever a failed write left), so a full
 * disk only delays them; the store's checkpoint syncs the file before it deletes the log segments that hold the
 * same entries. Each entry carries the sequence number of its commit, so a replay after a crash adds only what
 * the file does not hold yet.
 */
export class StoreLog<T extends { seq: number }, K> implements ReadLog<T, K> {
  readonly #index: Array<LogIndexEntry<K>>;
  /** Entries not yet in the file, as JSON, oldest first: positions #index.length - #tail.length ... */
  #tail: string[] = [];
  /** Bytes of the file that hold whole, written entries. */
  #good: number;
  /** The file may hold bytes past #good (a torn line, a failed write): cut them before the next write. */
  #dirty: boolean;
  #maxSeq: number;
  #writing: Promise<void> | null = null;
  #scheduled = false;
  #closed = false;
  readonly #listeners: Array<(entry: T, position: number) => void> = [];

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    private readonly keyOf: (entry: T) => K,
    private readonly onBackgroundError: (error: unknown) => void,
    contents: StoreLogContents<K>,
  ) {
    // The index read at start is taken over, not copied (a long history has millions of entries).
    this.#index = contents.index;
    this.#maxSeq = contents.maxSeq;
    this.#good = contents.good;
    this.#dirty = contents.torn;
  }

  /**
   * Reads the file (missing: empty) and indexes it, writing nothing. A torn last line (a write cut off) is ignored
   * and cut before the next write; any other unreadable line stops startup naming the file, and so does an entry
   * `check` refuses (given the entry and its line number, from 1). `open` then opens the file for writing.
   */
  static async read<T extends { seq: number }, K>(
    path: string,
    keyOf: (entry: T) => K,
    options: { check?: (entry: unknown, line: number) => void; onEntry?: (entry: T) => void } = {},
  ): Promise<StoreLogContents<K>> {
    let content: Buffer;
    try {
      content = await readFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new CorruptDataFileError(path, error);
      content = Buffer.alloc(0);
    }
    const index: Array<LogIndexEntry<K>> = [];
    let maxSeq = 0;
    let start = 0;
    for (let line = 1; start < content.length; line++) {
      const end = content.indexOf(0x0a, start);
      if (end === -1) break;
      let entry: T;
      try {
        entry = JSON.parse(content.subarray(start, end).toString('utf8')) as T;
        if (!entry || typeof entry !== 'object') throw new Error('not an object');
      } catch (error) {
        throw new CorruptDataFileError(
          path,
          new Error(`line ${line} (at byte ${start}): ${(error as Error).message}`),
        );
      }
      options.check?.(entry, line);
      index.push({ offset: start, length: end - start, key: keyOf(entry) });
      if (typeof entry.seq === 'number' && entry.seq > maxSeq) maxSeq = entry.seq;
      options.onEntry?.(entry);
      start = end + 1;
    }
    return { index, maxSeq, good: start, torn: start < content.length };
  }

  /** Opens (creating) the file `read` read, to append to it; from here on the file may be written. */
  static async open<T extends { seq: number }, K>(
    path: string,
    contents: StoreLogContents<K>,
    keyOf: (entry: T) => K,
    options: { onBackgroundError?: (error: unknown) => void } = {},
  ): Promise<StoreLog<T, K>> {
    const handle = await open(path, 'a+');
    return new StoreLog<T, K>(path, handle, keyOf, options.onBackgroundError ?? (() => undefined), contents);
  }

  get length(): number {
    return this.#index.length;
  }

  /** The highest commit sequence number among the entries (0 when empty). */
  get maxSeq(): number {
    return this.#maxSeq;
  }

  indexAt(position: number): LogIndexEntry<K> | undefined {
    return this.#index[position];
  }

  /** A page of the entries whose key matches `filter`, newest first (see queryByKeys). */
  query(filter: LogFilter<K>, offset: number, limit: number): Promise<LogPage<T>> {
    return queryByKeys(this, filter, offset, limit);
  }

  /** Called with each entry accepted after startup, and its position. */
  onAppend(listener: (entry: T, position: number) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * @internal (the store): an entry whose commit is durable. Returns false for one the file already holds (a
   * replay after a crash). The bytes follow in the background.
   */
  accept(entry: T, json: string = JSON.stringify(entry)): boolean {
    if (entry.seq <= this.#maxSeq) return false;
    this.#maxSeq = entry.seq;
    const position = this.#index.length;
    this.#index.push({ offset: -1, length: Buffer.byteLength(json), key: this.keyOf(entry) });
    this.#tail.push(json);
    for (const listener of this.#listeners) listener(entry, position);
    if (!this.#scheduled && !this.#closed) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.flush(false).catch((error: unknown) => this.onBackgroundError(error));
      });
    }
    return true;
  }

  /** Writes what is only in memory (and fsyncs when `sync`); a failure keeps it for the next try. */
  async flush(sync: boolean): Promise<void> {
    // Only waits for the write in flight to settle: its caller gets its failure, and what it did not write is still
    // in memory for this one.
    while (this.#writing) await this.#writing.catch(() => undefined);
    if (this.#tail.length === 0 && !sync && !this.#dirty) return;
    const work = this.#write(sync);
    this.#writing = work;
    try {
      await work;
    } finally {
      this.#writing = null;
    }
  }

  async #write(sync: boolean): Promise<void> {
    const lines = this.#tail.slice();
    if (this.#dirty) {
      await this.handle.truncate(this.#good);
      this.#dirty = false;
    }
    if (lines.length > 0) {
      const buffer = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
      try {
        await writeAll(this.handle, buffer);
      } catch (error) {
        this.#dirty = true;
        throw error;
      }
      let offset = this.#good;
      const first = this.#index.length - this.#tail.length;
      for (let i = 0; i < lines.length; i++) {
        const at = this.#index[first + i]!;
        at.offset = offset;
        offset += at.length + 1;
      }
      this.#good = offset;
      this.#tail = this.#tail.slice(lines.length);
    }
    if (sync) await this.handle.sync();
  }

  async read(position: number): Promise<T> {
    const at = this.#index[position];
    if (!at) throw new Error(`no log entry ${position}`);
    const fromTail = position - (this.#index.length - this.#tail.length);
    if (at.offset < 0 && fromTail >= 0) return JSON.parse(this.#tail[fromTail]!) as T;
    const buffer = Buffer.alloc(at.length);
    await this.handle.read(buffer, 0, at.length, at.offset);
    return JSON.parse(buffer.toString('utf8')) as T;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.flush(false).catch((error: unknown) => this.onBackgroundError(error));
    await this.handle.close();
  }
}
