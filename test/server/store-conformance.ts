import { describe, expect, it } from 'vitest';
import type { KeyMatch } from '../../server/store/key-search.js';
import type { DataStore } from '../../server/store/seam.js';

export interface Doc {
  n: number;
  name?: string;
  list?: string[];
}

export interface Entry {
  seq: number;
  target: string;
  note: string;
}

/** What a history entry is filtered by. */
export interface EntryKey {
  target: string;
}

export const entryKeyOf = (entry: Entry): EntryKey => ({ target: entry.target });

/** How a conformance run opens a store: the same `place` twice is the same data (a restart). */
export interface StoreFactory {
  /** A new, empty place for data. */
  place(): Promise<string>;
  /** Opens the store at `place` with collection `things` (unique index `name`, list index `tag` of `list`) and log `history`. */
  open(place: string): Promise<DataStore>;
}

/**
 * What every implementation of the storage seam must do: the embedded store runs it, and so must any other
 * (PostgreSQL). Real files or a real database, nothing mocked.
 */
export function describeStoreConformance(label: string, factory: StoreFactory): void {
  async function fresh(): Promise<{ place: string; store: DataStore }> {
    const place = await factory.place();
    return { place, store: await factory.open(place) };
  }

  describe(`storage seam: ${label}`, () => {
    it('puts, gets, lists and counts records, and keeps them across a reopen', async () => {
      const { place, store } = await fresh();
      await store.tx(async (t) => {
        t.repo<Doc>('things').put('a', { n: 1, name: 'Alpha' });
        t.repo<Doc>('things').put('b', { n: 2, name: 'Beta' });
      });
      const things = store.collection<Doc>('things');
      expect(await things.get('a')).toEqual({ n: 1, name: 'Alpha' });
      expect(await things.has('b')).toBe(true);
      expect(await things.has('c')).toBe(false);
      expect(await things.count()).toBe(2);
      const all: number[] = [];
      for await (const doc of things.scan()) all.push(doc.n);
      expect(all.sort()).toEqual([1, 2]);
      await store.close();
      const again = await factory.open(place);
      expect(await again.collection<Doc>('things').get('b')).toEqual({ n: 2, name: 'Beta' });
      expect(await again.collection<Doc>('things').count()).toBe(2);
      await again.close();
    });

    it('hands out frozen records: nobody outside the store can change one', async () => {
      const { store } = await fresh();
      const put = await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1, list: ['x'] }));
      const read = (await store.collection<Doc>('things').get('a'))!;
      for (const doc of [put, read]) {
        expect(() => {
          doc.n = 2;
        }).toThrow(TypeError);
        expect(() => doc.list!.push('y')).toThrow(TypeError);
      }
      expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1, list: ['x'] });
      await store.close();
    });

    it('updates through a draft, leaving the old version as it was', async () => {
      const { store } = await fresh();
      const before = await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1, list: ['x'] }));
      const after = await store.tx(
        async (t) =>
          await t.repo<Doc>('things').update('a', (draft) => {
            draft.n = 2;
            draft.list!.push('y');
          }),
      );
      expect(before).toEqual({ n: 1, list: ['x'] });
      expect(after).toEqual({ n: 2, list: ['x', 'y'] });
      expect(await store.collection<Doc>('things').get('a')).toEqual(after);
      await expect(
        store.tx(async (t) => await t.repo<Doc>('things').update('missing', () => undefined)),
      ).rejects.toThrow(/no record/);
      await store.close();
    });

    it('removes records for good, across a reopen', async () => {
      const { place, store } = await fresh();
      await store.tx(async (t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        t.repo<Doc>('things').put('b', { n: 2 });
      });
      await store.tx(async (t) => await t.repo<Doc>('things').remove('a'));
      expect(await store.collection<Doc>('things').get('a')).toBeUndefined();
      expect(await store.collection<Doc>('things').count()).toBe(1);
      await store.close();
      const again = await factory.open(place);
      expect(await again.collection<Doc>('things').has('a')).toBe(false);
      expect(await again.collection<Doc>('things').count()).toBe(1);
      await again.close();
    });

    it('commits all of a transaction or none of it', async () => {
      const { store } = await fresh();
      await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1 }));
      await expect(
        store.tx(async (t) => {
          t.repo<Doc>('things').put('a', { n: 2 });
          t.repo<Doc>('things').put('b', { n: 2 });
          t.append<Entry>('history', { seq: 0, target: 'a', note: 'never' });
          throw new Error('refused halfway');
        }),
      ).rejects.toThrow('refused halfway');
      expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
      expect(await store.collection<Doc>('things').has('b')).toBe(false);
      expect((await store.log<Entry, EntryKey>('history').query({}, 0, 10)).total).toBe(0);
      await store.close();
    });

    it('lets a transaction read its own writes; others see them only once committed', async () => {
      const { store } = await fresh();
      let seenInside: Doc | undefined;
      let seenOutside: Doc | undefined;
      await store.tx(async (t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        seenInside = await t.repo<Doc>('things').get('a');
        seenOutside = await store.collection<Doc>('things').get('a');
      });
      expect(seenInside).toEqual({ n: 1 });
      expect(seenOutside).toBeUndefined();
      expect(await store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
      await store.close();
    });

    it('loses no update when many transactions change one record at once', async () => {
      const { store } = await fresh();
      await store.tx((t) => t.repo<Doc>('things').put('counter', { n: 0, list: [] }));
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          store.tx(async (t) => {
            const current = (await t.repo<Doc>('things').get('counter'))!;
            // Awaiting inside the transaction lets the others interleave.
            await new Promise((resolve) => setImmediate(resolve));
            t.repo<Doc>('things').put('counter', { n: current.n + 1, list: [...current.list!, `w${i}`] });
          }),
        ),
      );
      const counter = (await store.collection<Doc>('things').get('counter'))!;
      expect(counter.n).toBe(60);
      expect(new Set(counter.list).size).toBe(60);
      await store.close();
    });

    it('finds records by a unique index, and lets only one of two racing creations take a key', async () => {
      const { store } = await fresh();
      const things = store.collection<Doc>('things');
      await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1, name: 'alpha' }));
      expect(await things.find('name', 'alpha')).toEqual({ n: 1, name: 'alpha' });
      expect(await things.find('name', 'beta')).toBeUndefined();
      const create = (id: string) =>
        store.tx(async (t) => {
          const taken = await t.repo<Doc>('things').find('name', 'beta');
          await new Promise((resolve) => setImmediate(resolve));
          if (taken) return false;
          t.repo<Doc>('things').put(id, { n: 2, name: 'beta' });
          return true;
        });
      const results = await Promise.all([create('b1'), create('b2'), create('b3')]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await things.count()).toBe(2);
      expect(await things.find('name', 'beta')).toEqual({ n: 2, name: 'beta' });
      await store.close();
    });

    it('finds records by the beginning of a unique key, in key order, up to a limit', async () => {
      const { store } = await fresh();
      await store.tx((t) => {
        for (const name of ['ann', 'anna', 'annie', 'bob', 'an_x', 'zed'])
          t.repo<Doc>('things').put(`id-${name}`, { n: name.length, name });
      });
      const things = store.collection<Doc>('things');
      const names = async (prefix: string, limit: number) =>
        (await things.findByPrefix('name', prefix, limit)).map((doc) => doc.name);
      expect(await names('ann', 10)).toEqual(['ann', 'anna', 'annie']);
      expect(await names('an', 2)).toEqual(['an_x', 'ann']);
      expect(await names('b', 10)).toEqual(['bob']);
      expect(await names('c', 10)).toEqual([]);
      expect(await names('', 3)).toEqual(['an_x', 'ann', 'anna']);
      await store.close();
    });

    it('searches the keys of an index: holding a text or starting with one, in key order, paged, as changes commit', async () => {
      const { store } = await fresh();
      await store.tx((t) => {
        for (const name of ['ann', 'joanna', 'annie', 'bob', 'dan', 'zed'])
          t.repo<Doc>('things').put(`id-${name}`, { n: name.length, name, list: [`t-${name[0]}`, 'all'] });
      });
      const things = store.collection<Doc>('things');
      const keys = async (index: string, match: KeyMatch, offset = 0, limit = 10) =>
        (await things.searchKeys(index, match, offset, limit)).map((hit) => `${hit.key}:${hit.id}`);
      // A unique index: every key holding "an", in key order, then a page of it.
      expect(await keys('name', { contains: 'an' })).toEqual([
        'ann:id-ann',
        'annie:id-annie',
        'dan:id-dan',
        'joanna:id-joanna',
      ]);
      expect(await keys('name', { contains: 'an' }, 1, 2)).toEqual(['annie:id-annie', 'dan:id-dan']);
      expect(await keys('name', { contains: 'an' }, 4, 2)).toEqual([]);
      expect(await keys('name', { prefix: 'an' })).toEqual(['ann:id-ann', 'annie:id-annie']);
      expect(await keys('name', { contains: 'nobody' })).toEqual([]);
      // A list index: a key held by several records lists each, by id.
      expect(await keys('tag', { prefix: 'al' }, 0, 3)).toEqual(['all:id-ann', 'all:id-annie', 'all:id-bob']);
      expect(await keys('tag', { contains: '-a' })).toEqual(['t-a:id-ann', 't-a:id-annie']);
      // Changes show once committed: a new record, one renamed, one removed.
      await store.tx(async (t) => {
        const repo = t.repo<Doc>('things');
        repo.put('id-hannah', { n: 6, name: 'hannah', list: ['t-h'] });
        await repo.update('id-dan', (doc) => void (doc.name = 'daniel'));
        await repo.remove('id-annie');
      });
      expect(await keys('name', { contains: 'an' })).toEqual([
        'ann:id-ann',
        'daniel:id-dan',
        'hannah:id-hannah',
        'joanna:id-joanna',
      ]);
      expect(await keys('tag', { contains: '-a' })).toEqual(['t-a:id-ann']);
      expect(await keys('tag', { prefix: 'all' })).toEqual([
        'all:id-ann',
        'all:id-bob',
        'all:id-dan',
        'all:id-joanna',
        'all:id-zed',
      ]);
      await store.close();
    });

    it('appends log entries in the same commit as records, numbered after everything before them', async () => {
      const { place, store } = await fresh();
      const history = store.log<Entry, EntryKey>('history');
      const first = await store.tx(async (t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        return t.append<Entry>('history', { seq: 0, target: 'a', note: 'one' });
      });
      const second = await store.tx((t) => t.append<Entry>('history', { seq: 0, target: 'a', note: 'two' }));
      expect(first.seq).toBeGreaterThan(0);
      expect(second.seq).toBeGreaterThan(first.seq);
      expect(await history.query({}, 0, 10)).toEqual({ entries: [second, first], total: 2 });
      await store.close();
      const again = await factory.open(place);
      const reopened = again.log<Entry, EntryKey>('history');
      expect(await reopened.query({}, 1, 10)).toEqual({ entries: [first], total: 2 });
      const third = await again.tx(async (t) => {
        t.repo<Doc>('things').put('a', { n: 2 });
        return t.append<Entry>('history', { seq: 0, target: 'a', note: 'three' });
      });
      expect(third.seq).toBeGreaterThan(second.seq);
      await again.close();
    });

    it('pages a log newest first, filtered by its key, counting every match', async () => {
      const { store } = await fresh();
      const history = store.log<Entry, EntryKey>('history');
      for (let i = 0; i < 12; i++) {
        await store.tx((t) => t.append<Entry>('history', { seq: 0, target: `t${i % 3}`, note: `n${i}` }));
      }
      const page = await history.query({ target: 't1' }, 1, 2);
      expect(page.total).toBe(4);
      expect(page.entries.map((entry) => entry.note)).toEqual(['n7', 'n4']);
      expect((await history.query({ target: 't1' }, 4, 2)).entries).toEqual([]);
      expect((await history.query({ target: 'nobody' }, 0, 5)).total).toBe(0);
      const all = await history.query({}, 0, 5);
      expect(all.total).toBe(12);
      expect(all.entries.map((entry) => entry.note)).toEqual(['n11', 'n10', 'n9', 'n8', 'n7']);
      await store.close();
    });

    it('reads every log entry while others are being appended', async () => {
      const { store } = await fresh();
      const history = store.log<Entry, EntryKey>('history');
      const appends = Array.from({ length: 200 }, (_, i) =>
        store.tx((t) => t.append<Entry>('history', { seq: 0, target: `t${i % 7}`, note: `n${i}` })),
      );
      const reads: Array<Promise<{ entries: Entry[]; total: number }>> = [];
      for (let round = 0; round < 40; round++) {
        await new Promise((resolve) => setImmediate(resolve));
        reads.push(history.query({}, 0, 500));
      }
      await Promise.all(appends);
      for (const page of await Promise.all(reads)) {
        expect(page.entries).toHaveLength(page.total);
        expect(page.entries.every((entry) => entry.note.startsWith('n'))).toBe(true);
      }
      const all = await history.query({}, 0, 500);
      expect(new Set(all.entries.map((entry) => entry.note)).size).toBe(200);
      await store.close();
    });

    it('runs after-commit effects once, only for commits that happened', async () => {
      const { store } = await fresh();
      const effects: string[] = [];
      await store.tx(async (t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        t.afterCommit(() => effects.push('committed'));
      });
      await store
        .tx(async (t) => {
          t.afterCommit(() => effects.push('never'));
          throw new Error('no');
        })
        .catch(() => undefined);
      expect(effects).toEqual(['committed']);
      await store.close();
    });

    it('reads several records at once, in the order asked, leaving out missing ones', async () => {
      const { store } = await fresh();
      await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        t.repo<Doc>('things').put('b', { n: 2 });
      });
      const found = await store.collection<Doc>('things').getMany(['b', 'missing', 'a']);
      expect(found).toEqual([{ n: 2 }, { n: 1 }]);
      await store.close();
    });

    it('lists records by a list index, following every change and removal', async () => {
      const { place, store } = await fresh();
      const things = store.collection<Doc>('things');
      await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1, list: ['red', 'blue'] });
        t.repo<Doc>('things').put('b', { n: 2, list: ['red'] });
      });
      const ns = async (collection: typeof things, key: string) =>
        (await collection.list('tag', key)).map((doc) => doc.n).sort();
      expect(await ns(things, 'red')).toEqual([1, 2]);
      expect(await ns(things, 'blue')).toEqual([1]);
      await store.tx(async (t) => {
        await t.repo<Doc>('things').update('a', (draft) => {
          draft.list = ['green'];
        });
        await t.repo<Doc>('things').remove('b');
        // The transaction sees its own changes in the index.
        expect((await t.repo<Doc>('things').list('tag', 'green')).map((doc) => doc.n)).toEqual([1]);
        expect(await t.repo<Doc>('things').list('tag', 'red')).toEqual([]);
      });
      expect(await ns(things, 'red')).toEqual([]);
      expect(await ns(things, 'green')).toEqual([1]);
      await store.close();
      const again = await factory.open(place);
      expect(await ns(again.collection<Doc>('things'), 'green')).toEqual([1]);
      await again.close();
    });

    it('runs a transaction again when a record joined a list it read, so a check on the list holds', async () => {
      const { store } = await fresh();
      // Two racing "remove the tag if nobody uses it" / "use the tag" transactions: the remover must not miss
      // the user that joined the list after it looked.
      let looked!: () => void;
      const hasLooked = new Promise<void>((resolve) => (looked = resolve));
      let goOn!: () => void;
      const mayGoOn = new Promise<void>((resolve) => (goOn = resolve));
      let runs = 0;
      const remover = store.tx(async (t) => {
        runs++;
        const users = await t.repo<Doc>('things').list('tag', 'shared');
        if (runs === 1) {
          looked();
          await mayGoOn;
        }
        if (users.length > 0) return 'kept';
        t.repo<Doc>('things').put('tag-shared', { n: 0, name: 'deleted' });
        return 'deleted';
      });
      await hasLooked;
      await store.tx((t) => t.repo<Doc>('things').put('user', { n: 1, list: ['shared'] }));
      goOn();
      expect(await remover).toBe('kept');
      expect(runs).toBe(2);
      await store.close();
    });

    it('answers a read-only transaction with committed data', async () => {
      const { store } = await fresh();
      await store.tx((t) => t.repo<Doc>('things').put('a', { n: 5 }));
      expect(await store.tx(async (t) => (await t.repo<Doc>('things').get('a'))?.n)).toBe(5);
      await store.close();
    });
  });
}
