import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { expectOk, signUp, startHost, type TestHost } from './helpers.js';

let host: TestHost | null = null;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await host?.server.close();
  host = null;
});

/** A raw TCP connection to the host from `localAddress`; resolves once connected. */
function open(url: string, localAddress = '127.0.0.1'): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress }, () => resolve(socket));
    socket.once('error', reject);
    sockets.push(socket);
  });
}

/** Resolves with true once `socket` is closed by the other side, false if it still is open after `waitMs`. */
function closedWithin(socket: Socket, waitMs: number): Promise<boolean> {
  if (socket.destroyed || socket.readableEnded) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), waitMs);
    const done = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    socket.once('close', done);
    socket.once('end', done);
    socket.resume();
  });
}

describe('connection limits', () => {
  it('closes connections past limits.connectionsPerAddress from one address, and serves other addresses', async () => {
    host = await startHost({ limits: { connectionsPerAddress: 4 } });
    const held: Socket[] = [];
    for (let i = 0; i < 4; i++) held.push(await open(host.server.url, '127.0.0.2'));
    const extra = await open(host.server.url, '127.0.0.2');
    expect(await closedWithin(extra, 5000)).toBe(true);
    for (const socket of held) expect(socket.destroyed).toBe(false);

    // Another address, and the same one once it let go of a connection, are served.
    const account = await signUp(host, 'alice');
    expectOk(await host.get(`getUser?userid=${account.id}`));
    held[0]!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const again = await open(host.server.url, '127.0.0.2');
    again.write(`GET /api/v1/getUser?userid=${account.id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      again.on('data', (chunk: Buffer) => (text += chunk.toString()));
      again.once('close', () => resolve(text));
    });
    expect(answer).toContain('"success":true');
  });

  it('closes the connection of a JSON body that stops arriving (limits.bodyIdleSeconds), on every route', async () => {
    host = await startHost({ limits: { bodyIdleSeconds: 1 } });
    const account = await signUp(host, 'alice');
    const stalled: Socket[] = [];
    // login, getUser (POST) and an unknown route: every request goes through the same Koa chain.
    for (const path of ['login', 'getUser', 'nosuchroute']) {
      const socket = await open(host.server.url);
      socket.write(
        `POST /api/v1/${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user`,
      );
      stalled.push(socket);
    }
    const closed = await Promise.all(stalled.map((socket) => closedWithin(socket, 8000)));
    expect(closed).toEqual([true, true, true]);
    // A whole body is answered as usual, however long the handler takes after it.
    expectOk(await host.post('isValidToken', { userid: account.id, tokenContent: account.token }));
  });
});
