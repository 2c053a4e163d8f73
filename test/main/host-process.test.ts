// The supervisor with the host as a real Node child process (child_process.fork of the built host-child entry),
// speaking the same messages as Electron's utility process: what the desktop app runs, minus Electron.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import type { HostState } from '../../server/protocol/host-bridge.js';
import { createHostController, type HostController } from '../../main/host-controller.js';
import type { HostNotice } from '../../main/host-messages.js';
import { forkNodeHost, processHostStarter } from '../../main/host-process.js';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const ENTRY = join(root, 'dist', 'bundle', 'host-child.js');
const CHEAP = { uiDir: null, passwordHash: { memoryCost: 1024, timeCost: 1 }, fsync: false } as const;

let dir: string;
let controller: HostController | null;
let changes: HostState[];
let notices: HostNotice[];

function make(extra: { restartDelaysMs?: number[]; maxRestarts?: number } = {}): HostController {
  controller = createHostController({
    settings: { host: '127.0.0.1', port: 0, dataDir: join(dir, 'data') },
    saveSettings: async () => undefined,
    serverConfig: CHEAP,
    startHost: processHostStarter({
      spawn: forkNodeHost(ENTRY, { ...process.env, HYPERNEX_LOG_LEVEL: 'info' }),
      logFile: join(dir, 'logs', 'host.log'),
      log: pino({ level: 'silent' }),
      stopTimeoutMs: 10_000,
    }),
    restartDelaysMs: [50, 100],
    onStateChanged: (state) => changes.push(state),
    onNotice: (notice) => notices.push(notice),
    ...extra,
  });
  return controller;
}

async function api<T>(url: string, path: string, body: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(`${url}/api/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const envelope = (await res.json()) as { success: boolean; message: string; result: T };
  if (!envelope.success) throw new Error(`${path}: ${envelope.message}`);
  return envelope.result;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(() => {
  if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` first`);
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hnx-supervisor-'));
  controller = null;
  changes = [];
  notices = [];
});

afterEach(async () => {
  await controller?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('host process supervisor', () => {
  it('runs the host in its own process, answers messages both ways, and keeps its log in a file', async () => {
    const host = make();
    const state = await host.start();
    expect(state.running).toBe(true);
    const running = host.host()!;
    expect(running.pid).toBeGreaterThan(0);
    expect(running.pid).not.toBe(process.pid);
    // main → host → main
    await expect(running.ping()).resolves.toBe('pong');
    await expect(running.uploadsInProgress()).resolves.toBe(0);
    // The server in the child answers HTTP.
    const answer = await fetch(`${state.url!}/api/v1/isInviteCodeRequired`);
    expect(((await answer.json()) as { success: boolean }).success).toBe(true);
    // host → main on its own: a socket connects and the child reports it.
    const socket = new WebSocket(state.url!.replace('http', 'ws'));
    await new Promise((resolve) => socket.once('open', resolve));
    await vi.waitFor(() => expect(host.state().clients.connections).toBe(1), { timeout: 5000 });
    socket.close();
    await vi.waitFor(() => expect(host.state().clients.connections).toBe(0), { timeout: 5000 });
    const log = await readFile(join(dir, 'logs', 'host.log'), 'utf8');
    expect(log).toContain('"msg":"host started"');
  });

  it("reports a friend request for the desktop user from the host process, and no one else's", async () => {
    const host = make();
    const { url } = await host.start();
    const signUp = async (username: string): Promise<{ id: string; token: string }> => {
      const { UserData } = await api<{ UserData: { Id: string; AccountTokens: { content: string }[] } }>(
        url!,
        'createUser',
        { username, password: 'Passw0rd!', email: `${username}@example.com` },
      );
      return { id: UserData.Id, token: UserData.AccountTokens[0]!.content };
    };
    const [me, ann, bob] = [await signUp('desk'), await signUp('ann'), await signUp('bob')];
    host.setDesktopUser({ userId: me.id, tokenContent: me.token });
    await host.host()!.ping(); // the desktop user reached the child before the requests below
    await api(url!, 'sendFriendRequest', { userid: ann.id, tokenContent: ann.token, targetUserId: me.id });
    await api(url!, 'sendFriendRequest', { userid: ann.id, tokenContent: ann.token, targetUserId: bob.id });
    await vi.waitFor(() => expect(notices).toHaveLength(1), { timeout: 5000 });
    expect(notices[0]).toEqual({
      kind: 'friend-request',
      userId: me.id,
      fromUserId: ann.id,
      fromUsername: 'ann',
    });
  });

  it('restarts the host after a SIGKILL, on the same data and settings', async () => {
    const host = make();
    const first = await host.start();
    const pid = host.host()!.pid!;
    await api(first.url!, 'createUser', {
      username: 'kept',
      password: 'Passw0rd!',
      email: 'kept@example.com',
    });
    process.kill(pid, 'SIGKILL');
    await vi.waitFor(
      () =>
        expect(changes.some((s) => !s.running && /unexpectedly \(SIGKILL\)/.test(s.error ?? ''))).toBe(true),
      {
        timeout: 5000,
      },
    );
    await vi.waitFor(() => expect(host.state().running).toBe(true), { timeout: 15_000 });
    const second = host.host()!;
    expect(second.pid).not.toBe(pid);
    expect(host.state().error).toBeNull();
    expect(second.dataDir).toBe(join(dir, 'data'));
    await expect(second.ping()).resolves.toBe('pong');
    // What the first process acknowledged is served by the second.
    await expect(
      api(host.state().url!, 'createUser', {
        username: 'kept',
        password: 'Passw0rd!',
        email: 'k2@example.com',
      }),
    ).rejects.toThrow(/taken|exists|already/i);
  });

  it('stops cleanly: the child exits on its own and the data folder can be opened again', async () => {
    const host = make();
    await host.start();
    const pid = host.host()!.pid!;
    const stopped = await host.stop();
    expect(stopped).toMatchObject({ running: false, error: null });
    expect(isAlive(pid)).toBe(false);
    // A stop is not a crash: nothing restarts it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(host.state().running).toBe(false);
    // The lock was released, so the same folder starts again.
    expect((await host.start()).running).toBe(true);
    const log = await readFile(join(dir, 'logs', 'host.log'), 'utf8');
    expect(log).not.toMatch(/did not close cleanly/);
  });

  it('reports a start failure in words, with the error code, and does not restart it', async () => {
    const blocker = make();
    const running = await blocker.start();
    const port = Number(new URL(running.url!).port);
    const second = createHostController({
      settings: { host: '127.0.0.1', port, dataDir: join(dir, 'other') },
      saveSettings: async () => undefined,
      serverConfig: CHEAP,
      startHost: processHostStarter({
        spawn: forkNodeHost(ENTRY),
        logFile: join(dir, 'logs', 'host2.log'),
        log: pino({ level: 'silent' }),
      }),
    });
    try {
      const state = await second.start();
      expect(state.running).toBe(false);
      expect(state.error).toBe(`port ${port} is in use (another program or another copy of the host has it)`);
      expect((second.lastFailure() as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
    } finally {
      await second.close();
    }
  });

  it('gives up after the allowed number of restarts and says so', async () => {
    const host = make({ maxRestarts: 0 });
    await host.start();
    process.kill(host.host()!.pid!, 'SIGKILL');
    await vi.waitFor(() => expect(host.state().error).toMatch(/gave up after 0 restarts/), { timeout: 5000 });
    expect(host.state().running).toBe(false);
  });
});
