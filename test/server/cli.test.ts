import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';
import { postJson, runCli, spawnServe, stop, type Served } from './cli-helpers.js';

describe('command line', () => {
  let dir: string;
  let served: Served | undefined;
  beforeEach(async () => {
    dir = await tempDir('hnx-cli-');
  });
  afterEach(async () => {
    if (served) await stop(served);
    served = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('prints help for the program and each command', async () => {
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('hypernex-companion serve');
    const serve = await runCli(['serve', '--help']);
    expect(serve.code).toBe(0);
    expect(serve.stdout).toContain('--data-dir');
    const create = await runCli(['user', 'create', '--help']);
    expect(create.code).toBe(0);
    expect(create.stdout).toContain('--rank');
  });

  it('refuses unknown commands, unknown flags and bad values with a message and exit 1', async () => {
    expect((await runCli(['frobnicate'])).code).toBe(1);
    const flag = await runCli(['serve', '--prot', '1']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/prot/);
    const port = await runCli(['serve', '--port', 'abc']);
    expect(port.code).toBe(1);
    expect(port.stderr).toMatch(/--port must be a whole number/);
    const rank = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'a1',
      '--password',
      'x',
      '--email',
      'e',
      '--rank',
      '9',
    ]);
    expect(rank.code).toBe(1);
    expect(rank.stderr).toMatch(/--rank must be 0..6/);
    const proxy = await runCli([
      'serve',
      '--data-dir',
      dir,
      '--port',
      '0',
      '--no-ui',
      '--trusted-proxy',
      'nginx.lan',
    ]);
    expect(proxy.code).toBe(1);
    expect(proxy.stderr).toMatch(/"trustedProxies\.0": not an IP address or a range/);
  });

  it('refuses a --config file with an unknown key or a value of the wrong type, naming the key, and starts nothing', async () => {
    const data = join(dir, 'data');
    const unknown = join(dir, 'unknown.json');
    await writeFile(unknown, JSON.stringify({ limits: { jsonBodyByte: 1024 } }));
    const typo = await runCli(['serve', '--data-dir', data, '--port', '0', '--no-ui', '--config', unknown]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('unknown key "limits.jsonBodyByte"');
    expect(typo.stdout).not.toContain('listening on');
    const wrongType = join(dir, 'wrong-type.json');
    await writeFile(wrongType, JSON.stringify({ tokenLifetimeSeconds: '3600' }));
    const typed = await runCli([
      'serve',
      '--data-dir',
      data,
      '--port',
      '0',
      '--no-ui',
      '--config',
      wrongType,
    ]);
    expect(typed.code).toBe(1);
    expect(typed.stderr).toContain('"tokenLifetimeSeconds"');
    expect(typed.stdout).not.toContain('listening on');
    // Startup stopped before the data folder was made.
    expect((await readdir(dir)).sort()).toEqual(['unknown.json', 'wrong-type.json']);
  });

  it('creates a user from the command line who can then log in to the served host', async () => {
    const created = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'moddy',
      '--password',
      'Passw0rd!',
      '--email',
      'm@x.io',
      '--rank',
      '4',
    ]);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created user moddy user_[0-9a-f-]{36} rank 4 \(Moderator\)$/m);
    const weak = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'weak',
      '--password',
      'weak',
      '--email',
      'w@x.io',
    ]);
    expect(weak.code).toBe(1);
    expect(weak.stderr).toMatch(/Password must be at least 8 characters/);

    served = await spawnServe(['--data-dir', dir]);
    expect(served.stdout().split('\n')[0]).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    const login = await postJson(served.url, 'login', { username: 'moddy', password: 'Passw0rd!' });
    expect(login.result?.LoginResult).toBe(4);
    const user = await postJson(served.url, 'getUser', { username: 'moddy' });
    expect(user.result?.UserData).toMatchObject({ Rank: 4 });
  });

  it('prints the one-time setup secret on first run only, and an owner made by the CLI ends setup', async () => {
    served = await spawnServe(['--data-dir', dir]);
    expect(served.stdout()).toMatch(/setup secret: [A-Za-z0-9_-]{43,}/);
    await stop(served);
    served = undefined;
    const owner = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'boss',
      '--password',
      'Passw0rd!',
      '--email',
      'b@x.io',
      '--rank',
      '6',
    ]);
    expect(owner.code).toBe(0);
    served = await spawnServe(['--data-dir', dir]);
    expect(served.stdout()).not.toMatch(/setup secret/);
  });

  it('refuses a second process on the same data folder, fast and clearly', async () => {
    served = await spawnServe(['--data-dir', dir]);
    const started = Date.now();
    const second = await runCli(['serve', '--data-dir', dir, '--port', '0', '--no-ui']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/already in use by process \d+/);
    expect(Date.now() - started).toBeLessThan(10_000);
    const create = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'late',
      '--password',
      'Passw0rd!',
      '--email',
      'l@x.io',
    ]);
    expect(create.code).toBe(1);
    expect(create.stderr).toMatch(/already in use/);
  });

  it('refuses a data folder that holds files of someone else, for serve and user create alike', async () => {
    const { writeFile, readdir } = await import('node:fs/promises');
    const { join } = await import('node:path');
    await writeFile(join(dir, 'thesis.docx'), 'years of work');
    const serve = await runCli(['serve', '--data-dir', dir, '--port', '0', '--no-ui']);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toMatch(
      /cannot be used as a data folder: it already holds other files \(thesis\.docx\)/,
    );
    const create = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'someone',
      '--password',
      'Passw0rd!',
      '--email',
      's@x.io',
    ]);
    expect(create.code).toBe(1);
    expect(create.stderr).toMatch(/cannot be used as a data folder/);
    expect(await readdir(dir)).toEqual(['thesis.docx']);
    const root = await runCli(['serve', '--data-dir', '/', '--port', '0', '--no-ui']);
    expect(root.code).toBe(1);
    expect(root.stderr).toMatch(/root of a file system/);
  });

  it('runs a test game server against a served host', async () => {
    served = await spawnServe(['--data-dir', dir, '--game-server-token', 'gs-secret']);
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('./cli-helpers.js');
    const gs = spawn(
      process.execPath,
      [BIN, 'test-game-server', '--url', served.url, '--token', 'gs-secret'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no connection: ${out}`)), 10_000);
      gs.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (/connected as gameserver_/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const listed = await fetch(`${served.url}/api/v1/gameServers`).then((r) => r.json());
    expect((listed as { result: { GameServers: unknown[] } }).result.GameServers).toHaveLength(1);
    const exit = new Promise<number | null>((resolve) => gs.on('exit', resolve));
    gs.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('stops cleanly on SIGTERM and releases the folder', async () => {
    served = await spawnServe(['--data-dir', dir]);
    expect(await stop(served)).toBe(0);
    served = await spawnServe(['--data-dir', dir]);
  });
});
