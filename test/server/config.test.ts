import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, parseConfigOverrides, resolveConfig } from '../../server/config.js';
import { createServer } from '../../server/host.js';
import { tempDir } from './helpers.js';

describe('configuration', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir('hnx-config-');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses an unknown key at startup, naming it, and creates nothing', async () => {
    const config = { dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, uiDir: null, leanLane: true };
    // A key from a file or an older version is unknown to the types too; it arrives as plain JSON.
    const start = createServer(config as Parameters<typeof createServer>[0]);
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow('unknown key "leanLane"');
    expect(await readdir(dir)).toEqual([]);
  });

  it('refuses a value of the wrong type at startup, naming its key, also inside a section', async () => {
    const config: unknown = {
      dataDir: join(dir, 'data'),
      host: '127.0.0.1',
      port: 0,
      limits: { bodyIdleSeconds: '5' },
    };
    const start = createServer(config as Parameters<typeof createServer>[0]);
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow('"limits.bodyIdleSeconds"');
    expect(await readdir(dir)).toEqual([]);
  });

  it('names every unknown key and wrong type of a configuration at once, with where it came from', () => {
    expect(() =>
      parseConfigOverrides({ prot: 5180, socket: { heartbeatMS: 1 }, fsync: 'no' }, '--config host.json'),
    ).toThrow(
      /^--config host\.json: .*(?=.*unknown key "prot")(?=.*unknown key "socket\.heartbeatMS")(?=.*"fsync")/,
    );
    expect(() => parseConfigOverrides([], '--config host.json')).toThrow('must be a JSON object');
    expect(() => resolveConfig({ logLevel: 'loud' as 'info' })).toThrow('"logLevel"');
  });

  it('takes every key of the defaults and leaves them as they are', () => {
    const every = resolveConfig();
    expect(parseConfigOverrides(every)).toEqual(every);
    expect(
      resolveConfig({ socket: { port: null }, publicUrl: null, limits: { jsonBodyBytes: 1024 } }).limits,
    ).toEqual({
      ...every.limits,
      jsonBodyBytes: 1024,
    });
  });
});
