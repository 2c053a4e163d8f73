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
      const changed = new Set<string>();
      for (let c = 0; c < 1 + Math.floor(random() * 5); c++) {
        const id = `id_${Math.floor(random() * 320)}`; // some new, some removed
        changed.add(id);
        if (random() < 0.2) keysOf.delete(id);
        else keysOf.set(id, random() < 0.5 ? [word()] : []);
      }
      const hits = [...changed].flatMap((id) => (keysOf.get(id) ?? []).map((key) => ({ key, id })));
      list = list.patched(changed, hits);
      const fresh = new KeyList(all());
      expect(everything(list)).toEqual(everything(fresh));
      expect(list.find({ contains: 'n' }, 3, 7)).toEqual(fresh.find({ contains: 'n' }, 3, 7));
      expect(list.find({ prefix: 'b' }, 0, 5)).toEqual(fresh.find({ prefix: 'b' }, 0, 5));
    }
  });

  it('hands out frozen hits, never the caller’s objects', () => {
    const mine = { key: 'k', id: 'a' };
    const list = new KeyList([]).patched(new Set(['a']), [mine]);
    const [hit] = everything(list);
    expect(hit).toEqual(mine);
    expect(hit).not.toBe(mine);
    expect(Object.isFrozen(hit)).toBe(true);
  });
});

describe('a list index that tracks its changed records (ListIndex.changedSince)', () => {
  it('names the records changed since a version once tracked, and nothing it cannot vouch for', () => {
    const index = new ListIndex<{ tags: string[] }>((record) => record.tags);
    index.move('a', null, { tags: ['x'] });
    expect(index.changedSince(0)).toBeNull(); // not tracked yet: unknown
    index.track();
    const start = index.version;
    expect(index.changedSince(start)).toEqual(new Set());
    index.move('b', null, { tags: ['x', 'y'] });
    index.move('a', { tags: ['x'] }, { tags: ['x'] }); // no key changed
    index.move('a', { tags: ['x'] }, null);
    expect(index.changedSince(start)).toEqual(new Set(['a', 'b']));
    expect(index.changedSince(index.version)).toEqual(new Set());
  });

  it('forgets the oldest changes past its bound: a version before them is unknown', () => {
    const index = new ListIndex<{ tags: string[] }>((record) => record.tags);
    index.track();
    const start = index.version;
    for (let n = 0; n < 20_001; n++) index.move(`id_${n}`, null, { tags: ['t'] });
    expect(index.changedSince(start)).toBeNull();
    const recent = index.version;
    index.move('last', null, { tags: ['t'] });
    expect(index.changedSince(recent)).toEqual(new Set(['last']));
  });
});
