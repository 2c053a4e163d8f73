import { mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Low } from 'lowdb';
import {
  CorruptDataFileError,
  DurableJSONFile,
  readJsonFile,
  readJsonFileSync,
  syncDir,
  writeFileAtomic,
} from './durable-file.js';
import { WriteAheadLog, type WalEntry } from './wal.js';

/**
 * The data folder. Each collection is a folder with one small lowdb JSON file per record, so the cost of an
 * acknowledged write does not grow with what is stored. Everything is read into memory at startup; services read
 * and mutate records synchronously, then `await store.commit(changes)`, which resolves once the change is on disk:
 * in the write-ahead log (wal/), where all commits arriving together share one append and one fdatasync, and one
 * commit is one line, so a change spanning several records is never found half done. Checkpoints write the
 * record files behind (each atomically, fsynced) and then delete the log segments they cover; startup replays
 * whatever log is left over the record files, by sequence number, so a replay never overwrites newer data.
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

/** A journal file of the first data-folder layout (before the write-ahead log); still replayed when found. */
interface JournalEntry {
  collection: string;
  id: string;
  seq: number;
  data: unknown;
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
/** Record files a checkpoint writes at once (the log's fdatasyncs share the same file-system threads). */
const CHECKPOINT_WRITERS = 4;
/**
 * Opening and closing wait for a checkpoint only up to this many records (about a second of writes): past it,
 * open checkpoints in the background and close leaves the log for the next start to replay, so neither keeps
 * the user waiting.
 */
const WAITED_CHECKPOINT_MAX = 2000;

class CheckpointStopped extends Error {}

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

  /**
   * Deletes `id`. Its tombstone keeps the sequence number until a checkpoint has deleted the file and every log
   * segment that held an older version, so no replay can bring it back; then it is forgotten.
   */
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

  /**
   * @internal: writes a record file (a checkpoint), or deletes it for a deletion; the folder is synced by the
   * caller.
   */
  async writeFile(id: string, version: { seq: number; text: string; removed: boolean }): Promise<void> {
    const path = join(this.dir, `${id}.json`);
    if (!version.removed) return writeFileAtomic(path, version.text, this.store.fsync, false);
    await unlink(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /**
   * @internal: forgets a deletion once no log segment holds an older version of the record any more (so nothing
   * can bring it back), unless the record was written again since.
   */
  forget(id: string, seq: number): void {
    const entry = this.#entries.get(id);
    if (entry && entry.seq === seq && entry.data === null) this.#entries.delete(id);
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

  /** @internal: a logged version, applied only where it is newer than what is loaded; true when applied. */
  apply(id: string, seq: number, data: T | null): boolean {
    const current = this.#entries.get(id);
    if (current && current.seq >= seq) return false;
    if (current) {
      if (current.data === null && data !== null) this.#live++;
      if (current.data !== null && data === null) this.#live--;
      current.seq = seq;
      current.data = data;
    } else {
      this.#entries.set(id, { seq, data });
      if (data !== null) this.#live++;
    }
    return true;
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
  #wal: WriteAheadLog | null = null;
  /** Durable in the log, not yet in record files; one entry per record, the newest. */
  #durable = new Map<string, Durable>();
  /** Log segments whose lines are all durable elsewhere once the running checkpoint ends. */
  #retired: string[] = [];
  #checkpointing: Promise<void> | null = null;
  #checkpointTimer: NodeJS.Timeout | null = null;
  /** Set by close: a running checkpoint stops between two files (what it did not write stays in the log). */
  #stopCheckpoint = false;
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
    if (unique.size === 0) return;
    const versions: Durable[] = [];
    const parts: string[] = [];
    for (const change of unique.values()) {
      const snap = this.collection(change.collection).snapshot(change.id);
      if (!snap) throw new Error(`no record ${change.collection}/${change.id}`);
      // Serialised now: the log and the record file carry this version, whatever memory holds later.
      const text = JSON.stringify({ seq: snap.seq, data: snap.data });
      versions.push({
        collection: change.collection,
        id: change.id,
        seq: snap.seq,
        text,
        removed: snap.data === null,
      });
      parts.push(`{"c":${JSON.stringify(change.collection)},"i":${JSON.stringify(change.id)},"r":${text}}`);
    }
    await this.#wal!.append(`[${parts.join(',')}]`, () => {
      for (const version of versions) this.#markDurable(version);
      this.#maybeCheckpoint();
    });
  }

  #markDurable(version: Durable): void {
    const key = `${version.collection}/${version.id}`;
    const current = this.#durable.get(key);
    if (!current || current.seq < version.seq) this.#durable.set(key, version);
  }

  #maybeCheckpoint(): void {
    const { entries, bytes } = this.#wal!.size;
    if (entries >= CHECKPOINT_LINES || bytes >= CHECKPOINT_BYTES) {
      void this.checkpoint().catch(() => undefined);
      return;
    }
    if (!this.#checkpointTimer && !this.#closed) {
      this.#checkpointTimer = setTimeout(() => {
        this.#checkpointTimer = null;
        void this.checkpoint().catch(() => undefined);
      }, CHECKPOINT_AFTER_MS);
      this.#checkpointTimer.unref();
    }
  }

  /**
   * Writes every record version durable in the log so far to its record file, then deletes the log segments
   * that held them. One at a time; a failed checkpoint keeps its versions and segments for the next one.
   */
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
        await running.catch(() => undefined);
        this.#stopCheckpoint = false;
      }
      let done = false;
      if (this.#durable.size <= WAITED_CHECKPOINT_MAX) {
        done = await this.checkpoint().then(
          () => true,
          () => false,
        );
      }
      await wal.close(done).catch(() => undefined);
    }
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
      const { wal, lines, retired } = await WriteAheadLog.open(join(dir, 'wal'), store.fsync);
      store.#wal = wal;
      store.#retired = retired;
      const journals = await store.#replayJournal();
      store.#replayLog(lines);
      // What the last run left in its log reaches the record files before anything is served.
      if (journals.length > 0 || (retired.length > 0 && store.#durable.size <= WAITED_CHECKPOINT_MAX)) {
        await store.checkpoint();
      } else if (retired.length > 0) {
        void store.checkpoint().catch(() => undefined);
      }
      for (const path of journals) await unlink(path);
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

  /** A version found at start (log or journal): kept where newer than what is loaded, and due for a checkpoint. */
  #replay(collection: string, id: string, seq: number, data: unknown): void {
    if (seq > this.#seq) this.#seq = seq;
    if (this.collection(collection).apply(id, seq, data)) {
      const text = JSON.stringify({ seq, data });
      this.#markDurable({ collection, id, seq, text, removed: data === null });
    }
  }

  #replayLog(lines: WalEntry[][]): void {
    for (const line of lines) {
      for (const entry of line) {
        if (!isSafeId(entry.i) || !this.#collections.has(entry.c) || typeof entry.r?.seq !== 'number') {
          throw new CorruptDataFileError(
            join(this.dir, 'wal'),
            new Error('a log line names no valid record'),
          );
        }
        this.#replay(entry.c, entry.i, entry.r.seq, entry.r.data);
      }
    }
  }

  /** Journal files of the first layout: applied where newer, written by the startup checkpoint; their paths. */
  async #replayJournal(): Promise<string[]> {
    const journalDir = join(this.dir, 'journal');
    let names: string[];
    try {
      names = (await readdir(journalDir)).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const applied: string[] = [];
    for (const name of names) {
      const path = join(journalDir, name);
      if (!name.endsWith('.json')) {
        await unlink(path).catch(() => undefined);
        continue;
      }
      const entries = await readJsonFile<JournalEntry[]>(path);
      if (!Array.isArray(entries)) throw new CorruptDataFileError(path, new Error('not a journal'));
      for (const entry of entries) {
        if (!isSafeId(entry.id)) throw new CorruptDataFileError(path, new Error('unsafe id in journal'));
        this.#replay(entry.collection, entry.id, entry.seq, entry.data);
      }
      applied.push(path);
    }
    return applied;
  }
}

/** Schema migrations, one step per version; version 1 is the first, so there is nothing to do yet. */
function migrate(meta: StoreMeta): void {
  while (meta.schemaVersion < SCHEMA_VERSION) {
    meta.schemaVersion++;
  }
}
