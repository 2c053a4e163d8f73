import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HostSettings } from '../../server/protocol/host-bridge.js';
import { createHostSettingsFile } from '../../main/host-settings-file.js';

let dir: string;
let defaults: HostSettings;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hnx-settings-'));
  defaults = { host: '127.0.0.1', port: 5180, dataDir: join(dir, 'default-data') };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('host settings file', () => {
  it('round-trips settings through the file on disk', async () => {
    const path = join(dir, 'nested', 'host-settings.json');
    const saved: HostSettings = { host: '0.0.0.0', port: 0, dataDir: join(dir, 'lan-data') };
    await createHostSettingsFile(path, defaults).save(saved);

    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(saved);
    // A fresh instance, as after an app restart.
    await expect(createHostSettingsFile(path, defaults).load()).resolves.toEqual({
      settings: saved,
      problem: null,
    });
    // Written via a temp file and a rename: nothing left beside it.
    expect(await readdir(join(dir, 'nested'))).toEqual(['host-settings.json']);
  });

  it('gives the defaults when no file exists yet', async () => {
    const file = createHostSettingsFile(join(dir, 'host-settings.json'), defaults);
    await expect(file.load()).resolves.toEqual({ settings: defaults, problem: null });
  });

  it('keeps known fields of a file from a newer version and fills the rest from the defaults', async () => {
    const path = join(dir, 'host-settings.json');
    await writeFile(path, JSON.stringify({ port: 6000, theme: 'dark' }));
    await expect(createHostSettingsFile(path, defaults).load()).resolves.toEqual({
      settings: { ...defaults, port: 6000 },
      problem: null,
    });
  });

  it('falls back to the defaults on a torn or invalid file and leaves it untouched', async () => {
    const path = join(dir, 'host-settings.json');
    for (const text of [
      '{"port": 51',
      JSON.stringify({ port: 99999 }),
      JSON.stringify({ dataDir: 'relative' }),
      '[]',
    ]) {
      await writeFile(path, text);
      const { settings, problem } = await createHostSettingsFile(path, defaults).load();
      expect(settings, text).toEqual(defaults);
      expect(problem, text).toMatch(/ignored .*host-settings\.json/);
      expect(await readFile(path, 'utf8')).toBe(text);
    }
  });

  it('refuses to save invalid settings and keeps the previous file', async () => {
    const path = join(dir, 'host-settings.json');
    const file = createHostSettingsFile(path, defaults);
    await file.save(defaults);
    await expect(file.save({ ...defaults, port: 70000 })).rejects.toThrow('port');
    await expect(file.save({ ...defaults, dataDir: 'data' })).rejects.toThrow('absolute');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(defaults);
  });
});
