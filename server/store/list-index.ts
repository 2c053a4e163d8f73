import type { KeyHit } from './key-search.js';

/**
 * A non-unique secondary index held in memory: each key names the set of record ids whose `keysOf` lists it
 * (e.g. avatars by the build files they use). Both stores keep one per declared list index.
 */
export class ListIndex<T> {
  readonly #ids = new Map<string, Set<string>>();

  constructor(readonly keysOf: (record: T) => readonly string[]) {}

  /** Bumped whenever a key gains or loses an id (searches rebuild what they keep from the index then). */
  version = 0;
  /** Each change of a record's keys (the version before it, the keys before and after): once tracked, bounded. */
  #changes: Array<{ from: number; id: string; before: readonly string[]; after: readonly string[] }> | null =
    null;

  /** Keeps the changes of records' keys from now on (for `changedSince`). */
  track(): void {
    this.#changes ??= [];
  }

  /**
   * The keys records lost and gained since `version` (of the changes kept since `track`), or null when some
   * change since is not known.
   */
  changedSince(version: number): { removed: KeyHit[]; added: KeyHit[] } | null {
    const out: { removed: KeyHit[]; added: KeyHit[] } = { removed: [], added: [] };
    if (version === this.version) return out;
    const changes = this.#changes;
    if (!changes?.length || changes[0]!.from > version) return null;
    // Per record, its keys at `version` (before its first change since) and now (after its last).
    const spans = new Map<string, { before: readonly string[]; after: readonly string[] }>();
    for (const change of changes) {
      if (change.from < version) continue;
      const span = spans.get(change.id);
      spans.set(change.id, { before: span ? span.before : change.before, after: change.after });
    }
    for (const [id, { before, after }] of spans) {
      for (const key of new Set(before)) if (!after.includes(key)) out.removed.push({ key, id });
      for (const key of new Set(after)) if (!before.includes(key)) out.added.push({ key, id });
    }
    return out;
  }

  /** Moves record `id` from the keys of `before` to those of `after` (either may be null: none). */
  move(id: string, before: T | null, after: T | null): void {
    const from = this.version;
    const [old, next] = this.#move(id, before, after);
    if (this.#changes && this.version !== from) {
      this.#changes.push({ from, id, before: old, after: next });
      if (this.#changes.length > CHANGES_KEPT) this.#changes = this.#changes.slice(CHANGES_KEPT / 2);
    }
  }

  /** The move; the keys before and after. */
  #move(id: string, before: T | null, after: T | null): [readonly string[], readonly string[]] {
    const old = before === null ? [] : this.keysOf(before);
    const next = after === null ? [] : this.keysOf(after);
    for (const key of old) {
      if (next.includes(key)) continue;
      const set = this.#ids.get(key);
      if (set?.delete(id)) this.version++;
      if (set?.size === 0) this.#ids.delete(key);
    }
    for (const key of next) {
      let set = this.#ids.get(key);
      if (!set) this.#ids.set(key, (set = new Set()));
      if (!set.has(id)) this.version++;
      set.add(id);
    }
    return [old, next];
  }

  /** Every key with each id it holds. */
  *hits(): IterableIterator<{ key: string; id: string }> {
    for (const [key, ids] of this.#ids) for (const id of ids) yield { key, id };
  }

  /** The ids whose record lists `key`. */
  ids(key: string): ReadonlySet<string> {
    return this.#ids.get(key) ?? EMPTY;
  }

  /** Whether `record` lists `key`. */
  lists(record: T, key: string): boolean {
    return this.keysOf(record).includes(key);
  }
}

const EMPTY: ReadonlySet<string> = new Set();
/** Changed records a tracked index remembers (past this, the older half goes: a search then sorts anew). */
const CHANGES_KEPT = 20_000;

/** The ids of `base`, adjusted by newer versions (`null`: removed) of some records: sorted, for comparisons. */
export function idsWith<T>(
  index: ListIndex<T>,
  key: string,
  base: ReadonlySet<string>,
  newer: Iterable<[string, T | null]>,
): string[] {
  const ids = new Set(base);
  for (const [id, data] of newer) {
    if (data !== null && index.lists(data, key)) ids.add(id);
    else ids.delete(id);
  }
  return [...ids].sort();
}
