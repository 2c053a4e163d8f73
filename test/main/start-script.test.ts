import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let dir: string;
let child: ChildProcess | null;

function exited(process: ChildProcess): Promise<number | null> {
  if (process.exitCode !== null) return Promise.resolve(process.exitCode);
  return new Promise((resolve) => process.once('exit', (code) => resolve(code)));
}

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'server', 'cli.js'))) {
    throw new Error('dist/server/cli.js is missing: run `npm run build:server` before this test');
  }
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hnx-start-'));
  child = null;
});

afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await exited(child);
  }
  await rm(dir, { recursive: true, force: true });
});

describe('npm start', () => {
  it('serves headless with HYPERNEX_HEADLESS=1, passing its arguments to serve, and stops on SIGTERM', async () => {
    const started = spawn(process.execPath, ['scripts/start.js', '--port', '0', '--data-dir', dir], {
      cwd: ROOT,
      env: { ...process.env, HYPERNEX_HEADLESS: '1', HYPERNEX_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    let stdout = '';
    let stderr = '';
    started.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      started.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
        if (match?.[1]) resolve(match[1]);
      });
      started.once('exit', (code) =>
        reject(new Error(`start.js exited with ${code}:\n${stdout}\n${stderr}`)),
      );
    });

    expect(stderr).toContain('serving the same UI headless instead');
    expect(stdout).toContain(`data folder: ${dir}`);
    const res = await fetch(`${url}/api/v1/isInviteCodeRequired`);
    expect(((await res.json()) as { success: boolean }).success).toBe(true);

    started.kill('SIGTERM');
    expect(await exited(started)).toBe(0);
    // The forwarded signal let the host close cleanly: its data folder lock is gone.
    expect(await readdir(dir)).not.toContain('companion.lock');
  });
});
