import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer as createNetServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { HostSettings, HostState } from '../../server/protocol/host-bridge.js';
import type { HostServer } from '../../server/host.js';
import {
  createHostController,
  type HostController,
  type HostControllerOptions,
} from '../../main/host-controller.js';
import { inProcessHost } from '../../main/in-process-host.js';
import { HostSettingsFileError } from '../../main/host-settings-file.js';

const CHEAP = { uiDir: null, passwordHash: { memoryCost: 1024, timeCost: 1 }, fsync: false } as const;

let dir: string;
let controller: HostController | null;
let saved: HostSettings[];
let changes: HostState[];
let lastServer: HostServer | null = null;

function make(
  settings: Partial<HostSettings> = {},
  extra: Partial<HostControllerOptions> = {},
): HostController {
  controller = createHostController({
    settings: { host: '127.0.0.1', port: 0, dataDir: join(dir, 'data'), ...settings },
    saveSettings: async (next) => {
      saved.push(next);
    },
    serverConfig: CHEAP,
    startHost: inProcessHost({ logger: pino({ level: 'silent' }) }, (server) => {
      lastServer = server;
    }),
    onStateChanged: (state) => changes.push(state),
    ...extra,
  });
  return controller;
}

async function reachable(url: string | null): Promise<boolean> {
  if (!url) return false;
  try {
    const res = await fetch(`${url}/api/v1/isInviteCodeRequired`);
    return ((await res.json()) as { success: boolean }).success;
  } catch {
    return false;
  }
}

function occupyPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createNetServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 });
    });
  });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hnx-controller-'));
  saved = [];
  changes = [];
  controller = null;
});

afterEach(async () => {
  await controller?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('host controller', () => {
  it('starts a real host on a free port, with the setup secret, and stops it', async () => {
    const host = make();
    expect(host.state()).toMatchObject({ running: false, url: null, setupSecret: null, error: null });

    const started = await host.start();
    expect(started.running).toBe(true);
    expect(started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(started.setupSecret).toEqual(host.host()?.setupSecret());
    expect(started.setupSecret).toMatch(/^\S{40,}$/);
    expect(started.lanUrls).toEqual([]);
    expect(await reachable(started.url)).toBe(true);
    expect(await readdir(join(dir, 'data'))).toContain('companion.lock');

    const stopped = await host.stop();
    expect(stopped).toMatchObject({ running: false, url: null, lanUrls: [], setupSecret: null });
    expect(await reachable(started.url)).toBe(false);
    // The data folder is free again for the next start (or another process).
    expect(await readdir(join(dir, 'data'))).not.toContain('companion.lock');
    expect(changes.map((state) => state.running)).toEqual([true, false]);
  });

  it('lists open sockets and the connected users by name', async () => {
    const host = make();
    const started = await host.start();
    expect(started.clients).toEqual({ connections: 0, users: [] });
    const server = lastServer!;
    const { user, token } = await server.accounts.createUser({
      username: 'Ann',
      password: 'Member#Pass1',
      email: 'ann@example.test',
    });
    const socketUrl = started.url!.replace('http', 'ws');
    const verified = new WebSocket(socketUrl);
    const anonymous = new WebSocket(socketUrl);
    const anonymousOpen = new Promise((resolve) => anonymous.once('open', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        verified.once('error', reject);
        verified.once('open', () =>
          verified.send(
            JSON.stringify({ userId: user.Id, tokenContent: token.content, message: 'auth', args: {} }),
          ),
        );
        verified.once('message', () => resolve());
      });
      await anonymousOpen;
      expect(host.state().clients).toEqual({
        connections: 2,
        users: [{ userId: user.Id, username: 'Ann', sockets: 1 }],
      });
    } finally {
      verified.close();
      anonymous.close();
    }
    expect((await host.stop()).clients).toEqual({ connections: 0, users: [] });
  });

  it('starts again after a stop on the same data', async () => {
    const host = make();
    const first = await host.start();
    await host.stop();
    const second = await host.start();
    expect(second.running).toBe(true);
    expect(await reachable(second.url)).toBe(true);
    // No owner yet, so setup is still pending; the secret is fresh for this run.
    expect(second.setupSecret).not.toBeNull();
    expect(second.setupSecret).not.toBe(first.setupSecret);
  });

  it('runs one server when start is called twice at once', async () => {
    const host = make();
    const [a, b] = await Promise.all([host.start(), host.start()]);
    expect(a.url).toBe(b.url);
    expect(changes.filter((state) => state.running)).toHaveLength(1);
  });

  it('saves new settings and restarts onto them when running', async () => {
    const host = make();
    const before = await host.start();
    const otherData = join(dir, 'other-data');
    const after = await host.updateSettings({ dataDir: otherData });

    expect(saved).toEqual([{ host: '127.0.0.1', port: 0, dataDir: otherData }]);
    expect(after.running).toBe(true);
    expect(after.settings.dataDir).toBe(otherData);
    expect(host.host()?.dataDir).toBe(otherData);
    expect(await reachable(after.url)).toBe(true);
    expect(after.url === before.url || !(await reachable(before.url))).toBe(true);
    expect(await readdir(otherData)).toContain('companion.lock');
    expect(await readdir(join(dir, 'data'))).not.toContain('companion.lock');
  });

  it('saves settings without starting a stopped host', async () => {
    const host = make();
    const state = await host.updateSettings({ port: 6123 });
    expect(state).toMatchObject({ running: false, settings: { port: 6123 } });
    expect(saved).toHaveLength(1);
    expect(host.host()).toBeNull();
  });

  it('reports a busy port in words and stays stopped', async () => {
    const busy = await occupyPort();
    try {
      const host = make({ port: busy.port });
      const state = await host.start();
      expect(state.running).toBe(false);
      expect(state.error).toBe(
        `port ${busy.port} is in use (another program or another copy of the host has it)`,
      );
      expect((host.lastFailure() as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
      // Nothing is left holding the data folder after the failed start.
      expect(await readdir(join(dir, 'data'))).not.toContain('companion.lock');

      const moved = await host.updateSettings({ port: 0 });
      expect(moved.running).toBe(false);
      const retried = await host.start();
      expect(retried).toMatchObject({ running: true, error: null });
      expect(host.lastFailure()).toBeNull();
    } finally {
      busy.server.close();
    }
  });

  it('reports a data folder held by another host', async () => {
    const other = make();
    await other.start();
    const second = createHostController({
      settings: { host: '127.0.0.1', port: 0, dataDir: join(dir, 'data') },
      saveSettings: async () => undefined,
      serverConfig: CHEAP,
      startHost: inProcessHost({ logger: pino({ level: 'silent' }) }),
    });
    const state = await second.start();
    expect(state.running).toBe(false);
    expect(state.error).toMatch(/Data folder .* is already in use by this process/);
    await second.close();
  });

  it('does not start while the settings file cannot be used, says why, and starts once settings are saved', async () => {
    const problem = new HostSettingsFileError('/x/host-settings.json: unknown key "theme"');
    const host = make({}, { settingsProblem: problem });
    const refused = await host.start();
    expect(refused).toMatchObject({ running: false, url: null, error: problem.message });
    expect(host.lastFailure()).toBe(problem);
    expect(await readdir(dir)).toEqual([]);
    // Saving settings (the settings screen, or "Use the default settings") replaces the file.
    await host.updateSettings({ port: 0 });
    expect(saved).toHaveLength(1);
    const started = await host.start();
    expect(started).toMatchObject({ running: true, error: null });
  });

  it('reads a settings file that could not be used again before each start', async () => {
    const problem = new HostSettingsFileError('/x/host-settings.json: "port": must be a whole number');
    const fixed: HostSettings = { host: '127.0.0.1', port: 0, dataDir: join(dir, 'fixed') };
    const reads = [
      { settings: fixed, problem },
      { settings: fixed, problem: null },
    ];
    let reloads = 0;
    const host = make(
      {},
      {
        settingsProblem: problem,
        reloadSettings: async () => reads[reloads++]!,
      },
    );
    expect((await host.start()).error).toBe(problem.message);
    const started = await host.start();
    expect(started).toMatchObject({ running: true, error: null, settings: fixed });
    expect(await readdir(join(dir, 'fixed'))).toContain('companion.lock');
    // Read while it was bad, not after.
    await host.stop();
    await host.start();
    expect(reloads).toBe(2);
    expect(saved).toEqual([]);
  });

  it('refuses to start once closed', async () => {
    const host = make();
    await host.start();
    await host.close();
    expect(host.state().running).toBe(false);
    await expect(host.start()).rejects.toThrow('shutting down');
  });
});
