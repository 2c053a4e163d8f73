import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findElectronBinary } from '../../scripts/electron-binary.js';

let dir: string;
let electronDir: string;

/** A fake node_modules/electron with whatever pieces a test wants. */
async function fakePackage(parts: { pathTxt?: string; binary?: string } = {}): Promise<void> {
  await mkdir(electronDir, { recursive: true });
  await writeFile(join(electronDir, 'package.json'), JSON.stringify({ name: 'electron', version: '45.4.1' }));
  if (parts.pathTxt !== undefined) await writeFile(join(electronDir, 'path.txt'), parts.pathTxt);
  if (parts.binary !== undefined) {
    const binary = join(electronDir, 'dist', parts.binary);
    await mkdir(join(binary, '..'), { recursive: true });
    await writeFile(binary, '#!/bin/sh\n');
  }
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hnx-electron-'));
  electronDir = join(dir, 'node_modules', 'electron');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Electron binary detection', () => {
  it('finds the binary path.txt names inside dist/', async () => {
    await fakePackage({ pathTxt: 'electron', binary: 'electron' });
    expect(findElectronBinary(electronDir, {})).toEqual({
      found: true,
      path: join(electronDir, 'dist', 'electron'),
    });
  });

  it('follows a nested macOS-style path', async () => {
    const nested = join('Electron.app', 'Contents', 'MacOS', 'Electron');
    await fakePackage({ pathTxt: `${nested}\n`, binary: nested });
    expect(findElectronBinary(electronDir, {})).toEqual({
      found: true,
      path: join(electronDir, 'dist', nested),
    });
  });

  it('says the package is missing when electron is not installed at all', () => {
    const result = findElectronBinary(electronDir, {});
    expect(result.found).toBe(false);
    expect(!result.found && result.reason).toMatch(/electron package is not installed/);
  });

  it('says path.txt is missing when the download never ran', async () => {
    await fakePackage();
    const result = findElectronBinary(electronDir, {});
    expect(!result.found && result.reason).toMatch(/path\.txt is missing/);
  });

  it('says the binary is missing when path.txt points at nothing', async () => {
    await fakePackage({ pathTxt: 'electron' });
    const result = findElectronBinary(electronDir, {});
    expect(!result.found && result.reason).toContain(`${join(electronDir, 'dist', 'electron')} is missing`);
  });

  it('refuses a path.txt that points outside dist/', async () => {
    for (const pathTxt of ['../../evil', '/bin/sh', '']) {
      await fakePackage({ pathTxt });
      const result = findElectronBinary(electronDir, {});
      expect(result.found, pathTxt).toBe(false);
      expect(!result.found && result.reason).toMatch(/does not name a file inside dist/);
    }
  });

  it('honours ELECTRON_OVERRIDE_DIST_PATH as electron itself does', async () => {
    await fakePackage();
    const override = join(dir, 'custom-electron');
    await mkdir(override);
    const env = { ELECTRON_OVERRIDE_DIST_PATH: override };
    expect(findElectronBinary(electronDir, env).found).toBe(false);
    await writeFile(join(override, 'electron'), '');
    expect(findElectronBinary(electronDir, env)).toEqual({ found: true, path: join(override, 'electron') });
  });

  it('does not take a folder for the binary', async () => {
    await fakePackage({ pathTxt: 'electron' });
    await mkdir(join(electronDir, 'dist', 'electron'), { recursive: true });
    expect(findElectronBinary(electronDir, {}).found).toBe(false);
  });
});
