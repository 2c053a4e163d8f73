import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CorruptDataFileError, syncDir } from './durable-file.js';
import { writeAll } from './wal.js';

/**
 * An append-only JSON-lines file for histories (the moderation log, invite-request events). Appends made in the
 * same tick share one write and one fsync (group commit), so the cost of an acknowledged entry stays flat however
 * long the log gets. Only a small index stays in memory (none for a log opened with `indexed: false`); entries
 * are read back by offset. A log whose old lines stop mattering (invite requests past the history bound) can be
 * compacted: replaced whole by what is live.
 */
/** Entries serialised per write while compacting: a few milliseconds of work between yields. */
const COMPACT_SLICE = 2000;

export interface LogIndexEntry<K> {
  offset: number;
  length: number;
  key: K;
}

interface Batch<K> {
  /** The entries as JSON, without their newline. */
  lines: string[];
  keys: K[];
  bytes: number[];
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function newBatch<K>(): Batch<K> {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A batch nobody awaits (all its appends were covered by a compaction) must not warn when it fails.
  promise.catch(() => undefined);
  return { lines: [], keys: [], bytes: [], promise, resolve, reject };
}

export class AppendLog<T, K> {
  /** Where each entry is, for logs read back by position; null when only appending (`indexed: false`). */
  readonly #index: Array<LogIndexEntry<K>> | null;
  #count = 0;
  #size: number;
  /** Lines not yet written, with the one promise they all resolve by (a batch: one write, one fsync). */
  #pending: Batch<K> = newBatch();
  #flushing: Promise<void> | null = null;
  #scheduled = false;
  #closed = false;
  /** Bytes on disk that hold whole, acknowledged lines. */
  #written = 0;
  /** A failed write may have left a torn line past #written: it is cut off before the next write. */
  #damaged = false;
  /** While a compaction swaps the file, appends wait. */
  #compacting: Promise<void> | null = null;

  private constructor(
    readonly path: string,
    private handle: FileHandle,
    size: number,
    private readonly keyOf: (entry: T) => K,
    private readonly fsync: boolean,
    indexed: boolean,
  ) {
    this.#size = size;
    this.#index = indexed ? [] : null;
  }

  #note(offset: number, length: number, key: K): void {
    this.#count++;
    this.#index?.push({ offset, length, key });
  }

  get length(): number {
    return this.#count;
  }

  /** Whether a compaction is under way (a call now would only join it). */
  get compacting(): boolean {
    return this.#compacting !== null;
  }

  /** Bytes on disk (acknowledged entries only). */
  get bytes(): number {
    return this.#size;
  }

  indexAt(position: number): LogIndexEntry<K> | undefined {
    return this.#index?.[position];
  }

  /**
   * Opens (creating) the log and indexes it. A torn last line is the tail of an append that was never
   * acknowledged and is cut off; any other unreadable line stops startup.
   */
  static async open<T, K>(
    path: string,
    keyOf: (entry: T) => K,
    options: { fsync?: boolean; onEntry?: (entry: T) => void; indexed?: boolean } = {},
  ): Promise<AppendLog<T, K>> {
    const handle = await open(path, 'a+');
    try {
      const content = await handle.readFile();
      const log = new AppendLog<T, K>(path, handle, 0, keyOf, options.fsync ?? true, options.indexed ?? true);
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
        log.#note(start, end - start, keyOf(entry));
        options.onEntry?.(entry);
        start = end + 1;
      }
      log.#size = start;
      log.#written = start;
      return log;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Appends `entry`; resolves once it is on disk. Returns its position in the log. */
  append(entry: T): Promise<number> {
    const position = this.#count;
    return this.add(entry).then(() => position);
  }

  /**
   * Appends `entry`; resolves once it is on disk (the promise is shared by the whole batch). `json`, when given,
   * is the entry already serialised as JSON.stringify would write it.
   */
  add(entry: T, json: string = JSON.stringify(entry)): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('log is closed'));
    const bytes = Buffer.byteLength(json) + 1;
    const key = this.keyOf(entry);
    this.#note(this.#size, bytes - 1, key);
    this.#size += bytes;
    const batch = this.#pending;
    batch.lines.push(json);
    batch.keys.push(key);
    batch.bytes.push(bytes);
    if (!this.#scheduled) {
      this.#scheduled = true;
      // #flush settles each batch's promise, failure included: nothing else waits for it.
      setImmediate(() => {
        this.#flush().catch(() => undefined);
      });
    }
    return batch.promise;
  }

  async #flush(): Promise<void> {
    // One write at a time keeps lines in order; appends arriving meanwhile join the next batch.
    while (this.#flushing || this.#compacting)
      // A failed compaction leaves the old log intact (see compact); the batch is written to it as usual.
      await (this.#flushing ?? this.#compacting?.catch(() => undefined));
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.lines.length === 0) return;
    this.#pending = newBatch();
    this.#flushing = (async () => {
      try {
        if (this.#damaged) {
          await this.handle.truncate(this.#written);
          this.#damaged = false;
        }
        const buffer = Buffer.from(`${batch.lines.join('\n')}\n`, 'utf8');
        await writeAll(this.handle, buffer);
        if (this.fsync) await this.handle.datasync();
        this.#written += buffer.length;
        batch.resolve();
      } catch (error) {
        // This batch and the one queued behind it are refused and forgotten; the torn bytes are cut before the
        // next write, so the log recovers by itself once the disk does.
        this.#damaged = true;
        const later = this.#pending;
        this.#pending = newBatch();
        for (const refused of [later, batch]) {
          this.#count -= refused.lines.length;
          this.#size -= refused.bytes.reduce((sum, bytes) => sum + bytes, 0);
          this.#index?.splice(this.#index.length - refused.lines.length, refused.lines.length);
        }
        batch.reject(error);
        later.reject(error);
      }
    })();
    await this.#flushing;
    this.#flushing = null;
  }

  /**
   * Replaces the log by `entries`, the live state now (it must include what every append so far recorded):
   * written beside it, synced and renamed over it. Appends not yet written resolve with it, later ones go to the
   * new file. Positions from before are meaningless afterwards. On failure the old log stays and nothing is lost.
   * `serialize`, when given, writes an entry as JSON.stringify would. The new file is written in slices of
   * COMPACT_SLICE entries, one write each, so a large log never holds the event loop for long. `entries` is read
   * slice by slice as the writes go, so it may be lazy, but which entries it holds must be fixed at the call: the
   * appends made since follow the new content. An entry object changed meanwhile is written as it is then.
   */
  compact(entries: Iterable<T>, serialize: (entry: T) => string = JSON.stringify): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('log is closed'));
    if (this.#compacting) return this.#compacting;
    // Covered by `entries`: they resolve once the new file is durable.
    const covered = this.#pending;
    this.#pending = newBatch();
    const work = (async () => {
      while (this.#flushing) await this.#flushing;
      const temp = `${this.path}.compact`;
      try {
        const index: Array<LogIndexEntry<K>> = [];
        let size = 0;
        let count = 0;
        const file = await open(temp, 'w');
        try {
          const iterator = entries[Symbol.iterator]();
          let next = iterator.next();
          while (!next.done) {
            const lines: string[] = [];
            for (; !next.done && lines.length < COMPACT_SLICE; next = iterator.next()) {
              const json = serialize(next.value);
              lines.push(json);
              if (this.#index) {
                const length = Buffer.byteLength(json);
                index.push({ offset: size, length, key: this.keyOf(next.value) });
                size += length + 1;
              }
            }
            count += lines.length;
            const chunk = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
            if (!this.#index) size += chunk.length;
            await file.write(chunk);
          }
          if (this.fsync) await file.sync();
        } finally {
          await file.close();
        }
        await rename(temp, this.path);
        if (this.fsync) await syncDir(dirname(this.path));
        const handle = await open(this.path, 'a+');
        // The new file is in place and open; an error closing the replaced file's handle loses nothing.
        await this.handle.close().catch(() => undefined);
        this.handle = handle;
        if (this.#index) {
          this.#index.length = 0;
          for (const entry of index) this.#index.push(entry);
        }
        this.#count = count;
        this.#size = size;
        this.#written = size;
        this.#damaged = false;
        // Appends made since the call were indexed against the old file: index them again, after the new content.
        const later = this.#pending;
        later.keys.forEach((key, at) => {
          const bytes = later.bytes[at]!;
          this.#note(this.#size, bytes - 1, key);
          this.#size += bytes;
        });
      } catch (error) {
        // The compaction failed already (handled below); a temp file left behind is ignored and overwritten next
        // time.
        await unlink(temp).catch(() => undefined);
        // The old log is intact: what was covered is written to it as usual, before what came since.
        const later = this.#pending;
        covered.lines.push(...later.lines);
        covered.keys.push(...later.keys);
        covered.bytes.push(...later.bytes);
        covered.promise.then(later.resolve, later.reject);
        this.#pending = covered;
        throw error;
      } finally {
        this.#compacting = null;
        if (this.#pending.lines.length > 0 && !this.#scheduled) {
          this.#scheduled = true;
          setImmediate(() => {
            this.#flush().catch(() => undefined);
          });
        }
      }
      covered.resolve();
    })();
    this.#compacting = work;
    return work;
  }

  async read(position: number): Promise<T> {
    const at = this.#index?.[position];
    if (!at) throw new Error(`no log entry ${position}`);
    const buffer = Buffer.alloc(at.length);
    await this.handle.read(buffer, 0, at.length, at.offset);
    return JSON.parse(buffer.toString('utf8')) as T;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The compaction's failure went to its own caller and left the old log intact; closing goes on.
    if (this.#compacting) await this.#compacting.catch(() => undefined);
    while (this.#flushing || this.#pending.lines.length > 0) {
      if (this.#flushing) await this.#flushing;
      else await this.#flush();
    }
    await this.handle.close();
  }
}
