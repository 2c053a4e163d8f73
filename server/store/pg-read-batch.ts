import type { Versioned } from './pg-record-cache.js';

/** Ids per query at most: a batch this large is sent at once rather than at the end of the turn. */
const BATCH_MAX = 500;

type Run = (collection: string, ids: readonly string[]) => Promise<Map<string, Versioned>>;

interface Batch {
  ids: Set<string>;
  waiters: Array<{ resolve: (found: Map<string, Versioned>) => void; reject: (error: unknown) => void }>;
}

/**
 * Reads of records by id that arrive in the same turn of the event loop (requests handled side by side) go to
 * PostgreSQL as one query per collection, sent at the end of that turn. Each read still starts after it was asked
 * for, so it sees every change acknowledged before; under load one round trip serves many requests (a round trip
 * costs the host more CPU than the rows it brings).
 */
export class PgReadBatch {
  readonly #pending = new Map<string, Batch>();
  #scheduled = false;

  constructor(private readonly run: Run) {}

  /** The records of `ids` that exist, by id (the map may hold other ids of the same batch too). */
  read(collection: string, ids: readonly string[]): Promise<Map<string, Versioned>> {
    return new Promise((resolve, reject) => {
      let batch = this.#pending.get(collection);
      if (!batch) this.#pending.set(collection, (batch = { ids: new Set(), waiters: [] }));
      for (const id of ids) batch.ids.add(id);
      batch.waiters.push({ resolve, reject });
      if (batch.ids.size >= BATCH_MAX) this.#send(collection);
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#sendAll());
      }
    });
  }

  #sendAll(): void {
    this.#scheduled = false;
    for (const collection of [...this.#pending.keys()]) this.#send(collection);
  }

  #send(collection: string): void {
    const batch = this.#pending.get(collection);
    if (!batch) return;
    this.#pending.delete(collection);
    this.run(collection, [...batch.ids]).then(
      (found) => batch.waiters.forEach((w) => w.resolve(found)),
      (error: unknown) => batch.waiters.forEach((w) => w.reject(error)),
    );
  }
}
