import { request as httpRequest } from 'node:http';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOk, signUp, startHost, tempDir, type Account } from './helpers.js';

/** One raw request, as a client on the wire would send it. */
interface Probe {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  /** Sent as is; with `chunked` it goes as two chunks with Transfer-Encoding: chunked. */
  body?: string | Buffer;
  chunked?: boolean;
}

interface Seen {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers that differ between any two answers (time, connection bookkeeping). */
const VOLATILE = new Set(['date', 'keep-alive', 'connection']);

function send(port: number, probe: Probe): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'x-request-id': 'probe-1', ...probe.headers };
    const body = probe.body ?? '';
    if (!probe.chunked && probe.method === 'POST')
      headers['content-length'] = String(Buffer.byteLength(body));
    const req = httpRequest(
      { host: '127.0.0.1', port, method: probe.method, path: probe.path, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const kept: Record<string, string> = {};
          for (const [key, value] of Object.entries(res.headers)) {
            if (!VOLATILE.has(key)) kept[key] = String(value);
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: kept,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
      },
    );
    req.on('error', reject);
    if (probe.chunked) {
      const text = Buffer.from(body);
      req.write(text.subarray(0, 5));
      req.end(text.subarray(5));
    } else {
      req.end(probe.method === 'POST' ? body : undefined);
    }
  });
}

const json = { 'content-type': 'application/json' };
const DASHBOARD = 'https://dashboard.example.com';

function probes(alice: Account, bob: Account): Probe[] {
  const post = (
    name: string,
    path: string,
    body: unknown,
    headers: Record<string, string> = json,
  ): Probe => ({
    name,
    method: 'POST',
    path,
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return [
    post('getUser, own token: private view', '/api/v1/getUser', {
      userid: alice.id,
      tokenContent: alice.token,
    }),
    post('getUser, no token: censored view', '/api/v1/getUser', { userid: bob.id }),
    post('getUser by username', '/api/v1/getUser', { username: 'bob' }),
    post('getUser by username with token', '/api/v1/getUser', {
      username: 'alice',
      tokenContent: alice.token,
    }),
    post('getUser, wrong token', '/api/v1/getUser', { userid: alice.id, tokenContent: bob.token }),
    post('getUser, unknown user', '/api/v1/getUser', { userid: 'user_nobody' }),
    post('getUser, bad field types', '/api/v1/getUser', { userid: 7, tokenContent: [] }),
    post('getUser, malformed JSON', '/api/v1/getUser', '{"userid": '),
    post('getUser, JSON that is not an object', '/api/v1/getUser', '"alice"'),
    post('getUser, empty body', '/api/v1/getUser', ''),
    post('getUser, leading BOM', '/api/v1/getUser', `\uFEFF${JSON.stringify({ userid: bob.id })}`),
    post('getUser, __proto__ key', '/api/v1/getUser', `{"userid":"${bob.id}","__proto__":{"x":1}}`),
    post(
      'getUser, charset utf-8',
      '/api/v1/getUser',
      { userid: bob.id },
      {
        'content-type': 'application/json; charset=utf-8',
      },
    ),
    post('getUser, trailing slash and other case', '/API/v1/GetUser/', { userid: bob.id }),
    post('getUser, form body (Koa reads it)', '/api/v1/getUser', `userid=${bob.id}`, {
      'content-type': 'application/x-www-form-urlencoded',
    }),
    {
      name: 'getUser, chunked body (Koa reads it)',
      method: 'POST',
      path: '/api/v1/getUser',
      headers: json,
      body: JSON.stringify({ userid: alice.id, tokenContent: alice.token }),
      chunked: true,
    },
    post('getUser, body over the limit (Koa refuses it)', '/api/v1/getUser', {
      userid: bob.id,
      pad: 'x'.repeat(3000),
    }),
    post(
      'getUser, invalid request id replaced',
      '/api/v1/getUser',
      { userid: bob.id },
      {
        ...json,
        'x-request-id': 'not valid!',
      },
    ),
    post(
      'getUser from an allowed page',
      '/api/v1/getUser',
      { userid: bob.id },
      { ...json, origin: DASHBOARD },
    ),
    post(
      'getUser from a page of another origin (Koa refuses it)',
      '/api/v1/getUser',
      { userid: bob.id },
      { ...json, origin: 'http://evil.example' },
    ),
    post('getUser at //api/v1', '//api/v1/getUser', { userid: bob.id }),
    post('isValidToken, valid', '/api/v1/isValidToken', { userid: alice.id, tokenContent: alice.token }),
    post('isValidToken by username, invalid', '/api/v1/isValidToken', {
      username: 'bob',
      tokenContent: 'nope',
    }),
    post('isValidToken, unknown user', '/api/v1/isValidToken', { userid: 'user_x', tokenContent: 'nope' }),
    { name: 'GET getUser by name', method: 'GET', path: '/api/v1/getUser?username=alice' },
    { name: 'GET getUser, repeated key', method: 'GET', path: '/api/v1/getUser?username=alice&username=bob' },
    { name: 'GET getUser, nobody', method: 'GET', path: '/api/v1/getUser?userid=user_none' },
    { name: 'doesUserExist', method: 'GET', path: `/api/v1/doesUserExist?userid=${bob.id}` },
    { name: 'doesUserExist, no id', method: 'GET', path: '/api/v1/doesUserExist' },
    { name: 'search users', method: 'GET', path: '/api/v1/search/user/ali/10/0' },
    { name: 'search users, escaped text', method: 'GET', path: '/api/v1/search/user/%61li%20/10/0' },
    { name: 'search users, malformed escape', method: 'GET', path: '/api/v1/search/user/%E0%A4%A/10/0' },
    { name: 'search users, bad paging', method: 'GET', path: '/api/v1/search/user/ali/0/x' },
    { name: 'search avatars', method: 'GET', path: '/api/v1/search/avatar/cat/5/0' },
    {
      name: 'search worlds, text too long',
      method: 'GET',
      path: `/api/v1/search/world/${'w'.repeat(101)}/5/0`,
    },
    { name: 'tag worlds', method: 'GET', path: '/api/v1/tag/world/cozy/5/1' },
    { name: 'popularity', method: 'GET', path: '/api/v1/popularity/avatar/2/10/0' },
    { name: 'popularity, bad type', method: 'GET', path: '/api/v1/popularity/world/9/10/0' },
    { name: 'search, empty segment (unknown route)', method: 'GET', path: '/api/v1/search/user//10/0' },
    {
      name: 'search, extra segment (unknown route)',
      method: 'GET',
      path: '/api/v1/search/user/bob/10/0/extra',
    },
  ];
}

describe('lean lane', () => {
  let dir: string;
  let alice: Account;
  let bob: Account;
  const answers: Record<'lean' | 'koa', Seen[]> = { lean: [], koa: [] };
  let leanAnswered = 0;

  // The same data folder answers the same probes twice: first with the lean lane on, then with every request
  // through Koa. The two must be the same on the wire, byte for byte (less the Date and connection headers).
  beforeAll(async () => {
    dir = await tempDir();
    const small = { limits: { jsonBodyBytes: 2048 }, allowedOrigins: [DASHBOARD] };
    const first = await startHost({ ...small, leanLane: true }, { dir });
    try {
      alice = await signUp(first, 'alice');
      bob = await signUp(first, 'bob');
      expectOk(
        await first.post('updateBio', {
          userid: bob.id,
          tokenContent: bob.token,
          bio: { Description: 'hi' },
        }),
      );
      const before = first.server.leanAnswered();
      for (const probe of probes(alice, bob)) answers.lean.push(await send(first.server.port, probe));
      leanAnswered = first.server.leanAnswered() - before;
    } finally {
      await first.close();
    }
    const second = await startHost({ ...small, leanLane: false }, { dir });
    try {
      for (const probe of probes(alice, bob)) answers.koa.push(await send(second.server.port, probe));
      expect(second.server.leanAnswered()).toBe(0);
    } finally {
      await second.close();
    }
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('answered the common requests itself and left the rest to Koa', () => {
    const all = probes(alice, bob).length;
    // form, chunked and oversized bodies go to Koa; so do the unknown route, the empty segment and a page of
    // another origin.
    expect(leanAnswered).toBe(all - 6);
  });

  const nobody: Account = { id: '', username: '', token: '' };
  it.each(probes(nobody, nobody).map((probe, index) => ({ index, name: probe.name })))(
    '$name: the same answer both ways',
    ({ index }) => {
      const probe = probes(alice, bob)[index]!;
      const lean = answers.lean[index]!;
      const koa = answers.koa[index]!;
      expect(lean.status, probe.name).toBe(200);
      expect(JSON.parse(lean.body), probe.name).toEqual(JSON.parse(koa.body));
      expect(lean.body, probe.name).toBe(koa.body);
      const withoutId = (headers: Record<string, string>): Record<string, string> => {
        const { 'x-request-id': id, ...rest } = headers;
        expect(id, probe.name).toMatch(/^[A-Za-z0-9._-]{1,64}$/);
        return rest;
      };
      expect(withoutId(lean.headers), probe.name).toEqual(withoutId(koa.headers));
      if (!probe.headers?.['x-request-id']) expect(lean.headers['x-request-id']).toBe('probe-1');
    },
  );

  it('gives the answers the protocol asks for', () => {
    const byName = (name: string): Record<string, unknown> => {
      const index = probes(alice, bob).findIndex((probe) => probe.name === name);
      return JSON.parse(answers.lean[index]!.body) as Record<string, unknown>;
    };
    expect(byName('getUser, own token: private view')).toMatchObject({
      success: true,
      message: 'Got user alice',
      result: { UserData: { Id: alice.id, AccountTokens: [{ content: alice.token }] } },
    });
    expect(JSON.stringify(byName('getUser, no token: censored view'))).not.toContain('AccountTokens');
    expect(byName('getUser, malformed JSON')).toMatchObject({
      success: false,
      result: { error: { code: 'INVALID_JSON' } },
    });
    expect(byName('getUser, __proto__ key')).toMatchObject({
      success: false,
      result: { error: { code: 'INVALID_JSON' } },
    });
    expect(byName('getUser, body over the limit (Koa refuses it)')).toMatchObject({
      result: { error: { code: 'BODY_TOO_LARGE' } },
    });
    expect(byName('getUser, leading BOM')).toMatchObject({ success: true, message: 'Got user bob' });
    expect(byName('getUser from an allowed page')).toMatchObject({ success: true, message: 'Got user bob' });
    expect(byName('getUser at //api/v1')).toMatchObject({ success: true, message: 'Got user bob' });
    expect(byName('getUser from a page of another origin (Koa refuses it)')).toMatchObject({
      success: false,
      result: { error: { code: 'ORIGIN_NOT_ALLOWED' } },
    });
    expect(byName('search users, escaped text')).toMatchObject({
      success: true,
      result: { Candidates: [alice.id] },
    });
    expect(byName('search users, bad paging')).toMatchObject({
      result: {
        error: {
          code: 'INVALID_PARAMETERS',
          fields: { itemsPerPage: expect.any(String), page: expect.any(String) },
        },
      },
    });
  });
});
