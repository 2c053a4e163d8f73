import { createHash } from 'node:crypto';
import { open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { streamToFile } from '../../server/services/uploads.js';
import { tempDir } from './helpers.js';

const MIB = 1024 * 1024;

/** `count` chunks of `size` bytes, each filled with its own index, produced one at a time. */
function chunks(count: number, size: number, failAfter = Infinity): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === failAfter) {
        this.destroy(new Error('client went away'));
        return;
      }
      this.push(sent < count ? Buffer.alloc(size, sent++ % 251) : null);
    },
  });
}

describe('streamToFile', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir('hnx-stream-');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('stores a stream larger than the early-sync step whole, with its MD5 and size', async () => {
    // 70 MiB crosses the 32 MiB early writeback twice; odd chunk sizes make writes of several chunks.
    const count = 70;
    const size = MIB + 3;
    const md5 = createHash('md5');
    for (let i = 0; i < count; i++) md5.update(Buffer.alloc(size, i % 251));
    const path = join(dir, 'big.part');
    const result = await streamToFile(chunks(count, size), path);
    expect(result).toEqual({ path, size: count * size, hash: md5.digest('hex') });
    expect((await stat(path)).size).toBe(count * size);
    const content = await readFile(path);
    expect(content[0]).toBe(0);
    expect(content[count * size - 1]).toBe((count - 1) % 251);
    expect(createHash('md5').update(content).digest('hex')).toBe(result.hash);
  });

  it('gathers small chunks into batches and writes the last, partial batch too', async () => {
    // 3,001 chunks of 1,000 bytes: eleven full 256 KiB batches and a short one, in order at their offsets.
    const count = 3001;
    const md5 = createHash('md5');
    for (let i = 0; i < count; i++) md5.update(Buffer.alloc(1000, i % 251));
    const path = join(dir, 'small.part');
    const result = await streamToFile(chunks(count, 1000), path);
    expect(result).toEqual({ path, size: count * 1000, hash: md5.digest('hex') });
    const content = await readFile(path);
    expect(createHash('md5').update(content).digest('hex')).toBe(result.hash);
    expect(content[count * 1000 - 1]).toBe((count - 1) % 251);
  });

  it('stops at a failed write (a full disk), removes the file and does not hang', async () => {
    // FileHandle is not exported: take its prototype from a handle.
    const probe = await open(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { writev: (...args: unknown[]) => Promise<unknown> };
    await probe.close();
    const real = proto.writev;
    let calls = 0;
    const spy = vi.spyOn(proto, 'writev').mockImplementation(function (this: unknown, ...args: unknown[]) {
      calls++;
      if (calls === 5) {
        return Promise.reject(
          Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }),
        );
      }
      return real.apply(this, args);
    });
    try {
      const path = join(dir, 'full.part');
      await expect(streamToFile(chunks(64, MIB), path)).rejects.toMatchObject({ code: 'ENOSPC' });
      expect((await readdir(dir)).filter((name) => name !== 'probe')).toEqual([]);
      // It stopped soon after the failure instead of writing the other 50-odd MiB.
      expect(calls).toBeLessThan(12);
    } finally {
      spy.mockRestore();
    }
  });

  it('removes the file when the source fails half-way, and refuses to replace a file', async () => {
    const path = join(dir, 'cut.part');
    await expect(streamToFile(chunks(100, MIB, 40), path)).rejects.toThrow('client went away');
    expect(await readdir(dir)).toEqual([]);
    await writeFile(path, 'already here');
    await expect(streamToFile(chunks(1, 10), path)).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(path, 'utf8')).toBe('already here');
  });
});
