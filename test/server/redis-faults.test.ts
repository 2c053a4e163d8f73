import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterLink,
  ClusterSendError,
  RedisUnreachableError,
  type ForwardedInstanceMessage,
  type LocalSockets,
} from '../../server/cluster/link.js';
import { redisLimits } from '../../server/cluster/redis-limits.js';
import { ConfigError, resolveConfig } from '../../server/config.js';
import type { Clock } from '../../server/services/context.js';
import { freePort, requireRedisServer, ThrowawayRedis } from './redis-instance.js';

/**
 * The Redis side of the cluster when Redis is hung (SIGSTOP), killed, or restarted on the same port. Each test
 * file run starts its own throwaway redis-server on a free loopback port (never the shared one on 6379), and links
 * two ClusterLinks to it as two host processes would.
 */

const TIMEOUTS = { heartbeatMs: 100, presenceExpiryMs: 800, commandTimeoutMs: 300, connectTimeoutMs: 500 };
/** How long past the command timeout an answer may take (a loaded CI machine, the event loop). */
const SLACK_MS = 700;
const BOUND_MS = TIMEOUTS.commandTimeoutMs + SLACK_MS;

/** Failure times for the limits: fixed (these tests are about Redis, not windows). */
const fixedClock: Clock = { now: () => Date.UTC(2026, 10, 22, 12, 0, 0) };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let redis: ThrowawayRedis;
let dir = '';
const links: ClusterLink[] = [];
/** Every unhandled rejection or uncaught exception while a test ran: there must be none. */
const escaped: unknown[] = [];
const onEscape = (error: unknown) => escaped.push(error);
const killAtExit = () => void redis?.kill();

beforeAll(async () => {
  requireRedisServer();
  process.on('unhandledRejection', onEscape);
  process.on('uncaughtException', onEscape);
  process.once('exit', killAtExit);
  dir = await mkdtemp(join(tmpdir(), 'hnx-redis-faults-'));
  redis = new ThrowawayRedis(await freePort(), dir);
  await redis.start();
});

afterEach(async () => {
  // A rejection nobody handles is reported on a later turn of the event loop.
  await sleep(50);
  await redis.heal();
  for (const link of links.splice(0)) await link.close();
  expect(escaped.splice(0)).toEqual([]);
});

afterAll(async () => {
  process.off('unhandledRejection', onEscape);
  process.off('uncaughtException', onEscape);
  process.off('exit', killAtExit);
  for (const link of links.splice(0)) await link.close();
  await redis?.kill();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
}

function recordingLogger() {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'info', base: undefined },
    { write: (line: string) => lines.push(JSON.parse(line)) },
  );
  const count = (pattern: RegExp) => lines.filter((line) => pattern.test(line.msg)).length;
  return { logger, lines, count };
}

/** This process's sockets as the link sees them: who it holds, and what reached them. */
function fakeSockets(): LocalSockets & { held: Set<string>; got: Array<{ userId: string; json: string }> } {
  const held = new Set<string>();
  const got: Array<{ userId: string; json: string }> = [];
  return {
    held,
    got,
    deliverLocal: (userId, json) => void got.push({ userId, json }),
    holdsLocally: (userId) => held.has(userId),
  };
}

/** One "host process": a link on the throwaway Redis, its sockets, its log, and who it was told went offline. */
async function hostProcess(namespace: string) {
  const log = recordingLogger();
  const link = await ClusterLink.open({ url: redis.url, namespace, ...TIMEOUTS, logger: log.logger });
  links.push(link);
  const sockets = fakeSockets();
  link.attach(sockets);
  const offline: Array<[string, boolean]> = [];
  link.onRemoteOffline((userId, told) => offline.push([userId, told]));
  const forwarded: ForwardedInstanceMessage[] = [];
  link.onForwarded((message) => forwarded.push(message));
  return { link, log, sockets, offline, forwarded };
}

async function twoProcesses() {
  const namespace = `hx-faults-${randomBytes(6).toString('hex')}`;
  return { a: await hostProcess(namespace), b: await hostProcess(namespace) };
}

/** How long `promise` took to settle, and how. */
async function timed<T>(
  promise: Promise<T>,
): Promise<{ ms: number } & ({ ok: true; value: T } | { ok: false; error: unknown })> {
  const started = performance.now();
  try {
    const value = await promise;
    return { ms: performance.now() - started, ok: true, value };
  } catch (error) {
    return { ms: performance.now() - started, ok: false, error };
  }
}

/** Runs `call` and checks it answered within the bound; resolves with its answer. */
async function withinBound<T>(call: Promise<T>): Promise<T> {
  const result = await timed(call);
  expect(result.ms).toBeLessThan(BOUND_MS);
  if (!result.ok) throw result.error;
  return result.value;
}

const FALLBACK = /kept in this host’s memory/;
const BACK = /answers again/;

describe('shared limits while Redis fails', () => {
  async function limitsOnLink() {
    const a = await hostProcess(`hx-faults-${randomBytes(6).toString('hex')}`);
    const log = recordingLogger();
    const prefix = `hx-faults-${randomBytes(6).toString('hex')}:limits:`;
    const limits = redisLimits(a.link.redis, prefix, fixedClock, { logger: log.logger, retryMs: 100 });
    return { limits, log, prefix, link: a.link };
  }

  it('answers from this host’s memory within the command timeout while Redis is stopped, and from Redis once it resumes', async () => {
    const { limits, log } = await limitsOnLink();
    const login = limits.throttle('login', { maxFailures: 2, windowSeconds: 60 });
    await login.fail('addr|alice');
    await login.fail('addr|alice');
    expect(await login.retryAfter('addr|alice')).toBe(60);
    expect((await limits.cooldowns.start('alice|bob', 60_000)).started).toBe(true);

    redis.pause();
    // Every call answers within the bound: the first waits out the command timeout, the others do not wait.
    expect(await withinBound(login.retryAfter('addr|carol'))).toBe(0);
    await withinBound(login.fail('addr|carol'));
    await withinBound(login.fail('addr|carol'));
    // The memory throttle counts on its own: two failures are the limit.
    expect(await withinBound(login.retryAfter('addr|carol'))).toBe(60);
    expect((await withinBound(limits.cooldowns.start('carol|dave', 60_000))).started).toBe(true);
    expect((await withinBound(limits.cooldowns.start('carol|dave', 60_000))).started).toBe(false);
    await withinBound(login.succeed('addr|carol'));
    expect(await withinBound(login.retryAfter('addr|carol'))).toBe(0);
    await sleep(300);
    expect(log.count(FALLBACK)).toBe(1);
    expect(log.count(BACK)).toBe(0);

    redis.resume();
    // The next calls find Redis again (a background PING): what it counted before the stop is still there.
    await expect
      .poll(async () => (await login.retryAfter('addr|alice')) === 60 && log.count(BACK) === 1, {
        timeout: 5000,
        interval: 50,
      })
      .toBe(true);
    expect((await limits.cooldowns.start('alice|bob', 60_000)).started).toBe(false);
    expect(log.count(FALLBACK)).toBe(1);
    expect(log.count(BACK)).toBe(1);
  });

  it('keeps answering from memory while Redis is killed, and goes back to Redis when it restarts on the same port', async () => {
    const { limits, log, prefix, link } = await limitsOnLink();
    const login = limits.throttle('login', { maxFailures: 1, windowSeconds: 30 });
    expect(await login.retryAfter('k')).toBe(0);

    await redis.kill();
    for (let i = 0; i < 5; i++) {
      expect(await withinBound(login.retryAfter(`addr|${i}`))).toBe(0);
      await withinBound(login.fail(`addr|${i}`));
      expect(await withinBound(login.retryAfter(`addr|${i}`))).toBe(30);
      const started = await withinBound(limits.cooldowns.start(`key-${i}`, 1000));
      expect(started.started).toBe(true);
      if (started.started) await withinBound(started.cancel());
    }
    expect(log.count(FALLBACK)).toBe(1);

    await redis.start();
    // Calls bring the limits back to Redis once it answers (the restarted one has no keys and no scripts).
    await expect
      .poll(
        async () => {
          await limits.cooldowns.start('after-restart', 60_000);
          return log.count(BACK);
        },
        { timeout: 8000, interval: 100 },
      )
      .toBe(1);
    await expect
      .poll(async () => (await link.redis.keys(`${prefix}*`)).length, { timeout: 2000 })
      .toBeGreaterThan(0);
    expect(log.count(FALLBACK)).toBe(1);
  });
});

describe('presence while Redis is away', () => {
  /** Waits until each process sees the other's user, and hears itself. */
  async function connected(a: ClusterLink, b: ClusterLink, aUser: string, bUser: string): Promise<void> {
    await expect
      .poll(() => a.heldElsewhere(bUser) && b.heldElsewhere(aUser), { timeout: 5000, interval: 20 })
      .toBe(true);
    // And until each heard its own heartbeats come back (the link's proof that the channel works).
    await sleep(3 * TIMEOUTS.heartbeatMs);
  }

  it('does not take the other process for dead while Redis is stopped, but does once it is really gone', async () => {
    const { a, b } = await twoProcesses();
    a.link.announceOnline('u1');
    b.link.announceOnline('w1');
    await connected(a.link, b.link, 'u1', 'w1');

    redis.pause();
    await sleep(2 * TIMEOUTS.presenceExpiryMs);
    expect(b.link.heldElsewhere('u1')).toBe(true);
    expect(a.link.heldElsewhere('w1')).toBe(true);
    redis.resume();
    // After the stop each gets a full expiry to be heard again, and is.
    await sleep(2 * TIMEOUTS.presenceExpiryMs);
    expect(b.link.heldElsewhere('u1')).toBe(true);
    expect(a.link.heldElsewhere('w1')).toBe(true);
    expect(a.offline).toEqual([]);
    expect(b.offline).toEqual([]);
    expect(b.log.count(/cannot hear the other hosts/)).toBeGreaterThanOrEqual(1);
    expect(b.log.count(/hearing the other hosts through Redis again/)).toBeGreaterThanOrEqual(1);

    // A dies without a word (its connections cut): B, which hears itself, drops A's users after the expiry.
    a.link.redis.disconnect();
    a.link.subscriber.disconnect();
    await expect.poll(() => b.offline, { timeout: 5000, interval: 20 }).toEqual([['u1', true]]);
    expect(b.link.heldElsewhere('u1')).toBe(false);
  });

  for (const first of ['subscriber', 'publisher'] as const) {
    it(`rebuilds presence after Redis is killed and restarted, B's ${first} connection reconnecting first`, async () => {
      const { a, b } = await twoProcesses();
      a.link.announceOnline('u1');
      b.link.announceOnline('w1');
      await connected(a.link, b.link, 'u1', 'w1');
      const [early, late] =
        first === 'subscriber' ? [b.link.subscriber, b.link.redis] : [b.link.redis, b.link.subscriber];
      // A and B's early connection try again as the link has them; B's late one waits for the test (connect()).
      late.options.retryStrategy = () => 60_000;
      const order: string[] = [];
      b.link.redis.on('ready', () => order.push('publisher'));
      b.link.subscriber.on('ready', () => order.push('subscriber'));

      await redis.kill();
      // Changes nobody can hear: U1 leaves A and U2 arrives; W1 leaves B and W2 arrives.
      a.link.announceOffline('u1');
      a.link.announceOnline('u2');
      b.link.announceOffline('w1');
      b.link.announceOnline('w2');
      await sleep(2 * TIMEOUTS.presenceExpiryMs);
      // Longer than the expiry without Redis, and still nobody is taken for dead.
      expect(b.link.heldElsewhere('u1')).toBe(true);
      expect(a.link.heldElsewhere('w1')).toBe(true);
      expect(a.offline).toEqual([]);
      expect(b.offline).toEqual([]);

      await redis.start();
      await expect
        .poll(() => [a.link.redis.status, a.link.subscriber.status, early.status], {
          timeout: 5000,
          interval: 20,
        })
        .toEqual(['ready', 'ready', 'ready']);
      // B half connected for a few heartbeats: what it asks or says then is lost (subscriber first: B hears A's
      // heartbeat with a new number and asks for a snapshot it cannot send), and that must not stick.
      await sleep(4 * TIMEOUTS.heartbeatMs);
      late.options.retryStrategy = (times) => Math.min(times * 200, 2000);
      await late.connect();
      expect(order).toEqual([first, first === 'subscriber' ? 'publisher' : 'subscriber']);

      const whole = () =>
        b.link.heldElsewhere('u2') &&
        !b.link.heldElsewhere('u1') &&
        a.link.heldElsewhere('w2') &&
        !a.link.heldElsewhere('w1');
      await expect.poll(whole, { timeout: 5000, interval: 20 }).toBe(true);
      // Each user went offline through the other's snapshot; nobody was dropped wholesale.
      expect(b.offline).toEqual([['u1', true]]);
      expect(a.offline).toEqual([['w1', true]]);
      // And it stays right: heartbeats match, nobody expires.
      await sleep(2 * TIMEOUTS.presenceExpiryMs);
      expect(whole()).toBe(true);
    });
  }
});

describe('messages for another process while Redis fails', () => {
  it('delivers and forwards when Redis works, and rejects within the command timeout while it is stopped or killed', async () => {
    const { a, b } = await twoProcesses();
    b.sockets.held.add('u1');
    b.link.announceOnline('u1');
    await expect.poll(() => a.link.heldElsewhere('u1'), { timeout: 5000, interval: 20 }).toBe(true);
    const join: ForwardedInstanceMessage = { op: 'join', userId: 'u1', args: { instanceId: 'i1' } };

    await a.link.deliverConfirmed(['u1'], () => '{"hello":1}');
    await a.link.forwardConfirmed(b.link.processId, join);
    await expect
      .poll(() => b.sockets.got, { timeout: 2000, interval: 20 })
      .toEqual([{ userId: 'u1', json: '{"hello":1}' }]);
    await expect.poll(() => b.forwarded, { timeout: 2000, interval: 20 }).toEqual([join]);

    redis.pause();
    for (const send of [
      () => a.link.deliverConfirmed(['u1'], () => '{"hello":2}'),
      () => a.link.forwardConfirmed(b.link.processId, join),
    ]) {
      const result = await timed(send());
      expect(result.ok).toBe(false);
      expect(result.ms).toBeLessThan(BOUND_MS);
      if (result.ok) continue;
      expect(result.error).toBeInstanceOf(ClusterSendError);
      expect((result.error as Error).message).toMatch(/did not answer within 300 ms/);
    }
    // The fire-and-forget forms neither throw nor leave a rejection behind.
    a.link.deliver(['u1'], () => '{"hello":3}');
    a.link.forward(b.link.processId, join);
    // A message for nobody needs no Redis.
    await withinBound(a.link.deliverConfirmed(['nobody'], () => '{}'));
    redis.resume();

    await redis.kill();
    const result = await timed(a.link.deliverConfirmed(['u1'], () => '{"hello":4}'));
    expect(result.ok).toBe(false);
    expect(result.ms).toBeLessThan(BOUND_MS);
    if (!result.ok) {
      expect(result.error).toBeInstanceOf(ClusterSendError);
      expect((result.error as Error).message).toMatch(/did not answer|connection to Redis is down/);
    }
  });

  it('ignores what is no message of a host on its channels (null, a number, an array) and goes on', async () => {
    const { a, b } = await twoProcesses();
    b.sockets.held.add('u1');
    b.link.announceOnline('u1');
    await expect.poll(() => a.link.heldElsewhere('u1'), { timeout: 5000, interval: 20 }).toBe(true);
    // Whoever may write to Redis could send these; thrown in ioredis's message event, one would end the process.
    for (const text of ['null', '42', '"text"', '[]', '{"t":"deliver"}'])
      await a.link.redis.publish(`${b.link.keyPrefix}all`, text);
    await a.link.deliverConfirmed(['u1'], () => '{"after":1}');
    await expect
      .poll(() => b.sockets.got, { timeout: 2000, interval: 20 })
      .toEqual([{ userId: 'u1', json: '{"after":1}' }]);
  });

  it('rejects a message for a process that does not listen (it stopped)', async () => {
    const { a } = await twoProcesses();
    const result = await timed(a.link.forwardConfirmed('gone', { op: 'leave', userId: 'u1', args: {} }));
    expect(result.ok).toBe(false);
    if (!result.ok) expect((result.error as Error).message).toMatch(/no host process listens for it/);
  });

  it('closes within the bound while Redis is stopped', async () => {
    const { a } = await twoProcesses();
    redis.pause();
    await withinBound(a.link.close());
  });

  it('refuses to open within the bound against a stopped Redis, naming it', async () => {
    redis.pause();
    const started = performance.now();
    await expect(
      ClusterLink.open({
        url: redis.url,
        namespace: 'hx-faults-open',
        ...TIMEOUTS,
        logger: pino({ level: 'silent' }),
      }),
    ).rejects.toThrow(RedisUnreachableError);
    expect(performance.now() - started).toBeLessThan(
      TIMEOUTS.connectTimeoutMs + 2 * TIMEOUTS.commandTimeoutMs + SLACK_MS,
    );
  });
});

describe('the cluster timeouts in the configuration', () => {
  it('default to a 1 s command timeout and a 2 s connect timeout, and take other values', () => {
    expect(resolveConfig().cluster).toMatchObject({ commandTimeoutMs: 1000, connectTimeoutMs: 2000 });
    expect(resolveConfig({ cluster: { commandTimeoutMs: 50 } }).cluster).toMatchObject({
      commandTimeoutMs: 50,
      connectTimeoutMs: 2000,
      heartbeatMs: 2000,
    });
  });

  it('refuses a timeout that is not a number, naming the key', () => {
    expect(() => resolveConfig({ cluster: { commandTimeoutMs: '1s' as unknown as number } })).toThrow(
      ConfigError,
    );
    expect(() => resolveConfig({ cluster: { commandTimeoutMs: '1s' as unknown as number } })).toThrow(
      /cluster\.commandTimeoutMs/,
    );
  });
});
