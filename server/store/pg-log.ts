import type { ReadLog } from './seam.js';

/**
 * A history (the moderation log) as this process holds it: each entry's sequence number and key, in commit order;
 * entries themselves are read from the table. Appends to one log commit in sequence order (hx_write takes the
 * log's lock), so reading "every entry past the last one seen" never skips one.
 */
export class PgLog<E extends { seq: number }, K> implements ReadLog<E, K> {
  readonly #index: Array<{ seq: number; key: K }> = [];
  readonly #listeners: Array<(entry: E, position: number) => void> = [];
  #maxSeq = 0;
  #pulling: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    private readonly keyOf: (entry: E) => K,
    private readonly source: {
      fetch(seq: number): Promise<E>;
      after(seq: number): Promise<E[]>;
    },
  ) {}

  get length(): number {
    return this.#index.length;
  }

  indexAt(position: number): { key: K } | undefined {
    return this.#index[position];
  }

  read(position: number): Promise<E> {
    const at = this.#index[position];
    if (!at) return Promise.reject(new Error(`no log entry ${position}`));
    return this.source.fetch(at.seq);
  }

  onAppend(listener: (entry: E, position: number) => void): void {
    this.#listeners.push(listener);
  }

  /** Reads the entries committed since the last pull, one pull at a time; `quiet` at open (no listeners yet). */
  pull(quiet = false): Promise<void> {
    const run = this.#pulling.then(async () => {
      for (const entry of await this.source.after(this.#maxSeq)) this.#accept(entry, quiet);
    });
    // A failed pull is reported to its caller; the next one starts from where this one got to.
    this.#pulling = run.catch(() => undefined);
    return run;
  }

  #accept(entry: E, quiet: boolean): void {
    if (entry.seq <= this.#maxSeq) return;
    this.#maxSeq = entry.seq;
    const position = this.#index.length;
    this.#index.push({ seq: entry.seq, key: this.keyOf(entry) });
    if (!quiet) for (const listener of this.#listeners) listener(entry, position);
  }
}
