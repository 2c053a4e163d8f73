import { spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CorruptDataFileError } from '../../server/store/durable-file.js';
import { DataFolderInUseError, SchemaTooNewError, Store } from '../../server/store/store.js';
import { tempDir } from './helpers.js';

interface Doc {
  n: number;
  text?: string;
}

describe('store', () => {
  let dir: string;
  let store: Store | undefined;
  beforeEach(async () => {
    dir = await tempDir('hnx-store-');
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  const open = async () => (store = await Store.open(dir, ['things']));

  it('keeps a committed record across a reopen, one small JSON file per record', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 2 })]);
    await s.close();
    expect((await readdir(join(dir, 'things'))).sort()).toEqual(['a.json', 'b.json']);
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8'))).toMatchObject({
      data: { n: 1 },
    });
    expect(await readdir(join(dir, 'journal'))).toEqual([]);
    const again = await open();
    expect(again.collection<Doc>('things').get('b')).toEqual({ n: 2 });
    expect(again.meta.data.schemaVersion).toBe(1);
  });

  it('writes the newest value when many writes to one record overlap', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    const writes: Promise<void>[] = [];
    for (let n = 1; n <= 50; n++) writes.push(s.commit([things.put('a', { n })]));
    await Promise.all(writes);
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8')).data).toEqual({ n: 50 });
  });

  it('deletes with a tombstone that survives a reopen', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 })]);
    await s.commit([things.remove('a')]);
    expect(things.get('a')).toBeUndefined();
    expect(things.size).toBe(0);
    await s.close();
    const again = await open();
    expect(again.collection<Doc>('things').get('a')).toBeUndefined();
  });

  it('refuses ids that could escape the data folder', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    for (const id of ['../x', 'a/b', '..', '', 'a\\b', 'x'.repeat(201)]) {
      expect(() => things.put(id, { n: 1 })).toThrow(/unsafe record id/);
    }
  });

  it('stops with a clear error naming a corrupt record file, and leaves it untouched', async () => {
    const s = await open();
    await s.commit([s.collection<Doc>('things').put('a', { n: 1 })]);
    await s.close();
    store = undefined;
    const path = join(dir, 'things', 'a.json');
    await writeFile(path, '{"seq": 1, "data": {"n": 1');
    const error = await Store.open(dir, ['things']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptDataFileError);
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toMatch(/left untouched/);
    expect(await readFile(path, 'utf8')).toBe('{"seq": 1, "data": {"n": 1');
    // The failed start released the folder.
    await writeFile(path, '{"seq": 1, "data": {"n": 1}}');
    await open();
  });

  it('stops on a corrupt meta.json and on a schema from a newer version', async () => {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'meta.json'), 'not json');
    await expect(Store.open(dir, ['things'])).rejects.toBeInstanceOf(CorruptDataFileError);
    expect(await readFile(join(dir, 'meta.json'), 'utf8')).toBe('not json');
    await writeFile(
      join(dir, 'meta.json'),
      JSON.stringify({ schemaVersion: 99, createdAt: 0, ownerSetupDone: false }),
    );
    await expect(Store.open(dir, ['things'])).rejects.toBeInstanceOf(SchemaTooNewError);
  });

  it('ignores and removes a temporary file left by a write that never finished', async () => {
    await mkdir(join(dir, 'things'), { recursive: true });
    await writeFile(join(dir, 'things', 'a.json.tmp'), '{"seq": 9, "da');
    const s = await open();
    expect(s.collection<Doc>('things').size).toBe(0);
    expect(await readdir(join(dir, 'things'))).toEqual([]);
  });

  it('replays a journal left by a crash, but never over a newer record', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 1 })]);
    await s.close();
    store = undefined;
    // a.json is at seq 1 or 2 on disk; the journal says seq 10 for a and seq 0 for b.
    await writeFile(
      join(dir, 'journal', '1-crash.json'),
      JSON.stringify([
        { collection: 'things', id: 'a', seq: 10, data: { n: 10 } },
        { collection: 'things', id: 'b', seq: 0, data: { n: 0 } },
        { collection: 'things', id: 'c', seq: 11, data: { n: 11 } },
      ]),
    );
    const again = await open();
    const t = again.collection<Doc>('things');
    expect(t.get('a')).toEqual({ n: 10 });
    expect(t.get('b')).toEqual({ n: 1 });
    expect(t.get('c')).toEqual({ n: 11 });
    expect(await readdir(join(dir, 'journal'))).toEqual([]);
    expect(JSON.parse(await readFile(join(dir, 'things', 'c.json'), 'utf8')).data).toEqual({ n: 11 });
    // New writes continue above the journal's sequence numbers.
    await again.commit([t.put('a', { n: 12 })]);
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8')).seq).toBeGreaterThan(11);
  });

  it('lets one opener hold a data folder at a time', async () => {
    await open();
    await expect(Store.open(dir, ['things'])).rejects.toBeInstanceOf(DataFolderInUseError);
  });

  it('takes over the lock of a process that died', async () => {
    await mkdir(dir, { recursive: true });
    const dead = spawn(process.execPath, ['-e', '0']);
    const pid = await new Promise<number>((resolve) => dead.on('exit', () => resolve(dead.pid!)));
    const { hostname } = await import('node:os');
    await writeFile(join(dir, 'companion.lock'), JSON.stringify({ pid, hostname: hostname(), startedAt: 0 }));
    await open();
    expect(JSON.parse(await readFile(join(dir, 'companion.lock'), 'utf8')).pid).toBe(process.pid);
  });
});
