import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../../server/config.js';
import { clientAddresses } from '../../server/socket/forwarded-address.js';
import { TestSocket } from './socket-client.js';
import { expectFail, expectOk, PASSWORD, signUp, startHost, type Answer, type TestHost } from './helpers.js';

/** The proxy (nginx) in front of the host, and another machine that talks to the host directly. */
const PROXY = '127.0.0.2';
const STRANGER = '127.0.0.3';

let host: TestHost | null = null;
const sockets: Socket[] = [];
const closers: Array<{ close(): void }> = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const closer of closers.splice(0)) closer.close();
  await host?.close();
  host = null;
});

/** A JSON POST from the machine `from`, with `headers` (X-Forwarded-For as a proxy or a spoofer sends it). */
function postFrom(
  target: TestHost,
  path: string,
  body: unknown,
  from: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const url = new URL(`${target.server.url}/api/v1/${path}`);
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        method: 'POST',
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        localAddress: from,
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Answer));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const login = (username: string, password: string) => ({ username, password });

/** A raw TCP connection to the host from `localAddress`; resolves once connected. */
function open(url: string, localAddress: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress }, () => resolve(socket));
    socket.once('error', reject);
    sockets.push(socket);
  });
}

/** Sends one keep-alive GET on `socket` and resolves with the answer, or with what came before the host closed it. */
function ask(socket: Socket, path: string): Promise<string> {
  if (socket.destroyed || socket.readableEnded) return Promise.resolve('');
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      if (text.includes('\r\n\r\n') && text.trimEnd().endsWith('}')) done();
    };
    const done = (): void => {
      socket.off('data', onData);
      socket.off('close', done);
      socket.off('end', done);
      resolve(text);
    };
    socket.on('data', onData);
    socket.once('close', done);
    socket.once('end', done);
    socket.write(`GET /api/v1/${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
}

describe('trusted proxies', () => {
  it('keys the login throttle by the forwarded address when the peer is a trusted proxy', async () => {
    host = await startHost({ trustedProxies: [PROXY], limits: { loginFailures: 2 } });
    await signUp(host, 'alice');
    const via = (client: string) => ({ 'x-forwarded-for': client });
    for (let i = 0; i < 2; i++) {
      expectFail(
        await postFrom(host, 'login', login('alice', 'wrong!'), PROXY, via('10.0.0.1')),
        'INCORRECT_CREDENTIALS',
      );
    }
    expectFail(
      await postFrom(host, 'login', login('alice', PASSWORD), PROXY, via('10.0.0.1')),
      'RATE_LIMITED',
    );
    // Another user behind the same proxy is another address: not paused by the guesser's failures.
    expectOk(await postFrom(host, 'login', login('alice', PASSWORD), PROXY, via('10.0.0.2')));
    // What the client itself wrote into the header (left of what the proxy added) gives it a new address.
    expectFail(
      await postFrom(host, 'login', login('alice', PASSWORD), PROXY, via('10.0.0.77, 10.0.0.1')),
      'RATE_LIMITED',
    );
  });

  it('ignores a spoofed X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    host = await startHost({ trustedProxies: [PROXY], limits: { loginFailures: 2 } });
    await signUp(host, 'alice');
    for (let i = 0; i < 2; i++) {
      const spoofed = { 'x-forwarded-for': `10.0.0.${i + 1}` };
      expectFail(
        await postFrom(host, 'login', login('alice', 'wrong!'), STRANGER, spoofed),
        'INCORRECT_CREDENTIALS',
      );
    }
    expectFail(
      await postFrom(host, 'login', login('alice', PASSWORD), STRANGER, { 'x-forwarded-for': '10.0.0.9' }),
      'RATE_LIMITED',
    );
    // The proxy's own clients are someone else.
    expectOk(
      await postFrom(host, 'login', login('alice', PASSWORD), PROXY, { 'x-forwarded-for': '10.0.0.50' }),
    );
  });

  it('does not apply the per-address connection cap to a trusted proxy, and still does to others', async () => {
    host = await startHost({ trustedProxies: [PROXY], limits: { connectionsPerAddress: 2 } });
    const account = await signUp(host, 'alice');
    const held: Socket[] = [];
    for (let i = 0; i < 5; i++) held.push(await open(host.server.url, PROXY));
    const answers = await Promise.all(held.map((socket) => ask(socket, `getUser?userid=${account.id}`)));
    for (const answer of answers) expect(answer).toContain('"success":true');

    const direct: Socket[] = [];
    for (let i = 0; i < 2; i++) direct.push(await open(host.server.url, STRANGER));
    const extra = await open(host.server.url, STRANGER);
    expect(await ask(extra, `getUser?userid=${account.id}`)).toBe('');
    for (const socket of direct)
      expect(await ask(socket, `getUser?userid=${account.id}`)).toContain('"success":true');
  });

  it('counts anonymous uploads per forwarded address behind a trusted proxy', async () => {
    host = await startHost({ trustedProxies: [PROXY], uploads: { unverifiedPerAddress: 1 } });
    // One client behind the proxy holds an anonymous upload that stalls mid-body.
    const stalled = await open(host.server.url, PROXY);
    stalled.write(
      'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n' +
        'X-Forwarded-For: 10.0.0.1\r\n\r\n{',
    );
    const anonymous = { file: { name: 'a.png', data: '' } };
    const via = (client: string) => ({ 'x-forwarded-for': client });
    // Its next one is refused, once the host has the first in hand (asked again until then, at most 50 times).
    let again = await postFrom(host, 'upload', anonymous, PROXY, via('10.0.0.1'));
    for (let i = 0; i < 50 && again.result?.error?.code !== 'RATE_LIMITED'; i++) {
      again = await postFrom(host, 'upload', anonymous, PROXY, via('10.0.0.1'));
    }
    expectFail(again, 'RATE_LIMITED');
    // Another client behind the same proxy is not: its upload is judged on its own (no credentials here).
    const other = await postFrom(host, 'upload', anonymous, PROXY, via('10.0.0.2'));
    expect(other.success).toBe(false);
    expect(other.result?.error?.code).not.toBe('RATE_LIMITED');
  });

  it("places a socket that came through the proxy at its client's address (presence, asset access)", async () => {
    host = await startHost({ trustedProxies: [PROXY] });
    const account = await signUp(host, 'alice');
    const socket = await TestSocket.open(host.server.url, {
      localAddress: PROXY,
      headers: { 'x-forwarded-for': '10.0.0.5' },
    });
    closers.push(socket);
    socket.sendJson({ userId: account.id, tokenContent: account.token, message: 'auth', args: {} });
    await socket.next('authenticated');
    const hub = host.server.core.hub;
    expect([...hub.usersAt('10.0.0.5')]).toEqual([account.id]);
    expect([...hub.usersAt(PROXY)]).toEqual([]);
  });

  it('refuses a trusted proxy that is no address or range', () => {
    expect(() => resolveConfig({ trustedProxies: ['nginx.lan'] })).toThrow(ConfigError);
    expect(() => resolveConfig({ trustedProxies: ['10.0.0.0/33'] })).toThrow(/trustedProxies/);
    expect(resolveConfig({ trustedProxies: ['10.0.0.0/8', '::1', 'fd00::/8'] }).trustedProxies).toHaveLength(
      3,
    );
  });
});

describe('clientAddresses', () => {
  const req = (peer: string, forwarded?: string) =>
    ({
      socket: { remoteAddress: peer },
      headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
    }) as unknown as import('node:http').IncomingMessage;

  it('walks a chain of trusted proxies from the right to the first address that is not one', () => {
    const addresses = clientAddresses(['10.1.0.0/16', '::1']);
    expect(addresses.of(req('::ffff:10.1.2.3', '203.0.113.9, 198.51.100.4, 10.1.9.9'))).toBe('198.51.100.4');
    expect(addresses.of(req('::1', '[2001:db8::7]:4711'))).toBe('2001:db8::7');
    expect(addresses.of(req('::1', '192.0.2.1:8080'))).toBe('192.0.2.1');
    // Only proxies in the chain, or none: the left-most proxy is the client.
    expect(addresses.of(req('10.1.0.1', '10.1.0.2'))).toBe('10.1.0.2');
    expect(addresses.of(req('10.1.0.1'))).toBe('10.1.0.1');
    // Something a proxy wrote that is no address stops the walk at that proxy.
    expect(addresses.of(req('10.1.0.1', '203.0.113.9, unknown'))).toBe('10.1.0.1');
    // Not from a proxy: the header counts for nothing.
    expect(addresses.of(req('::ffff:192.0.2.50', '10.1.0.1'))).toBe('192.0.2.50');
    expect(addresses.trusts('10.1.255.255')).toBe(true);
    expect(addresses.trusts('10.2.0.1')).toBe(false);
  });
});
