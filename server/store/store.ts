import { mkdir, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { assertUsableDataFolder, type DataFolderKind } from './data-folder.js';
import { Low } from 'lowdb';
import {
  CorruptDataFileError,
  DurableJSONFile,
  readJsonFileSync,
  syncDir,
  writeFileAtomic,
} from './durable-file.js';
import { acquireLock } from './lock.js';
import { StoreLog, type StoreLogContents } from './store-log.js';
import { WriteAheadLog, type LogFileSystem, type WalContents } from './wal.js';
import { FolderChecker } from './record-check.js';
import {
  checkFolderLogs,
  isSafeId,
  readJournal,
  readMeta,
  walEntryCheck,
  type FoundMeta,
  type JournalEntry,
} from './startup-read.js';
import { freeze } from 'immer';
import { txRepo } from './tx-repo.js';
import { ChangeWatchers, type ChangeListener } from './change-watchers.js';
import { idsWith, ListIndex } from './list-index.js';
import { KeyList, type KeyHit, type KeyMatch } from './key-search.js';
import type { DataStore, ReadCollection, Tx, TxRepo } from './seam.js';

export type { DataStore, Tx, TxRepo } from './seam.js';

export { DataFolderInUseError } from './lock.js';
export { isSafeId, SchemaTooNewError } from './startup-read.js';
export { InvalidRecordError } from './record-check.js';
export { StorageWriteError } from './wal.js';

/**
 * The embedded store: the data folder. Each collection is a folder with one small JSON file per record, so the
 * cost of an acknowledged write does not grow with what is stored; histories (the moderation log) are JSON-lines
 * files. Everything is read into memory at startup.
 *
 * Services change data only inside `store.tx(async (t) => ...)`: the transaction reads (its own writes first,
 * then the newest committed versions), writes, and appends log entries; at its end everything it changed becomes
 * one line of the write-ahead log (wal/), where all commits arriving together share one write and one fdatasync.
 * Records handed out are deeply frozen: nothing outside the store holds a mutable reference. A change becomes
 * visible to readers (`collection.get`) only once its line is durable; a transaction that read a version that
 * changed before it committed runs again (optimistic concurrency). Checkpoints write the record files behind
 * (each atomically, fsynced) and the logs' files, then delete the log segments they cover; startup replays
 * whatever log is left, by sequence number, so a replay never overwrites newer data.
 */

export const SCHEMA_VERSION = 1;

export interface StoreMeta {
  schemaVersion: number;
  createdAt: number;
  /** First layout: host settings lived here; they now live in the settings collection (read once to move). */
  ownerSetupDone?: boolean;
  settings?: { requireInviteCode?: boolean };
}

/** Where background failures (checkpoints, log writes) are reported; pino's logger fits. */
export interface StoreLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

const silentLogger: StoreLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

interface Version<T> {
  seq: number;
  data: T | null;
}

interface PendingVersion<T> extends Version<T> {
  /** Resolves (or rejects) when the commit that wrote it is durable (or failed). */
  durable: Promise<void>;
}

/** A record version that is durable in the log and waits for the next checkpoint to reach its file. */
interface Durable {
  collection: string;
  id: string;
  seq: number;
  /** The record file's content: {"seq":..,"data":..}. */
  text: string;
  /** A deletion: the checkpoint deletes the record file instead of writing it. */
  removed: boolean;
}

/** A checkpoint starts once the current log segment holds this many lines or bytes. */
const CHECKPOINT_LINES = 20_000;
const CHECKPOINT_BYTES = 32 * 1024 * 1024;
/** ...or this long after the first change it has not covered yet. */
const CHECKPOINT_AFTER_MS = 30_000;
/** A failed checkpoint is tried again after this long (a full disk: once space returns). */
const CHECKPOINT_RETRY_MS = 5_000;
/** Record files a checkpoint writes at once (the log's fdatasyncs share the same file-system threads). */
const CHECKPOINT_WRITERS = 4;
/**
 * Opening and closing wait for a checkpoint only up to this many records (about a second of writes): past it,
 * open checkpoints in the background and close leaves the log for the next start to replay, so neither keeps
 * the user waiting.
 */
const WAITED_CHECKPOINT_MAX = 2000;
/** A transaction whose reads keep changing under it gives up after this many runs. */
const MAX_TX_RUNS = 50;

class CheckpointStopped extends Error {}

export class TransactionConflictError extends Error {
  constructor() {
    super(`a transaction conflicted with concurrent changes ${MAX_TX_RUNS} times in a row`);
    this.name = 'TransactionConflictError';
  }
}

/** A unique secondary key of a collection (e.g. a user's lower-cased name). */
interface IndexDef<T> {
  keyOf: (record: T) => string | undefined;
  durable: Map<string, string>;
  /** Bumped whenever a durable key comes or goes (searches rebuild what they keep from the index then). */
  version: number;
  /** Keys of versions committed but not durable yet: seen by transactions, not by readers. */
  pending: Map<string, string>;
}

/** The committed (durable) records of one collection, read-only, and what transactions see on top. */
export class Collection<T> implements ReadCollection<T> {
  readonly #durable = new Map<string, Version<T>>();
  readonly #pending = new Map<string, PendingVersion<T>>();
  readonly #indexes = new Map<string, IndexDef<T>>();
  readonly #lists = new Map<string, ListIndex<T>>();
  /** What searches keep of each index, and the index's version it was built from. */
  readonly #keyLists = new Map<string, { version: number; list: KeyList }>();
  #live = 0;

  constructor(
    readonly name: string,
    readonly dir: string,
  ) {}

  /** How many live records there are (synchronous: the embedded store holds them all). */
  get size(): number {
    return this.#live;
  }

  /** The durable record, frozen (synchronous: the embedded store holds them all). */
  peek(id: string): T | undefined {
    return this.#durable.get(id)?.data ?? undefined;
  }

  get(id: string): Promise<T | undefined> {
    return Promise.resolve(this.peek(id));
  }

  has(id: string): Promise<boolean> {
    return Promise.resolve(this.peek(id) !== undefined);
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
    return Promise.resolve(this.#live);
  }

  async *scan(): AsyncIterable<T> {
    // A copy: records committed while the caller awaits between items must not disturb the iteration.
    for (const record of [...this.values()]) yield record;
  }

  *values(): IterableIterator<T> {
    for (const entry of this.#durable.values()) if (entry.data !== null) yield entry.data;
  }

  /** Every durable record with its id and the sequence number of its last change (for `migrate`). */
  *entries(): IterableIterator<{ id: string; seq: number; data: T }> {
    for (const [id, entry] of this.#durable)
      if (entry.data !== null) yield { id, seq: entry.seq, data: entry.data };
  }

  /** Sequence number of the record's last durable change (0 when unknown). */
  seqOf(id: string): number {
    return this.#durable.get(id)?.seq ?? 0;
  }

  /** Adds a unique secondary key, e.g. users by lower-cased name. */
  addIndex(name: string, keyOf: (record: T) => string | undefined): void {
    const def: IndexDef<T> = { keyOf, durable: new Map(), pending: new Map(), version: 0 };
    for (const [id, version] of this.#durable) {
      const key = version.data === null ? undefined : keyOf(version.data);
      if (key !== undefined) def.durable.set(key, id);
    }
    this.#indexes.set(name, def);
    this.#keyLists.delete(name);
  }

  addListIndex(name: string, keysOf: (record: T) => readonly string[]): void {
    const index = new ListIndex(keysOf);
    for (const [id, version] of this.#durable) index.move(id, null, version.data);
    this.#lists.set(name, index);
    this.#keyLists.delete(name);
  }

  list(name: string, key: string): Promise<T[]> {
    return this.getMany([...this.#list(name).ids(key)]);
  }

  #list(name: string): ListIndex<T> {
    const index = this.#lists.get(name);
    if (!index) throw new Error(`collection ${this.name} has no list index ${name}`);
    return index;
  }

  /** @internal: the ids list index `name` holds under `key` among committed versions (durable or not), sorted. */
  headList(name: string, key: string): string[] {
    const pending = [...this.#pending].map(([id, version]): [string, T | null] => [id, version.data]);
    return idsWith(this.#list(name), key, this.#list(name).ids(key), pending);
  }

  /** @internal: whether `data` is listed under `key` in list index `name`. */
  lists(name: string, data: T, key: string): boolean {
    return this.#list(name).lists(data, key);
  }

  /** The durable record with this key in index `name`. */
  find(name: string, key: string): Promise<T | undefined> {
    return Promise.resolve(this.peekFind(name, key));
  }

  findByPrefix(name: string, prefix: string, limit: number): Promise<T[]> {
    // Every key is in memory here: a walk of the index, no record read but those returned.
    const keys = [...this.#index(name).durable.keys()].filter((key) => key.startsWith(prefix)).sort();
    const found = keys.slice(0, limit).map((key) => this.peekFind(name, key));
    return Promise.resolve(found.filter((record): record is T => record !== undefined));
  }

  searchKeys(name: string, match: KeyMatch, offset: number, limit: number): Promise<KeyHit[]> {
    return Promise.resolve(this.#keyList(name).find(match, offset, limit));
  }

  /** The sorted keys of index `name` (unique or list), rebuilt after the index changed. */
  #keyList(name: string): KeyList {
    const unique = this.#indexes.get(name);
    const version = unique ? unique.version : this.#list(name).version;
    const kept = this.#keyLists.get(name);
    if (kept?.version === version) return kept.list;
    const list = unique ? this.#uniqueKeyList(unique) : this.#listKeyList(this.#list(name), kept);
    this.#keyLists.set(name, { version, list });
    return list;
  }

  #uniqueKeyList(index: IndexDef<T>): KeyList {
    return new KeyList([...index.durable].map(([key, id]) => ({ key, id })));
  }

  /** A list index's keys: those before with the keys records lost and gained since, or all sorted anew. */
  #listKeyList(index: ListIndex<T>, kept: { version: number; list: KeyList } | undefined): KeyList {
    const changed = kept && index.changedSince(kept.version);
    if (!kept || !changed) {
      index.track();
      return new KeyList([...index.hits()]);
    }
    return kept.list.patched(changed.removed, changed.added);
  }

  /** `find`, synchronously. */
  peekFind(name: string, key: string): T | undefined {
    const id = this.#index(name).durable.get(key);
    return id === undefined ? undefined : this.peek(id);
  }

  #index(name: string): IndexDef<T> {
    const def = this.#indexes.get(name);
    if (!def) throw new Error(`collection ${this.name} has no index ${name}`);
    return def;
  }

  /** @internal: the newest committed version (durable or not), as transactions see it. */
  head(id: string): Version<T> | PendingVersion<T> | undefined {
    return this.#pending.get(id) ?? this.#durable.get(id);
  }

  /** @internal: the id holding `key` in index `name` among committed versions (durable or not). */
  headFind(name: string, key: string): string | undefined {
    const def = this.#index(name);
    return def.pending.get(key) ?? def.durable.get(key);
  }

  /** @internal: indexes' keys of a record, for a transaction's own writes. */
  keysOf(data: T): Array<[string, string]> {
    const keys: Array<[string, string]> = [];
    for (const [name, def] of this.#indexes) {
      const key = def.keyOf(data);
      if (key !== undefined) keys.push([name, key]);
    }
    return keys;
  }

  /** @internal: a committed version on its way to disk. */
  setPending(id: string, version: PendingVersion<T>): void {
    this.#pending.set(id, version);
    if (version.data !== null) {
      for (const def of this.#indexes.values()) {
        const key = def.keyOf(version.data);
        if (key !== undefined) def.pending.set(key, id);
      }
    }
  }

  /** @internal: a committed version that did not reach disk: it never happened. */
  dropPending(id: string, version: Version<T>): void {
    if (this.#pending.get(id) === version) this.#pending.delete(id);
    this.#clearPendingKeys(id, version);
  }

  #clearPendingKeys(id: string, version: Version<T>): void {
    if (version.data === null) return;
    for (const def of this.#indexes.values()) {
      const key = def.keyOf(version.data);
      if (key !== undefined && def.pending.get(key) === id) def.pending.delete(key);
    }
  }

  /** @internal: a version now durable (or replayed at start): readers see it. True when it was newer. */
  apply(id: string, version: Version<T>): boolean {
    if (this.#pending.get(id) === version) this.#pending.delete(id);
    this.#clearPendingKeys(id, version);
    const current = this.#durable.get(id);
    if (current && current.seq >= version.seq) return false;
    const before = current?.data ?? null;
    if (before === null && version.data !== null) this.#live++;
    if (before !== null && version.data === null) this.#live--;
    for (const def of this.#indexes.values()) {
      const oldKey = before === null ? undefined : def.keyOf(before);
      const newKey = version.data === null ? undefined : def.keyOf(version.data);
      if (oldKey !== undefined && oldKey !== newKey && def.durable.get(oldKey) === id)
        def.durable.delete(oldKey);
      if (newKey !== undefined) def.durable.set(newKey, id);
      if (oldKey !== newKey) def.version++;
    }
    for (const index of this.#lists.values()) index.move(id, before, version.data);
    this.#durable.set(id, { seq: version.seq, data: version.data });
    return true;
  }

  /**
   * @internal: writes a record file (a checkpoint), or deletes it for a deletion; the folder is synced by the
   * caller.
   */
  async writeFile(id: string, version: { seq: number; text: string; removed: boolean }): Promise<void> {
    const path = join(this.dir, `${id}.json`);
    if (!version.removed) return writeFileAtomic(path, version.text, true, false);
    await unlink(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /**
   * @internal: forgets a deletion once no log segment holds an older version of the record any more (so nothing
   * can bring it back), unless the record was written again since.
   */
  forget(id: string, seq: number): void {
    const entry = this.#durable.get(id);
    if (entry && entry.seq === seq && entry.data === null && !this.#pending.has(id)) this.#durable.delete(id);
  }

  /**
   * @internal: reads every record file, writing nothing; `check` is given each record as it is parsed (throws to
   * refuse it). Returns the highest sequence number and the leftover temporary files of interrupted checkpoints
   * (to delete once everything has been read and checked).
   */
  async load(
    check: (id: string, data: unknown) => void,
  ): Promise<{ maxSeq: number; temps: string[]; unknown: string[] }> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { maxSeq: 0, temps: [], unknown: [] };
      throw error;
    }
    let maxSeq = 0;
    const temps: string[] = [];
    const unknown: string[] = [];
    const jsonNames: string[] = [];
    for (const name of names) {
      if (name.endsWith('.json.tmp') && isSafeId(name.slice(0, -'.json.tmp'.length))) {
        // A checkpoint write that never reached its rename: its content is still in the log.
        temps.push(join(this.dir, name));
      } else if (name.endsWith('.json') && isSafeId(name.slice(0, -'.json'.length))) {
        jsonNames.push(name);
      } else {
        unknown.push(join(this.dir, name));
      }
    }
    // Synchronous reads: nothing is served yet, and one blocking loop is several times faster than 10k promises.
    for (const name of jsonNames) {
      const id = name.slice(0, -'.json'.length);
      const path = join(this.dir, name);
      const record = readJsonFileSync<Version<T>>(path);
      if (!record || typeof record !== 'object' || typeof record.seq !== 'number' || !('data' in record)) {
        throw new CorruptDataFileError(path, new Error('not a record file'));
      }
      check(id, record.data);
      this.apply(id, { seq: record.seq, data: record.data === null ? null : freeze(record.data, true) });
      if (record.seq > maxSeq) maxSeq = record.seq;
    }
    return { maxSeq, temps, unknown };
  }
}

interface Write {
  collection: Collection<unknown>;
  id: string;
  data: unknown;
}

class Transaction implements Tx {
  readonly writes = new Map<string, Write>();
  /** collection/id -> the sequence number seen (0: none). */
  readonly reads = new Map<string, { collection: Collection<unknown>; id: string; seq: number }>();
  /** collection/index/key -> the id seen holding it. */
  readonly keyReads = new Map<
    string,
    { collection: Collection<unknown>; index: string; key: string; id: string | undefined }
  >();
  /** collection/index/key -> the ids a list index was seen holding (sorted, joined). */
  readonly listReads = new Map<
    string,
    { collection: Collection<unknown>; index: string; key: string; ids: string }
  >();
  readonly appends: Array<{ log: StoreLog<{ seq: number }, unknown>; entry: { seq: number } }> = [];
  readonly effects: Array<() => void> = [];
  /** Commits not yet durable whose versions this transaction read. */
  readonly waits = new Set<Promise<void>>();
  done = false;

  constructor(private readonly store: Store) {}

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
      const head = collection.head(id);
      if (!this.reads.has(key(id))) this.reads.set(key(id), { collection, id, seq: head?.seq ?? 0 });
      if (head && 'durable' in head) this.waits.add(head.durable);
      return head?.data ?? undefined;
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
        if (collection.keysOf(own.data).some(([n, k]) => n === index && k === indexKey)) return own.data;
      }
      const id = collection.headFind(index, indexKey);
      const readKey = `${name}/${index}/${indexKey}`;
      if (!this.keyReads.has(readKey)) this.keyReads.set(readKey, { collection, index, key: indexKey, id });
      return id === undefined ? undefined : read(id);
    };
    const listIds = (index: string, indexKey: string): string[] => {
      this.#live();
      const committed = collection.headList(index, indexKey);
      const readKey = `${name}/${index}/${indexKey}`;
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
    this.appends.push({ log: this.store.log(name), entry });
    return entry;
  }

  afterCommit(effect: () => void): void {
    this.effects.push(effect);
  }

  /** Whether every version this transaction read is still the newest committed one. */
  valid(): boolean {
    for (const read of this.reads.values()) {
      if ((read.collection.head(read.id)?.seq ?? 0) !== read.seq) return false;
    }
    for (const read of this.keyReads.values()) {
      if (read.collection.headFind(read.index, read.key) !== read.id) return false;
    }
    for (const read of this.listReads.values()) {
      if (read.collection.headList(read.index, read.key).join(' ') !== read.ids) return false;
    }
    return true;
  }

  /** The commits whose versions changed what this transaction read: wait for them before running it again. */
  blockers(): Promise<void>[] {
    const blockers: Promise<void>[] = [];
    for (const read of this.reads.values()) {
      const head = read.collection.head(read.id);
      if (head && 'durable' in head) blockers.push(head.durable);
    }
    return blockers;
  }
}

export interface LogSpec {
  name: string;
  file: string;
  keyOf: (entry: never) => unknown;
  onEntry?: (entry: never) => void;
}

export interface StoreOptions {
  /** fsync every write before acknowledging it (default true). */
  fsync?: boolean;
  clock?: () => number;
  /** Where background failures are logged (default: nowhere). */
  logger?: StoreLogger;
  /** The write-ahead log's files (tests inject failures here). */
  fs?: LogFileSystem;
  /** How long after a change a checkpoint runs (default 30 s). */
  checkpointAfterMs?: number;
}

export class Store implements DataStore {
  #seq = 0;
  #collections = new Map<string, Collection<unknown>>();
  #logs = new Map<string, StoreLog<{ seq: number }, unknown>>();
  #release: (() => Promise<void>) | null = null;
  #closed = false;
  readonly #inFlight = new Set<Promise<unknown>>();
  #wal: WriteAheadLog | null = null;
  readonly #watchers = new ChangeWatchers((error, collection) =>
    this.logger.error({ err: error, collection }, 'a change listener failed'),
  );
  /** Durable in the log, not yet in record files; one entry per record, the newest. */
  #durable = new Map<string, Durable>();
  /** Log segments whose lines are all durable elsewhere once the running checkpoint ends. */
  #retired: string[] = [];
  #checkpointing: Promise<void> | null = null;
  #checkpointTimer: NodeJS.Timeout | null = null;
  /** Set by close: a running checkpoint stops between two files (what it did not write stays in the log). */
  #stopCheckpoint = false;
  /** meta.json through lowdb (atomic, fsynced writes): the schema version and the folder's birth. */
  #meta!: Low<StoreMeta>;

  get meta(): StoreMeta {
    return this.#meta.data;
  }

  private constructor(
    readonly dir: string,
    readonly fsync: boolean,
    readonly logger: StoreLogger,
    private readonly checkpointAfterMs: number,
  ) {}

  collection<T>(name: string): Collection<T> {
    const existing = this.#collections.get(name);
    if (!existing) throw new Error(`collection ${name} was not opened`);
    return existing as Collection<T>;
  }

  log<E extends { seq: number }, K>(name: string): StoreLog<E, K> {
    const existing = this.#logs.get(name);
    if (!existing) throw new Error(`log ${name} was not opened`);
    return existing as unknown as StoreLog<E, K>;
  }

  watch(collection: string, listener: ChangeListener): void {
    this.#watchers.add(collection, listener);
  }

  /**
   * Runs `fn` as one transaction and commits what it changed atomically; resolves with its result once the
   * commit is durable. `fn` may run more than once (when what it read changed before it committed), so it must
   * not have effects outside the transaction: put those in `t.afterCommit`. A failed write rejects with a
   * StorageWriteError and changes nothing.
   */
  async tx<R>(fn: (t: Tx) => R | Promise<R>): Promise<R> {
    for (let run = 0; run < MAX_TX_RUNS; run++) {
      if (this.#closed) throw new Error('store is closed');
      // A transaction that conflicted twice runs alone among the retried ones (they would only keep colliding);
      // the lock is held until its commit is handed to the log, so the next one reads what it wrote.
      const release = run >= 2 ? await this.#retryLock() : null;
      const t = new Transaction(this);
      let result: R;
      let work: Promise<void> | null = null;
      try {
        try {
          result = await fn(t);
        } finally {
          t.done = true;
        }
        if (!t.valid()) {
          release?.();
          await Promise.allSettled(t.blockers());
          continue;
        }
        if (t.writes.size > 0 || t.appends.length > 0) work = this.#commit(t);
      } finally {
        release?.();
      }
      if (t.writes.size === 0 && t.appends.length === 0) {
        // Read-only: what it read must be durable before anyone is told about it.
        if (t.waits.size > 0) {
          await Promise.allSettled(t.waits);
          if (!t.valid()) continue;
        }
      } else if (work) {
        this.#inFlight.add(work);
        try {
          await work;
        } finally {
          this.#inFlight.delete(work);
        }
      }
      for (const effect of t.effects) effect();
      return result;
    }
    throw new TransactionConflictError();
  }

  #retryTail: Promise<void> = Promise.resolve();

  /** Waits for the retry lock; returns its release (safe to call twice). */
  async #retryLock(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.#retryTail;
    this.#retryTail = before.then(() => held);
    await before;
    return release;
  }

  /** Sequences the transaction's writes and hands them to the log; synchronous up to the log's promise. */
  #commit(t: Transaction): Promise<void> {
    const versions: Array<{ write: Write; version: PendingVersion<unknown>; text: string }> = [];
    const parts: string[] = [];
    let settle!: { resolve: () => void; reject: (error: unknown) => void };
    const durable = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    // Nobody may be left with an unhandled rejection: readers only wait on it.
    durable.catch(() => undefined);
    for (const write of t.writes.values()) {
      const seq = ++this.#seq;
      const version: PendingVersion<unknown> = { seq, data: write.data, durable };
      const text = JSON.stringify({ seq, data: write.data });
      write.collection.setPending(write.id, version);
      versions.push({ write, version, text });
      parts.push(
        `{"c":${JSON.stringify(write.collection.name)},"i":${JSON.stringify(write.id)},"r":${text}}`,
      );
    }
    const entryJson: string[] = [];
    for (const append of t.appends) {
      append.entry.seq = ++this.#seq;
      const json = JSON.stringify(append.entry);
      entryJson.push(json);
      parts.push(`{"l":${JSON.stringify(this.#logName(append.log))},"s":${append.entry.seq},"e":${json}}`);
    }
    const onDurable = (): void => {
      for (const { write, version, text } of versions) {
        write.collection.apply(write.id, version);
        this.#markDurable({
          collection: write.collection.name,
          id: write.id,
          seq: version.seq,
          text,
          removed: version.data === null,
        });
      }
      t.appends.forEach((append, at) => append.log.accept(append.entry, entryJson[at]));
      for (const { write } of versions) this.#watchers.tell(write.collection.name, write.id, false);
      settle.resolve();
      this.#maybeCheckpoint();
    };
    const onFailed = (): void => {
      for (const { write, version } of versions) write.collection.dropPending(write.id, version);
      settle.reject(new Error('commit failed'));
    };
    return this.#wal!.append(`[${parts.join(',')}]`, onDurable, onFailed);
  }

  #logName(log: StoreLog<{ seq: number }, unknown>): string {
    for (const [name, candidate] of this.#logs) if (candidate === log) return name;
    throw new Error('unknown log');
  }

  #markDurable(version: Durable): void {
    const key = `${version.collection}/${version.id}`;
    const current = this.#durable.get(key);
    if (!current || current.seq < version.seq) this.#durable.set(key, version);
  }

  #maybeCheckpoint(): void {
    const { entries, bytes } = this.#wal!.size;
    if (entries >= CHECKPOINT_LINES || bytes >= CHECKPOINT_BYTES) {
      this.#backgroundCheckpoint();
      return;
    }
    this.#scheduleCheckpoint(this.checkpointAfterMs);
  }

  #scheduleCheckpoint(ms: number): void {
    if (this.#checkpointTimer || this.#closed) return;
    this.#checkpointTimer = setTimeout(() => {
      this.#checkpointTimer = null;
      this.#backgroundCheckpoint();
    }, ms);
    this.#checkpointTimer.unref();
  }

  #backgroundCheckpoint(): void {
    void this.checkpoint().catch((error: unknown) => {
      if (error instanceof CheckpointStopped) return;
      const path = (error as NodeJS.ErrnoException | null)?.path;
      this.logger.error(
        { err: error, file: path ?? this.dir },
        'checkpoint failed: the changes stay in the write-ahead log; trying again shortly',
      );
      this.#scheduleCheckpoint(Math.min(CHECKPOINT_RETRY_MS, this.checkpointAfterMs));
    });
  }

  /**
   * Writes every record version durable in the log so far to its record file and every log entry to its file,
   * then deletes the log segments that held them. One at a time; a failed checkpoint keeps its versions and
   * segments for the next one.
   */
  /** One process owns the folder: there is nothing to catch up with. */
  refresh(): Promise<void> {
    return Promise.resolve();
  }

  checkpoint(): Promise<void> {
    const running = this.#checkpointing;
    if (running) return running.then(() => (this.#durable.size > 0 ? this.checkpoint() : undefined));
    const work = this.#checkpoint().finally(() => {
      this.#checkpointing = null;
    });
    this.#checkpointing = work;
    return work;
  }

  async #checkpoint(): Promise<void> {
    if (this.#checkpointTimer) {
      clearTimeout(this.#checkpointTimer);
      this.#checkpointTimer = null;
    }
    const wal = this.#wal!;
    const { value: versions, closed } = await wal.rotate(() => {
      const taken = this.#durable;
      this.#durable = new Map();
      return taken;
    });
    this.#retired.push(...closed);
    try {
      const list = [...versions.values()];
      let next = 0;
      const writer = async (): Promise<void> => {
        while (next < list.length) {
          if (this.#stopCheckpoint) throw new CheckpointStopped('store is closing');
          const version = list[next++]!;
          await this.collection(version.collection).writeFile(version.id, version);
        }
      };
      await Promise.all(Array.from({ length: Math.min(CHECKPOINT_WRITERS, list.length) }, writer));
      if (this.fsync) {
        const folders = new Set(list.map((version) => this.collection(version.collection).dir));
        await Promise.all([...folders].map((folder) => syncDir(folder)));
      }
      // The logs' entries in the segments about to go must be in their own files, synced.
      for (const log of this.#logs.values()) await log.flush(this.fsync);
    } catch (error) {
      // Nothing is lost: the versions are still in the log; the next checkpoint writes them again.
      for (const version of versions.values()) this.#markDurable(version);
      throw error;
    }
    const retired = this.#retired;
    this.#retired = [];
    await wal.drop(retired);
    // Deleted records leave nothing behind: no file, no tombstone in memory.
    for (const version of versions.values()) {
      if (version.removed) this.collection(version.collection).forget(version.id, version.seq);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    if (this.#checkpointTimer) clearTimeout(this.#checkpointTimer);
    const wal = this.#wal;
    if (wal) {
      // A large checkpoint in the background stops; a short one brings the record files up to date, so a
      // clean stop usually leaves no log to replay. Otherwise the next start replays it.
      const running = this.#checkpointing;
      if (running) {
        this.#stopCheckpoint = true;
        // A checkpoint told to stop may fail half-way; the log still holds everything and the next start replays
        // it.
        await running.catch(() => undefined);
        this.#stopCheckpoint = false;
      }
      let done = false;
      if (this.#durable.size <= WAITED_CHECKPOINT_MAX) {
        done = await this.checkpoint().then(
          () => true,
          (error: unknown) => {
            this.logger.warn({ err: error }, 'final checkpoint failed; the next start replays the log');
            return false;
          },
        );
      }
      // At a stop: the log segment stays on disk and the next start replays it; nothing acknowledged depends on
      // this close.
      await wal.close(done).catch(() => undefined);
    }
    for (const log of this.#logs.values()) await log.close();
    await this.#release?.();
  }

  /**
   * Opens (creating if needed) a data folder: refuses a folder that is not ours, takes its lock, reads and checks
   * every file against its schema (a corrupt file or a record of the wrong shape stops startup, naming the file and
   * the record, before anything is written), then replays the log.
   */
  static async open(
    dir: string,
    spec: { collections: string[]; logs?: LogSpec[] },
    options: StoreOptions = {},
  ): Promise<Store> {
    const kind = await assertUsableDataFolder(dir);
    await mkdir(dir, { recursive: true });
    const store = new Store(
      dir,
      options.fsync ?? true,
      options.logger ?? silentLogger,
      options.checkpointAfterMs ?? CHECKPOINT_AFTER_MS,
    );
    store.#release = await acquireLock(dir);
    try {
      const found = await store.#read(spec, kind);
      await store.#start(found, options);
      return store;
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  /**
   * The first half of a start: reads every file and checks every record (record files, the write-ahead log,
   * journal files of the first layout, the logs' files, the folder's other histories), keeping what the second
   * half needs. Nothing is written: a refused start leaves the folder as it found it.
   */
  async #read(spec: { collections: string[]; logs?: LogSpec[] }, kind: DataFolderKind): Promise<FoundFolder> {
    const checker = new FolderChecker(this.dir);
    const meta = await readMeta(checker, kind, SCHEMA_VERSION);
    const temps: string[] = [];
    for (const name of spec.collections) {
      const collection = new Collection<unknown>(name, join(this.dir, name));
      this.#collections.set(name, collection);
      const loaded = await collection.load((id, data) => {
        const problems = checker.recordProblems(name, id, data);
        if (problems) throw checker.refuse(`${name}/${id}.json`, `${name}/${id}`, problems);
      });
      if (loaded.maxSeq > this.#seq) this.#seq = loaded.maxSeq;
      temps.push(...loaded.temps);
      for (const path of loaded.unknown) {
        this.logger.warn({ file: path }, 'left a file the data folder does not know (not ours to delete)');
      }
    }
    const collections = new Set(spec.collections);
    const logNames = new Set((spec.logs ?? []).map((log) => log.name));
    const wal = await WriteAheadLog.read(
      join(this.dir, 'wal'),
      walEntryCheck(checker, collections, logNames),
    );
    const journal = await readJournal(checker, collections);
    const logs: FoundFolder['logs'] = [];
    for (const log of spec.logs ?? []) {
      const contents = await StoreLog.read(
        join(this.dir, log.file),
        log.keyOf as (entry: { seq: number }) => unknown,
        {
          check: (entry, line) => {
            const problems = checker.logEntryProblems(log.name, entry);
            if (problems) throw checker.refuse(log.file, `line ${line}`, problems);
          },
          onEntry: log.onEntry as ((entry: { seq: number }) => void) | undefined,
        },
      );
      logs.push({ spec: log, contents });
    }
    await checkFolderLogs(checker);
    return { meta, temps, wal, journal, logs };
  }

  /**
   * The second half of a start, once everything read is known good: writes meta.json of a new folder, removes what
   * interrupted checkpoints left, opens the logs, replays the journal and the write-ahead log, and brings the record
   * files up to date.
   */
  async #start(found: FoundFolder, options: StoreOptions): Promise<void> {
    const metaFile = new DurableJSONFile<StoreMeta>(join(this.dir, 'meta.json'), this.fsync);
    this.#meta = new Low<StoreMeta>(metaFile, {
      schemaVersion: SCHEMA_VERSION,
      createdAt: Math.floor((options.clock?.() ?? Date.now()) / 1000),
    });
    // A new data folder: meta.json first, so a crash from here on leaves a folder recognisably ours.
    if (found.meta === null) await this.#meta.write();
    else this.#meta.data = found.meta;
    for (const collection of this.#collections.values()) await mkdir(collection.dir, { recursive: true });
    // Stray temp files of an earlier run: ones that cannot be removed now are tried again at the next start.
    for (const path of found.temps) await unlink(path).catch(() => undefined);
    await this.#openLogs(found.logs);
    for (const path of found.wal.torn) {
      this.logger.warn(
        { file: path },
        'dropped the torn last line of a log segment (a write cut off by a crash)',
      );
    }
    for (const { entries } of found.journal) {
      for (const entry of entries) this.#replay(entry.collection, entry.id, entry.seq, entry.data);
    }
    for (const line of found.wal.lines) {
      for (const entry of line) {
        if ('c' in entry) this.#replay(entry.c, entry.i, entry.r.seq, entry.r.data);
        else {
          if (entry.s > this.#seq) this.#seq = entry.s;
          this.#logs.get(entry.l)!.accept({ ...(entry.e as object), seq: entry.s });
        }
      }
    }
    const walDir = join(this.dir, 'wal');
    this.#wal = await WriteAheadLog.start(walDir, found.wal.next, { fsync: this.fsync, fs: options.fs });
    this.#retired = found.wal.segments;
    // What the last run left in its log reaches the record files before anything is served.
    const segments = found.wal.segments.length;
    if (found.journal.length > 0 || (segments > 0 && this.#durable.size <= WAITED_CHECKPOINT_MAX)) {
      await this.checkpoint();
    } else if (segments > 0) {
      this.#backgroundCheckpoint();
    }
    for (const { path } of found.journal) await unlink(path);
    if (this.meta.schemaVersion !== SCHEMA_VERSION) {
      migrate(this.meta);
      await this.#meta.write();
    }
  }

  /** Opens the logs' files read at start, for appending. */
  async #openLogs(logs: FoundFolder['logs']): Promise<void> {
    for (const { spec, contents } of logs) {
      const path = join(this.dir, spec.file);
      const opened = await StoreLog.open<{ seq: number }, unknown>(
        path,
        contents,
        spec.keyOf as (entry: { seq: number }) => unknown,
        {
          onBackgroundError: (error) =>
            this.logger.error({ err: error, file: path }, 'writing a log file failed; will retry'),
        },
      );
      this.#logs.set(spec.name, opened);
      if (opened.maxSeq > this.#seq) this.#seq = opened.maxSeq;
    }
  }

  /** A version found at start (log or journal): kept where newer than what is loaded, and due for a checkpoint. */
  #replay(collection: string, id: string, seq: number, data: unknown): void {
    if (seq > this.#seq) this.#seq = seq;
    const frozen = data === null ? null : freeze(data, true);
    if (this.collection(collection).apply(id, { seq, data: frozen })) {
      const text = JSON.stringify({ seq, data });
      this.#markDurable({ collection, id, seq, text, removed: data === null });
    }
  }
}

/** What the first half of a start read and checked, for the second half to apply. */
interface FoundFolder {
  /** null: a new folder (no meta.json yet). */
  meta: FoundMeta | null;
  /** Temporary files of interrupted checkpoints, to delete. */
  temps: string[];
  wal: WalContents;
  journal: Array<{ path: string; entries: JournalEntry[] }>;
  logs: Array<{ spec: LogSpec; contents: StoreLogContents<unknown> }>;
}

/** Schema migrations, one step per version; version 1 is the first, so there is nothing to do yet. */
function migrate(meta: StoreMeta): void {
  while (meta.schemaVersion < SCHEMA_VERSION) {
    meta.schemaVersion++;
  }
}
