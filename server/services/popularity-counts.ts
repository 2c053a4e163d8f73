export const POPULARITY = 'popularity';

/** Rolling windows, in the order of the `type` path parameter (0 Hourly … 4 Yearly). */
export const POPULARITY_WINDOWS = ['Hourly', 'Daily', 'Weekly', 'Monthly', 'Yearly'] as const;

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

export type AssetKind = 'avatar' | 'world';

/**
 * Usage counts per asset in coarse time buckets: 5-minute buckets for the last hour, hour buckets for the last day,
 * day buckets for the last year. An update touches one counter of each tier; a read sums a few dozen numbers.
 */
export interface PopularityRecord {
  id: string;
  kind: AssetKind;
  /** bucket start (Unix s) -> count */
  five: Record<string, number>;
  hours: Record<string, number>;
  days: Record<string, number>;
  /**
   * Each window's count (POPULARITY_WINDOWS order) when the record was last written. A window only loses buckets
   * until the asset is used again (and the record written again), so each stays an upper bound of the count.
   */
  totals?: number[];
}

/** The list index ranking assets: `kind:window:` then a key that sorts the larger count first. */
export const BY_RANK = 'rank';
/** Counts are below this (a key is this less the count, zero-padded: key order is most used first). */
const RANK_CEILING = 1e12;

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

export function emptyRecord(id: string, kind: AssetKind): PopularityRecord {
  return { id, kind, five: {}, hours: {}, days: {} };
}

export function view(record: PopularityRecord, now: number): PopularityDto {
  return {
    Id: record.id,
    Hourly: { Usages: sum(record.five, now - HOUR + 1 - 5 * MINUTE) },
    Daily: { Usages: sum(record.hours, now - DAY + 1 - HOUR) },
    Weekly: { Usages: sum(record.days, now - 7 * DAY + 1 - DAY) },
    Monthly: { Usages: sum(record.days, now - 30 * DAY + 1 - DAY) },
    Yearly: { Usages: sum(record.days, now - 365 * DAY + 1 - DAY) },
  };
}

export function count(record: PopularityRecord, now: number): void {
  bump(record.five, now - (now % (5 * MINUTE)), now - 2 * HOUR);
  bump(record.hours, now - (now % HOUR), now - 2 * DAY);
  bump(record.days, now - (now % DAY), now - 366 * DAY);
}

/** `stored` with `delta` added, old buckets dropped (`delta` null: only the old buckets dropped). */
export function merged(
  stored: PopularityRecord,
  delta: PopularityRecord | null,
  now: number,
): PopularityRecord {
  const next = structuredClone(stored);
  add(next.five, delta?.five ?? {}, now - 2 * HOUR);
  add(next.hours, delta?.hours ?? {}, now - 2 * DAY);
  add(next.days, delta?.days ?? {}, now - 366 * DAY);
  return next;
}

/** Each window's count now, in POPULARITY_WINDOWS order. */
export function totalsAt(record: PopularityRecord, now: number): number[] {
  const shown = view(record, now);
  return POPULARITY_WINDOWS.map((window) => shown[window].Usages);
}

/** `record` as it is written: with its windows' counts as of `now` (the rank index's keys). */
export function withTotals(record: PopularityRecord, now: number): PopularityRecord {
  return { ...record, totals: totalsAt(record, now) };
}

/**
 * The record's keys in the rank index, one per window it was used in: from its totals, or (a record written before
 * they were kept) from every bucket it holds, an upper bound as well.
 */
export function rankKeys(record: PopularityRecord): string[] {
  const all = (buckets: Record<string, number>) => Object.values(buckets).reduce((a, b) => a + b, 0);
  const days = all(record.days);
  const totals = record.totals ?? [all(record.five), all(record.hours), days, days, days];
  return totals.flatMap((total, window) =>
    total > 0 ? [`${rankPrefix(record.kind, window)}${String(RANK_CEILING - total).padStart(13, '0')}`] : [],
  );
}

export const rankPrefix = (kind: AssetKind, window: number): string => `${kind}:${window}:`;

/** The count a rank key stands for (at most the window's count now). */
export const boundOfRankKey = (key: string): number =>
  RANK_CEILING - Number(key.slice(key.lastIndexOf(':') + 1));

/** The public ones of these assets (gone and private ones left out), with their tags. */
export type PublicAssets = (
  kind: AssetKind,
  ids: readonly string[],
) => Promise<ReadonlyArray<{ Id: string; Tags: readonly string[] }>>;
