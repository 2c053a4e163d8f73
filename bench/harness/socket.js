// The socket driver: ws clients that sign in over the Hypernex socket protocol ({userId, tokenContent, message,
// args}; first message auth, answered `authenticated`) or as game servers (serverTokenContent, `sendauth`).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { BenchError } from './host.js';
import { problems, summary } from './stats.js';

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

  /** Waits until no socket got a frame for `ms` (a presence storm is over), `limitMs` at most. */
  driver.quiet = async (ms = 500, limitMs = 120_000) => {
    const started = performance.now();
    while (performance.now() - driver.lastMessageAt < ms && performance.now() - started < limitMs)
      await sleep(50);
  };

  driver.closeAll = () => {
    driver.closing = true;
    for (const ws of driver.sockets) ws.terminate();
    driver.sockets.clear();
  };
  return driver;
}

/**
 * Keeps `window` requests in flight among the friends' sockets for `ms`. A request is in flight from its send
 * until the target gets gotinviterequest (one per sender-target pair at most) and, on the host, until the sender
 * gets its durable answer. Stragglers get 10 s (answers 30 s), then count as lost. `t.sender()`, when given,
 * chooses the sender (by default any friend); `t.pick(s)` the target of sender `s` (by default any other).
 */
export function inviteRun(t, window, ms) {
  const n = t.ids.length;
  const r = { inFlight: new Map(), acks: new Map(), ackOut: 0, inWindow: 0, lat: [], ackLat: [] };
  const deadline = performance.now() + ms;
  let sending = true;
  let done;
  const finished = new Promise((resolveRun) => (done = resolveRun));
  const pump = () => {
    while (sending && r.inFlight.size < window) {
      const s = t.sender ? t.sender() : Math.floor(Math.random() * n);
      const to = t.pick ? t.pick(s) : (s + 1 + Math.floor(Math.random() * (n - 1))) % n;
      if (r.inFlight.has(s * n + to)) continue;
      r.inFlight.set(s * n + to, performance.now());
      if (!t.relay) r.acks.set(s * n + to, [...(r.acks.get(s * n + to) ?? []), performance.now()]);
      if (!t.relay) r.ackOut++;
      t.sockets[s].send(t.payload(s, to));
    }
    if (!sending && r.inFlight.size === 0 && r.ackOut === 0) done();
  };
  t.run = {
    delivered(key) {
      const sentAt = r.inFlight.get(key);
      if (sentAt === undefined) return t.errors.add('a gotinviterequest nobody was waiting for');
      r.inFlight.delete(key);
      r.lat.push(performance.now() - sentAt);
      if (performance.now() <= deadline) r.inWindow++;
      pump();
    },
    answered(key, ok, reason) {
      const sentAt = r.acks.get(key)?.shift();
      if (sentAt === undefined) return t.errors.add('an answer for no request in flight');
      r.ackOut--;
      if (ok) r.ackLat.push(performance.now() - sentAt);
      else {
        t.errors.add(`failedtorequestinvite ${reason}`);
        r.inFlight.delete(key);
      }
      pump();
    },
  };
  const stop = () => {
    sending = false;
    pump();
  };
  const timers = [setTimeout(stop, ms), setTimeout(() => r.inFlight.size > 0 && done(), ms + 10_000)];
  timers.push(setTimeout(done, ms + 30_000));
  pump();
  return finished.then(() => {
    timers.forEach(clearTimeout);
    t.run = null;
    if (r.inFlight.size) t.errors.add(`${r.inFlight.size} requests never delivered`);
    if (r.ackOut) t.errors.add(`${r.ackOut} sentinviterequest answers missing`);
    return {
      perSecond: r.inWindow / (ms / 1000),
      inWindow: r.inWindow,
      lat: summary(r.lat),
      ack: summary(r.ackLat),
    };
  });
}

/**
 * The invite load of socket and cluster: the friends' sockets (friend i on `url(i)`) connect, settle for `settleMs`
 * and run inviteRun with ctx.options.window in flight, first for --warmup, then for --seconds. `cpu()` starts the
 * CPU windows of the measured run and resolves with the function ending them. `relay`: the friends talk to a bare
 * relay (no sign-in, gotinviterequest sent as it is); `sender` and `pick` as in inviteRun; `by` names what closes
 * sockets.
 */
export async function inviteLoad(ctx, friends, how) {
  const { url, cpu, relay = false, sender, pick, settleMs = 500, by } = how;
  const o = ctx.options;
  const ids = friends.map((u) => u.id);
  const n = ids.length;
  const index = new Map(ids.map((id, i) => [id, i]));
  const driver = socketDriver();
  const t = { ids, relay, sender, pick, run: null, errors: problems(), friendStatus: 0 };
  t.payload = relay
    ? (s, to) => `{"to":"${ids[to]}","message":"gotinviterequest","result":{"fromUserId":"${ids[s]}"}}`
    : (s, to) => `{"userId":"${ids[s]}","message":"RequestInvite","args":{"targetUserId":"${ids[to]}"}}`;
  const onMessage = (i) => (data) => {
    if (messageName(data) === 'friendstatus') return t.friendStatus++;
    const { message: name, result } = JSON.parse(data.toString('utf8'));
    const ok = name === 'sentinviterequest';
    if (name === 'gotinviterequest') t.run?.delivered(index.get(result.fromUserId) * n + i);
    else if (ok || name === 'failedtorequestinvite')
      t.run?.answered(i * n + index.get(result.targetUserId), ok, result.reason);
    else t.errors.add(`unexpected ${name}`);
  };
  const options = (u, i) => ({ url: url(i), auth: !relay && userAuth(u), onMessage: onMessage(i) });
  const opened = await ctx.guard(driver.openAll(url(0), friends, options));
  t.sockets = opened.sockets;
  await driver.quiet(settleMs);
  if (o.warmup > 0) await ctx.guard(inviteRun(t, o.window, o.warmup * 1000));
  const end = await cpu();
  const running = inviteRun(t, o.window, o.seconds * 1000);
  await sleep(o.seconds * 1000); // CPU over the sending window only
  const cpuUsed = await end();
  const run = await ctx.guard(running);
  if (driver.dropped) t.errors.add(`${driver.dropped} sockets closed by ${by}`);
  driver.closeAll();
  return { ...run, cpu: cpuUsed, connectMs: opened.ms, friendStatus: t.friendStatus, errors: t.errors };
}
