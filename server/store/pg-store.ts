import { randomBytes } from 'node:crypto';
import { freeze } from 'immer';
import pg from 'pg';
import { StorageUnavailableError, StorageWriteError } from '../errors.js';
import { classifyPgError, isConnectionError, isOutdatedHost, storageError } from './pg-errors.js';
import { PgListener } from './pg-listener.js';
import { PgLease, type AliveMessage } from './pg-lease.js';
import { ChangeWatchers, type ChangeListener } from './change-watchers.js';
import { PgLog } from './pg-log.js';
import { PgRecordCache, type CacheFill, type Versioned } from './pg-record-cache.js';
import { PgReadBatch } from './pg-read-batch.js';
import {
  batchValues,
  RECORD_DATA_ARG,
  PgCommitBatch,
  type CommitAnswer,
  type Committed,
  type CommitItem,
  type ReadSet,
  type WriteSet,
} from './pg-commit-batch.js';
import {
  INDEX_LOCK,
  PG_MIGRATIONS,
  PG_SCHEMA_VERSION,
  PgSchemaTooNewError,
  runMigrations,
  type MigrationOptions,
} from './pg-migrations.js';
import { redactUrl } from '../../shared/redact-url.js';
import { withTimeout } from '../../shared/with-timeout.js';
import type { HostStore, ReadCollection, Tx, TxRepo } from './seam.js';
import type { KeyHit, KeyMatch } from './key-search.js';
import { DEFAULT_SEARCH_CACHE_KEYS, PgKeyCache } from './pg-key-cache.js';
import { isSafeId, TransactionConflictError, type LogSpec, type StoreLogger } from './store.js';
import { txRepo } from './tx-repo.js';

export { PgSchemaTooNewError, redactUrl };

/**
 * The storage seam on PostgreSQL, for communities that outgrow one machine: several host processes share one
 * database, which holds the truth. A read is a query (reads of one turn share one). A transaction is optimistic:
 * it reads committed records, noting each one's version (and the keys and lists it looked up), and keeps its
 * writes; its commit is one statement, shared with the other commits waiting on this host (PgCommitBatch), that
 * locks what it read and writes (row by row: no lock across the community), checks that what it read still holds,
 * and writes (`hx_commit_batch`). When something it read changed, nothing is written and it runs again. Records
 * live in `hx_records`, unique keys in `hx_keys`, list keys in `hx_list_keys`, each written in the commit that
 * writes its record; histories in `hx_log_entries`, numbered in commit order per log. No host holds a copy of the
 * community: what it keeps is its connections and a bounded cache of records it read or wrote, answering reads
 * from it only while its lease holds (pg-lease.ts); otherwise a read asks PostgreSQL for the version.
 *
 * Every commit announces what it changed inside itself (NOTIFY); each host LISTENs, drops those records from its
 * cache, and `watch` hands the changes to whoever keeps something that depends on them (sockets to close after a
 * ban, a search index). Every call has a time limit; an unreachable or stalled database answers
 * StorageUnavailableError within it.
 */

/** A transaction that keeps finding what it read changed gives up after this many runs. */
const MAX_TX_RUNS = 30;
/** The longest a transaction waits in the retry lane (a lane never holds anything up for good). */
const RETRY_LANE_WAIT_MS = 1000;
/** Rows per page when a collection is scanned or an index built. */
const PAGE = 1000;
/** A NOTIFY payload is limited to 8000 bytes: past this, "everything may have changed" is announced instead. */
const NOTIFY_MAX = 7000;
/** How long a commit waits before it is acknowledged while other hosts listen, by default (see PgLease). */
export const DEFAULT_CACHE_LEASE_MS = 50;
/** Watchers are told all may have changed this often, making up for an announcement lost with a dying host. */
const RESYNC_MS = 60_000;
/** Rows of hx_tx_done older than this are deleted (they only settle commits whose answer was lost just now). */
const TX_DONE_KEPT = "interval '1 day'";

export interface PgStoreOptions {
  logger?: StoreLogger;
  poolSize?: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  settleTimeoutMs?: number;
  /** Longest a statement of the migrations at start may run or wait for a lock (ms). */
  migrationTimeoutMs?: number;
  /** How long a commit waits before it is acknowledged while other hosts listen, and reads use the cache (ms). */
  cacheLeaseMs?: number;
  /** Keys per index a host keeps for searches (PgKeyCache); 0: every search is a query. */
  searchCacheKeys?: number;
}

const silentLogger: StoreLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export class PostgresUnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    super(
      `Cannot reach PostgreSQL at ${redactUrl(url)}: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        'Check that the server runs and the URL (user, password, host, port, database) is right.',
    );
    this.name = 'PostgresUnreachableError';
  }
}

interface IndexDef<T> {
  kind: 'unique' | 'list';
  keysOf: (record: T) => readonly string[];
}

/** One collection: every read a query, each record frozen as it is handed out. */
export class PgCollection<T> implements ReadCollection<T> {
  readonly indexes = new Map<string, IndexDef<T>>();

  constructor(
    readonly name: string,
    private readonly store: PgStore,
  ) {}

  async get(id: string): Promise<T | undefined> {
    return (await this.store.read(this.name, [id])).get(id) as T | undefined;
  }

  async has(id: string): Promise<boolean> {
    return (await this.get(id)) !== undefined;
  }

  async getMany(ids: readonly string[]): Promise<T[]> {
    if (ids.length === 0) return [];
    const byId = await this.store.read(this.name, ids);
    const found: T[] = [];
    for (const id of ids) {
      const data = byId.get(id);
      if (data !== undefined) found.push(data as T);
    }
    return found;
  }

  async find(index: string, key: string): Promise<T | undefined> {
    await this.store.indexReady(this, index);
    const rows = await this.store.query<{ data: T }>(
      `SELECT r.data FROM hx_keys k JOIN hx_records r ON r.collection = k.collection AND r.id = k.id
        WHERE k.collection = $1 AND k.idx = $2 AND k.key = $3`,
      [this.name, index, key],
      'hx_find',
    );
    return rows[0] ? frozen(rows[0].data) : undefined;
  }

  async findByPrefix(index: string, prefix: string, limit: number): Promise<T[]> {
    await this.store.indexReady(this, index);
    // Byte order (COLLATE "C", indexed by migration 6): every key starting with the prefix sorts between the
    // prefix and the prefix followed by the last code point, whatever the database's collation.
    const rows = await this.store.query<{ data: T }>(
      `SELECT r.data FROM hx_keys k JOIN hx_records r ON r.collection = k.collection AND r.id = k.id
        WHERE k.collection = $1 AND k.idx = $2 AND k.key COLLATE "C" >= $3 AND k.key COLLATE "C" < $4
        ORDER BY k.key COLLATE "C" LIMIT $5`,
      [this.name, index, prefix, `${prefix}\u{10FFFF}`, limit],
      'hx_find_prefix',
    );
    return rows.map((row) => frozen(row.data));
  }

  async list(index: string, key: string): Promise<T[]> {
    await this.store.indexReady(this, index);
    const rows = await this.store.query<{ data: T }>(
      `SELECT r.data FROM hx_list_keys k JOIN hx_records r ON r.collection = k.collection AND r.id = k.id
        WHERE k.collection = $1 AND k.idx = $2 AND k.key = $3 ORDER BY k.id`,
      [this.name, index, key],
    );
    return rows.map((row) => frozen(row.data));
  }

  async searchKeys(index: string, match: KeyMatch, offset: number, limit: number): Promise<KeyHit[]> {
    const text = 'contains' in match ? match.contains : match.prefix;
    // PostgreSQL's text holds no NUL, so no key does: nothing matches (and the query would be refused).
    if (text.includes('\u0000') || limit <= 0) return [];
    await this.store.indexReady(this, index);
    const kept = await this.store.searchKept(this.name, index, match, offset, limit);
    if (kept) return kept;
    const table = this.keyTable(index);
    const unique = table === 'hx_keys';
    // Keys in byte order (COLLATE "C", indexed by migrations 6 and 10): the scan goes in the order asked and stops at
    // the page's end; a prefix is the range findByPrefix reads.
    // "Contains" is LIKE, which a trigram index serves (migration 11) when the needle is long enough to have
    // trigrams and the plan is made for the values asked (no named statement: a plan made for any collection
    // could not use an index of one).
    const [where, values] =
      'contains' in match
        ? ['key LIKE $5', [`%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`]]
        : ['key COLLATE "C" >= $5 AND key COLLATE "C" < $6', [text, `${text}\u{10FFFF}`]];
    return this.store.query<KeyHit>(
      `SELECT key, id FROM ${table} WHERE collection = $1 AND idx = $2 AND ${where}
        ORDER BY key COLLATE "C"${unique ? '' : ', id'} OFFSET $3 LIMIT $4`,
      [this.name, index, offset, limit, ...values],
      'contains' in match ? undefined : `hx_search_${table}_prefix`,
    );
  }

  async count(): Promise<number> {
    const rows = await this.store.query<{ n: string }>(
      'SELECT count(*) AS n FROM hx_records WHERE collection = $1',
      [this.name],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async *scan(): AsyncIterable<T> {
    for await (const row of this.rows()) yield frozen(row.data);
  }

  /** Every record with its id, a page at a time (by id, so a page boundary never skips or repeats one). */
  async *rows(): AsyncIterable<{ id: string; data: T }> {
    let after = '';
    for (;;) {
      const page = await this.store.query<{ id: string; data: T }>(
        'SELECT id, data FROM hx_records WHERE collection = $1 AND id > $2 ORDER BY id LIMIT $3',
        [this.name, after, PAGE],
      );
      for (const row of page) yield row;
      if (page.length < PAGE) return;
      after = page.at(-1)!.id;
    }
  }

  addIndex(index: string, keyOf: (record: T) => string | undefined): void {
    this.indexes.set(index, {
      kind: 'unique',
      keysOf: (record) => {
        const key = keyOf(record);
        return key === undefined ? [] : [key];
      },
    });
  }

  addListIndex(index: string, keysOf: (record: T) => readonly string[]): void {
    this.indexes.set(index, { kind: 'list', keysOf });
  }

  /** @internal: the keys a record has in each index, for hx_commit_batch. */
  keysOf(data: T): Array<{ kind: 'unique' | 'list'; index: string; key: string }> {
    const keys: Array<{ kind: 'unique' | 'list'; index: string; key: string }> = [];
    for (const [index, def] of this.indexes)
      for (const key of new Set(def.keysOf(data))) keys.push({ kind: def.kind, index, key });
    return keys;
  }

  /** @internal: the table holding the keys of `index`. */
  keyTable(index: string): 'hx_keys' | 'hx_list_keys' {
    return this.def(index).kind === 'unique' ? 'hx_keys' : 'hx_list_keys';
  }

  /** @internal */
  def(index: string): IndexDef<T> {
    const def = this.indexes.get(index);
    if (!def) throw new Error(`collection ${this.name} has no index ${index}`);
    return def;
  }
}

function frozen<T>(data: T): T {
  return freeze(data, true);
}

interface Write {
  collection: PgCollection<unknown>;
  id: string;
  data: unknown;
}

/**
 * A transaction, optimistic: reads are queries of their own (shared with other requests' reads of the same turn),
 * each remembered with what it found; writes are kept until the end. The commit is one statement that locks what
 * the transaction read and writes, checks that it still holds and writes (hx_commit_batch); when it no longer
 * holds, the transaction runs again. A record read twice reads the same both times.
 */
class PgTransaction implements Tx {
  readonly writes = new Map<string, Write>();
  /** Each record this transaction read as it was committed (null: none), by collection/id. */
  readonly seen = new Map<string, unknown>();
  readonly #versions = new Map<string, [string, string, string]>();
  readonly #keys = new Map<string, [string, string, string, string | null]>();
  readonly #lists = new Map<string, [string, string, string, string[]]>();
  readonly appends: Array<{ log: PgLog<{ seq: number }, unknown>; entry: { seq: number } }> = [];
  readonly effects: Array<() => void> = [];
  done = false;
  /** Whether a record was read from this host's cache: what it read is then checked even when it writes nothing. */
  unconfirmed = false;

  constructor(
    private readonly store: PgStore,
    /** Its idempotency key (its hx_tx_done row): unique across hosts and runs. */
    readonly id: string,
  ) {}

  #live(): void {
    if (this.done) throw new Error('transaction already ended');
  }

  repo<T>(name: string): TxRepo<T> {
    const collection = this.store.collection<unknown>(name);
    const key = (id: string): string => `${name}/${id}`;
    const read = async (id: string): Promise<unknown> => {
      this.#live();
      const k = key(id);
      if (!this.writes.has(k) && !this.seen.has(k)) {
        // As this host last read it when it has it (current while the lease holds, else the commit checks its
        // version), else from PostgreSQL.
        const kept = this.store.peek(name, id);
        if (kept && !this.store.cacheCurrent()) this.unconfirmed = true;
        const found = kept ?? (await this.store.readVersioned(name, [id])).get(id);
        this.#live();
        // The first read of a record is the one checked at commit (another may have landed meanwhile).
        if (!this.seen.has(k)) {
          this.seen.set(k, found?.data ?? null);
          this.#versions.set(k, [name, id, found?.version ?? '0']);
        }
      }
      const own = this.writes.get(k);
      return own ? (own.data ?? undefined) : (this.seen.get(k) ?? undefined);
    };
    const write = (id: string, data: unknown): void => {
      this.#live();
      if (!isSafeId(id)) throw new Error(`unsafe record id ${JSON.stringify(id)}`);
      this.writes.set(key(id), { collection, id, data });
    };
    const find = async (index: string, indexKey: string): Promise<unknown> => {
      this.#live();
      for (const own of this.#ownWrites(collection)) {
        if (own.data !== null && collection.def(index).keysOf(own.data).includes(indexKey)) return own.data;
      }
      const id = await this.#lookup(collection, index, indexKey);
      // A record this transaction changed no longer holds the key (it would have been found above).
      if (id === null || this.writes.has(key(id))) return undefined;
      return read(id);
    };
    const listIds = async (index: string, indexKey: string): Promise<string[]> => {
      this.#live();
      const ids = new Set(await this.#list(collection, index, indexKey));
      for (const own of this.#ownWrites(collection)) {
        if (own.data !== null && collection.def(index).keysOf(own.data).includes(indexKey)) ids.add(own.id);
        else ids.delete(own.id);
      }
      return [...ids];
    };
    return txRepo<T>(name, { read, write, find, listIds });
  }

  /** The id holding `key` in a unique index as committed (null: none), the first answer kept. */
  async #lookup(collection: PgCollection<unknown>, index: string, key: string): Promise<string | null> {
    const at = `${collection.name}\u0000${index}\u0000${key}`;
    if (!this.#keys.has(at)) {
      await this.store.indexReady(collection, index);
      const rows = await this.store.query<{ id: string }>(
        'SELECT id FROM hx_keys WHERE collection = $1 AND idx = $2 AND key = $3',
        [collection.name, index, key],
        'hx_find_id',
      );
      this.#live();
      if (!this.#keys.has(at)) this.#keys.set(at, [collection.name, index, key, rows[0]?.id ?? null]);
    }
    return this.#keys.get(at)![3];
  }

  /** The ids a list index holds under `key` as committed, the first answer kept. */
  async #list(collection: PgCollection<unknown>, index: string, key: string): Promise<string[]> {
    const at = `${collection.name}\u0000${index}\u0000${key}`;
    if (!this.#lists.has(at)) {
      await this.store.indexReady(collection, index);
      const rows = await this.store.query<{ id: string }>(
        'SELECT id FROM hx_list_keys WHERE collection = $1 AND idx = $2 AND key = $3 ORDER BY id',
        [collection.name, index, key],
        'hx_list_ids',
      );
      this.#live();
      if (!this.#lists.has(at)) this.#lists.set(at, [collection.name, index, key, rows.map((row) => row.id)]);
    }
    return this.#lists.get(at)![3];
  }

  *#ownWrites(collection: PgCollection<unknown>): IterableIterator<Write> {
    for (const own of this.writes.values()) if (own.collection === collection) yield own;
  }

  append<E extends { seq: number }>(name: string, entry: E): E {
    this.#live();
    this.appends.push({ log: this.store.log(name) as unknown as PgLog<{ seq: number }, unknown>, entry });
    return entry;
  }

  afterCommit(effect: () => void): void {
    this.effects.push(effect);
  }

  get writesSomething(): boolean {
    return this.writes.size > 0 || this.appends.length > 0;
  }

  /** Everything read, for the commit's check. */
  get reads(): ReadSet {
    return { r: [...this.#versions.values()], k: [...this.#keys.values()], l: [...this.#lists.values()] };
  }

  /** How many things were read: one alone needs no check (a single read is consistent with itself). */
  get readCount(): number {
    return this.#versions.size + this.#keys.size + this.#lists.size;
  }

  /** The records read, as collection and id. */
  get recordsRead(): Array<[string, string]> {
    return [...this.#versions.values()].map(([collection, id]) => [collection, id]);
  }
}

export class PgStore implements HostStore {
  readonly #collections = new Map<string, PgCollection<unknown>>();
  readonly #logs = new Map<string, PgLog<{ seq: number }, unknown>>();
  readonly #watchers = new ChangeWatchers((error, collection) =>
    this.logger.error({ err: error, collection }, 'a change listener failed'),
  );
  readonly #indexesReady = new Map<string, Promise<void>>();
  /** Indexes whose keys every record has (their build done, or found done). */
  readonly #indexesBuilt = new Set<string>();
  readonly #cache = new PgRecordCache();
  readonly #keyCache: PgKeyCache;
  readonly #reads = new PgReadBatch((collection, ids) => this.#cache.read(this.pool, collection, ids));
  readonly #commits = new PgCommitBatch((items) => this.#sendCommits(items));
  /** Transactions running again after a conflict, one at a time (see #run). */
  #retryLane: Promise<void> = Promise.resolve();
  readonly #origin = randomBytes(12).toString('hex');
  /** Transactions run so far (with #origin, each one's id). */
  #txCount = 0;
  readonly #inFlight = new Set<Promise<unknown>>();
  #listener: PgListener | null = null;
  readonly #lease: PgLease;
  /** This host counting the others and saying it is alive, once its listening connection is (back) up. */
  #hello: Promise<void> = Promise.resolve();
  #pruneTimer: NodeJS.Timeout | null = null;
  #catchUpTimer: NodeJS.Timeout | null = null;
  #closed = false;
  /** When this host last said it is older than the database (once a minute at most). */
  #outdatedSaidAt = -Infinity;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly connection: pg.ClientConfig,
    readonly schema: string,
    readonly logger: StoreLogger,
    private readonly settleTimeoutMs: number,
    cacheLeaseMs: number,
    searchCacheKeys: number,
  ) {
    this.#keyCache = new PgKeyCache(searchCacheKeys, {
      all: (collection, index, max) =>
        this.query<KeyHit>(
          `SELECT key, id FROM ${this.collection(collection).keyTable(index)} WHERE collection = $1 AND idx = $2 LIMIT $3`,
          [collection, index, max + 1],
        ),
      of: (collection, index, ids) =>
        this.query<KeyHit>(
          `SELECT key, id FROM ${this.collection(collection).keyTable(index)}
            WHERE collection = $1 AND id = ANY($3::text[]) AND idx = $2`,
          [collection, index, ids],
        ),
    });
    this.#lease = new PgLease(
      this.#origin,
      cacheLeaseMs,
      {
        beat: async (seq) => await this.#listening().notify(this.#beatChannel, `${seq}`),
        alive: async (message) => await this.#listening().notify(this.#channel, JSON.stringify(message)),
        listeners: async () => await this.#listening().others(),
      },
      (error, what) => this.logger.warn({ err: error }, what),
    );
  }

  /** The channel commits are announced on, and hosts say they are alive (one per schema). */
  get #channel(): string {
    return `hx_commit_${this.schema}`.slice(0, 63);
  }

  /** This host's own channel, for its cache beats (pg-lease.ts). */
  get #beatChannel(): string {
    return `hx_beat_${this.#origin}`;
  }

  #listening(): PgListener {
    if (!this.#listener) throw new Error('not listening yet');
    return this.#listener;
  }

  /** How many hosts share the database, this one included, as far as it heard (see PgLease). */
  hostCount(): number {
    return this.#lease.hosts();
  }

  /** Whether a record in this host's cache is current (see PgLease). */
  cacheCurrent(): boolean {
    return this.#lease.usable();
  }

  /** A search answered from the keys this host keeps (PgKeyCache) while its lease holds; null: ask PostgreSQL. */
  async searchKept(
    collection: string,
    index: string,
    match: KeyMatch,
    offset: number,
    limit: number,
  ): Promise<KeyHit[] | null> {
    // A search that is not answered here scans the index: worth waiting a beat's round trip for the lease.
    if (!(await this.#lease.whenUsable(this.#lease.leaseMs * 2))) return null;
    return this.#keyCache.search(collection, index, match, offset, limit);
  }

  collection<T>(name: string): PgCollection<T> {
    const existing = this.#collections.get(name);
    if (!existing) throw new Error(`collection ${name} was not opened`);
    return existing as PgCollection<T>;
  }

  /**
   * Every index declared so far, as `collection/index (unique|list)`, sorted: what this version's commits keep
   * keys of. A change to it needs a migration step (see migration 12), so hosts of the earlier version stop saving.
   */
  declaredIndexes(): string[] {
    return [...this.#collections.values()]
      .flatMap((collection) =>
        [...collection.indexes].map(([index, def]) => `${collection.name}/${index} (${def.kind})`),
      )
      .sort();
  }

  log<E extends { seq: number }, K>(name: string): PgLog<E, K> {
    const existing = this.#logs.get(name);
    if (!existing) throw new Error(`log ${name} was not opened`);
    return existing as unknown as PgLog<E, K>;
  }

  watch(collection: string, listener: ChangeListener): void {
    this.#watchers.add(collection, listener);
  }

  /** Nothing to write behind: every commit is in PostgreSQL once acknowledged. */
  async checkpoint(): Promise<void> {}

  /** Nothing to do: a host holds no history or record that could be behind (every read is a query). */
  async refresh(): Promise<void> {
    // Nothing held to bring up to date: every read is a query.
  }

  /** A query on a pooled connection; an unreachable or stalled database becomes StorageUnavailableError. */
  async query<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    name?: string,
  ): Promise<R[]> {
    try {
      // A named statement is parsed and planned once per connection (the hot reads).
      return (await this.pool.query<R>(name ? { name, text, values } : { text, values })).rows;
    } catch (error) {
      throw storageError(error);
    }
  }

  /**
   * A statement that may safely run twice (an insert keyed by its id, an update setting fixed values), on its own
   * (autocommit). When its answer is lost (the connection broke after sending it) nobody is told anything until it
   * has been sent again and answered, within `settleTimeoutMs`: what the caller hears is what happened. A
   * connection that cannot be had at all fails at once (nothing was sent).
   */
  async writeIdempotent<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[],
    name?: string,
  ): Promise<R[]> {
    const until = Date.now() + this.settleTimeoutMs;
    let lost: unknown = null;
    for (;;) {
      let client: pg.PoolClient;
      try {
        client = await this.#connect();
      } catch (error) {
        if (lost === null || Date.now() >= until || this.#closed) throw settleFailure(lost, error);
        await pause(250);
        continue;
      }
      try {
        const result = await client.query<R>(name ? { name, text, values } : { text, values });
        client.release();
        if (lost !== null)
          this.logger.warn({ err: lost }, 'the answer to a write was lost; sent again, it is done');
        return result.rows;
      } catch (error) {
        client.release(isConnectionError(error));
        // Once an answer was lost, a refusal for time (waiting on the lost try's row, say) settles nothing.
        const unsettled =
          isConnectionError(error) || (lost !== null && classifyPgError(error) === 'unavailable');
        if (!unsettled) throw lost === null ? storageError(error) : settleFailure(lost, error);
        if (Date.now() >= until || this.#closed) throw settleFailure(lost ?? error, error);
        if (isConnectionError(error)) lost = error;
        await pause(100);
      }
    }
  }

  /** Records of `collection` by id; reads of the same turn share one query (PgReadBatch); see PgRecordCache. */
  async read(collection: string, ids: readonly string[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    for (const [id, entry] of await this.readVersioned(collection, ids)) found.set(id, entry.data);
    return found;
  }

  /** A record as this host last read it (see PgRecordCache.peek). */
  peek(collection: string, id: string): Versioned | undefined {
    return this.#cache.peek(collection, id);
  }

  /** As `read`, with each record's version: from the cache while it is current and holds them all. */
  async readVersioned(collection: string, ids: readonly string[]): Promise<Map<string, Versioned>> {
    // The cache first: the lease is asked (and a beat may go) only for a read the cache could answer.
    const kept = this.#cache.peekAll(collection, ids);
    if (kept && this.#lease.usable()) return kept;
    try {
      return await this.#reads.read(collection, ids);
    } catch (error) {
      throw storageError(error);
    }
  }

  async tx<R>(fn: (t: Tx) => R | Promise<R>): Promise<R> {
    if (this.#closed) throw new Error('store is closed');
    const work = this.#run(fn);
    this.#inFlight.add(work);
    try {
      return await work;
    } finally {
      this.#inFlight.delete(work);
    }
  }

  /**
   * Runs `fn` until a run commits. A transaction that met a conflict runs again in this host's retry lane, one at a
   * time: transactions that all changed one record together would otherwise keep meeting each other (each batch of
   * them lets one through), while in line each runs again once.
   */
  async #run<R>(fn: (t: Tx) => R | Promise<R>): Promise<R> {
    for (let run = 0; run < MAX_TX_RUNS; run++) {
      const outcome = run === 0 ? await this.#runOnce(fn) : await this.#inRetryLane(() => this.#runOnce(fn));
      if (outcome) return outcome.result;
      if (run > 0) await backoff(run);
    }
    throw new TransactionConflictError();
  }

  /** One run of `fn` and its commit: its result, or null when something it read changed first. */
  async #runOnce<R>(fn: (t: Tx) => R | Promise<R>): Promise<{ result: R } | null> {
    const t = new PgTransaction(this, `${this.#origin}.${++this.#txCount}`);
    let result: R;
    try {
      result = await fn(t);
    } catch (error) {
      throw failure(error);
    } finally {
      t.done = true;
    }
    const fill = this.#cache.begin([...t.writes.keys()]);
    let done: Committed | null;
    try {
      done = t.writesSomething
        ? await this.#commit(t)
        : (await this.#readsHold(t))
          ? { seqs: [], versions: {}, at: 0, echo: null }
          : null;
    } finally {
      this.#cache.end(fill);
    }
    if (done === null) {
      // Something it read changed before it committed: nothing was written; it runs again on what is there now.
      for (const [collection, id] of t.recordsRead) this.#cache.forget(collection, id);
      return null;
    }
    t.appends.forEach((a, i) => (a.entry.seq = done.seqs[i] ?? a.entry.seq));
    await this.#committed(t, done, fill);
    return { result };
  }

  /** Runs `work` once the transactions before it in the lane are done, or after RETRY_LANE_WAIT_MS at most. */
  #inRetryLane<X>(work: () => Promise<X>): Promise<X> {
    const turn = Promise.race([this.#retryLane, pause(RETRY_LANE_WAIT_MS)]).then(work);
    this.#retryLane = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /**
   * A read-only transaction's answer holds when everything it read is still so (checked in one snapshot). One
   * read alone is consistent with itself, unless it came from this host's cache.
   */
  async #readsHold(t: PgTransaction): Promise<boolean> {
    if (t.readCount <= 1 && !t.unconfirmed) return true;
    const rows = await this.query<{ ok: boolean }>(
      'SELECT hx_reads_hold($1::jsonb) AS ok',
      [JSON.stringify(t.reads)],
      'hx_reads_hold',
    );
    return rows[0]?.ok === true;
  }

  /** A pooled connection, with an error listener while it is out (a broken one must not end the process). */
  async #connect(): Promise<pg.PoolClient> {
    if (this.#closed) throw new Error('store is closed');
    try {
      const client = await this.pool.connect();
      if (!LISTENED.has(client)) {
        LISTENED.add(client);
        client.on('error', (error) => this.logger.warn({ err: error }, 'a PostgreSQL connection broke'));
      }
      return client;
    } catch (error) {
      throw new StorageUnavailableError(error);
    }
  }

  /**
   * Commits `t` (with whatever other commits of this host are waiting: PgCommitBatch): its entries' numbers, or
   * null when something it read changed (nothing written).
   */
  async #commit(t: PgTransaction): Promise<Committed | null> {
    let answer;
    try {
      answer = await this.#commits.commit({ id: t.id, reads: t.reads, w: writeValues(t) });
    } catch (error) {
      // PostgreSQL refused this commit's statement: nothing happened (a deadlock runs it again).
      if (classifyPgError(error) === 'retry') return null;
      throw failure(error);
    }
    if (answer instanceof Error) throw failure(answer);
    return answer;
  }

  /** One statement for several commits; a lost answer is settled, commit by commit, before anyone hears. */
  async #sendCommits(items: readonly CommitItem[]): Promise<CommitAnswer[]> {
    let client: pg.PoolClient;
    try {
      client = await this.#connect();
    } catch (error) {
      // Nothing was sent: none of them happened.
      return items.map(() => (error instanceof Error ? error : new StorageUnavailableError(error)));
    }
    const notice = this.#notice(items);
    try {
      const rows = await client.query<{
        out: { answers: Array<number[] | null>; versions: Record<string, string> };
      }>(commitStatement(items, notice && [this.#channel, notice.payload]));
      client.release();
      const [out, at, echo] = [rows.rows[0]?.out, performance.now(), notice?.heard ?? null];
      const versions = out?.versions ?? {};
      return (out?.answers ?? []).map((seqs) =>
        seqs ? { seqs: seqs.map(Number), versions, at, echo } : null,
      );
    } catch (error) {
      if (notice) this.#lease.dropEcho(notice.n);
      if (!isConnectionError(error)) {
        client.release();
        // PostgreSQL refused the statement for what one of them holds (or a row lock one of them needs is held
        // past its limit): PgCommitBatch sends each again on its own. Else the database is unavailable (a
        // statement past its limit, shutting down, a full disk): none of them happened, and each alone would
        // only wait as long again.
        const lockWait = (error as { code?: string }).code === '55P03';
        if (lockWait || classifyPgError(error) !== 'unavailable') throw error;
        if (isOutdatedHost(error)) this.#sayOutdated(error);
        return items.map(() => storageError(error) as Error);
      }
      const backend = (client as unknown as { processID?: number }).processID ?? null;
      client.release(true);
      return Promise.all(items.map((item) => this.#settled(item.id, backend, error)));
    }
  }

  /** Says, once a minute at most, that a newer version migrated the database and this host saves nothing. */
  #sayOutdated(error: unknown): void {
    const now = performance.now();
    if (now - this.#outdatedSaidAt < 60_000) return;
    this.#outdatedSaidAt = now;
    this.logger.error(
      { err: error },
      'another host migrated the database to a newer version: this host saves nothing until it runs that version',
    );
  }

  /** The answer of a commit whose statement's answer was lost: what its hx_tx_done row says. */
  async #settled(txId: string, backend: number | null, lost: unknown): Promise<CommitAnswer> {
    try {
      const seqs = await this.#settle(txId, backend);
      if (!seqs) return new StorageUnavailableError(lost);
      this.logger.warn({ err: lost }, 'the answer to a commit was lost; it had committed');
      return { seqs, versions: {}, at: performance.now(), echo: null };
    } catch (error) {
      return error instanceof Error ? error : new StorageUnavailableError(error);
    }
  }

  /**
   * Whether transaction `txId` committed (its entries' numbers) or not (null): once the connection that sent it
   * is gone (PostgreSQL finished it one way or the other), its hx_tx_done row tells. Tried until
   * `settleTimeoutMs`; after that the outcome is reported unknown (StorageUnavailableError saying so).
   */
  async #settle(txId: string, backend: number | null): Promise<number[] | null> {
    const until = Date.now() + this.settleTimeoutMs;
    while (Date.now() < until && !this.#closed) {
      try {
        if (backend !== null) {
          const alive = await this.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend]);
          if (alive.rows.length > 0) {
            await pause(100);
            continue;
          }
        }
        const found = await this.pool.query<{ seqs: string[] | null }>(
          'SELECT seqs FROM hx_tx_done WHERE id = $1',
          [txId],
        );
        return found.rows[0] ? (found.rows[0].seqs ?? []).map(Number) : null;
      } catch {
        await pause(250);
      }
    }
    throw new StorageUnavailableError(
      null,
      'The host lost its database while saving this change and could not learn whether it was saved. Check before trying again.',
    );
  }

  /**
   * What other hosts are told of a batch's commits (the records they write), inside the commit itself; null when
   * they write no record. Its number comes back to this host when its listening connection hears it.
   */
  #notice(items: readonly CommitItem[]): { n: number; payload: string; heard: Promise<void> } | null {
    const records: Array<[string, string]> = [];
    for (const { w } of items) {
      w.u_c.forEach((c, i) => records.push([c, w.u_i[i]!]));
      w.r_c.forEach((c, i) => records.push([c, w.r_i[i]!]));
    }
    if (records.length === 0) return null;
    const { n, heard } = this.#lease.expectEcho();
    const full = JSON.stringify({ o: this.#origin, n, r: records });
    // A NOTIFY payload is limited to 8000 bytes: past NOTIFY_MAX, "everything may have changed".
    const payload = full.length <= NOTIFY_MAX ? full : JSON.stringify({ o: this.#origin, n, all: true });
    return { n, payload, heard };
  }

  /**
   * After the commit: this host's cache and watchers told, then, once no host can still answer from a cache
   * that holds what it changed (PgLease), its effects run and it is acknowledged.
   */
  async #committed(t: PgTransaction, done: Committed, fill: CacheFill): Promise<void> {
    for (const w of t.writes.values()) {
      // What this host just wrote is what it keeps (its next read of it then brings only the version back).
      const version = w.data === null ? undefined : done.versions[`${w.collection.name}\u001f${w.id}`];
      if (version === undefined) this.#cache.forget(w.collection.name, w.id);
      else this.#cache.keep(w.collection.name, w.id, { version: String(version), data: w.data }, fill);
    }
    for (const w of t.writes.values()) this.#tell(w.collection.name, w.id, false);
    if (t.writes.size > 0) await this.#lease.acknowledgeable(done.at, done.echo);
    for (const effect of t.effects) effect();
  }

  #tell(collection: string, id: string | null, remote: boolean): void {
    this.#keyCache.changed(collection, id);
    this.#watchers.tell(collection, id, remote);
  }

  /** A beat of this host, a host alive, a commit announced (`all`: too many records to list). */
  #heard(channel: string, payload: string): void {
    if (channel === this.#beatChannel) {
      this.#lease.heardBeat(Number(payload));
      return;
    }
    let message: { o?: string; n?: number; r?: Array<[string, string]>; all?: boolean; alive?: number };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return;
    }
    if (message.alive !== undefined) {
      this.#lease.heardAlive(message as AliveMessage);
      return;
    }
    if (message.o === this.#origin) {
      if (message.n !== undefined) this.#lease.heardOwn(message.n);
      return;
    }
    // Forgotten before anyone is told: a listener reads at once (a ban check), and must not read the copy kept.
    if (message.all) this.#resync();
    for (const [collection, id] of message.r ?? []) {
      this.#cache.forget(collection, id);
      this.#tell(collection, id, true);
    }
  }

  /** The listening connection is (back) up: whatever was announced meanwhile is lost, so all may have changed. */
  #reconnected(): void {
    this.#hello = this.#lease.reconnected();
    this.#resync();
  }

  /** All may have changed (the listening connection was down, or the periodic catch-up). */
  #resync(): void {
    this.#cache.clear();
    for (const name of this.#collections.keys()) this.#tell(name, null, true);
  }

  /** Makes sure every record has its keys in `index` (built once per database, by the first host to ask). */
  indexReady<T>(collection: PgCollection<T>, index: string): Promise<void> {
    const name = `${collection.name}/${index}`;
    let ready = this.#indexesReady.get(name);
    if (!ready) {
      ready = this.#buildIndex(collection, index);
      this.#indexesReady.set(name, ready);
      ready.then(
        () => this.#indexesBuilt.add(name),
        // A failed build (database away, another host building) is tried again by the next read.
        () => this.#indexesReady.delete(name),
      );
    }
    if (this.#indexesBuilt.has(name)) return ready;
    // A build over a big collection takes longer than a request may wait: it goes on, the request is refused.
    const bound = Number(this.connection.statement_timeout ?? 5000);
    return withTimeout(ready, bound, INDEX_BUILDING).catch((error: unknown) => {
      throw error instanceof Error && error.message === INDEX_BUILDING
        ? new StorageUnavailableError(error, INDEX_BUILDING)
        : error;
    });
  }

  /**
   * Makes the keys of the records already there, once per database (hx_indexes says it was done). Writers go on
   * meanwhile: every host that declares the index writes its keys with each record it commits, so the build only
   * fills in those written before, a page at a time, each page in a short transaction of its own that holds its
   * records' commit locks while their keys are inserted: a record changed during the build has the keys its writer
   * gave it, never keys made from what it held before. One host builds at a time (an advisory lock).
   */
  async #buildIndex<T>(collection: PgCollection<T>, index: string): Promise<void> {
    const client = await this.#connect();
    const lock = [INDEX_LOCK, `${collection.name}/${index}`];
    try {
      await client.query('SELECT pg_advisory_lock($1, hashtext($2))', lock);
      try {
        const built = await client.query('SELECT 1 FROM hx_indexes WHERE collection = $1 AND idx = $2', [
          collection.name,
          index,
        ]);
        if (built.rows.length === 0) {
          await this.#fillIndex(client, collection, index, collection.def(index));
          await client.query(
            'INSERT INTO hx_indexes (collection, idx) VALUES ($1, $2) ON CONFLICT DO NOTHING',
            [collection.name, index],
          );
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', lock);
      }
      client.release();
    } catch (error) {
      // Closed, not pooled: the session's advisory lock (and any transaction of a page) goes with it.
      client.release(true);
      // Waited past the lock's limit for the host building it.
      if ((error as { code?: string }).code === '55P03')
        throw new StorageUnavailableError(error, INDEX_BUILDING);
      throw storageError(error);
    }
  }

  async #fillIndex<T>(
    client: pg.PoolClient,
    collection: PgCollection<T>,
    index: string,
    def: IndexDef<T>,
  ): Promise<void> {
    for (let after = ''; ;) {
      await client.query('BEGIN');
      const ids = await this.#fillPage(client, collection, index, def, after);
      await client.query('COMMIT');
      if (ids.length < PAGE) return;
      after = ids.at(-1)!;
    }
  }

  /** The keys of the page of records after `after`, in the caller's transaction; the page's ids. */
  async #fillPage<T>(
    client: pg.PoolClient,
    collection: PgCollection<T>,
    index: string,
    def: IndexDef<T>,
    after: string,
  ): Promise<string[]> {
    // As a commit locks what it writes (the table, then each record: pg-migrations.ts), so a commit writing one of
    // these records waits for this page's keys, or this page for its commit, whose keys then come last.
    await client.query('LOCK TABLE hx_records IN ROW EXCLUSIVE MODE');
    const page = await client.query<{ id: string }>(
      'SELECT id FROM hx_records WHERE collection = $1 AND id > $2 ORDER BY id LIMIT $3',
      [collection.name, after, PAGE],
    );
    const ids = page.rows.map((row) => row.id);
    await client.query(
      `SELECT hx_lock(ARRAY(SELECT 'r' || chr(31) || $1 || chr(31) || i FROM unnest($2::text[]) AS x(i)))`,
      [collection.name, ids],
    );
    // Read again under the locks: as the commits before them left them.
    const records = await client.query<{ id: string; data: T }>(
      'SELECT id, data FROM hx_records WHERE collection = $1 AND id = ANY($2::text[])',
      [collection.name, ids],
    );
    const keys = records.rows.flatMap((row) =>
      [...new Set(def.keysOf(row.data))].map((key) => [key, row.id]),
    );
    if (keys.length > 0) {
      await client.query(
        `INSERT INTO ${collection.keyTable(index)} (collection, idx, key, id)
         SELECT $1, $2, * FROM unnest($3::text[], $4::text[]) ON CONFLICT DO NOTHING`,
        [collection.name, index, keys.map((k) => k[0]), keys.map((k) => k[1])],
      );
    }
    return ids;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    this.#lease.stop();
    if (this.#pruneTimer) clearInterval(this.#pruneTimer);
    if (this.#catchUpTimer) clearInterval(this.#catchUpTimer);
    await this.#listener?.close();
    await this.pool.end().catch(() => undefined);
  }

  /**
   * Connects to `url`, runs the migrations this version knows (in one transaction under an advisory lock, so
   * processes starting together are safe; a database migrated by a newer version is refused), reads each
   * history's keys and starts listening for other processes' commits.
   */
  static async open(
    url: string,
    spec: { collections: string[]; logs?: Array<Pick<LogSpec, 'name' | 'keyOf'>> },
    options: PgStoreOptions = {},
  ): Promise<PgStore> {
    const logger = options.logger ?? silentLogger;
    const statementTimeoutMs = options.statementTimeoutMs ?? 5000;
    const connection: pg.ClientConfig = {
      connectionString: url,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 3000,
      statement_timeout: statementTimeoutMs,
      lock_timeout: options.lockTimeoutMs ?? 2000,
      // The client's own bound: a server that stopped answering (paused, a dead network) never holds a request.
      query_timeout: statementTimeoutMs + 1000,
      idle_in_transaction_session_timeout: Math.max(30_000, statementTimeoutMs * 4),
      keepAlive: true,
      application_name: 'hypernex-companion',
    };
    const pool = new pg.Pool({ ...connection, max: options.poolSize ?? 10 });
    // An idle connection that breaks (the server restarted) must not end the process: the next query reconnects.
    pool.on('error', (error) => logger.warn({ err: error }, 'an idle PostgreSQL connection broke'));
    let store: PgStore | null = null;
    try {
      const schema = await migrate(connection, url, {
        timeoutMs: options.migrationTimeoutMs,
        onMigrating: (from, to) =>
          logger.info({ from, to }, 'migrating the database to a newer schema (other hosts starting wait)'),
      });
      store = new PgStore(
        pool,
        connection,
        schema,
        logger,
        options.settleTimeoutMs ?? 30_000,
        options.cacheLeaseMs ?? DEFAULT_CACHE_LEASE_MS,
        options.searchCacheKeys ?? DEFAULT_SEARCH_CACHE_KEYS,
      );
      await store.#start(spec);
      return store;
    } catch (error) {
      if (store) await store.close();
      else await pool.end().catch(() => undefined);
      throw error;
    }
  }

  async #start(spec: {
    collections: string[];
    logs?: Array<Pick<LogSpec, 'name' | 'keyOf'>>;
  }): Promise<void> {
    for (const name of spec.collections) this.#collections.set(name, new PgCollection(name, this));
    for (const log of spec.logs ?? []) {
      this.#logs.set(log.name, new PgLog(log.name, this));
    }
    // Listen first, so nothing committed while the histories are read goes unheard.
    const name = `hypernex-companion-listen ${this.schema}`.slice(0, 63);
    this.#listener = new PgListener(this.connection, [this.#channel, this.#beatChannel], name, {
      onMessage: (channel, payload) => this.#heard(channel, payload),
      onConnected: () => this.#reconnected(),
      logger: this.logger,
    });
    await this.#listener.start();
    // Said before the store is used: any host's commit from now on waits for this one's lease.
    await this.#hello;
    this.#lease.start();
    this.#pruneTimer = setInterval(() => this.#prune(), 10 * 60_000);
    this.#pruneTimer.unref();
    this.#catchUpTimer = setInterval(() => this.#resync(), RESYNC_MS);
    this.#catchUpTimer.unref();
  }

  #prune(): void {
    this.query(`DELETE FROM hx_tx_done WHERE done_at < now() - ${TX_DONE_KEPT}`).catch((error: unknown) =>
      this.logger.warn({ err: error }, 'pruning old hx_tx_done rows failed'),
    );
  }
}

/** Whether a written record's keys may differ from those stored: unless it was read and its keys are the same. */
function keysMayChange(t: PgTransaction, w: Write): boolean {
  const before = t.seen.get(`${w.collection.name}/${w.id}`);
  if (before === undefined || before === null) return true;
  const keys = (data: unknown) =>
    w.collection
      .keysOf(data)
      .map(({ index, key }) => `${index}\u0000${key}`)
      .sort()
      .join('\u0001');
  return keys(before) !== keys(w.data);
}

/** What a transaction writes, as hx_commit_batch takes it: its records, keys and entries. */
function writeValues(t: PgTransaction): WriteSet {
  const upserts = [...t.writes.values()].filter((w) => w.data !== null);
  const removals = [...t.writes.values()].filter((w) => w.data === null);
  const rekeyed = upserts.filter((w) => keysMayChange(t, w));
  const unique: Array<[string, string, string, string]> = [];
  const lists: Array<[string, string, string, string]> = [];
  for (const w of rekeyed) {
    for (const { kind, index, key } of w.collection.keysOf(w.data)) {
      (kind === 'unique' ? unique : lists).push([w.collection.name, index, key, w.id]);
    }
  }
  const column = <X>(rows: X[][], at: number): X[] => rows.map((row) => row[at]!);
  return {
    u_c: upserts.map((w) => w.collection.name),
    u_i: upserts.map((w) => w.id),
    u_d: upserts.map((w) => JSON.stringify(w.data)),
    r_c: removals.map((w) => w.collection.name),
    r_i: removals.map((w) => w.id),
    kr_c: rekeyed.map((w) => w.collection.name),
    kr_i: rekeyed.map((w) => w.id),
    k_c: column(unique, 0),
    k_x: column(unique, 1),
    k_k: column(unique, 2),
    k_i: column(unique, 3),
    l_c: column(lists, 0),
    l_x: column(lists, 1),
    l_k: column(lists, 2),
    l_i: column(lists, 3),
    e_l: t.appends.map((a) => a.log.name),
    e_d: t.appends.map((a) => JSON.stringify(a.entry)),
  };
}

/** What a request that needs an index still being built is told. */
const INDEX_BUILDING =
  'The database is still building an index this version of Hypernex Companion added (on a big community it ' +
  'takes a while). Nothing was changed; try again shortly.';

/** Connections that already carry the store's error listener. */
const LISTENED = new WeakSet<pg.PoolClient>();

/**
 * What a failed transaction throws: unavailability as StorageUnavailableError, any other refusal of PostgreSQL
 * as StorageWriteError (nothing was changed), the transaction's own errors (an AppError) as they are.
 */
function failure(error: unknown): unknown {
  const mapped = storageError(error);
  return mapped === error && error instanceof pg.DatabaseError ? new StorageWriteError(error) : mapped;
}

/** A short random wait before a transaction runs again, growing with the runs. */
function backoff(run: number): Promise<void> {
  return pause(Math.min(2 ** run, 50) * Math.random());
}

/** A write that could not be settled: unknown outcome when an earlier try's answer was lost, else not saved. */
function settleFailure(lost: unknown, last: unknown): StorageUnavailableError {
  if (lost === null)
    return last instanceof StorageUnavailableError ? last : new StorageUnavailableError(last);
  return new StorageUnavailableError(
    lost,
    'The host lost its database while saving this change and could not learn whether it was saved. Check before trying again.',
  );
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function migrate(connection: pg.ClientConfig, url: string, options: MigrationOptions): Promise<string> {
  try {
    return await runMigrations(connection, PG_MIGRATIONS, options);
  } catch (error) {
    if (error instanceof PgSchemaTooNewError) throw error;
    const code = (error as { code?: string }).code;
    if (code === undefined || /^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|28|3D)/.test(code))
      throw new PostgresUnreachableError(url, error);
    throw error;
  }
}

/**
 * hx_commit_batch's 40 arguments: the batch's 39 (the records written come as one JSON array, nothing to escape,
 * made json[] here), then the schema version this host knows (a host older than the database saves nothing).
 */
const COMMIT_ARGS = Array.from({ length: 40 }, (_, i) =>
  i + 1 === RECORD_DATA_ARG ? `ARRAY(SELECT json_array_elements($${i + 1}::json))` : `$${i + 1}`,
).join(', ');

/** The commit statement for `items`, with the NOTIFY that announces them when `notify` ([channel, payload]) is set. */
function commitStatement(items: readonly CommitItem[], notify: [string, string] | null): pg.QueryConfig {
  const values = [...batchValues(items), PG_SCHEMA_VERSION];
  if (!notify)
    return { name: 'hx_commit_batch', text: `SELECT hx_commit_batch(${COMMIT_ARGS}) AS out`, values };
  // In the same transaction: delivered once the commit is, in commit order, never without it.
  return {
    name: 'hx_commit_batch_notify',
    text: `SELECT hx_commit_batch(${COMMIT_ARGS}) AS out, pg_notify($41, $42)`,
    values: [...values, ...notify],
  };
}
