import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { runCli } from './cli-helpers.js';
import { expectOk, startHost, tempDir } from './helpers.js';

describe('hypernex-companion builds', () => {
  let dir: string;
  let files: string;
  beforeEach(async () => {
    dir = await tempDir('hnx-builds-cli-');
    files = await tempDir('hnx-builds-files-');
    // A data folder of ours: started once.
    const host = await startHost({}, { dir });
    await host.close();
    await writeFile(join(files, 'Hypernex-Windows.zip'), 'windows build');
    await writeFile(join(files, 'Hypernex-Linux.tar.gz'), 'linux build');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(files, { recursive: true, force: true });
  });

  it('adds, lists and removes builds that a host then serves', async () => {
    const added = await runCli([
      'builds',
      'add',
      'Hypernex.Unity',
      '2024.10.1b',
      join(files, 'Hypernex-Windows.zip'),
      join(files, 'Hypernex-Linux.tar.gz'),
      '--data-dir',
      dir,
    ]);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(added.stdout).toBe(
      'published Hypernex.Unity 2024.10.1b\n  [0] Hypernex-Linux.tar.gz (11 B)\n  [1] Hypernex-Windows.zip (13 B)\n',
    );
    const listed = await runCli(['builds', 'list', '--data-dir', dir]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /^downloads need a token: no\nHypernex\.Unity\n {2}2024\.10\.1b {2}published \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n {4}\[0\] Hypernex-Linux\.tar\.gz \(11 B\)\n {4}\[1\] Hypernex-Windows\.zip \(13 B\)\n$/,
    );
    expect((await runCli(['builds', 'require-token', 'on', '--data-dir', dir])).code).toBe(0);

    const host = await startHost({}, { dir });
    try {
      expect(expectOk(await host.get('getVersions/Hypernex.Unity'))).toEqual({
        Name: 'Hypernex.Unity',
        Versions: ['2024.10.1b'],
      });
      expect(expectOk(await host.get('authForBuilds'))).toEqual({ authForBuilds: true });
      // While the host runs, the command line still changes what it serves.
      expect((await runCli(['builds', 'require-token', 'off', '--data-dir', dir])).code).toBe(0);
      const res = await host.raw('getBuild/Hypernex.Unity/2024.10.1b', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ buildArtifact: 1 }),
      });
      expect(await res.text()).toBe('windows build');
      const removed = await runCli(['builds', 'remove', 'Hypernex.Unity', '2024.10.1b', '--data-dir', dir]);
      expect(removed.stdout).toBe('removed Hypernex.Unity 2024.10.1b (2 file(s))\n');
      expect(expectOk(await host.get('getVersions/Hypernex.Unity')).Versions).toEqual([]);
    } finally {
      await host.close();
    }
    expect((await runCli(['builds', 'list', '--data-dir', dir])).stdout).toBe(
      'downloads need a token: no\nno builds published\n',
    );
  });

  it.each([
    [
      'a folder that is not a data folder',
      async () => ['add', 'X', '1', 'f'],
      /not a Hypernex Companion data folder/,
    ],
    [
      'a name that climbs out of the folder',
      async () => ['add', '../x', '1.0', 'Hypernex-Windows.zip'],
      /name must start/,
    ],
    ['a version with a slash', async () => ['add', 'X', '1/2', 'Hypernex-Windows.zip'], /version must start/],
    ['a missing file', async () => ['add', 'X', '1.0', 'nope.zip'], /nope\.zip is not a file/],
    ['no file', async () => ['add', 'X', '1.0'], /needs NAME VERSION and at least one FILE/],
    ['an unknown version to remove', async () => ['remove', 'X', '1.0'], /No build X 1\.0 is published/],
    ['an unknown action', async () => ['rename', 'X'], /unknown builds command/],
  ])('refuses %s and writes nothing', async (name, argsOf, message) => {
    const args = (await argsOf()).map((a) => (a.endsWith('.zip') ? join(files, a) : a));
    const folder = name.startsWith('a folder') ? files : dir;
    const result = await runCli(['builds', ...args, '--data-dir', folder]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    const buildsDir = await readdir(join(dir, 'builds')).catch(() => []);
    expect(buildsDir.filter((n) => n !== '.staging')).toEqual([]);
    await mkdir(join(dir, 'builds', '.staging'), { recursive: true });
    expect(await readdir(join(dir, 'builds', '.staging'))).toEqual([]);
  });

  it('refuses to replace a published version', async () => {
    const file = join(files, 'Hypernex-Windows.zip');
    expect((await runCli(['builds', 'add', 'X', '1.0', file, '--data-dir', dir])).code).toBe(0);
    const again = await runCli(['builds', 'add', 'X', '1.0', file, '--data-dir', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already published/);
  });
});
