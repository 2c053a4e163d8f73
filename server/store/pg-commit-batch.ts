/** What a transaction read, checked when it commits (hx_reads_hold): records, unique keys, list keys. */
export interface ReadSet {
  /** [collection, id, version ('0': absent)] */
  r: Array<[string, string, string]>;
  /** [collection, index, key, id holding it or null] */
  k: Array<[string, string, string, string | null]>;
  /** [collection, index, key, ids listed] */
  l: Array<[string, string, string, string[]]>;
}

/** What a transaction writes, by name: records (u_ upserts, r_ removals, kr_ rekeyed), keys (k_, l_), entries (e_). */
export type WriteSet = Record<
  | 'u_c'
  | 'u_i'
  | 'u_d'
  | 'r_c'
  | 'r_i'
  | 'kr_c'
  | 'kr_i'
  | 'k_c'
  | 'k_x'
  | 'k_k'
  | 'k_i'
  | 'l_c'
  | 'l_x'
  | 'l_k'
  | 'l_i'
  | 'e_l'
  | 'e_d',
  string[]
>;

/** A transaction's commit as hx_commit_batch takes it: its id, what it read and what it writes. */
export interface CommitItem {
  id: string;
  reads: ReadSet;
  w: WriteSet;
}

/**
 * What became of one commit: its history entries' numbers; null when something it read had changed (nothing
 * written: it runs again); or why it failed (refused by PostgreSQL, or its outcome could not be learned).
 */
export type CommitAnswer = Committed | null | Error;

/** A commit that happened: its history entries' numbers, and the versions its records have now (by collection
 * and id, chr(31) between them; absent when its answer was lost and had to be settled). */
export interface Committed {
  seqs: number[];
  versions: Record<string, string>;
  /** When its answer came (performance.now()). */
  at: number;
  /** Its announcement coming back to this host (null: none, or not known). */
  echo: Promise<void> | null;
}

/**
 * Sends commits (one statement for all of them) and answers each, a lost answer settled first; rejects only when
 * PostgreSQL refused the statement for what one of them holds (then none of them happened, and each is sent again
 * on its own).
 */
type Send = (items: readonly CommitItem[]) => Promise<CommitAnswer[]>;

interface Waiting {
  item: CommitItem;
  resolve: (answer: CommitAnswer) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit on PostgreSQL: commits asked for while one statement is on its way wait for it, then go together
 * in the next (hx_commit_batch). Each commit then shares one flush of PostgreSQL's log with the others, and a host
 * sends one commit statement at a time whatever its load; alone, a commit goes at once. A commit that reads or
 * writes what an earlier one of its batch writes is answered "changed" at once (it runs again, after). When a
 * statement of several fails as a whole (a refusal only seen at its end), each of its commits is sent again on
 * its own, so one commit's refusal is never another's.
 */
export class PgCommitBatch {
  #next: Waiting[] = [];
  #sending = false;

  constructor(private readonly send: Send) {}

  commit(item: CommitItem): Promise<CommitAnswer> {
    return new Promise((resolve, reject) => {
      this.#next.push({ item, resolve, reject });
      // #drain never rejects: every failure is handed to the commits it concerns.
      if (!this.#sending) this.#drain().catch(() => undefined);
    });
  }

  async #drain(): Promise<void> {
    this.#sending = true;
    while (this.#next.length > 0) {
      const waiting = this.#next;
      this.#next = [];
      const batch: Waiting[] = [];
      const touched = new Touched();
      for (const w of waiting) {
        if (touched.meets(w.item)) {
          w.resolve(null);
        } else {
          batch.push(w);
          touched.add(w.item);
        }
      }
      await this.#sendBatch(batch);
    }
    this.#sending = false;
  }

  async #sendBatch(batch: Waiting[]): Promise<void> {
    try {
      const answers = await this.send(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(answers[i] ?? null));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // Independent of each other (see Touched): side by side.
      await Promise.all(batch.map((w) => this.#sendBatch([w])));
    }
  }
}

/** What the commits of a batch so far write: records, and keys they give records. */
class Touched {
  readonly #records = new Set<string>();
  readonly #keys = new Set<string>();

  /** Whether `item` reads or writes a record, or reads or gives a key, that an earlier commit writes or gives. */
  meets(item: CommitItem): boolean {
    const { reads, w } = item;
    return (
      reads.r.some(([c, id]) => this.#records.has(name(c, id))) ||
      w.u_c.some((c, i) => this.#records.has(name(c, w.u_i[i]!))) ||
      w.r_c.some((c, i) => this.#records.has(name(c, w.r_i[i]!))) ||
      reads.k.some(([c, x, key]) => this.#keys.has(name(c, x, key))) ||
      reads.l.some(([c, x, key]) => this.#keys.has(name(c, x, key))) ||
      w.k_c.some((c, i) => this.#keys.has(name(c, w.k_x[i]!, w.k_k[i]!)))
    );
  }

  add({ w }: CommitItem): void {
    w.u_c.forEach((c, i) => this.#records.add(name(c, w.u_i[i]!)));
    w.r_c.forEach((c, i) => this.#records.add(name(c, w.r_i[i]!)));
    w.k_c.forEach((c, i) => this.#keys.add(name(c, w.k_x[i]!, w.k_k[i]!)));
    w.l_c.forEach((c, i) => this.#keys.add(name(c, w.l_x[i]!, w.l_k[i]!)));
  }
}

const name = (...parts: string[]): string => parts.join('\u0000');

/** Each column of `rows` (arrays of equal length) as one array. */
function columns<R extends unknown[]>(rows: R[], width: number): unknown[][] {
  return Array.from({ length: width }, (_, at) => rows.map((row) => row[at]));
}

/** The argument of hx_commit_batch (from 1) holding the data of the records written (u_d). */
export const RECORD_DATA_ARG = 20;

/**
 * hx_commit_batch's arguments for `items` (numbered from 1): the batch's reads, then its writes, each row led by
 * the number of its transaction. The records' data (RECORD_DATA_ARG) is one JSON array of their texts: pg would
 * escape each text as an element of an array literal, for PostgreSQL to parse back.
 */
export function batchValues(items: readonly CommitItem[]): unknown[] {
  const rows = <R extends unknown[]>(of: (item: CommitItem) => R[]): Array<[number, ...R]> =>
    items.flatMap((item, i) => of(item).map((row): [number, ...R] => [i + 1, ...row]));
  const writes = (...names: Array<keyof WriteSet>) =>
    columns(
      rows((item) => item.w[names[0]!].map((_, at) => names.map((n) => item.w[n][at]))),
      names.length + 1,
    );
  const values: unknown[] = [
    items.length,
    items.map((item) => item.id),
    ...columns(
      rows((item) => item.reads.r),
      4,
    ),
    ...columns(
      rows((item) => item.reads.k),
      5,
    ),
    ...columns(
      rows((item) => item.reads.l.map(([c, x, k, ids]) => [c, x, k, JSON.stringify(ids)])),
      5,
    ),
    ...writes('u_c', 'u_i', 'u_d'),
    ...writes('r_c', 'r_i'),
    ...writes('kr_c', 'kr_i'),
    ...writes('k_c', 'k_x', 'k_k', 'k_i'),
    ...writes('l_c', 'l_x', 'l_k', 'l_i'),
    ...writes('e_l', 'e_d'),
  ];
  values[RECORD_DATA_ARG - 1] = `[${(values[RECORD_DATA_ARG - 1] as string[]).join(',')}]`;
  return values;
}
