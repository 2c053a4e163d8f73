/** What a search of an index's keys matches: keys holding the text anywhere, or keys beginning with it. */
export type KeyMatch = { contains: string } | { prefix: string };

/** A key of an index and the record it names. */
export interface KeyHit {
  key: string;
  id: string;
}

/** Key order, then id: the order a search answers in on every store. */
export function byKeyThenId(a: KeyHit, b: KeyHit): number {
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The keys of one index, sorted, for searches from memory (the embedded store; a PostgreSQL host's kept keys):
 * "prefix" is a binary search then a walk; for "contains" the keys are joined into one string (NUL between them,
 * each one's offset kept, made at the first such search), so it is a run of native `indexOf` over that string in
 * key order that stops as soon as the page it answers is full. Made again when the index changes: from scratch, or
 * (`patched`) from the one before and the records that changed.
 */
export class KeyList {
  readonly #hits: readonly KeyHit[];
  #joined: { text: string; starts: Int32Array } | null = null;

  /** `ready`: the hits are frozen and sorted already (taken as they are). */
  constructor(hits: KeyHit[], ready?: 'ready') {
    // Frozen: searches hand these out, and nobody may change what the next search reads.
    this.#hits = ready
      ? hits
      : hits.map((hit) => Object.freeze({ key: hit.key, id: hit.id })).sort(byKeyThenId);
  }

  /**
   * This list less the hits `removed` (those it holds), plus the hits `added`: each found by a binary search, the
   * rest copied in order (no sort, no comparison of the keys that did not change).
   */
  patched(removed: readonly KeyHit[], added: readonly KeyHit[]): KeyList {
    const old = this.#hits;
    const cuts = removed
      .map((hit) => this.#position(hit))
      .filter((at, index) => at < old.length && byKeyThenId(old[at]!, removed[index]!) === 0);
    const dropAt = [...new Set(cuts)].sort((a, b) => a - b);
    const adds = added.map((hit) => Object.freeze({ key: hit.key, id: hit.id })).sort(byKeyThenId);
    const out: KeyHit[] = [];
    let from = 0;
    const copyTo = (end: number): void => {
      for (let at = from; at < end; at++) out.push(old[at]!);
      from = Math.max(from, end);
    };
    let [d, a] = [0, 0];
    while (d < dropAt.length || a < adds.length) {
      const insertAt = a < adds.length ? this.#position(adds[a]!) : Infinity;
      const dropNext = d < dropAt.length ? dropAt[d]! : Infinity;
      if (insertAt <= dropNext) {
        copyTo(insertAt);
        const held = insertAt < old.length && byKeyThenId(old[insertAt]!, adds[a]!) === 0;
        // A hit it holds already, and keeps: not twice.
        if (!held || insertAt === dropNext) out.push(adds[a]!);
        a++;
      } else {
        copyTo(dropNext);
        from = dropNext + 1;
        d++;
      }
    }
    copyTo(old.length);
    return new KeyList(out, 'ready');
  }

  /** Where `hit` is or would go: the first position whose hit does not sort before it. */
  #position(hit: KeyHit): number {
    let low = 0;
    let high = this.#hits.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (byKeyThenId(this.#hits[mid]!, hit) < 0) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** The matches, in key then id order: `offset` of them skipped, at most `limit`. */
  find(match: KeyMatch, offset: number, limit: number): KeyHit[] {
    const out: KeyHit[] = [];
    let skip = offset;
    const visit = (hit: KeyHit): boolean => {
      if (skip > 0) skip--;
      else out.push(hit);
      return out.length < limit;
    };
    if (limit <= 0) return out;
    if ('contains' in match) this.#containing(match.contains, visit);
    else this.#starting(match.prefix, visit);
    return out;
  }

  #containing(needle: string, visit: (hit: KeyHit) => boolean): void {
    if (needle.length === 0) {
      for (const hit of this.#hits) if (!visit(hit)) return;
      return;
    }
    const { text, starts } = this.#joinedKeys();
    let from = 0;
    for (;;) {
      const at = text.indexOf(needle, from);
      if (at < 0) return;
      const index = this.#entryAt(at);
      const hit = this.#hits[index]!;
      if (at + needle.length > starts[index]! + hit.key.length) {
        from = at + 1; // runs across the NUL into the next key (a needle holding NUL): not a match
        continue;
      }
      if (!visit(hit)) return;
      from = index + 1 < starts.length ? starts[index + 1]! : text.length;
    }
  }

  #starting(prefix: string, visit: (hit: KeyHit) => boolean): void {
    let low = 0;
    let high = this.#hits.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.#hits[mid]!.key < prefix) low = mid + 1;
      else high = mid;
    }
    for (let index = low; index < this.#hits.length; index++) {
      const hit = this.#hits[index]!;
      if (!hit.key.startsWith(prefix) || !visit(hit)) return;
    }
  }

  #joinedKeys(): { text: string; starts: Int32Array } {
    if (this.#joined) return this.#joined;
    const starts = new Int32Array(this.#hits.length);
    let offset = 0;
    this.#hits.forEach((hit, index) => {
      starts[index] = offset;
      offset += hit.key.length + 1;
    });
    this.#joined = { text: this.#hits.map((hit) => hit.key).join('\u0000'), starts };
    return this.#joined;
  }

  /** The entry whose key holds offset `at`: the last start at or before it. */
  #entryAt(at: number): number {
    const starts = this.#joinedKeys().starts;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (starts[mid]! <= at) low = mid;
      else high = mid - 1;
    }
    return low;
  }
}
