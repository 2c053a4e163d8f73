import { KeyList, type KeyHit, type KeyMatch } from './key-search.js';

/** How long an index found too big to keep is searched with queries before it is counted again (ms). */
const RECHECK_MS = 10 * 60_000;
/** Keys per index a host keeps for searches by default (0: none, every search a query). */
export const DEFAULT_SEARCH_CACHE_KEYS = 50_000;

/** Where the keys come from (PostgreSQL): all of an index's, or those of some records. */
export interface KeyLoader {
  /** Every key of the index, stopping past `max` of them (more than `max`: too many to keep). */
  all(collection: string, index: string, max: number): Promise<KeyHit[]>;
  /** The keys these records hold in the index now. */
  of(collection: string, index: string, ids: string[]): Promise<KeyHit[]>;
}

/** What a host keeps of one index: its keys by record, sorted for searches, and the records changed since. */
class IndexKeys {
  byId = new Map<string, string[]>();
  count = 0;
  list: KeyList | null = null;
  /** Records whose keys may have changed since they were read ('all': anything may have). */
  dirty: Set<string> | 'all' = 'all';
  /** Until when the index counts as too big to keep. */
  tooBigUntil = 0;
  /** Refreshes one after another: a search waits for those asked before it. */
  chain: Promise<unknown> = Promise.resolve();

  constructor(readonly collection: string) {}

  /** Drops every key kept (what is marked changed stays marked). */
  forget(): void {
    this.byId.clear();
    this.count = 0;
    this.list = null;
  }

  put(hits: readonly KeyHit[]): void {
    for (const { key, id } of hits) {
      const keys = this.byId.get(id);
      if (keys) keys.push(key);
      else this.byId.set(id, [key]);
      this.count++;
    }
  }

  drop(ids: Iterable<string>): void {
    for (const id of ids) {
      this.count -= this.byId.get(id)?.length ?? 0;
      this.byId.delete(id);
    }
  }

  build(): KeyList {
    const hits: KeyHit[] = [];
    for (const [id, keys] of this.byId) for (const key of keys) hits.push({ key, id });
    return new KeyList(hits);
  }
}

/**
 * The keys of small indexes a host keeps for searches (users by name, public avatars by name and tag...), so a
 * search is answered from memory like on the embedded store instead of a scan of the index in PostgreSQL each
 * time. Bounded: an index of more than `maxKeys` keys is not kept (its searches stay queries). Current: every
 * change this host makes or hears of marks its records, whose keys are read again (one query) before the next
 * search; the caller uses it only while its cache lease holds, so every change acknowledged before a search
 * started was heard first (pg-lease.ts).
 */
export class PgKeyCache {
  readonly #indexes = new Map<string, IndexKeys>();

  constructor(
    private readonly maxKeys: number,
    private readonly load: KeyLoader,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** A record of `collection` changed (null: any may have). */
  changed(collection: string, id: string | null): void {
    for (const keys of this.#indexes.values()) {
      if (keys.collection !== collection || keys.dirty === 'all') continue;
      if (id === null) keys.dirty = 'all';
      else keys.dirty.add(id);
    }
  }

  /** The matches from what this host keeps, or null when it keeps no such index (too big): ask PostgreSQL. */
  async search(
    collection: string,
    index: string,
    match: KeyMatch,
    offset: number,
    limit: number,
  ): Promise<KeyHit[] | null> {
    if (this.maxKeys <= 0) return null;
    const name = `${collection}/${index}`;
    let keys = this.#indexes.get(name);
    if (!keys) this.#indexes.set(name, (keys = new IndexKeys(collection)));
    if (this.now() < keys.tooBigUntil) return null;
    const kept = keys;
    const step = kept.chain.then(() => this.#refresh(kept, index));
    kept.chain = step.catch(() => undefined);
    const list = await step;
    return list ? list.find(match, offset, limit) : null;
  }

  /** Reads what changed (everything, or the records marked) and sorts the keys again; null when too big. */
  async #refresh(keys: IndexKeys, index: string): Promise<KeyList | null> {
    if (this.now() < keys.tooBigUntil) return null;
    const dirty = keys.dirty;
    if (dirty !== 'all' && dirty.size === 0 && keys.list) return keys.list;
    // Changes heard from here on mark the records again (the reads below may be older than them).
    keys.dirty = new Set();
    let patch: { removed: KeyHit[]; added: KeyHit[] } | null = null;
    try {
      if (dirty === 'all') {
        keys.forget();
        keys.put(await this.load.all(keys.collection, index, this.maxKeys));
      } else {
        const hits = await this.load.of(keys.collection, index, [...dirty]);
        const removed = [...dirty].flatMap((id) => (keys.byId.get(id) ?? []).map((key) => ({ key, id })));
        keys.drop(dirty);
        keys.put(hits);
        patch = { removed, added: hits };
      }
    } catch (error) {
      // Read again by the next search (marks heard meanwhile kept).
      const since = keys.dirty as Set<string> | 'all';
      if (dirty === 'all' || since === 'all') keys.dirty = 'all';
      else for (const id of dirty) since.add(id);
      throw error;
    }
    if (keys.count > this.maxKeys) {
      keys.forget();
      keys.dirty = 'all';
      keys.tooBigUntil = this.now() + RECHECK_MS;
      return null;
    }
    // Only some records changed: their keys replace theirs in the sorted list, which is not sorted again.
    keys.list = patch && keys.list ? keys.list.patched(patch.removed, patch.added) : keys.build();
    return keys.list;
  }
}
