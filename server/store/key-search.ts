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
 * The keys of one index, sorted, for the embedded store's searches: joined into one string (NUL between them) with
 * each one's offset, so "contains" is a run of native `indexOf` over that string in key order that stops as soon
 * as the page it answers is full, and "prefix" a binary search then a walk. Built once per change of the index.
 */
export class KeyList {
  readonly #hits: KeyHit[];
  readonly #text: string;
  readonly #starts: Int32Array;

  constructor(hits: KeyHit[]) {
    // Frozen: searches hand these out, and nobody may change what the next search reads.
    this.#hits = hits.map((hit) => Object.freeze({ key: hit.key, id: hit.id })).sort(byKeyThenId);
    this.#starts = new Int32Array(this.#hits.length);
    let offset = 0;
    this.#hits.forEach((hit, index) => {
      this.#starts[index] = offset;
      offset += hit.key.length + 1;
    });
    this.#text = this.#hits.map((hit) => hit.key).join('\u0000');
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
    const text = this.#text;
    const starts = this.#starts;
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

  /** The entry whose key holds offset `at`: the last start at or before it. */
  #entryAt(at: number): number {
    const starts = this.#starts;
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
