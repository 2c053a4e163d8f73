import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { StorageWriteError } from '../errors.js';
import { COMMIT_LOCK, PG_MIGRATIONS, PgSchemaTooNewError, runMigrations } from './pg-migrations.js';
import { redactUrl } from './pg-url.js';
import { freeze } from 'immer';
import { txRepo } from './tx-repo.js';
import { ListIndex } from './list-index.js';
import type { DataStore, ReadCollection, ReadLog, Tx, TxRepo } from './seam.js';
import { isSafeId, TransactionConflictError, type LogSpec, type StoreLogger } from './store.js';

export { COMMIT_LOCK, PgSchemaTooNewError, redactUrl };

/**
 * The storage seam on PostgreSQL, for communities that outgrow one machine: several host processes share one
 * database. The seam's reads are synchronous, so each process keeps every record in memory (loaded at open,
 * deeply frozen) and keeps it coherent with the others:
 *
 * - Every commit, from any process, takes one advisory lock, so commits have one order across processes. A
 *   process checks its transactions against its own copy (optimistic concurrency, as the embedded store: every
 *   version a transaction read must still be the newest, or it runs again) and sends the batch to `hx_commit`,
 *   which writes it (records, log entries, its `hx_commits` row naming the records changed), moves the commit
 *   clock and NOTIFYs, in one round trip, provided the clock is where the process's copy is. When another process
 *   committed meanwhile, the process takes the lock itself, catches up (the commits it missed), checks again and
 *   writes. Transactions that are ready together share one PostgreSQL transaction (one lock, one WAL flush).
 * - Other processes LISTEN and, on a notification, pull: the commits past what they applied, then the rows those
 *   name. A process that missed commits (its listening connection dropped, old `hx_commits` rows were pruned)
 *   reloads everything. Readers see a change only once its PostgreSQL transaction committed.
 * - Histories (the moderation log) are rows numbered by the commit sequence; positions follow that order in
 *   every process.
 */

/** A transaction whose reads keep changing under it gives up after this many runs. */
const MAX_TX_RUNS = 50;
/** `hx_commits` rows are kept this long, so a process that fell behind pulls changes instead of reloading. */
const COMMITS_KEPT = "interval '15 minutes'";
/** Pruning old `hx_commits` rows runs once per this many commits. */
const PRUNE_EVERY = 1000;
/** A lost listening connection is opened again after this long (doubling up to 10 s). */
const RELISTEN_MS = 250;

interface Row<T> {
  version: number;
  data: T;
}

interface IndexDef<T> {
  keyOf: (record: T) => string | undefined;
  ids: Map<string, string>;
}

/** One collection as this process holds it: the committed records, frozen, with their versions. */
export class PgCollection<T> implements ReadCollection<T> {
  readonly #rows = new Map<string, Row<T>>();
  readonly #indexes = new Map<string, IndexDef<T>>();
  readonly #lists = new Map<string, ListIndex<T>>();

  constructor(readonly name: string) {}

  get size(): number {
    return this.#rows.size;
  }

  /** The record as this process holds it, synchronously. */
  peek(id: string): T | undefined {
    return this.#rows.get(id)?.data;
  }

  get(id: string): Promise<T | undefined> {
    return Promise.resolve(this.peek(id));
  }

  has(id: string): Promise<boolean> {
    return Promise.resolve(this.#rows.has(id));
  }

  getMany(ids: readonly string[]): Promise<T[]> {
    const found: T[] = [];
    for (const id of ids) {
      const record = this.peek(id);
      if (record !== undefined) found.push(record);
    }
    return Promise.resolve(found);
  }

  count(): Promise<number> {
    return Promise.resolve(this.#rows.size);
  }

  async *scan(): AsyncIterable<T> {
    for (const row of [...this.#rows.values()]) yield row.data;
  }

  find(index: string, key: string): Promise<T | undefined> {
    const id = this.#index(index).ids.get(key);
    return Promise.resolve(id === undefined ? undefined : this.peek(id));
  }

  addListIndex(index: string, keysOf: (record: T) => readonly string[]): void {
    const list = new ListIndex(keysOf);
    for (const [id, row] of this.#rows) list.move(id, null, row.data);
    this.#lists.set(index, list);
  }

  list(index: string, key: string): Promise<T[]> {
    return this.getMany([...this.#list(index).ids(key)]);
  }

  #list(name: string): ListIndex<T> {
    const index = this.#lists.get(name);
    if (!index) throw new Error(`collection ${this.name} has no list index ${name}`);
    return index;
  }

  /** @internal: the ids list index `index` holds under `key`, sorted. */
  listIds(index: string, key: string): string[] {
    return [...this.#list(index).ids(key)].sort();
  }

  /** @internal: whether `data` is listed under `key` in list index `index`. */
  lists(index: string, data: T, key: string): boolean {
    return this.#list(index).lists(data, key);
  }

  addIndex(index: string, keyOf: (record: T) => string | undefined): void {
    const def: IndexDef<T> = { keyOf, ids: new Map() };
    for (const [id, row] of this.#rows) {
      const key = keyOf(row.data);
      if (key !== undefined) def.ids.set(key, id);
    }
    this.#indexes.set(index, def);
  }

  #index(name: string): IndexDef<T> {
    const def = this.#indexes.get(name);
    if (!def) throw new Error(`collection ${this.name} has no index ${name}`);
    return def;
  }

  /** @internal: the committed version of a record (0: none). */
  versionOf(id: string): number {
    return this.#rows.get(id)?.version ?? 0;
  }

  /** @internal: the id holding `key` in `index`. */
  idOf(index: string, key: string): string | undefined {
    return this.#index(index).ids.get(key);
  }

  /** @internal: the index keys of a record, as `index/key` (list indexes' as `list:index/key`). */
  keysOf(data: T): string[] {
    const keys: string[] = [];
    for (const [name, def] of this.#indexes) {
      const key = def.keyOf(data);
      if (key !== undefined) keys.push(`${name}/${key}`);
    }
    for (const [name, list] of this.#lists)
      for (const key of list.keysOf(data)) keys.push(`list:${name}/${key}`);
    return keys;
  }

  /** @internal: a committed version (null: the record was removed); an older one than held is ignored. */
  apply(id: string, version: number, data: T | null): void {
    const current = this.#rows.get(id);
    if (current && current.version > version) return;
    for (const def of this.#indexes.values()) {
      const oldKey = current ? def.keyOf(current.data) : undefined;
      const newKey = data === null ? undefined : def.keyOf(data);
      if (oldKey !== undefined && oldKey !== newKey && def.ids.get(oldKey) === id) def.ids.delete(oldKey);
      if (newKey !== undefined) def.ids.set(newKey, id);
    }
    for (const list of this.#lists.values()) list.move(id, current?.data ?? null, data);
    if (data === null) this.#rows.delete(id);
    else this.#rows.set(id, { version, data });
  }

  /** @internal: ids held, for a full reload. */
  ids(): string[] {
    return [...this.#rows.keys()];
  }
}

/** A history as this process holds it: each entry's sequence number and key; entries are read from the table. */
export class PgLog<E extends { seq: number }, K> implements ReadLog<E, K> {
  readonly #index: Array<{ seq: number; key: K }> = [];
  readonly #listeners: Array<(entry: E, position: number) => void> = [];
  #maxSeq = 0;

  constructor(
    readonly name: string,
    private readonly keyOf: (entry: E) => K,
    private readonly fetch: (seq: number) => Promise<E>,
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
    return this.fetch(at.seq);
  }

  onAppend(listener: (entry: E, position: number) => void): void {
    this.#listeners.push(listener);
  }

  /** @internal: a committed entry, in sequence order; `quiet` at open (no listeners yet). */
  accept(entry: E, quiet = false): void {
    if (entry.seq <= this.#maxSeq) return;
    this.#maxSeq = entry.seq;
    const position = this.#index.length;
    this.#index.push({ seq: entry.seq, key: this.keyOf(entry) });
    if (!quiet) for (const listener of this.#listeners) listener(entry, position);
  }
}

interface Write {
  collection: PgCollection<unknown>;
  id: string;
  data: unknown;
}

class PgTransaction implements Tx {
  readonly writes = new Map<string, Write>();
  readonly reads = new Map<string, { collection: PgCollection<unknown>; id: string; version: number }>();
  readonly keyReads = new Map<
    string,
    { collection: PgCollection<unknown>; index: string; key: string; id: string | undefined }
  >();
  readonly listReads = new Map<
    string,
    { collection: PgCollection<unknown>; index: string; key: string; ids: string }
  >();
  readonly appends: Array<{ log: PgLog<{ seq: number }, unknown>; entry: { seq: number } }> = [];
  readonly effects: Array<() => void> = [];
  done = false;

  constructor(private readonly store: PgStore) {}

  #live(): void {
    if (this.done) throw new Error('transaction already ended');
  }

  repo<T>(name: string): TxRepo<T> {
    const collection = this.store.collection<unknown>(name);
    const key = (id: string): string => `${name}/${id}`;
    const read = (id: string): unknown => {
      this.#live();
      const own = this.writes.get(key(id));
      if (own) return own.data ?? undefined;
      if (!this.reads.has(key(id)))
        this.reads.set(key(id), { collection, id, version: collection.versionOf(id) });
      return collection.peek(id);
    };
    const write = (id: string, data: unknown): void => {
      this.#live();
      if (!isSafeId(id)) throw new Error(`unsafe record id ${JSON.stringify(id)}`);
      this.writes.set(key(id), { collection, id, data });
    };
    const find = (index: string, indexKey: string): unknown => {
      this.#live();
      for (const own of this.writes.values()) {
        if (own.collection !== collection || own.data === null) continue;
        if (collection.keysOf(own.data).includes(`${index}/${indexKey}`)) return own.data;
      }
      const id = collection.idOf(index, indexKey);
      const readKey = `${name}/${index}/${indexKey}`;
      if (!this.keyReads.has(readKey)) this.keyReads.set(readKey, { collection, index, key: indexKey, id });
      return id === undefined ? undefined : read(id);
    };
    const listIds = (index: string, indexKey: string): string[] => {
      this.#live();
      const committed = collection.listIds(index, indexKey);
      const readKey = `${name}/list:${index}/${indexKey}`;
      if (!this.listReads.has(readKey))
        this.listReads.set(readKey, { collection, index, key: indexKey, ids: committed.join(' ') });
      const ids = new Set(committed);
      for (const own of this.writes.values()) {
        if (own.collection !== collection) continue;
        if (own.data !== null && collection.lists(index, own.data, indexKey)) ids.add(own.id);
        else ids.delete(own.id);
      }
      return [...ids];
    };
    return txRepo<T>(name, { read, write, find, listIds });
  }

  append<E extends { seq: number }>(name: string, entry: E): E {
    this.#live();
    this.appends.push({ log: this.store.log(name) as unknown as PgLog<{ seq: number }, unknown>, entry });
    return entry;
  }

  afterCommit(effect: () => void): void {
    this.effects.push(effect);
  }

  /** Whether every version this transaction read is still the newest this process holds. */
  valid(): boolean {
    for (const read of this.reads.values()) {
      if (read.collection.versionOf(read.id) !== read.version) return false;
    }
    for (const read of this.keyReads.values()) {
      if (read.collection.idOf(read.index, read.key) !== read.id) return false;
    }
    for (const read of this.listReads.values()) {
      if (read.collection.listIds(read.index, read.key).join(' ') !== read.ids) return false;
    }
    return true;
  }

  get writesSomething(): boolean {
    return this.writes.size > 0 || this.appends.length > 0;
  }
}

/** A transaction waiting for the committer: it resolves true once committed, false when it must run again. */
interface Queued {
  t: PgTransaction;
  settle: (committed: boolean) => void;
  fail: (error: unknown) => void;
}

interface Plan {
  accepted: Queued[];
  retry: Queued[];
  assigned: Array<{ write: Write; seq: number }>;
  prev: number;
  next: number;
  params: unknown[];
}

export interface PgStoreOptions {
  logger?: StoreLogger;
  /** Connections in the pool (the committer uses one at a time; log reads use the others). */
  poolSize?: number;
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

type Client = pg.PoolClient | pg.Client;

export class PgStore implements DataStore {
  readonly #collections = new Map<string, PgCollection<unknown>>();
  readonly #logs = new Map<string, PgLog<{ seq: number }, unknown>>();
  readonly #origin = randomBytes(12).toString('hex');
  /** The commit clock this process's copy reflects. */
  #applied = 0;
  #queue: Queued[] = [];
  #pullWanted = false;
  #working: Promise<void> | null = null;
  #closed = false;
  #listener: pg.Client | null = null;
  #relistenTimer: NodeJS.Timeout | null = null;
  #commitsSincePrune = 0;
  #retryTail: Promise<void> = Promise.resolve();
  /** Pulls asked for (refresh) and done, so a caller waits for a pull that started after it asked. */
  #pullsAsked = 0;
  #pullsDone = 0;
  #pullFailed: { upTo: number; error: unknown } = { upTo: 0, error: null };
  readonly #inFlight = new Set<Promise<unknown>>();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly connection: pg.ClientConfig,
    readonly schema: string,
    readonly logger: StoreLogger,
  ) {}

  /** The channel commits are announced on (one per schema). */
  get #channel(): string {
    return `hx_commit_${this.schema}`.slice(0, 63);
  }

  collection<T>(name: string): PgCollection<T> {
    const existing = this.#collections.get(name);
    if (!existing) throw new Error(`collection ${name} was not opened`);
    return existing as PgCollection<T>;
  }

  log<E extends { seq: number }, K>(name: string): PgLog<E, K> {
    const existing = this.#logs.get(name);
    if (!existing) throw new Error(`log ${name} was not opened`);
    return existing as unknown as PgLog<E, K>;
  }

  /** The commit clock this process has applied. */
  get applied(): number {
    return this.#applied;
  }

  /** Nothing to write behind: every commit is in PostgreSQL once acknowledged (kept so hosts treat both stores alike). */
  async checkpoint(): Promise<void> {}

  /** Brings this process's copy up to every commit made so far, by any process. */
  async refresh(): Promise<void> {
    const wanted = ++this.#pullsAsked;
    this.#pullWanted = true;
    while (this.#pullsDone < wanted) {
      if (this.#closed) throw new Error('store is closed');
      if (this.#pullFailed.upTo >= wanted) throw this.#pullFailed.error;
      await this.#kick();
    }
  }

  async tx<R>(fn: (t: Tx) => R | Promise<R>): Promise<R> {
    for (let run = 0; run < MAX_TX_RUNS; run++) {
      if (this.#closed) throw new Error('store is closed');
      // A transaction that conflicted twice runs alone among this process's retried ones, until it committed.
      const release = run >= 2 ? await this.#retryLock() : null;
      try {
        const t = new PgTransaction(this);
        let result: R;
        try {
          result = await fn(t);
        } finally {
          t.done = true;
        }
        if (!t.valid()) continue;
        if (t.writesSomething) {
          const work = new Promise<boolean>((settle, fail) => {
            this.#queue.push({ t, settle, fail });
          });
          this.#inFlight.add(work);
          void this.#kick();
          try {
            if (!(await work)) continue;
          } finally {
            this.#inFlight.delete(work);
          }
        }
        for (const effect of t.effects) effect();
        return result;
      } finally {
        release?.();
      }
    }
    throw new TransactionConflictError();
  }

  async #retryLock(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.#retryTail;
    this.#retryTail = before.then(() => held);
    await before;
    return release;
  }

  /** Runs the committer (pulls and commit batches, one at a time) unless it runs; resolves when it is idle. */
  #kick(): Promise<void> {
    this.#working ??= this.#work().finally(() => {
      this.#working = null;
      // Work queued between the loop's last look and now would otherwise wait for the next caller.
      if (this.#queue.length > 0 || (this.#pullWanted && !this.#closed)) void this.#kick();
    });
    return this.#working;
  }

  async #work(): Promise<void> {
    for (;;) {
      if (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        await this.#commit(batch);
      } else if (this.#pullWanted) {
        this.#pullWanted = false;
        const covering = this.#pullsAsked;
        try {
          await this.#consistentPull();
          this.#pullsDone = covering;
        } catch (error) {
          this.#pullFailed = { upTo: covering, error };
          if (!this.#closed)
            this.logger.error({ err: error }, 'reading other hosts’ commits failed; will retry');
          if (this.#closed) return;
          this.#scheduleRelisten();
          return;
        }
      } else return;
    }
  }

  /** Pulls in its own read-only snapshot (outside the commit lock). */
  async #consistentPull(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await this.#pull(client);
      await client.query('COMMIT');
      client.release();
    } catch (error) {
      client.release(true);
      throw error;
    }
  }

  /**
   * Applies every commit past `#applied` as `client` sees the database: the records `hx_commits` names (or all of
   * them when commits are missing from it), then the log entries, in sequence order.
   */
  async #pull(client: Client, known?: number): Promise<void> {
    const clock =
      known ?? Number((await client.query<{ seq: string }>('SELECT seq FROM hx_clock')).rows[0]!.seq);
    if (clock <= this.#applied) return;
    const commits = await client.query<{ seq: string; prev: string; changes: Array<[string, string]> }>(
      'SELECT seq, prev, changes FROM hx_commits WHERE seq > $1 AND seq <= $2 ORDER BY seq',
      [this.#applied, clock],
    );
    const chained =
      commits.rows.length > 0 &&
      Number(commits.rows[0]!.prev) === this.#applied &&
      Number(commits.rows.at(-1)!.seq) === clock;
    if (chained) {
      const keys = new Map<string, [string, string]>();
      for (const commit of commits.rows)
        for (const [c, id] of commit.changes) keys.set(`${c}/${id}`, [c, id]);
      const wanted = [...keys.values()].filter(([c]) => this.#collections.has(c));
      const rows = await client.query<{ collection: string; id: string; version: string; data: unknown }>(
        `SELECT collection, id, version, data FROM hx_records
          WHERE (collection, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [wanted.map(([c]) => c), wanted.map(([, id]) => id)],
      );
      const found = new Set<string>();
      for (const row of rows.rows) {
        found.add(`${row.collection}/${row.id}`);
        this.collection(row.collection).apply(row.id, Number(row.version), freeze(row.data, true));
      }
      for (const [c, id] of wanted) {
        if (!found.has(`${c}/${id}`)) this.collection(c).apply(id, Number.MAX_SAFE_INTEGER, null);
      }
    } else {
      await this.#loadAll(client);
    }
    await this.#pullLogs(client, clock, false);
    this.#applied = clock;
  }

  /** Every record, replacing what this process holds (at open, or after missing commits). */
  async #loadAll(client: Client): Promise<void> {
    const rows = await client.query<{ collection: string; id: string; version: string; data: unknown }>(
      'SELECT collection, id, version, data FROM hx_records',
    );
    const seen = new Map<string, Set<string>>();
    for (const name of this.#collections.keys()) seen.set(name, new Set());
    for (const row of rows.rows) {
      const ids = seen.get(row.collection);
      if (!ids) continue; // a collection this version does not open
      ids.add(row.id);
      this.collection(row.collection).apply(row.id, Number(row.version), freeze(row.data, true));
    }
    for (const [name, ids] of seen) {
      const collection = this.collection(name);
      for (const id of collection.ids())
        if (!ids.has(id)) collection.apply(id, Number.MAX_SAFE_INTEGER, null);
    }
  }

  async #pullLogs(client: Client, clock: number, quiet: boolean): Promise<void> {
    if (this.#logs.size === 0) return;
    const entries = await client.query<{ log: string; seq: string; entry: { seq: number } }>(
      'SELECT log, seq, entry FROM hx_log_entries WHERE seq > $1 AND seq <= $2 AND log = ANY($3) ORDER BY seq',
      [this.#applied, clock, [...this.#logs.keys()]],
    );
    for (const row of entries.rows) {
      this.#logs.get(row.log)!.accept({ ...row.entry, seq: Number(row.seq) }, quiet);
    }
  }

  /**
   * Which transactions of `batch` may commit on top of this process's copy (every version they read still the
   * newest, and none read what an earlier one of the batch writes), with sequence numbers after `#applied`.
   */
  #plan(batch: Queued[]): Plan {
    const accepted: Queued[] = [];
    const retry: Queued[] = [];
    const touched = new Set<string>();
    for (const queued of batch) {
      const { t } = queued;
      let ok = t.valid();
      if (ok) for (const key of t.reads.keys()) if (touched.has(key)) ok = false;
      if (ok) for (const key of t.keyReads.keys()) if (touched.has(key)) ok = false;
      if (ok) for (const key of t.listReads.keys()) if (touched.has(key)) ok = false;
      if (!ok) {
        retry.push(queued);
        continue;
      }
      accepted.push(queued);
      for (const [key, write] of t.writes) {
        touched.add(key);
        const before = write.collection.peek(write.id);
        const keys = [
          ...(before === undefined ? [] : write.collection.keysOf(before)),
          ...(write.data === null ? [] : write.collection.keysOf(write.data)),
        ];
        for (const indexKey of keys) touched.add(`${write.collection.name}/${indexKey}`);
      }
    }
    const prev = this.#applied;
    let next = prev;
    const assigned: Array<{ write: Write; seq: number }> = [];
    const logRows: Array<{ log: string; seq: number; json: string }> = [];
    for (const { t } of accepted) {
      for (const write of t.writes.values()) assigned.push({ write, seq: ++next });
      for (const append of t.appends) {
        append.entry.seq = ++next;
        logRows.push({ log: append.log.name, seq: append.entry.seq, json: JSON.stringify(append.entry) });
      }
    }
    // The last write of a record in the batch is the one kept.
    const finals = new Map<string, { write: Write; seq: number }>();
    for (const item of assigned) finals.set(`${item.write.collection.name}/${item.write.id}`, item);
    const upserts = [...finals.values()].filter(({ write }) => write.data !== null);
    const removals = [...finals.values()].filter(({ write }) => write.data === null);
    const params = [
      prev,
      next,
      this.#origin,
      this.#channel,
      upserts.map(({ write }) => write.collection.name),
      upserts.map(({ write }) => write.id),
      upserts.map(({ seq }) => seq),
      upserts.map(({ write }) => JSON.stringify(write.data)),
      removals.map(({ write }) => write.collection.name),
      removals.map(({ write }) => write.id),
      logRows.map((row) => row.log),
      logRows.map((row) => row.seq),
      logRows.map((row) => row.json),
      JSON.stringify([...finals.values()].map(({ write }) => [write.collection.name, write.id])),
    ];
    return { accepted, retry, assigned, prev, next, params };
  }

  /**
   * Commits `batch` in one PostgreSQL transaction; transactions whose reads changed are told to run again.
   * First in one round trip (`hx_commit`, which commits only when no other process committed since this one's
   * copy was current); when another did, under the commit lock: catch up, check again, write, COMMIT.
   */
  async #commit(batch: Queued[]): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      for (const queued of batch) queued.fail(new StorageWriteError(error));
      return;
    }
    // The plan last sent: after a connection lost on the way, its sequence number tells whether it committed.
    const sent: { plan: Plan | null } = { plan: null };
    let plan: Plan | null = null;
    try {
      plan = this.#plan(batch);
      sent.plan = plan;
      if (plan.accepted.length > 0) {
        const fast = await client.query<{ ok: boolean }>(
          'SELECT hx_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::json) AS ok',
          plan.params,
        );
        if (!fast.rows[0]!.ok) plan = await this.#lockedCommit(client, batch, sent);
      }
    } catch (error) {
      plan = sent.plan;
      client.release(true);
      // A refusal PostgreSQL answered rolled the transaction back; a connection lost on the way leaves it unknown
      // until the commit lock shows the sender's transaction ended.
      const committed =
        plan !== null &&
        plan.accepted.length > 0 &&
        !(error instanceof pg.DatabaseError) &&
        (await this.#wasCommitted(plan.next));
      if (!committed || plan === null) {
        const retry = plan?.retry ?? [];
        for (const queued of batch) {
          if (retry.includes(queued)) queued.settle(false);
          else queued.fail(new StorageWriteError(error));
        }
        return;
      }
      this.#applyPlan(plan);
      return;
    }
    client.release();
    this.#applyPlan(plan);
    if (plan.accepted.length > 0 && ++this.#commitsSincePrune >= PRUNE_EVERY) {
      this.#commitsSincePrune = 0;
      await this.pool
        .query(`DELETE FROM hx_commits WHERE seq < $1 AND committed_at < now() - ${COMMITS_KEPT}`, [
          plan.prev,
        ])
        .catch((error: unknown) => this.logger.warn({ err: error }, 'pruning old hx_commits rows failed'));
    }
  }

  /** The slow path: under the commit lock, this process catches up, plans again, and commits. */
  async #lockedCommit(client: pg.PoolClient, batch: Queued[], sent: { plan: Plan | null }): Promise<Plan> {
    // One round trip: in READ COMMITTED the clock is read after the lock is held (each statement's own snapshot).
    const results = (await client.query(
      `BEGIN; SELECT pg_advisory_xact_lock(${COMMIT_LOCK}, hashtext(current_schema())); SELECT seq FROM hx_clock`,
    )) as unknown as pg.QueryResult[];
    try {
      await this.#pull(client, Number((results[2]!.rows[0] as { seq: string }).seq));
      const plan = this.#plan(batch);
      sent.plan = plan;
      if (plan.accepted.length > 0) {
        const written = await client.query<{ ok: boolean }>(
          'SELECT hx_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::json) AS ok',
          plan.params,
        );
        if (!written.rows[0]!.ok) throw new Error('the commit clock moved under the commit lock');
      }
      await client.query(plan.accepted.length > 0 ? 'COMMIT' : 'ROLLBACK');
      return plan;
    } catch (error) {
      if (error instanceof pg.DatabaseError) await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** A committed plan: readers see it now, in sequence order; its transactions resolve (or run again). */
  #applyPlan(plan: Plan): void {
    for (const { write, seq } of plan.assigned) write.collection.apply(write.id, seq, write.data);
    for (const { t } of plan.accepted) for (const append of t.appends) append.log.accept(append.entry);
    this.#applied = plan.next;
    for (const queued of plan.accepted) queued.settle(true);
    for (const queued of plan.retry) queued.settle(false);
  }

  /**
   * After COMMIT failed in transit: whether it happened. Taking the commit lock waits until the connection that
   * sent it has finished (committed or rolled back); then its `hx_commits` row tells.
   */
  async #wasCommitted(seq: number): Promise<boolean> {
    const client = new pg.Client(this.connection);
    try {
      await client.connect();
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${COMMIT_LOCK}, hashtext(current_schema()))`);
      const found = await client.query('SELECT 1 FROM hx_commits WHERE seq = $1 AND origin = $2', [
        seq,
        this.#origin,
      ]);
      await client.query('ROLLBACK');
      return found.rows.length > 0;
    } catch (error) {
      this.logger.error(
        { err: error },
        'could not tell whether a commit reached PostgreSQL; reporting it failed',
      );
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async #fetchEntry(log: string, seq: number): Promise<{ seq: number }> {
    const result = await this.pool.query<{ entry: { seq: number } }>(
      'SELECT entry FROM hx_log_entries WHERE log = $1 AND seq = $2',
      [log, seq],
    );
    const row = result.rows[0];
    if (!row) throw new Error(`log ${log} has no entry ${seq}`);
    return { ...row.entry, seq };
  }

  async #listen(): Promise<void> {
    const client = new pg.Client(this.connection);
    client.on('notification', (message) => {
      if (message.channel !== this.#channel) return;
      // "SEQ ORIGIN": this process's own commits are applied as they commit.
      const [seq, origin] = (message.payload ?? '').split(' ');
      if (origin !== this.#origin && Number(seq) > this.#applied) {
        this.#pullWanted = true;
        void this.#kick();
      }
    });
    const lost = (error?: Error): void => {
      if (this.#listener !== client) return;
      this.#listener = null;
      if (this.#closed) return;
      this.logger.warn(
        { err: error },
        'lost the PostgreSQL connection that hears other hosts’ commits; reopening',
      );
      void client.end().catch(() => undefined);
      this.#scheduleRelisten();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    await client.query(`LISTEN "${this.#channel.replace(/"/g, '""')}"`);
    this.#listener = client;
  }

  #relistenDelay = RELISTEN_MS;

  #scheduleRelisten(): void {
    if (this.#closed || this.#relistenTimer) return;
    this.#relistenTimer = setTimeout(() => {
      this.#relistenTimer = null;
      void (async () => {
        try {
          if (!this.#listener) await this.#listen();
          this.#relistenDelay = RELISTEN_MS;
          // Commits made while nobody listened.
          this.#pullWanted = true;
          await this.#kick();
        } catch (error) {
          this.logger.warn({ err: error }, 'PostgreSQL is still unreachable; trying again');
          this.#relistenDelay = Math.min(this.#relistenDelay * 2, 10_000);
          this.#scheduleRelisten();
        }
      })();
    }, this.#relistenDelay);
    this.#relistenTimer.unref();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    await this.#working?.catch(() => undefined);
    if (this.#relistenTimer) clearTimeout(this.#relistenTimer);
    const listener = this.#listener;
    this.#listener = null;
    await listener?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }

  /**
   * Connects to `url`, runs the migrations this version knows (in one transaction under an advisory lock, so
   * processes starting together are safe; a database migrated by a newer version is refused), loads every record
   * and history, and starts listening for other processes' commits.
   */
  static async open(
    url: string,
    spec: { collections: string[]; logs?: Array<Pick<LogSpec, 'name' | 'keyOf'>> },
    options: PgStoreOptions = {},
  ): Promise<PgStore> {
    // A schema other than public is chosen in the URL, as libpq does: ?options=-c%20search_path%3DNAME
    const connection: pg.ClientConfig = { connectionString: url };
    const pool = new pg.Pool({ ...connection, max: options.poolSize ?? 6 });
    const logger = options.logger ?? silentLogger;
    // An idle connection that breaks (the server restarted) must not end the process: the next query reconnects.
    pool.on('error', (error) => logger.warn({ err: error }, 'an idle PostgreSQL connection broke'));
    let store: PgStore | null = null;
    try {
      let schema: string;
      try {
        schema = await runMigrations(pool, PG_MIGRATIONS);
      } catch (error) {
        if (error instanceof PgSchemaTooNewError) throw error;
        const code = (error as { code?: string }).code;
        if (code === undefined || /^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|28|3D)/.test(code))
          throw new PostgresUnreachableError(url, error);
        throw error;
      }
      store = new PgStore(pool, connection, schema, logger);
      for (const name of spec.collections) store.#collections.set(name, new PgCollection(name));
      for (const log of spec.logs ?? []) {
        store.#logs.set(
          log.name,
          new PgLog(log.name, log.keyOf as (entry: { seq: number }) => unknown, (seq) =>
            store!.#fetchEntry(log.name, seq),
          ),
        );
      }
      // Listen first, so no commit made while loading goes unheard; the pull after loading covers the gap.
      await store.#listen();
      const client = await pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const clock = Number((await client.query<{ seq: string }>('SELECT seq FROM hx_clock')).rows[0]!.seq);
        await store.#loadAll(client);
        await store.#pullLogs(client, clock, true);
        store.#applied = clock;
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      return store;
    } catch (error) {
      if (store) await store.close();
      else await pool.end().catch(() => undefined);
      throw error;
    }
  }
}
