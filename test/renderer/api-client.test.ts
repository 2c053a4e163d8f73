import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiError, call } from '../../renderer/shared/api-client.js';
import { createServer, type HostServer } from '../../server/host.js';

// The client calls same-origin paths (`/api/v1/...`); in Node there is no page origin, so point them at a real host.
describe('renderer api client against a real host', () => {
  let server: HostServer;
  let dataDir: string;
  const realFetch = globalThis.fetch;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'hypernex-client-'));
    server = await createServer({
      dataDir,
      host: '127.0.0.1',
      port: 0,
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
    });
  });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  function useHost(): void {
    vi.stubGlobal('fetch', (input: string, init?: RequestInit) => realFetch(server.url + input, init));
  }

  it('resolves to the result of a successful GET', async () => {
    useHost();
    expect(await call('setupStatus')).toEqual({ needsOwnerSetup: true });
  });

  it('throws the code and field reasons of a refused POST', async () => {
    useHost();
    const error = await call('createUser', {
      username: 'ok_name',
      password: 'weak',
      email: 'a@b.test',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('WEAK_PASSWORD');
    expect((error as ApiError).fields).toEqual({ password: 'Password must be at least 8 characters' });
  });

  it('keeps the rest of a failed result, such as the LoginResult of a refused login', async () => {
    useHost();
    const error = (await call('login', { username: 'nobody', password: 'Whatever#1' }).catch(
      (e: unknown) => e,
    )) as ApiError;
    expect(error.code).toBe('INCORRECT_CREDENTIALS');
    expect(error.result.LoginResult).toBe(0);
  });

  it('reports an unreachable host as NETWORK_ERROR', async () => {
    vi.stubGlobal('fetch', () => Promise.reject(new TypeError('fetch failed')));
    await expect(call('setupStatus')).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
  });

  it('reports an answer that is not an envelope as BAD_RESPONSE', async () => {
    vi.stubGlobal('fetch', () =>
      Promise.resolve(new Response('<!doctype html><p>proxy error</p>', { status: 502 })),
    );
    await expect(call('setupStatus')).rejects.toMatchObject({ code: 'BAD_RESPONSE' });
    vi.stubGlobal('fetch', () => Promise.resolve(Response.json({ hello: 'world' })));
    await expect(call('setupStatus')).rejects.toMatchObject({ code: 'BAD_RESPONSE' });
  });
});
