import type { ReadCollection } from '../store/seam.js';
import {
  boundOfRankKey,
  BY_RANK,
  merged,
  POPULARITY_WINDOWS,
  rankPrefix,
  view,
  type AssetKind,
  type PopularityDto,
  type PopularityRecord,
  type PublicAssets,
} from './popularity-counts.js';

/** Rank keys read per query of the walk. */
const CHUNK = 200;

export interface RankingAsk {
  kind: AssetKind;
  /** Index in POPULARITY_WINDOWS. */
  window: number;
  /** How many of the most used are wanted (the page's end). */
  need: number;
  /** Unix seconds. */
  now: number;
  /** Limits the ranking to assets whose tags it accepts. */
  accept?: (tags: readonly string[]) => boolean;
}

export interface RankingParts {
  records: ReadCollection<PopularityRecord>;
  publicAssets: PublicAssets;
  /** This host's counts not saved yet, by asset: added to the stored ones. */
  unsaved: ReadonlyMap<string, PopularityRecord>;
}

export interface Ranked {
  /** The `need` most used public assets (fewer when fewer were used), most used first, then by id. */
  list: PopularityDto[];
  /** Whether `list` holds every used asset the ranking accepts (a longer page needs no new walk). */
  complete: boolean;
  /** Records whose rank keys are above their counts now (their windows lost buckets): worth writing again. */
  stale: string[];
}

const byUsage = (window: (typeof POPULARITY_WINDOWS)[number]) => (a: PopularityDto, b: PopularityDto) =>
  b[window].Usages - a[window].Usages || (a.Id < b.Id ? -1 : 1);

/**
 * The most used public assets of a kind for one window, read from the store's rank index (a query per chunk on
 * PostgreSQL, no copy of every count in memory). A key holds the count its record had when last written: an upper
 * bound of the count now. The walk reads keys from the largest, checks each record's count now, and stops once the
 * next key's bound is below the `need`-th count found: nothing unread can rank higher. This host's unsaved counts
 * are added to the records they belong to, which are read first.
 */
export async function rankAssets(parts: RankingParts, ask: RankingAsk): Promise<Ranked> {
  const name = POPULARITY_WINDOWS[ask.window]!;
  const found: PopularityDto[] = [];
  const stale: string[] = [];
  const seen = new Set<string>();
  const consider = async (ids: string[]): Promise<void> => {
    const fresh = ids.filter((id) => !seen.has(id));
    for (const id of fresh) seen.add(id);
    const counted = await countsNow(parts, fresh, ask, stale);
    const open = await parts.publicAssets(
      ask.kind,
      counted.map((shown) => shown.Id),
    );
    const accepted = new Set(open.filter((a) => !ask.accept || ask.accept(a.Tags)).map((a) => a.Id));
    for (const shown of counted) if (accepted.has(shown.Id)) found.push(shown);
    found.sort(byUsage(name));
  };
  await consider([...parts.unsaved.values()].filter((r) => r.kind === ask.kind).map((r) => r.id));
  for (let offset = 0; ; offset += CHUNK) {
    const hits = await parts.records.searchKeys(
      BY_RANK,
      { prefix: rankPrefix(ask.kind, ask.window) },
      offset,
      CHUNK,
    );
    await consider(hits.map((hit) => hit.id));
    if (hits.length < CHUNK) return { list: found.slice(0, ask.need), complete: true, stale };
    const last = boundOfRankKey(hits.at(-1)!.key);
    const needed = found[ask.need - 1]?.[name].Usages;
    if (needed !== undefined && last < needed)
      return { list: found.slice(0, ask.need), complete: false, stale };
  }
}

/** The windows' counts now of the records of `ids` used in the window asked (unsaved counts added). */
async function countsNow(
  parts: RankingParts,
  ids: readonly string[],
  ask: RankingAsk,
  stale: string[],
): Promise<PopularityDto[]> {
  if (ids.length === 0) return [];
  const name = POPULARITY_WINDOWS[ask.window]!;
  const stored = new Map((await parts.records.getMany(ids)).map((record) => [record.id, record]));
  const out: PopularityDto[] = [];
  for (const id of ids) {
    const record = stored.get(id);
    const unsaved = parts.unsaved.get(id);
    const saved = record && view(record, ask.now);
    if (record && saved && isStale(record, saved)) stale.push(id);
    const base = record ?? unsaved;
    if (!base || base.kind !== ask.kind) continue;
    const shown = unsaved ? view(record ? merged(record, unsaved, ask.now) : unsaved, ask.now) : saved!;
    if (shown[name].Usages > 0) out.push(shown);
  }
  return out;
}

/** Whether the record's kept totals (its rank keys) are not its counts now (`shown`). */
function isStale(record: PopularityRecord, shown: PopularityDto): boolean {
  return !record.totals || POPULARITY_WINDOWS.some((window, i) => shown[window].Usages !== record.totals![i]);
}
