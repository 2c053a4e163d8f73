import { describe, expect, it } from 'vitest';
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

/** How a conformance run opens a store: the same `place` twice is the same data (a restart). */
export interface StoreFactory {
  /** A new, empty place for data. */
  place(): Promise<string>;
  /** Opens the store at `place` with collections `things` (unique index `name`) and log `history`. */
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
      await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1, name: 'Alpha' });
        t.repo<Doc>('things').put('b', { n: 2, name: 'Beta' });
      });
      const things = store.collection<Doc>('things');
      expect(things.get('a')).toEqual({ n: 1, name: 'Alpha' });
      expect(things.has('b')).toBe(true);
      expect(things.has('c')).toBe(false);
      expect(things.size).toBe(2);
      expect([...things.values()].map((doc) => doc.n).sort()).toEqual([1, 2]);
      await store.close();
      const again = await factory.open(place);
      expect(again.collection<Doc>('things').get('b')).toEqual({ n: 2, name: 'Beta' });
      expect(again.collection<Doc>('things').size).toBe(2);
      await again.close();
    });

    it('hands out frozen records: nobody outside the store can change one', async () => {
      const { store } = await fresh();
      const put = await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1, list: ['x'] }));
      const read = store.collection<Doc>('things').get('a')!;
      for (const doc of [put, read]) {
        expect(() => {
          doc.n = 2;
        }).toThrow(TypeError);
        expect(() => doc.list!.push('y')).toThrow(TypeError);
      }
      expect(store.collection<Doc>('things').get('a')).toEqual({ n: 1, list: ['x'] });
      await store.close();
    });

    it('updates through a draft, leaving the old version as it was', async () => {
      const { store } = await fresh();
      const before = await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1, list: ['x'] }));
      const after = await store.tx((t) =>
        t.repo<Doc>('things').update('a', (draft) => {
          draft.n = 2;
          draft.list!.push('y');
        }),
      );
      expect(before).toEqual({ n: 1, list: ['x'] });
      expect(after).toEqual({ n: 2, list: ['x', 'y'] });
      expect(store.collection<Doc>('things').get('a')).toEqual(after);
      await expect(store.tx((t) => t.repo<Doc>('things').update('missing', () => undefined))).rejects.toThrow(
        /no record/,
      );
      await store.close();
    });

    it('removes records for good, across a reopen', async () => {
      const { place, store } = await fresh();
      await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        t.repo<Doc>('things').put('b', { n: 2 });
      });
      await store.tx((t) => t.repo<Doc>('things').remove('a'));
      expect(store.collection<Doc>('things').get('a')).toBeUndefined();
      expect(store.collection<Doc>('things').size).toBe(1);
      await store.close();
      const again = await factory.open(place);
      expect(again.collection<Doc>('things').has('a')).toBe(false);
      expect(again.collection<Doc>('things').size).toBe(1);
      await again.close();
    });

    it('commits all of a transaction or none of it', async () => {
      const { store } = await fresh();
      await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1 }));
      await expect(
        store.tx((t) => {
          t.repo<Doc>('things').put('a', { n: 2 });
          t.repo<Doc>('things').put('b', { n: 2 });
          t.append<Entry>('history', { seq: 0, target: 'a', note: 'never' });
          throw new Error('refused halfway');
        }),
      ).rejects.toThrow('refused halfway');
      expect(store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
      expect(store.collection<Doc>('things').has('b')).toBe(false);
      expect(store.log<Entry, unknown>('history').length).toBe(0);
      await store.close();
    });

    it('lets a transaction read its own writes; others see them only once committed', async () => {
      const { store } = await fresh();
      let seenInside: Doc | undefined;
      let seenOutside: Doc | undefined;
      await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        seenInside = t.repo<Doc>('things').get('a');
        seenOutside = store.collection<Doc>('things').get('a');
      });
      expect(seenInside).toEqual({ n: 1 });
      expect(seenOutside).toBeUndefined();
      expect(store.collection<Doc>('things').get('a')).toEqual({ n: 1 });
      await store.close();
    });

    it('loses no update when many transactions change one record at once', async () => {
      const { store } = await fresh();
      await store.tx((t) => t.repo<Doc>('things').put('counter', { n: 0, list: [] }));
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          store.tx(async (t) => {
            const current = t.repo<Doc>('things').get('counter')!;
            // Awaiting inside the transaction lets the others interleave.
            await new Promise((resolve) => setImmediate(resolve));
            t.repo<Doc>('things').put('counter', { n: current.n + 1, list: [...current.list!, `w${i}`] });
          }),
        ),
      );
      const counter = store.collection<Doc>('things').get('counter')!;
      expect(counter.n).toBe(60);
      expect(new Set(counter.list).size).toBe(60);
      await store.close();
    });

    it('finds records by a unique index, and lets only one of two racing creations take a key', async () => {
      const { store } = await fresh();
      const things = store.collection<Doc>('things');
      await store.tx((t) => t.repo<Doc>('things').put('a', { n: 1, name: 'alpha' }));
      expect(things.find('name', 'alpha')).toEqual({ n: 1, name: 'alpha' });
      expect(things.find('name', 'beta')).toBeUndefined();
      const create = (id: string) =>
        store.tx(async (t) => {
          const taken = t.repo<Doc>('things').find('name', 'beta');
          await new Promise((resolve) => setImmediate(resolve));
          if (taken) return false;
          t.repo<Doc>('things').put(id, { n: 2, name: 'beta' });
          return true;
        });
      const results = await Promise.all([create('b1'), create('b2'), create('b3')]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(things.size).toBe(2);
      expect(things.find('name', 'beta')).toEqual({ n: 2, name: 'beta' });
      await store.close();
    });

    it('appends log entries in the same commit as records, numbered after everything before them', async () => {
      const { place, store } = await fresh();
      const history = store.log<Entry, unknown>('history');
      const seen: Array<[string, number]> = [];
      history.onAppend((entry, position) => seen.push([entry.note, position]));
      const first = await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        return t.append<Entry>('history', { seq: 0, target: 'a', note: 'one' });
      });
      const second = await store.tx((t) => t.append<Entry>('history', { seq: 0, target: 'a', note: 'two' }));
      expect(first.seq).toBeGreaterThan(0);
      expect(second.seq).toBeGreaterThan(first.seq);
      expect(history.length).toBe(2);
      expect(await history.read(0)).toEqual(first);
      expect(await history.read(1)).toEqual(second);
      expect(history.indexAt(1)?.key).toBeDefined();
      expect(seen).toEqual([
        ['one', 0],
        ['two', 1],
      ]);
      await store.close();
      const again = await factory.open(place);
      const reopened = again.log<Entry, unknown>('history');
      expect(reopened.length).toBe(2);
      expect(await reopened.read(1)).toEqual(second);
      const third = await again.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 2 });
        return t.append<Entry>('history', { seq: 0, target: 'a', note: 'three' });
      });
      expect(third.seq).toBeGreaterThan(second.seq);
      await again.close();
    });

    it('reads every log entry while others are being appended', async () => {
      const { store } = await fresh();
      const history = store.log<Entry, unknown>('history');
      const appends = Array.from({ length: 200 }, (_, i) =>
        store.tx((t) => t.append<Entry>('history', { seq: 0, target: `t${i % 7}`, note: `n${i}` })),
      );
      const reads: Array<Promise<unknown>> = [];
      for (let round = 0; round < 40; round++) {
        await new Promise((resolve) => setImmediate(resolve));
        for (let position = 0; position < history.length; position++) reads.push(history.read(position));
      }
      await Promise.all(appends);
      const read = (await Promise.all(reads)) as Entry[];
      expect(read.every((entry) => entry.note.startsWith('n'))).toBe(true);
      const all = await Promise.all(Array.from({ length: history.length }, (_, i) => history.read(i)));
      expect(new Set(all.map((entry) => entry.note)).size).toBe(200);
      await store.close();
    });

    it('runs after-commit effects once, only for commits that happened', async () => {
      const { store } = await fresh();
      const effects: string[] = [];
      await store.tx((t) => {
        t.repo<Doc>('things').put('a', { n: 1 });
        t.afterCommit(() => effects.push('committed'));
      });
      await store
        .tx((t) => {
          t.afterCommit(() => effects.push('never'));
          throw new Error('no');
        })
        .catch(() => undefined);
      expect(effects).toEqual(['committed']);
      await store.close();
    });

    it('answers a read-only transaction with committed data', async () => {
      const { store } = await fresh();
      await store.tx((t) => t.repo<Doc>('things').put('a', { n: 5 }));
      expect(await store.tx((t) => t.repo<Doc>('things').get('a')?.n)).toBe(5);
      await store.close();
    });
  });
}
