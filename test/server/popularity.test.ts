import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { POPULARITY, createPopularityService } from '../../server/services/popularity.js';
import { BY_RANK, type PopularityRecord } from '../../server/services/popularity-counts.js';
import type { HostStore, ReadCollection } from '../../server/store/seam.js';
import { PgStore } from '../../server/store/pg-store.js';
import { Store } from '../../server/store/store.js';
import { tempDir } from './helpers.js';
import { dropSchemas, freshDatabaseUrl } from './pg-helpers.js';

const SPEC = { collections: [POPULARITY], logs: [] };
const HOUR_MS = 3_600_000;

const opened: HostStore[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  await dropSchemas();
});

const STORES: Array<[string, () => Promise<HostStore>]> = [
  [
    'embedded',
    async () => {
      const dir = await tempDir('hnx-popularity-');
      dirs.push(dir);
      return Store.open(dir, SPEC);
    },
  ],
  ['PostgreSQL', async () => PgStore.open(await freshDatabaseUrl(), SPEC)],
];

/** A popularity service over `store`, with a clock the test moves, counting how many rank keys the walks read. */
async function setUp(open: () => Promise<HostStore>, hidden: ReadonlySet<string> = new Set()) {
  const store = await open();
  opened.push(store);
  const clock = { ms: Date.UTC(2026, 10, 28, 12, 0, 0), now: () => clock.ms };
  const reads = { keys: 0 };
  const counting = <T>(c: ReadCollection<T>): ReadCollection<T> => ({
    get: (id) => c.get(id),
    has: (id) => c.has(id),
    getMany: (ids) => c.getMany(ids),
    find: (index, key) => c.find(index, key),
    findByPrefix: (index, prefix, limit) => c.findByPrefix(index, prefix, limit),
    count: () => c.count(),
    scan: () => c.scan(),
    list: (index, key) => c.list(index, key),
    searchKeys: async (index, match, offset, limit) => {
      const hits = await c.searchKeys(index, match, offset, limit);
      reads.keys += hits.length;
      return hits;
    },
    addIndex: (index, keyOf) => c.addIndex(index, keyOf),
    addListIndex: (index, keysOf) => c.addListIndex(index, keysOf),
  });
  // The store as the service sees it, each rank key a walk reads counted.
  const counted = {
    collection: <T>(name: string) => counting(store.collection<T>(name)),
    tx: store.tx.bind(store),
  } as unknown as HostStore;
  const errors: unknown[] = [];
  const popularity = createPopularityService({
    store: counted,
    clock,
    publicAssets: async (_kind, ids) =>
      ids.filter((id) => !hidden.has(id)).map((id) => ({ Id: id, Tags: id.endsWith('0') ? ['Round'] : [] })),
    onBackgroundError: (error) => errors.push(error),
  });
  const page = async (type: number, perPage: number, pageNo = 0) =>
    JSON.parse(await popularity.topJson('avatar', type, perPage, pageNo)) as Array<{
      Id: string;
      Hourly: { Usages: number };
      Daily: { Usages: number };
    }>;
  return { store, clock, reads, popularity, page, errors };
}

const pad = (n: number): string => `avatar_${String(n).padStart(4, '0')}`;

for (const [label, open] of STORES) {
  describe(`popularity rankings from the store's rank index (${label})`, () => {
    it('ranks 1,000 assets by count then id, reading only the first keys for the first page', async () => {
      const { popularity, page, reads, clock } = await setUp(open);
      // avatar_0000 used 1 time ... avatar_0999 used 1,000 times; two more tie with avatar_0999.
      for (let n = 0; n < 1000; n++) for (let i = 0; i <= n; i++) popularity.use('avatar', pad(n));
      for (let i = 0; i < 1000; i++) popularity.use('avatar', 'avatar_tie_b');
      for (let i = 0; i < 1000; i++) popularity.use('avatar', 'avatar_tie_a');
      await popularity.flush();
      clock.ms += 1500;
      reads.keys = 0;
      const top = await page(0, 5);
      expect(top.map((shown) => [shown.Id, shown.Hourly.Usages])).toEqual([
        ['avatar_0999', 1000],
        ['avatar_tie_a', 1000],
        ['avatar_tie_b', 1000],
        ['avatar_0998', 999],
        ['avatar_0997', 998],
      ]);
      // One chunk of keys holds the page: the walk stops there, not after the 1,002 keys.
      expect(reads.keys).toBeLessThanOrEqual(200);
      expect((await page(0, 10, 100)).map((shown) => shown.Id)).toEqual(['avatar_0001', 'avatar_0000']);
    });

    it('shows this host’s unsaved counts at once, added to the stored ones', async () => {
      const { popularity, page, clock } = await setUp(open);
      popularity.use('avatar', 'avatar_a');
      await popularity.flush();
      for (let i = 0; i < 3; i++) popularity.use('avatar', 'avatar_b');
      popularity.use('avatar', 'avatar_a');
      clock.ms += 1500;
      expect((await page(0, 10)).map((shown) => [shown.Id, shown.Hourly.Usages])).toEqual([
        ['avatar_b', 3],
        ['avatar_a', 2],
      ]);
    });

    it('drops assets whose window emptied and writes their keys again, so later walks skip them', async () => {
      const { popularity, page, clock, store, errors } = await setUp(open);
      for (let n = 0; n < 300; n++) popularity.use('avatar', pad(n));
      await popularity.flush();
      clock.ms += 2 * HOUR_MS;
      popularity.use('avatar', 'avatar_new');
      await popularity.flush();
      clock.ms += 1500;
      // The 300 keep hourly keys of 1 from their last write: the walk reads them, finds 0 and leaves them out.
      expect((await page(0, 10)).map((shown) => shown.Id)).toEqual(['avatar_new']);
      // Written again in the background: only avatar_new keeps an hourly key.
      const records = store.collection<PopularityRecord>(POPULARITY);
      await expect
        .poll(async () => (await records.searchKeys(BY_RANK, { prefix: 'avatar:0:' }, 0, 1000)).length)
        .toBe(1);
      // The daily window still holds all of them.
      clock.ms += 1500;
      expect(await page(1, 1000)).toHaveLength(301);
      // A year and more later, a walk that meets them removes their records: nothing is left to rank them by.
      clock.ms += 367 * 24 * HOUR_MS;
      expect(await page(4, 10)).toEqual([]);
      await expect.poll(async () => await records.count()).toBe(0);
      expect(errors).toEqual([]);
    });

    it('reads a record written before totals were kept by its buckets (an upper bound)', async () => {
      const { page, clock, store } = await setUp(open);
      const hour = Math.floor(clock.ms / 1000) - (Math.floor(clock.ms / 1000) % 3600);
      const old: PopularityRecord = {
        id: 'avatar_old',
        kind: 'avatar',
        five: {},
        hours: { [hour]: 4 },
        days: { [hour - (hour % 86_400)]: 4 },
      };
      await store.tx((t) => void t.repo<PopularityRecord>(POPULARITY).put(old.id, old));
      expect((await page(1, 10)).map((shown) => [shown.Id, shown.Daily.Usages])).toEqual([['avatar_old', 4]]);
      expect(await page(0, 10)).toEqual([]);
    });

    it('leaves out private or removed assets, and keeps to the tags asked', async () => {
      const hidden = new Set(['avatar_0005']);
      const { popularity, clock } = await setUp(open, hidden);
      for (let n = 0; n < 30; n++) for (let i = 0; i <= n; i++) popularity.use('avatar', pad(n));
      await popularity.flush();
      clock.ms += 1500;
      const tagged = await popularity.topTagged('avatar', 0, ['round'], 2, 1);
      // Tagged "Round": ids ending in 0 (20 and 10 on page 0; 0 on page 1).
      expect(tagged.map((shown) => shown.Id)).toEqual(['avatar_0000']);
      popularity.forget('avatar_0029');
      await popularity.flush();
      clock.ms += 1500;
      const top = JSON.parse(await popularity.topJson('avatar', 0, 30, 0)) as Array<{ Id: string }>;
      expect(top.map((shown) => shown.Id)).not.toContain('avatar_0029');
      expect(top.map((shown) => shown.Id)).not.toContain('avatar_0005');
      expect(top).toHaveLength(28);
    });
  });
}
