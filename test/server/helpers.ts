import { mkdtemp, rm } from 'node:fs/promises';
import type { LogFileSystem } from '../../server/store/wal.js';
import type { Logger } from 'pino';
import type { Draft } from 'immer';
import type { HostStore } from '../../server/store/seam.js';
import { UsersRepo, type StoredUser } from '../../server/store/users.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ConfigOverrides } from '../../server/config.js';
import { createServer, type HostServer } from '../../server/host.js';
import type { Clock } from '../../server/services/context.js';
import type { Cooldowns } from '../../server/services/limits.js';
import type { ContentJobOptions } from '../../server/services/content-jobs.js';

export interface Answer {
  success: boolean;
  message: string;
  result?: Record<string, unknown> & { error?: { code: string; fields?: Record<string, string> } };
}

/** A clock the test moves by hand. */
export function manualClock(
  startMs = Date.UTC(2026, 10, 22, 12, 0, 0),
): Clock & { advance(seconds: number): void } {
  let now = startMs;
  return {
    now: () => now,
    advance(seconds: number) {
      now += seconds * 1000;
    },
  };
}

export const CHEAP_HASH = { memoryCost: 1024, timeCost: 1, concurrency: 2 };

export async function tempDir(prefix = 'hnx-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export interface TestHost {
  server: HostServer;
  dir: string;
  post(path: string, body: unknown): Promise<Answer>;
  get(path: string): Promise<Answer>;
  raw(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/** A real server on 127.0.0.1, port 0, over a fresh data folder in the temp dir. */
export async function startHost(
  overrides: ConfigOverrides = {},
  options: {
    clock?: Clock;
    dir?: string;
    logFileSystem?: LogFileSystem;
    logger?: Logger;
    cooldowns?: Cooldowns;
    contentJobs?: ContentJobOptions;
  } = {},
): Promise<TestHost> {
  const dir = options.dir ?? (await tempDir());
  const server = await createServer(
    { dataDir: dir, host: '127.0.0.1', port: 0, passwordHash: CHEAP_HASH, uiDir: null, ...overrides },
    {
      clock: options.clock,
      logFileSystem: options.logFileSystem,
      logger: options.logger,
      cooldowns: options.cooldowns,
      contentJobs: options.contentJobs,
    },
  );
  const raw = (path: string, init?: RequestInit): Promise<Response> =>
    fetch(`${server.url}/api/v1/${path}`, init);
  return {
    server,
    dir,
    raw,
    async post(path, body) {
      const res = await raw(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as Answer;
    },
    async get(path) {
      const res = await raw(path);
      expect(res.status).toBe(200);
      return (await res.json()) as Answer;
    },
    async close() {
      await server.close();
      if (!options.dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

export function expectOk(answer: Answer, message?: string): Record<string, unknown> {
  expect(answer, JSON.stringify(answer)).toMatchObject({ success: true });
  if (message !== undefined) expect(answer.message).toBe(message);
  return answer.result ?? {};
}

export function expectFail(answer: Answer, code: string, message?: string): Answer {
  expect(answer.success, JSON.stringify(answer)).toBe(false);
  expect(answer.result?.error?.code, JSON.stringify(answer)).toBe(code);
  expect(typeof answer.message).toBe('string');
  if (message !== undefined) expect(answer.message).toBe(message);
  return answer;
}

export const PASSWORD = 'Passw0rd!';

export interface Account {
  id: string;
  username: string;
  token: string;
}

/** Signs up through the API and returns the signup token (AccountTokens[0]). */
export async function signUp(
  host: TestHost,
  username: string,
  email = `${username}@example.com`,
): Promise<Account> {
  const result = expectOk(await host.post('createUser', { username, password: PASSWORD, email }));
  const data = result.UserData as { Id: string; AccountTokens: Array<{ content: string }> };
  return { id: data.Id, username, token: data.AccountTokens[0]!.content };
}

/** Changes a stored user as a transaction would (records are frozen: tests change them through the store). */
export function editUser(
  host: { server: { store: HostStore } },
  id: string,
  recipe: (draft: Draft<StoredUser>) => void,
): Promise<StoredUser> {
  return host.server.store.tx((t) => UsersRepo.in(t).update(id, recipe));
}
