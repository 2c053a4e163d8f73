import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { TestSocket } from './socket-client.js';
import { spawnServe, stop, type Served } from './cli-helpers.js';
import {
  expectFail,
  expectOk,
  PASSWORD,
  signUp,
  startHost,
  tempDir,
  type Answer,
  type TestHost,
} from './helpers.js';

// Every argon2 run the host makes is counted (and still run for real).
const argon2Runs = vi.hoisted(() => ({ hash: 0, verify: 0 }));
vi.mock('@node-rs/argon2', async (importOriginal) => {
  const real = await importOriginal<typeof import('@node-rs/argon2')>();
  return {
    ...real,
    hash: (...args: Parameters<typeof real.hash>) => {
      argon2Runs.hash++;
      return real.hash(...args);
    },
    verify: (...args: Parameters<typeof real.verify>) => {
      argon2Runs.verify++;
      return real.verify(...args);
    },
  };
});

interface Seen {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One request through node:http (fetch will not send an Origin of our choosing everywhere). */
function send(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = httpRequest(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function envelope(seen: Seen): Answer {
  expect(seen.status, seen.text).toBe(200);
  expect(seen.headers['content-type']).toMatch(/^application\/json/);
  return JSON.parse(seen.text) as Answer;
}

interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/**
 * Writes `bytes` on a fresh connection and resolves, once the host closed it, with the answers it sent (each read
 * by its Content-Length).
 */
function exchange(port: number, bytes: string): Promise<RawAnswer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the host kept the connection open; got ${Buffer.concat(chunks).toString()}`));
    }, 5000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      let text = Buffer.concat(chunks).toString('latin1');
      const answers: RawAnswer[] = [];
      while (text.length > 0) {
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) throw new Error(`not an HTTP answer: ${text}`);
        const head = text.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        answers.push({
          status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
          head,
          body: Buffer.from(text.slice(end + 4, end + 4 + length), 'latin1').toString('utf8'),
        });
        text = text.slice(end + 4 + length);
      }
      resolve(answers);
    });
    socket.write(bytes);
  });
}

/** The one answer of an exchange: 200 and the envelope (then the connection was closed). */
function rawEnvelope(answers: RawAnswer[]): Answer {
  expect(answers.length, JSON.stringify(answers)).toBe(1);
  const [seen] = answers as [RawAnswer];
  expect(seen.status, seen.head).toBe(200);
  expect(seen.head).toMatch(/\r\ncontent-type: application\/json/i);
  return JSON.parse(seen.body) as Answer;
}

let host: TestHost | null = null;
afterEach(async () => {
  await host?.close();
  host = null;
});

describe('login storm', () => {
  it('refuses made-up usernames without running argon2, so they never queue ahead of real users', async () => {
    host = await startHost();
    await signUp(host, 'alice');
    // The first refusal may measure the pace of one hash (once per process); the storm after it hashes nothing.
    expectFail(await host.post('login', { username: 'nobody', password: PASSWORD }), 'INCORRECT_CREDENTIALS');
    const before = { ...argon2Runs };
    const storm = Array.from({ length: 40 }, (_, i) =>
      host!.post('login', { username: `ghost${i}`, password: PASSWORD }),
    );
    const real = host.post('login', { username: 'alice', password: PASSWORD });
    for (const answer of await Promise.all(storm)) expectFail(answer, 'INCORRECT_CREDENTIALS');
    expect(expectOk(await real).LoginResult).toBe(4);
    // Only the real user's password was checked.
    expect(argon2Runs.verify - before.verify).toBe(1);
    expect(argon2Runs.hash - before.hash).toBe(0);
  });

  it('answers a made-up username exactly as a wrong password', async () => {
    host = await startHost();
    await signUp(host, 'alice');
    const wrong = await host.post('login', { username: 'alice', password: 'Wrong-Passw0rd!' });
    const unknown = await host.post('login', { username: 'ghost', password: 'Wrong-Passw0rd!' });
    expectFail(unknown, 'INCORRECT_CREDENTIALS');
    expect(unknown).toEqual(wrong);
  });
});

describe('sockets that do not read', () => {
  it('drops a socket whose client stops reading, with a log line, and keeps serving one that reads', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn', base: undefined }, { write: (line: string) => lines.push(line) });
    const limit = 256 * 1024;
    host = await startHost({ socket: { maxBufferedBytes: limit } }, { logger });
    const slow = await signUp(host, 'slowpoke');
    const reader = await signUp(host, 'reader');
    const slowSocket = await TestSocket.verified(host.server.url, slow.id, slow.token);
    const readerSocket = await TestSocket.verified(host.server.url, reader.id, reader.token);
    slowSocket.ws.pause(); // stops reading; the host keeps sending
    const hub = host.server.hub;
    const pad = 'x'.repeat(4000);
    let sent = 0;
    // At most 32 MB for each; a few turns of the event loop at 16 KB each once the kernel's buffers are full.
    while (hub.isConnected(slow.id) && sent < 8000) {
      for (let i = 0; i < 4; i++, sent++) {
        hub.send(slow.id, 'bulk', { n: sent, pad });
        hub.send(reader.id, 'bulk', { n: sent, pad });
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(hub.isConnected(slow.id)).toBe(false);
    expect(sent).toBeLessThan(8000);
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({
        userId: slow.id,
        limit,
        msg: expect.stringMatching(/not reading.*socket\.maxBufferedBytes/) as unknown,
      }),
    );
    // Its client, reading again, finds the connection cut (no close frame could get past what it had not read).
    slowSocket.ws.resume();
    for (let i = 0; !slowSocket.closed && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
    expect(slowSocket.closed?.code).toBe(1006);
    // The reader got everything and goes on.
    hub.send(reader.id, 'bulk', { n: sent, pad: '' });
    for (let i = 0; readerSocket.count('bulk') < sent + 1 && i < 500; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(readerSocket.count('bulk')).toBe(sent + 1);
    expect(readerSocket.closed).toBeNull();
    expect(hub.isConnected(reader.id)).toBe(true);
    readerSocket.sendJson({
      userId: reader.id,
      tokenContent: reader.token,
      message: 'requestinvite',
      args: {},
    });
    expect((await readerSocket.next('failedtorequestinvite')).reason).toBeTypeOf('string');
    readerSocket.ws.close();
  });
});

describe('origins', () => {
  const DASHBOARD = 'https://dashboard.example.com';
  const STRANGER = 'http://evil.example';

  const form = 'username=mallory&password=Passw0rd%21&email=m%40x.io';

  it('refuses API calls from pages of other origins, whatever the route, and creates nothing', async () => {
    host = await startHost({ allowedOrigins: [`${DASHBOARD}/`] });
    const port = host.server.port;
    // A plain form post: the browser sends it without asking first.
    const simple = await send(port, {
      method: 'POST',
      path: '/api/v1/createUser',
      headers: { origin: STRANGER, 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expectFail(envelope(simple), 'ORIGIN_NOT_ALLOWED');
    expect(simple.headers['access-control-allow-origin']).toBeUndefined();
    const json = await send(port, {
      method: 'POST',
      path: '/api/v1/createUser',
      headers: { origin: STRANGER, 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'mallory', password: PASSWORD, email: 'm@x.io' }),
    });
    expectFail(envelope(json), 'ORIGIN_NOT_ALLOWED');
    expect(await host.server.users.count()).toBe(0);
    // A hot read route, by GET and by POST.
    await signUp(host, 'alice');
    for (const probe of [
      { path: '/api/v1/getUser?username=alice' },
      {
        method: 'POST',
        path: '/api/v1/getUser',
        headers: { 'content-type': 'application/json' },
        body: '{"username":"alice"}',
      },
    ]) {
      const seen = await send(port, { ...probe, headers: { ...probe.headers, origin: STRANGER } });
      expectFail(envelope(seen), 'ORIGIN_NOT_ALLOWED');
      expect(seen.headers['access-control-allow-origin']).toBeUndefined();
    }
    // The preflight gets no permission either.
    const preflight = await send(port, {
      method: 'OPTIONS',
      path: '/api/v1/createUser',
      headers: { origin: STRANGER, 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expectFail(envelope(preflight), 'ORIGIN_NOT_ALLOWED');
    expect(await host.server.users.count()).toBe(1);
  });

  it("serves this host's own pages, the configured dashboard and native clients", async () => {
    host = await startHost({ allowedOrigins: [`${DASHBOARD}/`] });
    const port = host.server.port;
    const own = `http://127.0.0.1:${port}`;
    const created = await send(port, {
      method: 'POST',
      path: '/api/v1/createUser',
      headers: { origin: own, 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expectOk(envelope(created));
    expect(created.headers['access-control-allow-origin']).toBe(own);
    expect(created.headers.vary).toMatch(/Origin/);
    for (const origin of [`http://localhost:${port}`, DASHBOARD]) {
      const lean = await send(port, { path: '/api/v1/getUser?username=mallory', headers: { origin } });
      expectOk(envelope(lean));
      expect(lean.headers['access-control-allow-origin']).toBe(origin);
    }
    const preflight = await send(port, {
      method: 'OPTIONS',
      path: '/api/v1/login',
      headers: {
        origin: DASHBOARD,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(DASHBOARD);
    // No Origin: a native client, as before.
    const native = await send(port, { path: '/api/v1/getUser?username=mallory' });
    expectOk(envelope(native));
    expect(native.headers['access-control-allow-origin']).toBe('*');
  });

  it('allows any page with "*", and refuses to start with an entry that is not an origin', async () => {
    host = await startHost({ allowedOrigins: ['*'] });
    const seen = await send(host.server.port, { path: '/api/v1/gameEngine', headers: { origin: STRANGER } });
    expectOk(envelope(seen));
    expect(seen.headers['access-control-allow-origin']).toBe(STRANGER);
    await expect(startHost({ allowedOrigins: ['dashboard.example.com'] })).rejects.toThrow(
      /allowedOrigins: "dashboard.example.com" is not a web origin/,
    );
  });

  it('refuses a socket from a page of another origin with the envelope, and opens the others', async () => {
    host = await startHost({ allowedOrigins: [DASHBOARD] });
    const url = host.server.url.replace(/^http/, 'ws');
    const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(url, { origin: STRANGER });
      ws.on('open', () => reject(new Error('a socket from another origin was opened')));
      ws.on('error', () => undefined);
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    expect(refused.status).toBe(200);
    expectFail(JSON.parse(refused.body) as Answer, 'ORIGIN_NOT_ALLOWED');
    expect(host.server.socket.connections).toBe(0);
    const alice = await signUp(host, 'alice');
    for (const options of [{ origin: DASHBOARD }, { origin: host.server.url }, {}]) {
      const socket = await TestSocket.open(host.server.url, options);
      socket.sendJson({ userId: alice.id, tokenContent: alice.token, message: 'auth', args: {} });
      await socket.next('authenticated');
      socket.ws.close();
    }
  });

  describe('from the command line', () => {
    let served: Served | undefined;
    let dir = '';
    afterEach(async () => {
      if (served) await stop(served);
      served = undefined;
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('adds a dashboard origin with --allowed-origin', async () => {
      dir = await tempDir('hnx-origin-');
      served = await spawnServe(['--data-dir', dir, '--allowed-origin', DASHBOARD]);
      const port = Number(new URL(served.url).port);
      const allowed = await send(port, { path: '/api/v1/gameEngine', headers: { origin: DASHBOARD } });
      expectOk(envelope(allowed));
      expect(allowed.headers['access-control-allow-origin']).toBe(DASHBOARD);
      const refused = await send(port, { path: '/api/v1/gameEngine', headers: { origin: STRANGER } });
      expectFail(envelope(refused), 'ORIGIN_NOT_ALLOWED');
      const native = await send(port, { path: '/api/v1/gameEngine' });
      expectOk(envelope(native));
      expect(native.headers['access-control-allow-origin']).toBe('*');
    });
  });
});

describe('answers Node would give itself', () => {
  it('answers a huge address or header with the envelope and closes', async () => {
    host = await startHost();
    const port = host.server.port;
    const longUrl = await exchange(
      port,
      `GET /api/v1/getUser?username=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    expectFail(rawEnvelope(longUrl), 'HEADERS_TOO_LARGE');
    const bigHeader = await exchange(
      port,
      `GET /api/v1/gameEngine HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`,
    );
    expectFail(rawEnvelope(bigHeader), 'HEADERS_TOO_LARGE');
  });

  it('answers a lying or malformed request with the envelope and closes', async () => {
    host = await startHost();
    const port = host.server.port;
    const post = (headers: string, body = '{}') =>
      `POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n${body}`;
    for (const bytes of [
      post('Content-Length: abc\r\n'),
      post('Content-Length: 2\r\nContent-Length: 5\r\n'),
      post('Content-Length: 2\r\nTransfer-Encoding: chunked\r\n'),
      'NOT HTTP AT ALL\r\n\r\n',
    ]) {
      expectFail(rawEnvelope(await exchange(port, bytes)), 'MALFORMED_REQUEST');
    }
    // Two bytes of body said, more sent: the request gets its answer, then what follows (no request) the refusal.
    const [first, second, ...more] = await exchange(
      port,
      post('Content-Length: 2\r\n', '{}garbage that is no request\r\n\r\n'),
    );
    expect(more).toEqual([]);
    expect(first?.status).toBe(200);
    expectFail(JSON.parse(first!.body) as Answer, 'INVALID_PARAMETERS');
    expectFail(rawEnvelope([second!]), 'MALFORMED_REQUEST');
    // The host still serves.
    expectOk(await host.get('gameEngine'));
  });

  it('serves a request without Host, or with an Expect it does not know, as any other', async () => {
    host = await startHost();
    const port = host.server.port;
    const noHost = await exchange(port, 'GET /api/v1/gameEngine HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(expectOk(rawEnvelope(noHost))).toEqual({ GameEngine: 'Unity', GameEngineVersion: '2022.3.5f1' });
    const expectation = await exchange(
      port,
      'GET /api/v1/gameEngine HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n',
    );
    expectOk(rawEnvelope(expectation));
  });

  it('routes //api/v1/... as /api/v1/..., UI or not', async () => {
    const ui = await tempDir('hnx-ui-');
    await writeFile(join(ui, 'index.html'), '<!doctype html><title>ui</title>');
    try {
      host = await startHost({ uiDir: ui });
      const port = host.server.port;
      const alice = await signUp(host, 'alice');
      const viaGet = envelope(await send(port, { path: '//api/v1/getUser?username=alice' }));
      expect(expectOk(viaGet).UserData).toMatchObject({ Id: alice.id });
      expectOk(envelope(await send(port, { path: '///api/v1/getSocketInfo' })));
      const login = await send(port, {
        method: 'POST',
        path: '//api/v1/login',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'alice', password: PASSWORD }),
      });
      expect(expectOk(envelope(login)).LoginResult).toBe(4);
      expectFail(envelope(await send(port, { path: '//api/v1/noSuchThing' })), 'NOT_FOUND');
      // The UI is still the UI.
      const page = await send(port, { path: '/' });
      expect(page.headers['content-type']).toMatch(/^text\/html/);
    } finally {
      await host?.close();
      host = null;
      await rm(ui, { recursive: true, force: true });
    }
  });
});

describe('UI responses', () => {
  it('carry Referrer-Policy: no-referrer, the API document too', async () => {
    const ui = await tempDir('hnx-ui-');
    await writeFile(join(ui, 'index.html'), '<!doctype html><title>ui</title>');
    await mkdir(join(ui, 'assets'));
    await writeFile(join(ui, 'assets', 'app.js'), 'console.log(1)');
    try {
      host = await startHost({ uiDir: ui });
      const port = host.server.port;
      for (const path of ['/', '/index.html', '/assets/app.js', '/some/client/route', '/api/v1/docs']) {
        const seen = await send(port, { path });
        expect(seen.status, path).toBe(200);
        expect(seen.headers['referrer-policy'], path).toBe('no-referrer');
      }
    } finally {
      await host?.close();
      host = null;
      await rm(ui, { recursive: true, force: true });
    }
  });
});
