import { freeze } from 'immer';
import type pg from 'pg';

/** Records a host keeps (frozen, with their versions); the oldest used goes first past this many. */
const CACHE_MAX = 20_000;

/** A record as stored: its data (frozen) and the version of the write that made it. */
export interface Versioned {
  version: string;
  data: unknown;
}

/**
 * The records this host read lately, each with its version. A read still asks PostgreSQL (so it sees every change
 * any host acknowledged before it), but only for the version: the record itself comes back only when it changed.
 * That saves sending, parsing and freezing a record read again (a user with a long friend list is kilobytes),
 * never a round trip. Bounded; other hosts' announced changes and this host's own writes drop entries early.
 */
export class PgRecordCache {
  readonly #records = new Map<string, Versioned>();

  /**
   * The records of `ids` in `collection` that exist, by id, with their versions: one round trip whatever is
   * cached.
   */
  async read(client: pg.Pool, collection: string, ids: readonly string[]): Promise<Map<string, Versioned>> {
    // As asked: the entries may change while the query runs (other reads, a commit forgetting one).
    const asked = new Map(ids.map((id) => [id, this.#records.get(`${collection}/${id}`)]));
    const versions = ids.map((id) => asked.get(id)?.version ?? '0');
    // One record (most reads) by its key alone: the plainest plan for PostgreSQL.
    const rows = await client.query<{ id: string; version: string; data: unknown }>(
      ids.length === 1
        ? {
            name: 'hx_read_one',
            text: `SELECT id, version, CASE WHEN version = $3 THEN NULL ELSE data END AS data
                     FROM hx_records WHERE collection = $1 AND id = $2`,
            values: [collection, ids[0], versions[0]],
          }
        : {
            name: 'hx_read',
            text: `SELECT r.id, r.version, CASE WHEN r.version = c.v THEN NULL ELSE r.data END AS data
                     FROM unnest($2::text[], $3::bigint[]) AS c(id, v)
                     JOIN hx_records r ON r.collection = $1 AND r.id = c.id`,
            values: [collection, ids, versions],
          },
    );
    const found = new Map<string, Versioned>();
    for (const row of rows.rows) {
      const key = `${collection}/${row.id}`;
      const cached = asked.get(row.id);
      if (row.data === null && cached?.version === row.version) {
        // Used again: it moves to the back of the line (unless it changed meanwhile).
        if (this.#records.get(key) === cached) {
          this.#records.delete(key);
          this.#records.set(key, cached);
        }
        found.set(row.id, cached);
        continue;
      }
      const entry = { version: row.version, data: freeze(row.data, true) };
      this.#remember(key, entry);
      found.set(row.id, entry);
    }
    return found;
  }

  #remember(key: string, entry: Versioned): void {
    this.#records.delete(key);
    if (this.#records.size >= CACHE_MAX) this.#records.delete(this.#records.keys().next().value!);
    this.#records.set(key, entry);
  }

  /**
   * The record as this host last read it, without asking PostgreSQL: possibly changed since. Only for a
   * transaction, whose commit checks the version (and runs again when it changed).
   */
  peek(collection: string, id: string): Versioned | undefined {
    return this.#records.get(`${collection}/${id}`);
  }

  /** A record this host just wrote, with its new version (frozen). */
  keep(collection: string, id: string, entry: Versioned): void {
    this.#remember(`${collection}/${id}`, entry);
  }

  /** A record changed (written here, or announced by another host): no use keeping it. */
  forget(collection: string, id: string): void {
    this.#records.delete(`${collection}/${id}`);
  }

  /** Changes may have been missed: nothing kept is worth keeping. */
  clear(): void {
    this.#records.clear();
  }
}
