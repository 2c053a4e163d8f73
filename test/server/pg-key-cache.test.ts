import { describe, expect, it } from 'vitest';
import type { KeyHit } from '../../server/store/key-search.js';
import { PgKeyCache, type KeyLoader } from '../../server/store/pg-key-cache.js';

/** An index's keys as PostgreSQL would hold them, with a log of what the cache read. */
class FakeIndex implements KeyLoader {
  hits: KeyHit[] = [];
  reads: string[] = [];
  fail = false;
  /** Called while a read is on its way (a change heard meanwhile). */
  during: (() => void) | null = null;

  async all(_collection: string, _index: string, max: number): Promise<KeyHit[]> {
    this.reads.push('all');
    return this.#answer(this.hits.slice(0, max + 1));
  }

  async of(_collection: string, _index: string, ids: string[]): Promise<KeyHit[]> {
    this.reads.push(`of ${[...ids].sort().join(',')}`);
    return this.#answer(this.hits.filter((hit) => ids.includes(hit.id)));
  }

  async #answer(hits: KeyHit[]): Promise<KeyHit[]> {
    await Promise.resolve();
    this.during?.();
    this.during = null;
    if (this.fail) throw new Error('database away');
    return hits.map((hit) => ({ ...hit }));
  }
}

const names = (hits: KeyHit[] | null) => hits?.map((hit) => `${hit.key}:${hit.id}`) ?? null;

describe('the keys a host keeps for searches (PgKeyCache)', () => {
  it('reads an index once, then only the records marked changed, and answers in key order', async () => {
    const db = new FakeIndex();
    db.hits = [
      { key: 'robot', id: 'a1' },
      { key: 'robo cat', id: 'a2' },
      { key: 'tree', id: 'a3' },
    ];
    const cache = new PgKeyCache(100, db);
    const search = async (text: string) =>
      names(await cache.search('avatars', 'name', { contains: text }, 0, 10));
    expect(await search('robo')).toEqual(['robo cat:a2', 'robot:a1']);
    expect(await search('ee')).toEqual(['tree:a3']);
    expect(db.reads).toEqual(['all']);
    // A rename and a removal, heard: only those records are read again.
    db.hits = [
      { key: 'robot', id: 'a1' },
      { key: 'robot tree', id: 'a3' },
    ];
    cache.changed('avatars', 'a3');
    cache.changed('avatars', 'a2');
    cache.changed('worlds', 'w1');
    expect(await search('robo')).toEqual(['robot:a1', 'robot tree:a3']);
    expect(db.reads).toEqual(['all', 'of a2,a3']);
    // Anything may have changed: all read again.
    cache.changed('avatars', null);
    expect(await search('robo')).toEqual(['robot:a1', 'robot tree:a3']);
    expect(db.reads).toEqual(['all', 'of a2,a3', 'all']);
  });

  it('keeps a change heard while a read is on its way, and reads it again', async () => {
    const db = new FakeIndex();
    db.hits = [{ key: 'old', id: 'x' }];
    const cache = new PgKeyCache(100, db);
    // The record changes after the read's snapshot; its announcement comes while the read is on its way.
    db.during = () => cache.changed('users', 'x');
    expect(names(await cache.search('users', 'name', { prefix: 'o' }, 0, 10))).toEqual(['old:x']);
    db.hits = [{ key: 'new', id: 'x' }];
    expect(names(await cache.search('users', 'name', { prefix: 'n' }, 0, 10))).toEqual(['new:x']);
    expect(db.reads).toEqual(['all', 'of x']);
  });

  it('searches that come together wait for one read, and see what was changed before they came', async () => {
    const db = new FakeIndex();
    db.hits = [{ key: 'ann', id: 'u1' }];
    const cache = new PgKeyCache(100, db);
    await cache.search('users', 'name', { contains: 'a' }, 0, 10);
    db.hits = [
      { key: 'ann', id: 'u1' },
      { key: 'anna', id: 'u2' },
    ];
    cache.changed('users', 'u2');
    const both = await Promise.all([
      cache.search('users', 'name', { contains: 'ann' }, 0, 10),
      cache.search('users', 'name', { contains: 'ann' }, 1, 10),
    ]);
    expect(both.map(names)).toEqual([['ann:u1', 'anna:u2'], ['anna:u2']]);
    expect(db.reads).toEqual(['all', 'of u2']);
  });

  it('keeps no index of more than its bound (searches go to PostgreSQL), and counts it again later', async () => {
    const db = new FakeIndex();
    db.hits = Array.from({ length: 5 }, (_, i) => ({ key: `u${i}`, id: `user_${i}` }));
    let now = 0;
    const cache = new PgKeyCache(4, db, () => now);
    expect(await cache.search('users', 'name', { contains: 'u' }, 0, 10)).toBeNull();
    expect(await cache.search('users', 'name', { contains: 'u' }, 0, 10)).toBeNull();
    expect(db.reads).toEqual(['all']);
    // Ten minutes later it is counted again: smaller now, it is kept.
    now += 10 * 60_000;
    db.hits = db.hits.slice(0, 3);
    expect(names(await cache.search('users', 'name', { contains: 'u' }, 1, 1))).toEqual(['u1:user_1']);
    expect(db.reads).toEqual(['all', 'all']);
    // Grown past the bound through changes: dropped again.
    db.hits = Array.from({ length: 6 }, (_, i) => ({ key: `u${i}`, id: `user_${i}` }));
    for (const id of ['user_3', 'user_4', 'user_5']) cache.changed('users', id);
    expect(await cache.search('users', 'name', { contains: 'u' }, 0, 10)).toBeNull();
    await expect(new PgKeyCache(0, db).search('users', 'name', { contains: 'u' }, 0, 1)).resolves.toBeNull();
  });

  it('answers a failed read with the error, and reads again at the next search', async () => {
    const db = new FakeIndex();
    db.hits = [{ key: 'ann', id: 'u1' }];
    const cache = new PgKeyCache(100, db);
    db.fail = true;
    await expect(cache.search('users', 'name', { contains: 'a' }, 0, 10)).rejects.toThrow('database away');
    db.fail = false;
    expect(names(await cache.search('users', 'name', { contains: 'a' }, 0, 10))).toEqual(['ann:u1']);
    cache.changed('users', 'u1');
    db.fail = true;
    await expect(cache.search('users', 'name', { contains: 'a' }, 0, 10)).rejects.toThrow('database away');
    db.fail = false;
    db.hits = [{ key: 'bob', id: 'u1' }];
    expect(names(await cache.search('users', 'name', { contains: 'b' }, 0, 10))).toEqual(['bob:u1']);
    expect(db.reads).toEqual(['all', 'all', 'of u1', 'of u1']);
  });
});
