import { freeze } from 'immer';
import type pg from 'pg';

/** Records a host keeps (frozen, with their versions); the oldest used goes first past this many. */
const CACHE_MAX = 20_000;

/** A row of a read: a record's version and data (version null: no such record). */
interface Row {
  id: string;
  version: string | null;
  data: unknown;
}

/** A record as stored: its data (frozen) and the version of the write that made it. */
export interface Versioned {
  version: string;
  data: unknown;
}

/**
 * Keys a read or a commit is fetching or writing: a change heard meanwhile (`forget`) marks them, and what the
 * read or commit then brings back is not kept (it may be older than the change).
 */
export class CacheFill {
  #stale: Set<string> | 'all' = new Set();

  constructor(readonly keys: ReadonlySet<string>) {}

  mark(key: string | null): void {
    if (key === null) this.#stale = 'all';
    else if (this.#stale !== 'all') this.#stale.add(key);
  }

  stale(key: string): boolean {
    return this.#stale === 'all' || this.#stale.has(key);
  }
}

/**
 * The records this host read lately, each with its version. While this host's cache lease holds (pg-lease.ts) a
 * read is answered from here; otherwise it asks PostgreSQL, but only for the version: the record itself comes
 * back only when it changed (that saves sending, parsing and freezing a record read again; a user with a long
 * friend list is kilobytes). Bounded; other hosts' announced changes and this host's own writes drop entries.
 */
export class PgRecordCache {
  readonly #records = new Map<string, Versioned>();
  /** Reads and commits on their way (see CacheFill). */
  readonly #fills = new Set<CacheFill>();

  /**
   * The records of `ids` in `collection` that exist, by id, with their versions: one round trip whatever is
   * cached. PostgreSQL answers only for the records whose version is not the one this host holds (changed, or
   * gone): a record read again unchanged costs no row.
   */
  async read(client: pg.Pool, collection: string, ids: readonly string[]): Promise<Map<string, Versioned>> {
    // As asked: the entries may change while the query runs (other reads, a commit forgetting one).
    const asked = new Map(ids.map((id) => [id, this.#records.get(`${collection}/${id}`)]));
    const versions = [...asked.values()].map((entry) => entry?.version ?? '0');
    const fill = this.begin(ids.map((id) => `${collection}/${id}`));
    let changed: Map<string, Row>;
    try {
      changed =
        ids.length === 1
          ? await this.#readOne(client, collection, ids[0]!, versions[0]!)
          : await this.#readChanged(client, collection, [...asked.keys()], versions);
    } finally {
      this.end(fill);
    }
    const found = new Map<string, Versioned>();
    for (const [id, cached] of asked) {
      const key = `${collection}/${id}`;
      const row = changed.get(id);
      if (!row && cached) {
        // Unchanged, used again: it moves to the back of the line (unless it changed meanwhile).
        if (this.#records.get(key) === cached && !fill.stale(key)) this.#remember(key, cached);
        found.set(id, cached);
      } else if (row?.version) {
        const entry = { version: row.version, data: freeze(row.data, true) };
        if (!fill.stale(key)) this.#remember(key, entry);
        found.set(id, entry);
      } else if (cached && this.#records.get(key) === cached) {
        this.#records.delete(key);
      }
    }
    return found;
  }

  /** One record (most reads under light load) by its key alone, the plainest plan: as #readChanged answers. */
  async #readOne(
    client: pg.Pool,
    collection: string,
    id: string,
    version: string,
  ): Promise<Map<string, Row>> {
    const rows = await client.query<Row>({
      name: 'hx_read_one',
      text: `SELECT id, version, CASE WHEN version = $3 THEN NULL ELSE data END AS data
               FROM hx_records WHERE collection = $1 AND id = $2`,
      values: [collection, id, version],
    });
    const row = rows.rows[0];
    if (!row) return new Map([[id, { id, version: null, data: null }]]);
    return row.version === version ? new Map() : new Map([[id, row]]);
  }

  /** The rows of the records whose version is not the one given (changed; version null: gone), by id. */
  async #readChanged(
    client: pg.Pool,
    collection: string,
    ids: string[],
    versions: string[],
  ): Promise<Map<string, Row>> {
    const rows = await client.query<Row>({
      name: 'hx_read_changed',
      text: `SELECT c.id, r.version, r.data FROM unnest($2::text[], $3::bigint[]) AS c(id, v)
               LEFT JOIN hx_records r ON r.collection = $1 AND r.id = c.id
              WHERE r.version IS DISTINCT FROM c.v`,
      values: [collection, ids, versions],
    });
    return new Map(rows.rows.map((row) => [row.id, row]));
  }

  #remember(key: string, entry: Versioned): void {
    this.#records.delete(key);
    if (this.#records.size >= CACHE_MAX) this.#records.delete(this.#records.keys().next().value!);
    this.#records.set(key, entry);
  }

  /**
   * The record as this host last read it, without asking PostgreSQL: current while the lease holds, else possibly
   * changed since (then only for a transaction, whose commit checks the version).
   */
  peek(collection: string, id: string): Versioned | undefined {
    return this.#records.get(`${collection}/${id}`);
  }

  /** Every record of `ids` as kept, by id, or null when one is not kept. */
  peekAll(collection: string, ids: readonly string[]): Map<string, Versioned> | null {
    const found = new Map<string, Versioned>();
    for (const id of ids) {
      const entry = this.#records.get(`${collection}/${id}`);
      if (!entry) return null;
      found.set(id, entry);
    }
    return found;
  }

  /** Starts a read or commit of `keys` (collection/id): changes heard until `end` mark them (see CacheFill). */
  begin(keys: Iterable<string>): CacheFill {
    const fill = new CacheFill(new Set(keys));
    this.#fills.add(fill);
    return fill;
  }

  end(fill: CacheFill): void {
    this.#fills.delete(fill);
  }

  /** A record this host just wrote, with its new version (frozen), unless a change was heard meanwhile. */
  keep(collection: string, id: string, entry: Versioned, fill: CacheFill): void {
    const key = `${collection}/${id}`;
    if (fill.stale(key)) this.#records.delete(key);
    else this.#remember(key, entry);
  }

  /** A record changed (written here, or announced by another host): no use keeping it. */
  forget(collection: string, id: string): void {
    const key = `${collection}/${id}`;
    this.#records.delete(key);
    for (const fill of this.#fills) if (fill.keys.has(key)) fill.mark(key);
  }

  /** Changes may have been missed: nothing kept is worth keeping. */
  clear(): void {
    this.#records.clear();
    for (const fill of this.#fills) fill.mark(null);
  }
}
