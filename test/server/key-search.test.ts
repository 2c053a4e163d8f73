import { describe, expect, it } from 'vitest';
import { KeyList, type KeyHit } from '../../server/store/key-search.js';
import { ListIndex } from '../../server/store/list-index.js';

/** A small generator with a seed, so a failure is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const everything = (list: KeyList): KeyHit[] => list.find({ prefix: '' }, 0, Number.MAX_SAFE_INTEGER);

describe('sorted keys made again from the changed records (KeyList.patched)', () => {
  it('answers as a list sorted from scratch, over 200 rounds of random changes', () => {
    const random = seeded(7);
    const word = () => ['ann', 'bob', 'anna', 'b', 'zed', 'ab'][Math.floor(random() * 6)]!;
    const keysOf = new Map<string, string[]>();
    for (let n = 0; n < 300; n++)
      keysOf.set(
        `id_${n}`,
        [word(), word()].filter((k, i, all) => all.indexOf(k) === i),
      );
    const all = () => [...keysOf].flatMap(([id, keys]) => keys.map((key) => ({ key, id })));
    let list = new KeyList(all());
    for (let round = 0; round < 200; round++) {
      // Each record's keys before the round: what it lost and gained is the difference at its end.
      const start = new Map<string, string[]>();
      for (let c = 0; c < 1 + Math.floor(random() * 5); c++) {
        const id = `id_${Math.floor(random() * 320)}`; // some new, some removed, some twice
        if (!start.has(id)) start.set(id, keysOf.get(id) ?? []);
        const after = random() < 0.2 ? [] : random() < 0.5 ? [word()] : [word(), 'zed'];
        if (after.length === 0) keysOf.delete(id);
        else keysOf.set(id, [...new Set(after)]);
      }
      const removed: KeyHit[] = [];
      const added: KeyHit[] = [];
      for (const [id, before] of start) {
        const after = keysOf.get(id) ?? [];
        for (const key of before) if (!after.includes(key)) removed.push({ key, id });
        for (const key of after) if (!before.includes(key)) added.push({ key, id });
      }
      list = list.patched(removed, added);
      const fresh = new KeyList(all());
      expect(everything(list)).toEqual(everything(fresh));
      expect(list.find({ contains: 'n' }, 3, 7)).toEqual(fresh.find({ contains: 'n' }, 3, 7));
      expect(list.find({ prefix: 'b' }, 0, 5)).toEqual(fresh.find({ prefix: 'b' }, 0, 5));
    }
  });

  it('hands out frozen hits, never the caller’s objects', () => {
    const mine = { key: 'k', id: 'a' };
    const list = new KeyList([]).patched([], [mine]);
    const [hit] = everything(list);
    expect(hit).toEqual(mine);
    expect(hit).not.toBe(mine);
    expect(Object.isFrozen(hit)).toBe(true);
    // A hit it holds already is not held twice; one it does not hold is not removed.
    expect(everything(list.patched([{ key: 'x', id: 'b' }], [{ key: 'k', id: 'a' }]))).toEqual([mine]);
  });
});

describe('a list index that tracks its changed records (ListIndex.changedSince)', () => {
  it('names the records changed since a version once tracked, and nothing it cannot vouch for', () => {
    const index = new ListIndex<{ tags: string[] }>((record) => record.tags);
    index.move('a', null, { tags: ['x'] });
    expect(index.changedSince(0)).toBeNull(); // not tracked yet: unknown
    index.track();
    const start = index.version;
    const none = { removed: [], added: [] };
    expect(index.changedSince(start)).toEqual(none);
    index.move('b', null, { tags: ['x', 'y'] });
    index.move('a', { tags: ['x'] }, { tags: ['x'] }); // no key changed
    index.move('a', { tags: ['x'] }, null);
    index.move('c', null, { tags: ['z'] });
    index.move('c', { tags: ['z'] }, null); // came and went: nothing
    expect(index.changedSince(start)).toEqual({
      removed: [{ key: 'x', id: 'a' }],
      added: [
        { key: 'x', id: 'b' },
        { key: 'y', id: 'b' },
      ],
    });
    expect(index.changedSince(index.version)).toEqual(none);
  });

  it('forgets the oldest changes past its bound: a version before them is unknown', () => {
    const index = new ListIndex<{ tags: string[] }>((record) => record.tags);
    index.track();
    const start = index.version;
    for (let n = 0; n < 20_001; n++) index.move(`id_${n}`, null, { tags: ['t'] });
    expect(index.changedSince(start)).toBeNull();
    const recent = index.version;
    index.move('last', null, { tags: ['t'] });
    expect(index.changedSince(recent)).toEqual({ removed: [], added: [{ key: 't', id: 'last' }] });
  });
});
