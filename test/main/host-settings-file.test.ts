import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HostSettings } from '../../server/protocol/host-bridge.js';
import { createHostSettingsFile, HostSettingsFileError } from '../../main/host-settings-file.js';

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

  it('refuses a file with a key it does not know, naming the file and the key, and leaves it untouched', async () => {
    const path = join(dir, 'host-settings.json');
    const text = JSON.stringify({ port: 6000, theme: 'dark' });
    await writeFile(path, text);
    const { settings, problem } = await createHostSettingsFile(path, defaults).load();
    expect(problem).toBeInstanceOf(HostSettingsFileError);
    expect(problem?.message).toBe(`${path}: unknown key "theme"`);
    // The defaults only fill the state the window shows: the host does not start on them (host-controller).
    expect(settings).toEqual(defaults);
    expect(await readFile(path, 'utf8')).toBe(text);
  });

  it('refuses an unreadable, torn or invalid file, naming the file and the key, and leaves it untouched', async () => {
    const path = join(dir, 'host-settings.json');
    for (const [text, words] of [
      ['{"port": 51', `${path}: not valid JSON (`],
      [JSON.stringify({ port: 99999 }), `${path}: "port": must be a whole number from 0 to 65535`],
      [JSON.stringify({ port: '5180' }), `${path}: "port": must be a whole number from 0 to 65535`],
      [JSON.stringify({ host: 5 }), `${path}: "host": must be an IP address or host name`],
      [JSON.stringify({ dataDir: 'relative' }), `${path}: "dataDir": must be an absolute path`],
      ['[]', `${path}: must be a JSON object`],
    ]) {
      await writeFile(path, text!);
      const { settings, problem } = await createHostSettingsFile(path, defaults).load();
      expect(settings, text).toEqual(defaults);
      expect(problem, text).toBeInstanceOf(HostSettingsFileError);
      expect(problem?.message, text).toContain(words);
      expect(await readFile(path, 'utf8')).toBe(text);
    }
    // A folder where the file should be cannot be read.
    const folder = join(dir, 'a-folder');
    await mkdir(folder);
    const { problem } = await createHostSettingsFile(folder, defaults).load();
    expect(problem).toBeInstanceOf(HostSettingsFileError);
    expect(problem?.message).toContain(`cannot read ${folder}: `);
  });

  it('saves valid settings over a file it refused, and reads them back', async () => {
    const path = join(dir, 'host-settings.json');
    await writeFile(path, JSON.stringify({ port: 6000, theme: 'dark' }));
    const file = createHostSettingsFile(path, defaults);
    expect((await file.load()).problem).not.toBeNull();
    const fixed: HostSettings = { ...defaults, port: 6000 };
    await file.save(fixed);
    await expect(file.load()).resolves.toEqual({ settings: fixed, problem: null });
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
