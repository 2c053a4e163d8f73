import type { ServiceDeps } from './context.js';

export const POPULARITY = 'popularity';

/** Rolling windows, in the order of the `type` path parameter (0 Hourly … 4 Yearly). */
export const POPULARITY_WINDOWS = ['Hourly', 'Daily', 'Weekly', 'Monthly', 'Yearly'] as const;

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

/**
 * Usage counts per asset in coarse time buckets: 5-minute buckets for the last hour, hour buckets for the last day,
 * day buckets for the last year. An update touches one counter of each tier; a read sums a few dozen numbers.
 */
interface Record_ {
  id: string;
  kind: 'avatar' | 'world';
  /** bucket start (Unix s) -> count */
  five: Record<string, number>;
  hours: Record<string, number>;
  days: Record<string, number>;
}

export interface PopularityDto {
  Id: string;
  Hourly: { Usages: number };
  Daily: { Usages: number };
  Weekly: { Usages: number };
  Monthly: { Usages: number };
  Yearly: { Usages: number };
}

function bump(buckets: Record<string, number>, start: number, keepFrom: number): void {
  buckets[start] = (buckets[start] ?? 0) + 1;
  for (const key of Object.keys(buckets)) if (Number(key) < keepFrom) delete buckets[key];
}

function sum(buckets: Record<string, number>, from: number): number {
  let total = 0;
  for (const [key, count] of Object.entries(buckets)) if (Number(key) >= from) total += count;
  return total;
}

/** Adds the counts of `delta` to `into`, dropping buckets older than `keepFrom`. */
function add(into: Record<string, number>, delta: Record<string, number>, keepFrom: number): void {
  for (const [key, count] of Object.entries(delta)) into[key] = (into[key] ?? 0) + count;
  for (const key of Object.keys(into)) if (Number(key) < keepFrom) delete into[key];
}

function emptyRecord(id: string, kind: 'avatar' | 'world'): Record_ {
  return { id, kind, five: {}, hours: {}, days: {} };
}

function view(record: Record_, now: number): PopularityDto {
  return {
    Id: record.id,
    Hourly: { Usages: sum(record.five, now - HOUR + 1 - 5 * MINUTE) },
    Daily: { Usages: sum(record.hours, now - DAY + 1 - HOUR) },
    Weekly: { Usages: sum(record.days, now - 7 * DAY + 1 - DAY) },
    Monthly: { Usages: sum(record.days, now - 30 * DAY + 1 - DAY) },
    Yearly: { Usages: sum(record.days, now - 365 * DAY + 1 - DAY) },
  };
}

function count(record: Record_, now: number): void {
  bump(record.five, now - (now % (5 * MINUTE)), now - 2 * HOUR);
  bump(record.hours, now - (now % HOUR), now - 2 * DAY);
  bump(record.days, now - (now % DAY), now - 366 * DAY);
}

/** `stored` with `delta` added, old buckets dropped. */
function merged(stored: Record_, delta: Record_, now: number): Record_ {
  const next = structuredClone(stored);
  add(next.five, delta.five, now - 2 * HOUR);
  add(next.hours, delta.hours, now - 2 * DAY);
  add(next.days, delta.days, now - 366 * DAY);
  return next;
}

/** The used public assets of a kind for a window, most used first, with their tags. */
async function ranking(
  records: ReadonlyMap<string, Record_>,
  publicAssets: PublicAssets,
  kind: 'avatar' | 'world',
  window: (typeof POPULARITY_WINDOWS)[number],
  now: number,
) {
  const used: PopularityDto[] = [];
  for (const record of records.values()) {
    if (record.kind !== kind) continue;
    const shown = view(record, now);
    if (shown[window].Usages > 0) used.push(shown);
  }
  const assets = await publicAssets(
    kind,
    used.map((shown) => shown.Id),
  );
  const tags = new Map(assets.map((asset) => [asset.Id, asset.Tags]));
  const list = used
    .filter((shown) => tags.has(shown.Id))
    .sort((a, b) => b[window].Usages - a[window].Usages || (a.Id < b.Id ? -1 : 1));
  return { list, tags };
}

/** A page of `ranked` limited to assets carrying any of `tags` (compared without case). */
function taggedPage(
  ranked: { list: PopularityDto[]; tags: ReadonlyMap<string, readonly string[]> },
  tags: readonly string[],
  itemsPerPage: number,
  page: number,
): PopularityDto[] {
  const wanted = new Set(tags.map((tag) => tag.toLowerCase()));
  const out: PopularityDto[] = [];
  let skip = itemsPerPage * page;
  for (const entry of ranked.list) {
    const own = ranked.tags.get(entry.Id) ?? [];
    if (!own.some((tag) => wanted.has(tag.toLowerCase()))) continue;
    if (skip > 0) {
      skip--;
      continue;
    }
    out.push(entry);
    if (out.length >= itemsPerPage) break;
  }
  return out;
}

/** The public ones of these assets (gone and private ones left out), with their tags: one read per ranking. */
type PublicAssets = (
  kind: 'avatar' | 'world',
  ids: readonly string[],
) => Promise<ReadonlyArray<{ Id: string; Tags: readonly string[] }>>;

/**
 * Popularity (issue 8): counted when a public avatar or world build is downloaded and when an instance of a world
 * opens. Counts are not acknowledged client data, so they are saved in batches (every few seconds), not per hit.
 * Each host adds what it counted since its last save to the stored counts (several hosts count the same asset), and
 * ranks from the stored counts it last read plus its own unsaved ones.
 */
export function createPopularityService(
  deps: Pick<ServiceDeps, 'store' | 'clock'> & {
    publicAssets: PublicAssets;
    /** Where a failed background read (following another host's counts) is reported. */
    onBackgroundError?: (error: unknown, task: string) => void;
  },
) {
  const { store, clock } = deps;
  // Usage counts change on every instance opened: they are counted in memory and added to the stored records every
  // few seconds; a crash loses at most those seconds of counting, nothing acknowledged.
  const records = new Map<string, Record_>();
  /** What this host counted since its last save, per asset. */
  const unsaved = new Map<string, Record_>();
  const forgotten = new Set<string>();
  const rankings = new Map<
    string,
    {
      at: number;
      list: PopularityDto[];
      tags: ReadonlyMap<string, readonly string[]>;
      pages: Map<string, string>;
    }
  >();

  /** The stored counts of `id` (null: of every asset) as another host left them, this host's unsaved ones on top. */
  async function follow(id: string | null): Promise<void> {
    const now = Math.floor(clock.now() / 1000);
    const repo = store.collection<Record_>(POPULARITY);
    const stored = id === null ? await collect(repo.scan()) : [await repo.get(id)];
    if (id === null) records.clear();
    for (const record of stored) {
      if (!record) continue;
      const since = unsaved.get(record.id);
      records.set(record.id, since ? merged(record, since, now) : structuredClone(record));
    }
    if (id !== null && !stored[0] && !unsaved.has(id)) records.delete(id);
  }
  // Several hosts count the same assets: another host's flush reaches this host's rankings too.
  store.watch(POPULARITY, (id, remote) => {
    if (!remote) return;
    follow(id).catch((error: unknown) =>
      deps.onBackgroundError?.(error, 'reading the popularity counts another host saved'),
    );
  });

  return {
    /** Reads the stored counts (at start). */
    async init(): Promise<void> {
      for await (const record of store.collection<Record_>(POPULARITY).scan())
        records.set(record.id, structuredClone(record));
    },

    use(kind: 'avatar' | 'world', id: string): void {
      const now = Math.floor(clock.now() / 1000);
      const record = records.get(id) ?? emptyRecord(id, kind);
      count(record, now);
      records.set(id, record);
      const delta = unsaved.get(id) ?? emptyRecord(id, kind);
      count(delta, now);
      unsaved.set(id, delta);
      forgotten.delete(id);
    },

    /** Most used public assets of a kind for a window, newest figures at most a second old. */
    async top(kind: 'avatar' | 'world', type: number, itemsPerPage: number, page: number) {
      const window = POPULARITY_WINDOWS[type]!;
      const key = `${kind}:${type}`;
      const nowMs = clock.now();
      let cached = rankings.get(key);
      if (!cached || nowMs - cached.at >= 1000) {
        cached = {
          at: nowMs,
          ...(await ranking(records, deps.publicAssets, kind, window, Math.floor(nowMs / 1000))),
          pages: new Map(),
        };
        rankings.set(key, cached);
      }
      return { ranking: cached, page: cached.list.slice(itemsPerPage * page, itemsPerPage * (page + 1)) };
    },

    /** The same page as JSON text, serialised once per ranking (reads far outnumber changes). */
    async topJson(
      kind: 'avatar' | 'world',
      type: number,
      itemsPerPage: number,
      page: number,
    ): Promise<string> {
      const { ranking: ranked, page: list } = await this.top(kind, type, itemsPerPage, page);
      const pageKey = `${itemsPerPage}:${page}`;
      let text = ranked.pages.get(pageKey);
      if (text === undefined) {
        text = JSON.stringify(list);
        if (ranked.pages.size < 1000) ranked.pages.set(pageKey, text);
      }
      return text;
    },

    /**
     * A page of the ranking limited to assets carrying any of `tags` (compared without case), as HypernexSharp
     * e01b12d asks for it (wire reference 12.5).
     */
    async topTagged(
      kind: 'avatar' | 'world',
      type: number,
      tags: readonly string[],
      itemsPerPage: number,
      page: number,
    ): Promise<PopularityDto[]> {
      const { ranking: ranked } = await this.top(kind, type, 1, 0);
      return taggedPage(ranked, tags, itemsPerPage, page);
    },

    forget(id: string): void {
      records.delete(id);
      unsaved.delete(id);
      forgotten.add(id);
    },

    /** Adds the counts made since the last flush to the stored ones (and removes forgotten assets' counts). */
    async flush(): Promise<void> {
      if (unsaved.size === 0 && forgotten.size === 0) return;
      const deltas = [...unsaved.values()];
      const gone = [...forgotten];
      unsaved.clear();
      forgotten.clear();
      const now = Math.floor(clock.now() / 1000);
      try {
        const saved = await store.tx(async (t) => {
          const repo = t.repo<Record_>(POPULARITY);
          const written: Record_[] = [];
          for (const delta of deltas) {
            const stored = (await repo.get(delta.id)) ?? emptyRecord(delta.id, delta.kind);
            written.push(repo.put(delta.id, merged(stored, delta, now)));
          }
          for (const id of gone) if (await repo.has(id)) await repo.remove(id);
          return written;
        });
        // The stored counts now hold every host's; this host's counts since the flush began come on top.
        for (const record of saved) {
          const since = unsaved.get(record.id);
          records.set(record.id, since ? merged(record, since, now) : structuredClone(record));
        }
      } catch (error) {
        // Added with the next flush.
        for (const delta of deltas) {
          const since = unsaved.get(delta.id);
          unsaved.set(delta.id, since ? merged(delta, since, now) : delta);
        }
        for (const id of gone) if (!unsaved.has(id)) forgotten.add(id);
        throw error;
      }
    },
  };
}

export type PopularityService = ReturnType<typeof createPopularityService>;

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
