import type { Draft } from 'immer';
import type { KeyHit, KeyMatch } from './key-search.js';

/**
 * The storage seam: the only way services reach data. A store is a set of collections (records by id, with unique
 * secondary indexes) and append-only logs, changed only inside `tx`, which commits everything it changed
 * atomically or nothing. Reads are asynchronous, so a store may answer them from memory (the embedded store) or
 * with a query per request (a database). Records handed out are deeply frozen; a change is visible to readers only
 * once it is durable. The embedded store (store.ts: write-ahead log, one JSON file per record) implements it;
 * another implementation must pass the same conformance suite (test/server/store-conformance.ts).
 */
export interface DataStore {
  collection<T>(name: string): ReadCollection<T>;
  log<E extends { seq: number }, K>(name: string): ReadLog<E, K>;
  /**
   * Runs `fn` as one transaction and resolves with its result once the commit is durable. `fn` may run more than
   * once (when what it read changed before it committed), so effects outside the store go in `t.afterCommit`.
   * A failed write rejects (StorageWriteError) and changes nothing.
   */
  tx<R>(fn: (t: Tx) => R | Promise<R>): Promise<R>;
  close(): Promise<void>;
}

/**
 * A store a host runs on: the embedded one (store.ts) or PostgreSQL (pg-store.ts). `checkpoint` writes what the
 * embedded store holds only in its log behind (PostgreSQL has nothing to write behind).
 */
export interface HostStore extends DataStore {
  checkpoint(): Promise<void>;
  /**
   * Makes every history entry committed so far by any process visible to this process's logs (PostgreSQL: before
   * acting on what another host announced; the embedded store has one process and nothing to catch up with).
   */
  refresh(): Promise<void>;
  /**
   * Calls `listener` after each committed change to a record of `collection`, made by this process (`remote`
   * false) or by another host (true, PostgreSQL). `id` null: changes may have been missed (the connection that
   * hears them was lost): whatever depends on the collection should be looked at again.
   */
  watch(collection: string, listener: (id: string | null, remote: boolean) => void): void;
}

/** Durable records of one collection, read-only. */
export interface ReadCollection<T> {
  get(id: string): Promise<T | undefined>;
  has(id: string): Promise<boolean>;
  /** The records of these ids that exist, in the order asked (missing ones left out). */
  getMany(ids: readonly string[]): Promise<T[]>;
  /** The record holding `key` in the unique index `index`. */
  find(index: string, key: string): Promise<T | undefined>;
  /** Up to `limit` records whose key in the unique index `index` starts with `prefix`, in key order. */
  findByPrefix(index: string, prefix: string, limit: number): Promise<T[]>;
  /** How many records there are. */
  count(): Promise<number>;
  /** Every record, in no particular order (startup indexes, admin tools, migration). */
  scan(): AsyncIterable<T>;
  /** The records whose list index `index` holds `key` (e.g. avatars using a build file). */
  list(index: string, key: string): Promise<T[]>;
  /**
   * Search: the keys of index `index` (unique or list) that match, each with its record's id, in key order then id:
   * `offset` matches skipped, at most `limit` (e.g. users whose name holds "ann"). A query on PostgreSQL.
   */
  searchKeys(index: string, match: KeyMatch, offset: number, limit: number): Promise<KeyHit[]>;
  /** Declares a unique secondary key before the collection is used (e.g. users by lower-cased name). */
  addIndex(index: string, keyOf: (record: T) => string | undefined): void;
  /** Declares a non-unique index before the collection is used: a record is listed under each of its keys. */
  addListIndex(index: string, keysOf: (record: T) => readonly string[]): void;
}

/** What a key field must hold: this value, one of these values, or (a number) within a range, ends included. */
export type LogMatch<V> = V | { anyOf: readonly V[] } | { from?: number; to?: number };

/** Values of an entry's key fields a history is filtered by (an absent field matches every entry). */
export type LogFilter<K> = { [F in keyof K]?: LogMatch<K[F]> };

/** A page of a history, newest first, and how many entries match in all. */
export interface LogPage<E> {
  entries: E[];
  total: number;
}

/** A durable history, read a page at a time (each a query on PostgreSQL). */
export interface ReadLog<E, K> {
  /** Entries whose key matches `filter`, newest first: `limit` of them after skipping `offset`. */
  query(filter: LogFilter<K>, offset: number, limit: number): Promise<LogPage<E>>;
}

/** A collection as a transaction sees it: its own writes, then the newest committed versions. */
export interface TxRepo<T> {
  get(id: string): Promise<T | undefined>;
  has(id: string): Promise<boolean>;
  /** The record holding `key` in a unique index. */
  find(index: string, key: string): Promise<T | undefined>;
  /** The records a list index holds under `key` (a record added or removed there meanwhile makes a conflict). */
  list(index: string, key: string): Promise<T[]>;
  /** Writes a whole record (frozen; the caller must not change it afterwards). */
  put(id: string, data: T): T;
  /** Changes a record through a draft (immer): returns the new frozen version. Rejects when there is none. */
  update(id: string, recipe: (draft: Draft<T>) => void): Promise<T>;
  remove(id: string): Promise<void>;
}

export interface Tx {
  repo<T>(collection: string): TxRepo<T>;
  /** Appends an entry to a store log in this commit; its `seq` is set to the commit's sequence number. */
  append<E extends { seq: number }>(log: string, entry: E): E;
  /** Runs `effect` once the commit is durable (events, notifications); not when it fails or runs again. */
  afterCommit(effect: () => void): void;
}
