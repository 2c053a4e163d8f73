// The socket driver: ws clients that sign in over the Hypernex socket protocol ({userId, tokenContent, message,
// args}; first message auth, answered `authenticated`) or as game servers (serverTokenContent, `sendauth`).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { BenchError } from './host.js';

const CONNECT_TIMEOUT_MS = 60_000;

/** The message name of a server frame ({"message":"name",...}) without parsing it. */
export function messageName(data) {
  const head = data.toString('latin1', 0, 48);
  if (!head.startsWith('{"message":"')) return '';
  const end = head.indexOf('"', 12);
  return end < 0 ? '' : head.slice(12, end);
}

export const userAuth = (user) => ({ userId: user.id, tokenContent: user.token, message: 'auth', args: {} });
/** A user's message as text (userId and tokenContent first, as clients send them). */
export const userMessage = (user, message, args = {}) =>
  JSON.stringify({ userId: user.id, tokenContent: user.token, message, args });

/**
 * Sockets opened through one driver: all closed by `closeAll()`; `lastMessageAt` is the last frame any of them
 * got (for `quiet()`); a socket the server closes after sign-in counts in `dropped`.
 */
export function socketDriver() {
  const driver = { sockets: new Set(), lastMessageAt: performance.now(), dropped: 0, closing: false };

  /**
   * Opens one socket, sends `auth` (an object) once open and resolves once a frame named `until` arrives:
   * { ws, send(text or object), verifiedMs, first (that frame, parsed) }. Later frames go to onMessage(data).
   */
  driver.open = (url, { auth, until = 'authenticated', onMessage }) =>
    new Promise((resolveOpen, reject) => {
      const started = performance.now();
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
      });
      driver.sockets.add(ws);
      let verified = false;
      const fail = (error) => {
        if (verified) return;
        verified = true;
        clearTimeout(timer);
        ws.terminate();
        reject(error);
      };
      const timer = setTimeout(() => fail(new BenchError(`no ${until} in time`)), CONNECT_TIMEOUT_MS);
      const socket = {
        ws,
        send: (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
        close() {
          socket.up = false;
          ws.close();
        },
      };
      ws.on('open', () => auth && socket.send(auth));
      ws.on('message', (data) => {
        driver.lastMessageAt = performance.now();
        if (verified) return onMessage?.(data);
        const name = messageName(data);
        if (name === until) {
          verified = true;
          clearTimeout(timer);
          socket.up = true;
          socket.verifiedMs = performance.now() - started;
          socket.first = JSON.parse(data.toString('utf8'));
          resolveOpen(socket);
        } else if (name !== 'friendstatus')
          fail(new BenchError(`answer to auth: ${data.toString().slice(0, 200)}`));
      });
      ws.on('error', (error) => fail(error));
      ws.on('close', (code) => {
        fail(new BenchError(`closed before ${until} (code ${code})`));
        if (socket.up && !driver.closing) driver.dropped++;
      });
    });

  /** Opens one socket per item (`options(item, index)` gives open's options, `url` too), `concurrency` at once. */
  driver.openAll = async (url, items, options, concurrency = 100) => {
    const started = performance.now();
    const sockets = new Array(items.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, items.length) }, async () => {
        while (next < items.length) {
          const i = next++;
          const o = options(items[i], i);
          sockets[i] = await driver.open(o.url ?? url, o);
        }
      }),
    );
    return { sockets, ms: performance.now() - started };
  };

  /** Waits until no socket got a frame for `ms` (a presence storm is over); resolves with the time waited. */
  driver.quiet = async (ms = 500, limitMs = 120_000) => {
    const started = performance.now();
    while (performance.now() - driver.lastMessageAt < ms && performance.now() - started < limitMs)
      await sleep(50);
    return performance.now() - started;
  };

  driver.closeAll = () => {
    driver.closing = true;
    for (const ws of driver.sockets) ws.terminate();
    driver.sockets.clear();
  };
  return driver;
}
