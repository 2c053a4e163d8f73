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

/**
 * Popularity (issue 8): counted when a public avatar or world build is downloaded and when an instance of a world
 * opens. Counts are not acknowledged client data, so they are saved in batches (every few seconds), not per hit.
 */
export function createPopularityService(
  deps: Pick<ServiceDeps, 'store' | 'clock'> & {
    isPublic: (kind: 'avatar' | 'world', id: string) => boolean;
  },
) {
  const { store, clock } = deps;
  // Usage counts change on every instance opened: they are counted in memory (a working copy of the stored
  // records) and written every few seconds; a crash loses at most those seconds of counting, nothing acknowledged.
  const records = new Map<string, Record_>();
  for (const record of store.collection<Record_>(POPULARITY).values())
    records.set(record.id, structuredClone(record));
  const dirty = new Set<string>();
  const rankings = new Map<string, { at: number; list: PopularityDto[]; pages: Map<string, string> }>();

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

  return {
    use(kind: 'avatar' | 'world', id: string): void {
      const now = Math.floor(clock.now() / 1000);
      const record = records.get(id) ?? { id, kind, five: {}, hours: {}, days: {} };
      bump(record.five, now - (now % (5 * MINUTE)), now - 2 * HOUR);
      bump(record.hours, now - (now % HOUR), now - 2 * DAY);
      bump(record.days, now - (now % DAY), now - 366 * DAY);
      records.set(id, record);
      dirty.add(id);
    },

    /** Most used public assets of a kind for a window, newest figures at most a second old. */
    top(kind: 'avatar' | 'world', type: number, itemsPerPage: number, page: number): PopularityDto[] {
      const window = POPULARITY_WINDOWS[type]!;
      const key = `${kind}:${type}`;
      const nowMs = clock.now();
      let cached = rankings.get(key);
      if (!cached || nowMs - cached.at >= 1000) {
        const now = Math.floor(nowMs / 1000);
        const list = [...records.values()]
          .filter((r) => r.kind === kind && deps.isPublic(kind, r.id))
          .map((r) => view(r, now))
          .filter((p) => p[window].Usages > 0)
          .sort((a, b) => b[window].Usages - a[window].Usages || (a.Id < b.Id ? -1 : 1));
        cached = { at: nowMs, list, pages: new Map() };
        rankings.set(key, cached);
      }
      return cached.list.slice(itemsPerPage * page, itemsPerPage * (page + 1));
    },

    /** The same page as JSON text, serialised once per ranking (reads far outnumber changes). */
    topJson(kind: 'avatar' | 'world', type: number, itemsPerPage: number, page: number): string {
      const list = this.top(kind, type, itemsPerPage, page);
      const ranking = rankings.get(`${kind}:${type}`)!;
      const pageKey = `${itemsPerPage}:${page}`;
      let text = ranking.pages.get(pageKey);
      if (text === undefined) {
        text = JSON.stringify(list);
        if (ranking.pages.size < 1000) ranking.pages.set(pageKey, text);
      }
      return text;
    },

    forget(id: string): void {
      if (records.delete(id)) dirty.add(id);
    },

    /** Writes the counts changed since the last flush. */
    async flush(): Promise<void> {
      if (dirty.size === 0) return;
      const ids = [...dirty];
      dirty.clear();
      try {
        await store.tx((t) => {
          const repo = t.repo<Record_>(POPULARITY);
          for (const id of ids) {
            const record = records.get(id);
            if (record) repo.put(id, structuredClone(record));
            else if (repo.has(id)) repo.remove(id);
          }
        });
      } catch (error) {
        // Written with the next flush.
        for (const id of ids) dirty.add(id);
        throw error;
      }
    },
  };
}

export type PopularityService = ReturnType<typeof createPopularityService>;
