import { open, type FileHandle } from 'node:fs/promises';
import { CorruptDataFileError } from './durable-file.js';

/**
 * An append-only JSON-lines file for histories that only grow (the moderation log). Appends made in the same
 * tick share one write and one fsync (group commit), so the cost of an acknowledged entry stays flat however long
 * the log gets. Only a small index stays in memory; entries are read back by offset.
 */
export interface LogIndexEntry<K> {
  offset: number;
  length: number;
  key: K;
}

export class AppendLog<T, K> {
  readonly #index: Array<LogIndexEntry<K>> = [];
  #size: number;
  #pending: Array<{ line: Buffer; resolve: () => void; reject: (error: unknown) => void }> = [];
  #flushing: Promise<void> | null = null;
  #scheduled = false;
  #closed = false;
  /** A failed write leaves the file's tail unknown: refuse further appends until a restart re-indexes it. */
  #failed: unknown = null;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    size: number,
    private readonly keyOf: (entry: T) => K,
    private readonly fsync: boolean,
  ) {
    this.#size = size;
  }

  get length(): number {
    return this.#index.length;
  }

  /** Bytes on disk (acknowledged entries only). */
  get bytes(): number {
    return this.#size;
  }

  indexAt(position: number): LogIndexEntry<K> | undefined {
    return this.#index[position];
  }

  /**
   * Opens (creating) the log and indexes it. A torn last line is the tail of an append that was never
   * acknowledged and is cut off; any other unreadable line stops startup.
   */
  static async open<T, K>(
    path: string,
    keyOf: (entry: T) => K,
    options: { fsync?: boolean; onEntry?: (entry: T) => void } = {},
  ): Promise<AppendLog<T, K>> {
    const handle = await open(path, 'a+');
    try {
      const content = await handle.readFile();
      const log = new AppendLog<T, K>(path, handle, 0, keyOf, options.fsync ?? true);
      let start = 0;
      while (start < content.length) {
        const end = content.indexOf(0x0a, start);
        if (end === -1) {
          // No newline: the last append died half-way; it was never acknowledged.
          await handle.truncate(start);
          break;
        }
        let entry: T;
        try {
          entry = JSON.parse(content.subarray(start, end).toString('utf8')) as T;
        } catch (error) {
          throw new CorruptDataFileError(
            path,
            new Error(`line at byte ${start}: ${(error as Error).message}`),
          );
        }
        log.#index.push({ offset: start, length: end - start, key: keyOf(entry) });
        options.onEntry?.(entry);
        start = end + 1;
      }
      log.#size = start;
      return log;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Appends `entry`; resolves once it is on disk. Returns its position in the log. */
  append(entry: T): Promise<number> {
    if (this.#closed) return Promise.reject(new Error('log is closed'));
    if (this.#failed) return Promise.reject(this.#failed);
    const line = Buffer.from(`${JSON.stringify(entry)}\n`, 'utf8');
    const position = this.#index.length;
    this.#index.push({ offset: this.#size, length: line.length - 1, key: this.keyOf(entry) });
    this.#size += line.length;
    const done = new Promise<void>((resolve, reject) => this.#pending.push({ line, resolve, reject }));
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => void this.#flush());
    }
    return done.then(() => position);
  }

  async #flush(): Promise<void> {
    // One write at a time keeps lines in order; appends arriving meanwhile join the next batch.
    while (this.#flushing) await this.#flushing;
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    this.#flushing = (async () => {
      try {
        await this.handle.write(Buffer.concat(batch.map((p) => p.line)));
        if (this.fsync) await this.handle.datasync();
        for (const p of batch) p.resolve();
      } catch (error) {
        this.#failed = error;
        for (const p of [...batch, ...this.#pending.splice(0)]) p.reject(error);
      }
    })();
    await this.#flushing;
    this.#flushing = null;
  }

  async read(position: number): Promise<T> {
    const at = this.#index[position];
    if (!at) throw new Error(`no log entry ${position}`);
    const buffer = Buffer.alloc(at.length);
    await this.handle.read(buffer, 0, at.length, at.offset);
    return JSON.parse(buffer.toString('utf8')) as T;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    while (this.#flushing || this.#pending.length > 0) {
      if (this.#flushing) await this.#flushing;
      else await this.#flush();
    }
    await this.handle.close();
  }
}
