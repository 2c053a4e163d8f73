import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisLimits } from '../../server/cluster/redis-limits.js';
import { memoryLimits } from '../../server/services/limits.js';
import { manualClock } from './helpers.js';

/** The Redis the tests use: HYPERNEX_TEST_REDIS_URL, by default the one .ci/run starts on loopback. */
const TEST_REDIS_URL = process.env.HYPERNEX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const clients: Redis[] = [];
let prefix = '';

/** A connection of its own (as each host process holds one); fails with what to do when Redis is not there. */
async function connectRedis(): Promise<Redis> {
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw new Error(
      `Redis is not reachable at ${TEST_REDIS_URL} (${(error as Error).message}). npm test starts a throwaway ` +
        "redis-server of its own (test/global-setup.ts, which needs Debian's redis-server: apt-get install -y " +
        'redis-server); HYPERNEX_TEST_REDIS_URL, when set, must name a Redis that answers.',
    );
  }
  clients.push(redis);
  return redis;
}

let admin: Redis;

beforeAll(async () => {
  admin = await connectRedis();
});

afterEach(async () => {
  const keys = await admin.keys(`${prefix}*`);
  if (keys.length > 0) await admin.del(...keys);
});

afterAll(async () => {
  for (const client of clients.splice(0)) await client.quit();
});

/** Two hosts' limits on one Redis (two connections, one prefix), under a prefix of this test's own. */
async function twoHosts(clock = manualClock()) {
  prefix = `hnx-test-${randomBytes(6).toString('hex')}:`;
  const a = redisLimits(await connectRedis(), prefix, clock);
  const b = redisLimits(await connectRedis(), prefix, clock);
  return { a, b, clock };
}

describe('redisLimits', () => {
  it('shares a cooldown between two hosts on one Redis, per key', async () => {
    const { a, b } = await twoHosts();
    const first = await a.cooldowns.start('user_a|user_b', 30_000);
    expect(first.started).toBe(true);
    const second = await b.cooldowns.start('user_a|user_b', 30_000);
    expect(second.started).toBe(false);
    if (second.started) return;
    expect(second.retryAfterMs).toBeGreaterThan(0);
    expect(second.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect((await b.cooldowns.start('user_a|user_c', 30_000)).started).toBe(true);
  });

  it('counts attempts sent at once on two hosts before they are checked: exactly the limit is let through', async () => {
    const { a, b } = await twoHosts();
    const opts = { maxFailures: 3, windowSeconds: 600 };
    const [ta, tb] = [a.throttle('race', opts), b.throttle('race', opts)];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? ta : tb).attempt('1.2.3.4|alice')),
    );
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(3);
    const refused = answers.find((answer) => !answer.allowed);
    expect(refused && !refused.allowed && refused.retryAfter).toBeGreaterThan(0);
    // A success gives the key back: the next attempt is allowed again.
    const allowed = answers.find((answer) => answer.allowed);
    if (allowed?.allowed) await allowed.succeeded();
    expect((await tb.attempt('1.2.3.4|alice')).allowed).toBe(true);
  });

  it('lets cancel end only its own cooldown, not one another host started after it', async () => {
    const { a, b } = await twoHosts();
    const mine = await a.cooldowns.start('k', 60_000);
    if (!mine.started) throw new Error('the first cooldown must start');
    await mine.cancel();
    const theirs = await b.cooldowns.start('k', 60_000);
    expect(theirs.started).toBe(true);
    // A late cancel of the first one leaves the second running.
    await mine.cancel();
    expect((await a.cooldowns.start('k', 60_000)).started).toBe(false);
  });

  it('keeps every key with an expiry and never the key text in the clear', async () => {
    const { a } = await twoHosts();
    await a.cooldowns.start('10.0.0.1|alice', 5_000);
    await a.throttle('login', { maxFailures: 3, windowSeconds: 60 }).fail('10.0.0.1|alice');
    const keys = await admin.keys(`${prefix}*`);
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      expect(key).not.toContain('alice');
      expect(key).not.toContain('10.0.0.1');
      const ttl = await admin.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(key.includes('cooldown') ? 5_000 : 60_000);
    }
  });

  it('lets a cooldown that ran out start again (Redis expired its key)', async () => {
    const { a, b } = await twoHosts();
    expect((await a.cooldowns.start('k', 60_000)).started).toBe(true);
    // Redis's own expiry, brought forward instead of waited for.
    const [key] = await admin.keys(`${prefix}*`);
    await admin.pexpire(key!, 1);
    let again = await b.cooldowns.start('k', 60_000);
    for (let i = 0; i < 100 && !again.started; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      again = await b.cooldowns.start('k', 60_000);
    }
    expect(again.started).toBe(true);
  });

  it('counts failures from both hosts in one sliding window and answers retryAfter in whole seconds', async () => {
    const { a, b, clock } = await twoHosts();
    const opts = { maxFailures: 3, windowSeconds: 60 };
    const onA = a.throttle('login', opts);
    const onB = b.throttle('login', opts);
    await onA.fail('addr|alice');
    clock.advance(10);
    await onB.fail('addr|alice');
    expect(await onA.retryAfter('addr|alice')).toBe(0);
    clock.advance(10);
    await onA.fail('addr|alice');
    // Three failures within the window, the oldest 20 s ago: 40 s until it leaves.
    expect(await onB.retryAfter('addr|alice')).toBe(40);
    expect(await onA.retryAfter('addr|bob')).toBe(0);
    clock.advance(39.5);
    expect(await onA.retryAfter('addr|alice')).toBe(1);
    clock.advance(0.5);
    expect(await onB.retryAfter('addr|alice')).toBe(0);
    await onB.fail('addr|alice');
    expect(await onA.retryAfter('addr|alice')).toBe(10);
    await onB.succeed('addr|alice');
    expect(await onA.retryAfter('addr|alice')).toBe(0);
    expect(await admin.keys(`${prefix}*`)).toEqual([]);
  });

  it('keeps separate throttles apart by name', async () => {
    const { a, b } = await twoHosts();
    const login = a.throttle('login', { maxFailures: 1, windowSeconds: 60 });
    await login.fail('k');
    expect(await b.throttle('login', { maxFailures: 1, windowSeconds: 60 }).retryAfter('k')).toBe(60);
    expect(await b.throttle('other', { maxFailures: 1, windowSeconds: 60 }).retryAfter('k')).toBe(0);
  });

  it('answers exactly what the memory throttle answers, step by step', async () => {
    const { a, clock } = await twoHosts();
    const memory = memoryLimits(clock);
    const opts = { maxFailures: 4, windowSeconds: 30 };
    const shared = a.throttle('login', opts);
    const local = memory.throttle('login', opts);
    // Failures and waits (seconds) in an order that crosses the window's edge and overfills it.
    const steps: Array<'fail' | number> = [
      'fail',
      3,
      'fail',
      'fail',
      0.25,
      'fail',
      'fail',
      'fail',
      7,
      'fail',
      12.5,
      'fail',
      29.75,
      'fail',
      0.25,
      31,
      'fail',
      'fail',
      'fail',
      'fail',
      30,
    ];
    const seen: Array<[number, number]> = [];
    for (const step of steps) {
      if (step === 'fail') {
        await shared.fail('k');
        await local.fail('k');
      } else clock.advance(step);
      seen.push([await shared.retryAfter('k'), await local.retryAfter('k')]);
    }
    for (const [fromRedis, fromMemory] of seen) expect(fromRedis).toBe(fromMemory);
    expect(seen.some(([wait]) => wait > 0)).toBe(true);
  });
});
