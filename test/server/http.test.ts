import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { expectFail, expectOk, signUp, startHost, type TestHost } from './helpers.js';

describe('HTTP envelope and transport', () => {
  let host: TestHost;
  beforeEach(async () => {
    host = await startHost({ limits: { jsonBodyBytes: 2048 } });
  });
  afterEach(async () => {
    await host.close();
  });

  async function send(path: string, body: string, contentType = 'application/json') {
    const res = await host.raw(path, { method: 'POST', headers: { 'content-type': contentType }, body });
    return { res, json: (await res.json()) as Parameters<typeof expectFail>[0] };
  }

  it('answers malformed JSON with a 200 JSON envelope carrying CORS', async () => {
    const { res, json } = await send('login', '{"username":');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expectFail(json, 'INVALID_JSON');
    expect(await host.server.users.count()).toBe(0);
  });

  it('answers a JSON body that is not an object as invalid parameters', async () => {
    expectFail((await send('login', '["alice"]')).json, 'INVALID_PARAMETERS', 'Invalid parameters!');
    expectFail((await send('login', '"alice"')).json, 'INVALID_JSON');
  });

  it('refuses a body over the limit with an envelope and writes nothing', async () => {
    const body = JSON.stringify({
      username: 'alice',
      password: 'Passw0rd!',
      email: 'a@x.io',
      pad: 'x'.repeat(4096),
    });
    const { res, json } = await send('createUser', body);
    expect(res.status).toBe(200);
    expectFail(json, 'BODY_TOO_LARGE');
    expect(await host.server.users.count()).toBe(0);
  });

  it('accepts urlencoded bodies like the real server', async () => {
    const { json } = await send(
      'createUser',
      'username=alice&password=Passw0rd%21&email=a%40x.io',
      'application/x-www-form-urlencoded',
    );
    expectOk(json, 'Created user alice');
  });

  it('answers an unknown /api/v1 route, or a wrong method, with NOT_FOUND in an envelope', async () => {
    const unknown = await host.raw('definitelyNot');
    expect(unknown.status).toBe(200);
    expectFail((await unknown.json()) as never, 'NOT_FOUND');
    expectFail((await host.get('login')) as never, 'NOT_FOUND');
    const outside = await fetch(`${host.server.url}/api/v2/x`);
    expect(outside.status).toBe(200);
    expectFail((await outside.json()) as never, 'NOT_FOUND');
  });

  it('routes case-insensitively, as Express did for the real server', async () => {
    expectOk(await host.get('getsocketinfo'));
  });

  it("answers a preflight from this host's own page with 204 and the real server CORS headers", async () => {
    const res = await host.raw('login', {
      method: 'OPTIONS',
      headers: {
        origin: host.server.url,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(res.status).toBe(204);
    // Pages of other origins are refused (test/server/security-wire.test.ts).
    expect(res.headers.get('access-control-allow-origin')).toBe(host.server.url);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET,HEAD,PUT,PATCH,POST,DELETE');
    expect(res.headers.get('access-control-allow-headers')).toBe('content-type');
  });

  it('gives every answer a request id, keeping a sane one from the client', async () => {
    const mine = await host.raw('gameEngine', { headers: { 'x-request-id': 'trace-123' } });
    expect(mine.headers.get('x-request-id')).toBe('trace-123');
    const generated = await host.raw('gameEngine', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('turns an internal fault into INTERNAL_ERROR without leaking a stack or the cause', async () => {
    const alice = await signUp(host, 'alice');
    // Make the handler throw a TypeError deep inside.
    vi.spyOn(host.server.users, 'get').mockImplementationOnce(() => {
      throw new TypeError('Cannot read properties of null (reading AccountTokens)');
    });
    const answer = await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token });
    expectFail(answer, 'INTERNAL_ERROR');
    expect(JSON.stringify(answer)).not.toMatch(/TypeError|at .*\.js|AccountTokens/);
    // The process is still serving.
    expectOk(await host.get('gameEngine'));
  });

  it('advertises the socket at the public URL’s port and scheme (a host behind a proxy)', async () => {
    for (const [publicUrl, expected] of [
      ['https://hypernex.example', { IsWSS: true, Port: 443 }],
      ['http://hypernex.lan', { IsWSS: false, Port: 80 }],
      ['http://192.168.1.20:5180', { IsWSS: false, Port: 5180 }],
    ] as const) {
      const proxied = await startHost({ publicUrl });
      try {
        expect(expectOk(await proxied.get('getSocketInfo'))).toEqual(expected);
      } finally {
        await proxied.close();
      }
    }
  });

  it('answers the informational GETs real clients call at start', async () => {
    expect(expectOk(await host.get('getSocketInfo'), 'Got Information')).toEqual({
      IsWSS: false,
      Port: host.server.port,
    });
    expect(expectOk(await host.get('isInviteCodeRequired'))).toEqual({ inviteCodeRequired: false });
    expect(expectOk(await host.get('allowAnyGameServer'))).toEqual({ allowAnyGameServer: false });
    expect(expectOk(await host.get('gameEngine'))).toEqual({
      GameEngine: 'Unity',
      GameEngineVersion: '2022.3.5f1',
    });
  });

  it('survives a client that sends half a body and hangs up', async () => {
    await new Promise<void>((resolve) => {
      const req = request(`${host.server.url}/api/v1/createUser`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '1000' },
      });
      req.on('error', () => resolve());
      req.write('{"username":"al');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    expectOk(await host.get('gameEngine'));
    expect(await host.server.users.count()).toBe(0);
  });
});

describe('served UI', () => {
  it('serves the built page with its CSP, compressed for browsers that accept it', async () => {
    const { fileURLToPath } = await import('node:url');
    const { existsSync } = await import('node:fs');
    const uiDir = fileURLToPath(new URL('../../dist/renderer', import.meta.url));
    if (!existsSync(uiDir))
      throw new Error('dist/renderer is missing: run `npm run build` first (npm test does).');
    const host = await startHost({ uiDir });
    try {
      const raw = (path: string, encoding: string) =>
        new Promise<{ headers: Record<string, string | string[] | undefined>; size: number }>(
          (resolve, reject) => {
            const req = request(
              `${host.server.url}${path}`,
              { headers: { 'accept-encoding': encoding } },
              (res) => {
                let size = 0;
                res.on('data', (c: Buffer) => (size += c.length));
                res.on('end', () => resolve({ headers: res.headers, size }));
              },
            );
            req.on('error', reject);
            req.end();
          },
        );
      const page = await raw('/', 'gzip');
      expect(page.headers['content-encoding']).toBe('gzip');
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      const html = await (await fetch(`${host.server.url}/`)).text();
      const script = /src="\.?\/?(assets\/[^"]+\.js)"/.exec(html)![1]!;
      const plain = await raw(`/${script}`, 'identity');
      const brotli = await raw(`/${script}`, 'br, gzip');
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(brotli.headers['content-encoding']).toBe('br');
      expect(brotli.headers['content-type']).toMatch(/javascript/);
      expect(brotli.headers.vary).toMatch(/Accept-Encoding/i);
      expect(brotli.size * 2).toBeLessThan(plain.size);
    } finally {
      await host.close();
    }
  });
});
