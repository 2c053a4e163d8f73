import { readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppendLog } from '../../server/store/append-log.js';
import { CorruptDataFileError } from '../../server/store/durable-file.js';
import { tempDir } from './helpers.js';

interface Line {
  n: number;
}

describe('append log', () => {
  let dir: string;
  let path: string;
  let log: AppendLog<Line, number> | undefined;
  beforeEach(async () => {
    dir = await tempDir('hnx-log-');
    path = join(dir, 'log.jsonl');
  });
  afterEach(async () => {
    await log?.close();
    log = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  const open = async (seen: Line[] = []) =>
    (log = await AppendLog.open<Line, number>(path, (line) => line.n, {
      onEntry: (line) => seen.push(line),
    }));
  const onDisk = async () =>
    (await readFile(path, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as Line).n);

  it('refuses appends whose write fails (a full disk), cuts the torn bytes, and takes later appends', async () => {
    const opened = await open();
    await opened.append({ n: 1 });
    const handle = (opened as unknown as { handle: FileHandle }).handle;
    const realWrite = handle.write.bind(handle);
    let failures = 1;
    handle.write = (async (buffer: Buffer, offset: number, length: number) => {
      if (failures-- > 0) {
        await realWrite(buffer, offset, Math.floor(length / 2));
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      }
      return realWrite(buffer, offset, length);
    }) as FileHandle['write'];
    await expect(opened.append({ n: 2 })).rejects.toThrow(/ENOSPC/);
    expect(opened.length).toBe(1);
    await opened.append({ n: 3 });
    expect(opened.length).toBe(2);
    expect(await onDisk()).toEqual([1, 3]);
    expect(await opened.read(1)).toEqual({ n: 3 });
  });

  it('writes the appends of one tick together, in order, and reads them back', async () => {
    const l = await open();
    const positions = await Promise.all([1, 2, 3].map((n) => l.append({ n })));
    expect(positions).toEqual([0, 1, 2]);
    expect(await l.read(1)).toEqual({ n: 2 });
    expect(await onDisk()).toEqual([1, 2, 3]);
  });

  it('cuts a torn last line and stops on a bad line before it', async () => {
    await writeFile(path, '{"n":1}\n{"n":2}\n{"n":');
    const seen: Line[] = [];
    const l = await open(seen);
    expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
    await l.append({ n: 3 });
    expect(await onDisk()).toEqual([1, 2, 3]);
    await l.close();
    log = undefined;
    await writeFile(path, '{"n":1}\nnot json\n{"n":3}\n');
    await expect(open()).rejects.toBeInstanceOf(CorruptDataFileError);
  });

  it('compacts to the live entries; appends before it are covered, appends after it follow', async () => {
    const l = await open();
    for (let n = 1; n <= 5; n++) await l.append({ n });
    const covered = l.append({ n: 6 });
    const compacting = l.compact([{ n: 4 }, { n: 6 }]);
    const after = l.append({ n: 7 });
    await Promise.all([covered, compacting, after]);
    expect(await onDisk()).toEqual([4, 6, 7]);
    expect(l.length).toBe(3);
    expect(await l.read(2)).toEqual({ n: 7 });
    await l.append({ n: 8 });
    await l.close();
    log = undefined;
    const seen: Line[] = [];
    await open(seen);
    expect(seen.map((line) => line.n)).toEqual([4, 6, 7, 8]);
  });

  it('compacts a log larger than one slice with a given serializer, indexing every entry', async () => {
    const l = await open();
    await l.append({ n: -1 });
    const live = Array.from({ length: 12_345 }, (_, n) => ({ n }));
    const calls: number[] = [];
    const compacting = l.compact(live, (line) => {
      calls.push(line.n);
      return JSON.stringify(line);
    });
    expect(l.compacting).toBe(true);
    // Appends made while the slices are written land after them.
    const after = l.append({ n: 99_999 });
    await Promise.all([compacting, after]);
    expect(l.compacting).toBe(false);
    expect(calls).toEqual(live.map((line) => line.n));
    expect(l.length).toBe(12_346);
    for (const at of [0, 4_999, 5_000, 12_344]) expect(await l.read(at)).toEqual({ n: at });
    expect(await l.read(12_345)).toEqual({ n: 99_999 });
    const disk = await onDisk();
    expect(disk.length).toBe(12_346);
    expect(disk.at(-1)).toBe(99_999);
  });

  it('opened with indexed: false, counts its entries (also across compaction) but cannot read them back', async () => {
    await writeFile(path, '{"n":1}\n{"n":2}\n');
    const l = (log = await AppendLog.open<Line, number>(path, (line) => line.n, { indexed: false }));
    expect(l.length).toBe(2);
    expect(l.indexAt(0)).toBeUndefined();
    await Promise.all([l.add({ n: 3 }), l.add({ n: 4 })]);
    expect(l.length).toBe(4);
    expect(await onDisk()).toEqual([1, 2, 3, 4]);
    await expect(l.read(0)).rejects.toThrow('no log entry 0');
    await l.compact([{ n: 4 }]);
    await l.add({ n: 5 });
    expect(l.length).toBe(2);
    expect(await onDisk()).toEqual([4, 5]);
  });
});
