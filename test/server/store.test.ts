import { spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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
  const line = (entries: Array<[string, number, Doc | null]>): string =>
    `${JSON.stringify(entries.map(([id, seq, data]) => ({ c: 'things', i: id, r: { seq, data } })))}\n`;

  it('keeps a committed record across a reopen, one small JSON file per record', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 2 })]);
    await s.close();
    expect((await readdir(join(dir, 'things'))).sort()).toEqual(['a.json', 'b.json']);
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8'))).toMatchObject({
      data: { n: 1 },
    });
    // A clean close checkpoints: the record files are complete and no log is left to replay.
    expect(await readdir(join(dir, 'wal'))).toEqual([]);
    const again = await open();
    expect(again.collection<Doc>('things').get('b')).toEqual({ n: 2 });
    expect(again.meta.data.schemaVersion).toBe(1);
  });

  it('reads back records of any size (larger than the shared read buffer too)', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    const sizes = [0, 1, 65_535, 65_536, 65_537, 300_000];
    await s.commit(sizes.map((size) => things.put(`s${size}`, { n: size, text: 'é'.repeat(size) })));
    await s.close();
    store = undefined;
    const again = await open();
    for (const size of sizes) {
      expect(again.collection<Doc>('things').get(`s${size}`)).toEqual({ n: size, text: 'é'.repeat(size) });
    }
  });

  it('writes the newest value when many writes to one record overlap', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    const writes: Promise<void>[] = [];
    for (let n = 1; n <= 50; n++) writes.push(s.commit([things.put('a', { n })]));
    await Promise.all(writes);
    await s.checkpoint();
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8')).data).toEqual({ n: 50 });
  });

  it('acknowledges a commit once it is in the log, before any record file is written', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 2 })]);
    expect(await readdir(join(dir, 'things'))).toEqual([]);
    const [segment] = await readdir(join(dir, 'wal'));
    const lines = (await readFile(join(dir, 'wal', segment!), 'utf8')).split('\n');
    // One commit, one line holding both records; the line ends with a newline.
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    expect(JSON.parse(lines[0]!)).toMatchObject([
      { c: 'things', i: 'a', r: { data: { n: 1 } } },
      { c: 'things', i: 'b', r: { data: { n: 2 } } },
    ]);
  });

  it('shares one log write among the commits that arrive together', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await Promise.all(Array.from({ length: 40 }, (_, n) => s.commit([things.put(`r${n}`, { n })])));
    const [segment] = await readdir(join(dir, 'wal'));
    const text = await readFile(join(dir, 'wal', segment!), 'utf8');
    expect(text.split('\n').filter(Boolean)).toHaveLength(40);
  });

  /** The log a killed process leaves: its lines, without the checkpoint a clean close makes. */
  async function crashWith(lines: string[], segment = '5.log'): Promise<void> {
    await mkdir(join(dir, 'wal'), { recursive: true });
    await writeFile(join(dir, 'wal', segment), lines.join(''));
  }

  it('replays the log left by a crash over the record files, never over a newer record', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 1 })]);
    await s.close();
    store = undefined;
    await crashWith([
      line([
        ['a', 10, { n: 10 }],
        ['b', 0, { n: 0 }],
      ]),
      line([
        ['c', 11, { n: 11 }],
        ['d', 12, null],
      ]),
    ]);
    const again = await open();
    const t = again.collection<Doc>('things');
    expect(t.get('a')).toEqual({ n: 10 });
    expect(t.get('b')).toEqual({ n: 1 });
    expect(t.get('c')).toEqual({ n: 11 });
    expect(t.has('d')).toBe(false);
    // The replay reached the record files before the store opened; the old segment is gone.
    expect(JSON.parse(await readFile(join(dir, 'things', 'c.json'), 'utf8')).data).toEqual({ n: 11 });
    expect(await readdir(join(dir, 'wal'))).not.toContain('5.log');
    await again.commit([t.put('a', { n: 12 })]);
    await again.checkpoint();
    expect(JSON.parse(await readFile(join(dir, 'things', 'a.json'), 'utf8')).seq).toBeGreaterThan(12);
  });

  it('drops a torn last line (never acknowledged) and keeps the lines before it', async () => {
    await crashWith([
      line([['a', 1, { n: 1 }]]),
      line([
        ['b', 2, { n: 2 }],
        ['c', 3, { n: 3 }],
      ]).slice(0, 30),
    ]);
    const s = await open();
    const t = s.collection<Doc>('things');
    expect(t.get('a')).toEqual({ n: 1 });
    // The torn commit is gone whole: neither of its records.
    expect(t.has('b')).toBe(false);
    expect(t.has('c')).toBe(false);
  });

  it('stops on an unreadable line that is not the last, and leaves the log untouched', async () => {
    const body = [line([['a', 1, { n: 1 }]]), '{not json\n', line([['b', 2, { n: 2 }]])];
    await crashWith(body);
    const error = await Store.open(dir, ['things']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptDataFileError);
    expect(String((error as Error).message)).toContain(join(dir, 'wal', '5.log'));
    expect(await readFile(join(dir, 'wal', '5.log'), 'utf8')).toBe(body.join(''));
  });

  it('closes without waiting for thousands of record files: the next start replays the log', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit(Array.from({ length: 2500 }, (_, n) => things.put(`r${n}`, { n })));
    await s.close();
    store = undefined;
    expect(await readdir(join(dir, 'things'))).toEqual([]);
    expect((await readdir(join(dir, 'wal'))).length).toBeGreaterThan(0);
    const again = await open();
    expect(again.collection<Doc>('things').size).toBe(2500);
    expect(again.collection<Doc>('things').get('r2499')).toEqual({ n: 2499 });
    // The replayed versions reach their files in the background; a checkpoint waits for it.
    await again.checkpoint();
    expect(await readdir(join(dir, 'things'))).toHaveLength(2500);
    await again.close();
    store = undefined;
    expect(await readdir(join(dir, 'wal'))).toEqual([]);
  });

  it('checkpoints on its own once the log segment is large, and deletes what it covered', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    const big = 'x'.repeat(40_000);
    // 900 commits of ~40 kB pass the 32 MiB segment limit once.
    for (let n = 0; n < 900; n += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, k) =>
          s.commit([things.put(`r${(n + k) % 50}`, { n: n + k, text: big })]),
        ),
      );
    }
    // No one asked for it: the segment limit started it. It writes all 50 records.
    for (let i = 0; i < 100 && (await readdir(join(dir, 'things'))).length < 50; i++) await sleep(50);
    expect((await readdir(join(dir, 'things'))).length).toBe(50);
    await s.checkpoint();
    const segments = await readdir(join(dir, 'wal'));
    expect(segments).toHaveLength(1);
    expect(JSON.parse(await readFile(join(dir, 'things', 'r49.json'), 'utf8')).data.n).toBe(899);
  });

  it('deletes for good: across a reopen, and no file left once checkpointed', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 2 })]);
    await s.checkpoint();
    await s.commit([things.remove('a')]);
    expect(things.get('a')).toBeUndefined();
    expect(things.size).toBe(1);
    await s.close();
    expect(await readdir(join(dir, 'things'))).toEqual(['b.json']);
    const again = await open();
    expect(again.collection<Doc>('things').get('a')).toBeUndefined();
    expect(again.collection<Doc>('things').size).toBe(1);
  });

  it('never brings a deleted record back from a log left by a crash', async () => {
    // The log of a run killed after deleting a (older put first), before any checkpoint.
    await crashWith([
      line([
        ['a', 1, { n: 1 }],
        ['b', 2, { n: 2 }],
      ]),
      line([['a', 3, null]]),
    ]);
    const s = await open();
    expect(s.collection<Doc>('things').has('a')).toBe(false);
    expect(await readdir(join(dir, 'things'))).toEqual(['b.json']);
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

  it('replays a journal of the first layout left by a crash, but never over a newer record', async () => {
    const s = await open();
    const things = s.collection<Doc>('things');
    await s.commit([things.put('a', { n: 1 }), things.put('b', { n: 1 })]);
    await s.close();
    store = undefined;
    // a.json is at seq 1 or 2 on disk; the journal says seq 10 for a and seq 0 for b.
    await mkdir(join(dir, 'journal'));
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
    await again.checkpoint();
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
