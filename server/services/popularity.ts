import type { ServiceDeps } from './context.js';
import {
  BY_RANK,
  count,
  emptyRecord,
  merged,
  POPULARITY,
  rankKeys,
  withTotals,
  type AssetKind,
  type PopularityDto,
  type PopularityRecord,
  type PublicAssets,
} from './popularity-counts.js';
import { rankAssets, type Ranked, type RankingAsk } from './popularity-ranking.js';

export { POPULARITY, POPULARITY_WINDOWS, type PopularityDto } from './popularity-counts.js';

/** Stale records written again per ranking at most (the rest on later rankings). */
const REWRITE_MAX = 500;
/** Rankings kept (one per kind, window and set of tags asked), for a second each. */
const RANKINGS_KEPT = 1000;
/** Pages of one ranking serialised and kept (for the second it is kept). */
const PAGES_KEPT = 1000;

interface KeptRanking extends Ranked {
  at: number;
  pages: Map<string, string>;
}

/**
 * Popularity (issue 8): counted when a public avatar or world build is downloaded and when an instance of a world
 * opens. Counts are not acknowledged client data, so they are saved in batches (every few seconds), not per hit:
 * each host adds what it counted since its last save to the stored counts, in one transaction (several hosts count
 * the same asset; nothing is overwritten). Rankings are read from the store's rank index (popularity-ranking.ts),
 * with this host's unsaved counts on top, and kept for a second; no host holds every asset's counts.
 */
export function createPopularityService(
  deps: Pick<ServiceDeps, 'store' | 'clock'> & {
    publicAssets: PublicAssets;
    /** Where a failed background write (a stale rank key written again) is reported. */
    onBackgroundError?: (error: unknown, task: string) => void;
  },
) {
  const { store, clock } = deps;
  const records = store.collection<PopularityRecord>(POPULARITY);
  records.addListIndex(BY_RANK, rankKeys);
  /** What this host counted since its last save, per asset; a crash loses at most those seconds of counting. */
  const unsaved = new Map<string, PopularityRecord>();
  const forgotten = new Set<string>();
  const rankings = new Map<string, KeptRanking>();
  /** Stale records being written again. */
  const rewriting = new Set<string>();
  /** Rankings being read, by the key they are kept under. */
  const walking = new Map<string, Promise<KeptRanking>>();
  const seconds = (): number => Math.floor(clock.now() / 1000);

  async function rank(ask: RankingAsk): Promise<Ranked> {
    const ranked = await rankAssets({ records, publicAssets: deps.publicAssets, unsaved }, ask);
    // Each stale record once at a time, however many rankings meet it meanwhile.
    const ids = ranked.stale.filter((id) => !rewriting.has(id)).slice(0, REWRITE_MAX);
    if (ids.length > 0) {
      for (const id of ids) rewriting.add(id);
      rewrite(ids)
        .catch((error: unknown) =>
          deps.onBackgroundError?.(error, 'writing popularity counts again with their current windows'),
        )
        .finally(() => ids.forEach((id) => rewriting.delete(id)));
    }
    return ranked;
  }

  /** Writes these records again with their windows' counts now, so the walks stop reading them early. */
  async function rewrite(ids: readonly string[]): Promise<void> {
    await store.tx(async (t) => {
      const repo = t.repo<PopularityRecord>(POPULARITY);
      for (const id of ids) {
        const record = await repo.get(id);
        if (!record) continue;
        const now = seconds();
        const current = withTotals(merged(record, null, now), now);
        // Unused for a year: nothing left to rank it by.
        if (current.totals!.every((count) => count === 0)) await repo.remove(id);
        else repo.put(id, current);
      }
    });
  }

  /**
   * The ranking of a kind and window down to `need` at least (of the assets carrying any of `tags`, compared
   * without case, when given), kept for a second.
   */
  async function top(
    kind: AssetKind,
    type: number,
    need: number,
    tags?: readonly string[],
  ): Promise<KeptRanking> {
    const wanted = tags && [...new Set(tags.map((tag) => tag.toLowerCase()))].sort();
    const key = `${kind}:${type}${wanted ? `:${wanted.join('\u001f')}` : ''}`;
    const usable = (kept: KeptRanking | undefined): kept is KeptRanking =>
      !!kept && clock.now() - kept.at < 1000 && (kept.complete || kept.list.length >= need);
    const kept = rankings.get(key);
    if (usable(kept)) return kept;
    // Requests arriving while the ranking is read wait for that read rather than start their own.
    const going = walking.get(key);
    if (going && usable(await going)) return going;
    const accept =
      wanted && ((own: readonly string[]) => own.some((tag) => wanted.includes(tag.toLowerCase())));
    // Pages are asked in order: the next one usually comes from the same walk.
    const walk = walkRanking({ kind, window: type, need: need * 2, now: seconds(), accept });
    walking.set(key, walk);
    try {
      const ranking = await walk;
      if (rankings.size >= RANKINGS_KEPT) rankings.clear();
      rankings.set(key, ranking);
      return ranking;
    } finally {
      if (walking.get(key) === walk) walking.delete(key);
    }
  }

  async function walkRanking(ask: RankingAsk): Promise<KeptRanking> {
    const at = clock.now();
    return { ...(await rank(ask)), at, pages: new Map<string, string>() };
  }

  return {
    use(kind: AssetKind, id: string): void {
      const delta = unsaved.get(id) ?? emptyRecord(id, kind);
      count(delta, seconds());
      unsaved.set(id, delta);
      forgotten.delete(id);
    },

    /**
     * A page of the most used public assets of a kind for a window, figures at most a second old, as JSON text
     * serialised once per ranking (reads far outnumber changes).
     */
    async topJson(kind: AssetKind, type: number, itemsPerPage: number, page: number): Promise<string> {
      const ranking = await top(kind, type, itemsPerPage * (page + 1));
      const pageKey = `${itemsPerPage}:${page}`;
      let text = ranking.pages.get(pageKey);
      if (text === undefined) {
        text = JSON.stringify(ranking.list.slice(itemsPerPage * page, itemsPerPage * (page + 1)));
        if (ranking.pages.size < PAGES_KEPT) ranking.pages.set(pageKey, text);
      }
      return text;
    },

    /**
     * A page of the ranking limited to assets carrying any of `tags` (compared without case), as HypernexSharp
     * e01b12d asks for it (wire reference 12.5).
     */
    async topTagged(
      kind: AssetKind,
      type: number,
      tags: readonly string[],
      itemsPerPage: number,
      page: number,
    ): Promise<PopularityDto[]> {
      if (tags.length === 0) return [];
      const need = itemsPerPage * (page + 1);
      return (await top(kind, type, need, tags)).list.slice(itemsPerPage * page, need);
    },

    forget(id: string): void {
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
      try {
        await addCounts(deltas, gone);
      } catch (error) {
        // Added with the next flush.
        for (const delta of deltas) {
          const since = unsaved.get(delta.id);
          unsaved.set(delta.id, since ? merged(delta, since, seconds()) : delta);
        }
        for (const id of gone) if (!unsaved.has(id)) forgotten.add(id);
        throw error;
      }
    },
  };

  /** One transaction: each delta added to its stored record (row by row, whatever other hosts added). */
  async function addCounts(deltas: readonly PopularityRecord[], gone: readonly string[]): Promise<void> {
    const now = seconds();
    await store.tx(async (t) => {
      const repo = t.repo<PopularityRecord>(POPULARITY);
      for (const delta of deltas) {
        const stored = (await repo.get(delta.id)) ?? emptyRecord(delta.id, delta.kind);
        repo.put(delta.id, withTotals(merged(stored, delta, now), now));
      }
      for (const id of gone) if (await repo.has(id)) await repo.remove(id);
    });
  }
}

export type PopularityService = ReturnType<typeof createPopularityService>;
