import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Low } from 'lowdb';
import {
  CorruptDataFileError,
  DurableJSONFile,
  readJsonFile,
  readJsonFileSync,
  writeFileAtomic,
} from './durable-file.js';

/**
 * The data folder. Each collection is a folder with one small lowdb JSON file per record, so the cost of an
 * acknowledged write does not grow with what is stored. Everything is read into memory at startup; services read
 * and mutate records synchronously, then `await store.commit(changes)`, which resolves once the change is on disk.
 * A change spanning several records goes through a journal file first, so a crash never leaves half of it.
 */

export const SCHEMA_VERSION = 1;

export interface StoreMeta {
  schemaVersion: number;
  createdAt: number;
  ownerSetupDone: boolean;
  /** Host settings changed at run time by the owner or admins; they override the configuration. */
  settings?: { requireInviteCode?: boolean };
}

interface RecordFile<T> {
  seq: number;
  data: T | null;
}

interface JournalEntry {
  collection: string;
  id: string;
  seq: number;
  data: unknown;
}

export interface Change {
  readonly collection: string;
  readonly id: string;
}

export class DataFolderInUseError extends Error {
  constructor(dir: string, holder: string) {
    super(
      `Data folder ${dir} is already in use by ${holder}. Stop that process or choose another --data-dir.`,
    );
    this.name = 'DataFolderInUseError';
  }
}

export class SchemaTooNewError extends Error {
  constructor(path: string, version: number) {
    super(
      `Data file ${path} has schema version ${version}, newer than this program understands (${SCHEMA_VERSION}). ` +
        'Update Hypernex Companion; the data was left untouched.',
    );
    this.name = 'SchemaTooNewError';
  }
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,200}$/;
/** True when `id` can name a record file without escaping its folder. */
export function isSafeId(id: string): boolean {
  return SAFE_ID.test(id) && id !== '.' && id !== '..';
}

export class Collection<T> {
  readonly #entries = new Map<string, RecordFile<T>>();
  readonly #files = new Map<string, DurableJSONFile<RecordFile<T>>>();
  #live = 0;

  constructor(
    readonly name: string,
    readonly dir: string,
    private readonly store: Store,
  ) {}

  get size(): number {
    return this.#live;
  }

  get(id: string): T | undefined {
    return this.#entries.get(id)?.data ?? undefined;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  *values(): IterableIterator<T> {
    for (const entry of this.#entries.values()) if (entry.data !== null) yield entry.data;
  }

  /** Records `data` as the new value of `id` in memory; pass the change to `store.commit` to make it durable. */
  put(id: string, data: T): Change {
    if (!isSafeId(id)) throw new Error(`unsafe record id ${JSON.stringify(id)}`);
    const entry = this.#entries.get(id);
    const seq = this.store.nextSeq();
    if (entry) {
      if (entry.data === null) this.#live++;
      entry.seq = seq;
      entry.data = data;
    } else {
      this.#entries.set(id, { seq, data });
      this.#live++;
    }
    return { collection: this.name, id };
  }

  /** Marks `id` as changed after its object was mutated in place. */
  touch(id: string): Change {
    const data = this.get(id);
    if (data === undefined) throw new Error(`no record ${this.name}/${id}`);
    return this.put(id, data);
  }

  /** Deletes `id`; a tombstone keeps its sequence number so an older journal cannot bring it back. */
  remove(id: string): Change {
    const entry = this.#entries.get(id);
    const seq = this.store.nextSeq();
    if (entry) {
      if (entry.data !== null) this.#live--;
      entry.seq = seq;
      entry.data = null;
    } else {
      this.#entries.set(id, { seq, data: null });
    }
    return { collection: this.name, id };
  }

  /** @internal */
  snapshot(id: string): RecordFile<T> | undefined {
    return this.#entries.get(id);
  }

  /** @internal */
  flush(id: string): Promise<void> {
    const entry = this.#entries.get(id);
    if (!entry) return Promise.resolve();
    let file = this.#files.get(id);
    if (!file) {
      file = new DurableJSONFile<RecordFile<T>>(join(this.dir, `${id}.json`), this.store.fsync);
      this.#files.set(id, file);
    }
    // The entry object itself is written, so a queued write always carries the newest seq and data.
    return file.write(entry);
  }

  /** @internal */
  async load(): Promise<number> {
    await mkdir(this.dir, { recursive: true });
    const names = await readdir(this.dir);
    let maxSeq = 0;
    const jsonNames: string[] = [];
    for (const name of names) {
      if (name.endsWith('.tmp')) {
        // A write that never reached its rename: it was never acknowledged.
        await unlink(join(this.dir, name)).catch(() => undefined);
      } else if (name.endsWith('.json')) {
        jsonNames.push(name);
      }
    }
    // Synchronous reads: nothing is served yet, and one blocking loop is several times faster than 10k promises.
    for (const name of jsonNames) {
      const id = name.slice(0, -'.json'.length);
      const path = join(this.dir, name);
      const record = readJsonFileSync<RecordFile<T>>(path);
      if (!record || typeof record !== 'object' || typeof record.seq !== 'number' || !('data' in record)) {
        throw new CorruptDataFileError(path, new Error('not a record file'));
      }
      this.#entries.set(id, record);
      if (record.data !== null) this.#live++;
      if (record.seq > maxSeq) maxSeq = record.seq;
    }
    return maxSeq;
  }

  /** @internal: journal replay, only where the journal is newer than what is on disk. */
  async replay(entry: JournalEntry): Promise<void> {
    const current = this.#entries.get(entry.id);
    if (current && current.seq >= entry.seq) return;
    const data = entry.data as T | null;
    if (current) {
      if (current.data === null && data !== null) this.#live++;
      if (current.data !== null && data === null) this.#live--;
      current.seq = entry.seq;
      current.data = data;
    } else {
      this.#entries.set(entry.id, { seq: entry.seq, data });
      if (data !== null) this.#live++;
    }
    await this.flush(entry.id);
  }
}

const heldLocks = new Set<string>();

async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const lockPath = join(dir, 'companion.lock');
  if (heldLocks.has(lockPath)) throw new DataFolderInUseError(dir, 'this process');
  const body = JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: Date.now() });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, 'wx');
      await handle.writeFile(body);
      await handle.close();
      heldLocks.add(lockPath);
      return async () => {
        heldLocks.delete(lockPath);
        await unlink(lockPath).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readLockHolder(lockPath);
      if (holder && holder.hostname === hostname() && holder.pid !== process.pid && isAlive(holder.pid)) {
        throw new DataFolderInUseError(dir, `process ${holder.pid}`);
      }
      if (holder && holder.hostname !== hostname()) {
        throw new DataFolderInUseError(dir, `process ${holder.pid} on ${holder.hostname}`);
      }
      // The holder is gone (killed or crashed): the lock is stale.
      await unlink(lockPath).catch(() => undefined);
    }
  }
  throw new DataFolderInUseError(dir, 'another process (the lock could not be taken)');
}

async function readLockHolder(path: string): Promise<{ pid: number; hostname: string } | null> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as { pid?: unknown; hostname?: unknown };
    if (typeof parsed.pid === 'number' && typeof parsed.hostname === 'string') {
      return { pid: parsed.pid, hostname: parsed.hostname };
    }
  } catch {
    // An empty or torn lock file is a lock whose writer died before finishing it.
  }
  return null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface StoreOptions {
  /** fsync every write before acknowledging it (default true). */
  fsync?: boolean;
  clock?: () => number;
}

export class Store {
  #seq = 0;
  #collections = new Map<string, Collection<unknown>>();
  #release: (() => Promise<void>) | null = null;
  #closed = false;
  readonly #inFlight = new Set<Promise<void>>();
  meta!: Low<StoreMeta>;

  private constructor(
    readonly dir: string,
    readonly fsync: boolean,
  ) {}

  nextSeq(): number {
    return ++this.#seq;
  }

  collection<T>(name: string): Collection<T> {
    const existing = this.#collections.get(name);
    if (!existing) throw new Error(`collection ${name} was not opened`);
    return existing as Collection<T>;
  }

  /** Makes the given in-memory changes durable; resolves once all of them are on disk. */
  commit(changes: Change[]): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('store is closed'));
    const work = this.#commit(changes);
    // Close waits for every write in flight, so a shutdown never cuts one off.
    this.#inFlight.add(work);
    void work.then(
      () => this.#inFlight.delete(work),
      () => this.#inFlight.delete(work),
    );
    return work;
  }

  async #commit(changes: Change[]): Promise<void> {
    const unique = new Map<string, Change>();
    for (const change of changes) unique.set(`${change.collection}/${change.id}`, change);
    const list = [...unique.values()];
    if (list.length === 0) return;
    if (list.length === 1) {
      const [only] = list as [Change];
      await this.collection(only.collection).flush(only.id);
      return;
    }
    const entries: JournalEntry[] = list.map((change) => {
      const snap = this.collection(change.collection).snapshot(change.id);
      if (!snap) throw new Error(`no record ${change.collection}/${change.id}`);
      return { collection: change.collection, id: change.id, seq: snap.seq, data: snap.data };
    });
    const journalPath = join(this.dir, 'journal', `${Date.now()}-${randomBytes(6).toString('hex')}.json`);
    await writeFileAtomic(journalPath, JSON.stringify(entries), this.fsync);
    await Promise.all(list.map((change) => this.collection(change.collection).flush(change.id)));
    await unlink(journalPath);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    await this.#release?.();
  }

  /** Opens (creating if needed) a data folder, taking its lock, migrating it and replaying any journal. */
  static async open(dir: string, collections: string[], options: StoreOptions = {}): Promise<Store> {
    await mkdir(dir, { recursive: true });
    const store = new Store(dir, options.fsync ?? true);
    store.#release = await acquireLock(dir);
    try {
      const metaPath = join(dir, 'meta.json');
      store.meta = new Low<StoreMeta>(new DurableJSONFile<StoreMeta>(metaPath, store.fsync), {
        schemaVersion: SCHEMA_VERSION,
        createdAt: Math.floor((options.clock?.() ?? Date.now()) / 1000),
        ownerSetupDone: false,
      });
      const existed = (await readJsonFile<StoreMeta>(metaPath)) !== null;
      await store.meta.read();
      if (typeof store.meta.data.schemaVersion !== 'number') {
        throw new CorruptDataFileError(metaPath, new Error('schemaVersion is missing'));
      }
      if (store.meta.data.schemaVersion > SCHEMA_VERSION) {
        throw new SchemaTooNewError(metaPath, store.meta.data.schemaVersion);
      }
      for (const name of collections) {
        const collection = new Collection<unknown>(name, join(dir, name), store);
        store.#collections.set(name, collection);
        const maxSeq = await collection.load();
        if (maxSeq > store.#seq) store.#seq = maxSeq;
      }
      await store.#replayJournal();
      migrate(store.meta.data);
      if (!existed || store.meta.data.schemaVersion !== SCHEMA_VERSION) {
        store.meta.data.schemaVersion = SCHEMA_VERSION;
        await store.meta.write();
      }
      return store;
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  async #replayJournal(): Promise<void> {
    const journalDir = join(this.dir, 'journal');
    await mkdir(journalDir, { recursive: true });
    const names = (await readdir(journalDir)).sort();
    for (const name of names) {
      const path = join(journalDir, name);
      if (!name.endsWith('.json')) {
        await unlink(path).catch(() => undefined);
        continue;
      }
      const entries = await readJsonFile<JournalEntry[]>(path);
      if (!Array.isArray(entries)) throw new CorruptDataFileError(path, new Error('not a journal'));
      for (const entry of entries) {
        if (entry.seq > this.#seq) this.#seq = entry.seq;
      }
      for (const entry of entries) {
        if (!isSafeId(entry.id)) throw new CorruptDataFileError(path, new Error('unsafe id in journal'));
        await this.collection(entry.collection).replay(entry);
      }
      await unlink(path);
    }
  }
}

/** Schema migrations, one step per version; version 1 is the first, so there is nothing to do yet. */
function migrate(meta: StoreMeta): void {
  while (meta.schemaVersion < SCHEMA_VERSION) {
    meta.schemaVersion++;
  }
}
