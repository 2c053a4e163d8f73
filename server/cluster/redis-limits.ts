import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../services/context.js';
import { memoryLimits, type Cooldowns, type FailureThrottle, type SharedLimits } from '../services/limits.js';
import { sha256 } from '../services/secrets.js';

/** Starts a cooldown unless one runs: -1 when it started, else the milliseconds it has left. */
const COOLDOWN_START = `
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return -1 end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then return tonumber(ARGV[2]) end
return left`;

/** Ends a cooldown only if it is still the one this token started (another may have begun since). */
const COOLDOWN_CANCEL = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * The failures of a key within the window: drops older ones, then answers the count and the time of the
 * `maxFailures`-th most recent (the one whose leaving the window allows the next attempt). ARGV: now, windowMs,
 * maxFailures (at least 1).
 */
const THROTTLE_CHECK = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local count = redis.call('ZCARD', KEYS[1])
local max = tonumber(ARGV[3])
if count < max then return {count} end
local oldest = redis.call('ZRANGE', KEYS[1], -max, -max, 'WITHSCORES')
return {count, oldest[2]}`;

/**
 * Records a failure at `now` (member made unique by ARGV[4]), keeps at most `maxFailures` of the window's
 * failures, and lets the key expire with the window. ARGV: now, windowMs, maxFailures, unique.
 */
const THROTTLE_FAIL = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[3]) + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/**
 * Counts an attempt before it is checked, atomically: drops failures past the window; when `maxFailures` are left,
 * answers the time of the one whose leaving the window allows the next attempt (refused); else records this one
 * (member made unique by ARGV[4]) and answers -1 (allowed). ARGV: now, windowMs, maxFailures (at least 1), unique.
 */
const THROTTLE_ATTEMPT = `
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) >= max then
  return redis.call('ZRANGE', KEYS[1], -max, -max, 'WITHSCORES')[2]
end
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return -1`;

/** The scripts as ioredis commands (defineCommand: EVALSHA, loading the script once when Redis lacks it). */
interface LimitCommands {
  hypernexCooldownStart(key: string, token: string, ms: number): Promise<number>;
  hypernexCooldownCancel(key: string, token: string): Promise<number>;
  hypernexThrottleCheck(
    key: string,
    now: number,
    windowMs: number,
    maxFailures: number,
  ): Promise<[number, string?]>;
  hypernexThrottleFail(
    key: string,
    now: number,
    windowMs: number,
    maxFailures: number,
    unique: string,
  ): Promise<number>;
  hypernexThrottleAttempt(
    key: string,
    now: number,
    windowMs: number,
    maxFailures: number,
    unique: string,
  ): Promise<number | string>;
}

function withCommands(redis: Redis): Redis & LimitCommands {
  redis.defineCommand('hypernexCooldownStart', { numberOfKeys: 1, lua: COOLDOWN_START });
  redis.defineCommand('hypernexCooldownCancel', { numberOfKeys: 1, lua: COOLDOWN_CANCEL });
  redis.defineCommand('hypernexThrottleCheck', { numberOfKeys: 1, lua: THROTTLE_CHECK });
  redis.defineCommand('hypernexThrottleFail', { numberOfKeys: 1, lua: THROTTLE_FAIL });
  redis.defineCommand('hypernexThrottleAttempt', { numberOfKeys: 1, lua: THROTTLE_ATTEMPT });
  return redis as Redis & LimitCommands;
}

/** A key's name in Redis: hashed, so no address, username or anything a caller sent is stored in the clear. */
function keyName(prefix: string, kind: string, key: string): string {
  return `${prefix}${kind}:${sha256(key).toString('hex')}`;
}

export interface RedisLimitsOptions {
  /** Says when the limits fall back to this host's memory and when they are back in Redis. */
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** While Redis fails, how often it is asked again (a PING in the background; answers come from memory). */
  retryMs?: number;
}

/**
 * Cooldowns and failure throttles kept in Redis, shared by every host process that uses the same Redis and
 * `prefix` (e.g. `hypernex:`). Cooldowns are keys with a millisecond expiry; a throttle is a sorted set of failure
 * times per key, trimmed to the window and to `maxFailures` entries, expiring with the window, so every key
 * vanishes on its own. Each call is one round trip. Failure times come from `clock` (the hosts' clocks are
 * assumed to agree to well under a window); cooldown expiry is Redis's own.
 *
 * While Redis fails or times out (the connection's `commandTimeout` bounds each call) the limits are this host's
 * memory limits (services/limits.ts), so a sign-in never waits for or fails on Redis: each host then limits on its
 * own, which is weaker than shared limits but far better than none or than refusing everyone. Redis is asked
 * again every `retryMs` in the background and takes over as soon as it answers; what memory counted meanwhile
 * stays in memory.
 */
export function redisLimits(
  redis: Redis,
  prefix: string,
  clock: Clock = systemClock,
  options: RedisLimitsOptions = {},
): SharedLimits {
  const shared = redisOnly(redis, prefix, clock);
  const memory = memoryLimits(clock);
  const route = fallbackRoute(redis, options);

  const cooldowns: Cooldowns = {
    start: (key, ms) =>
      route(
        async () => {
          const started = await shared.cooldowns.start(key, ms);
          if (!started.started) return started;
          // A cancel that cannot reach Redis leaves the cooldown to run out: the cautious outcome.
          return { started: true, cancel: () => route(started.cancel, () => Promise.resolve()) };
        },
        () => memory.cooldowns.start(key, ms),
      ),
  };

  function throttle(name: string, opts: { maxFailures: number; windowSeconds: number }): FailureThrottle {
    const inRedis = shared.throttle(name, opts);
    const inMemory = memory.throttle(name, opts);
    return {
      attempt: (key) =>
        route(
          async () => {
            const counted = await inRedis.attempt(key);
            if (!counted.allowed) return counted;
            // Giving an attempt back that cannot reach Redis leaves it counted until its window passes.
            return { allowed: true, succeeded: () => route(counted.succeeded, () => inMemory.succeed(key)) };
          },
          () => inMemory.attempt(key),
        ),
      retryAfter: (key) =>
        route(
          () => inRedis.retryAfter(key),
          () => inMemory.retryAfter(key),
        ),
      fail: (key) =>
        route(
          () => inRedis.fail(key),
          () => inMemory.fail(key),
        ),
      succeed: (key) =>
        route(
          () => inRedis.succeed(key),
          () => inMemory.succeed(key),
        ),
    };
  }

  return { cooldowns, throttle };
}

/**
 * Runs a call in Redis, or in memory while Redis is failing: the first failure switches over (one log line), a
 * PING at most every `retryMs` in the background looks for Redis's return, and its first answer switches back (one
 * log line). A call never waits for that PING.
 */
function fallbackRoute(redis: Redis, options: RedisLimitsOptions) {
  const retryMs = options.retryMs ?? 1000;
  let failing = false;
  let nextProbe = 0;
  let probing = false;

  const recovered = (): void => {
    if (!failing) return;
    failing = false;
    options.logger?.info('Redis answers again: the shared limits are kept in Redis again');
  };

  const probe = (): void => {
    if (probing || Date.now() < nextProbe) return;
    probing = true;
    nextProbe = Date.now() + retryMs;
    redis.ping().then(
      () => {
        probing = false;
        recovered();
      },
      () => {
        probing = false;
      },
    );
  };

  return async function route<T>(inRedis: () => Promise<T>, inMemory: () => Promise<T>): Promise<T> {
    if (failing) {
      probe();
      return inMemory();
    }
    try {
      return await inRedis();
    } catch (error) {
      if (!failing) {
        failing = true;
        nextProbe = Date.now() + retryMs;
        options.logger?.warn(
          { err: error },
          'Redis failed: the limits (sign-in throttle, cooldowns) are kept in this host’s memory until it answers',
        );
      }
      return inMemory();
    }
  };
}

/** The limits in Redis alone: each call rejects when Redis fails. */
function redisOnly(redis: Redis, prefix: string, clock: Clock): SharedLimits {
  const commands = withCommands(redis);

  const cooldowns: Cooldowns = {
    async start(key, ms) {
      const name = keyName(prefix, 'cooldown', key);
      const token = randomBytes(16).toString('hex');
      const left = await commands.hypernexCooldownStart(name, token, Math.max(1, Math.ceil(ms)));
      if (left >= 0) return { started: false, retryAfterMs: left };
      return {
        started: true,
        cancel: async () => {
          await commands.hypernexCooldownCancel(name, token);
        },
      };
    },
  };

  function throttle(name: string, opts: { maxFailures: number; windowSeconds: number }): FailureThrottle {
    const windowMs = Math.max(1, Math.ceil(opts.windowSeconds * 1000));
    const maxFailures = Math.floor(opts.maxFailures);
    const keyOf = (key: string): string => keyName(prefix, `throttle:${name}`, key);
    // As the memory throttle: allowing no failure at all refuses every attempt for a window.
    const never = maxFailures < 1;
    return {
      async attempt(key) {
        if (never) return { allowed: false, retryAfter: Math.max(1, Math.ceil(windowMs / 1000)) };
        const now = clock.now();
        const unique = randomBytes(8).toString('hex');
        const oldest = await commands.hypernexThrottleAttempt(keyOf(key), now, windowMs, maxFailures, unique);
        if (Number(oldest) === -1) {
          return {
            allowed: true,
            succeeded: async () => {
              await redis.del(keyOf(key));
            },
          };
        }
        return {
          allowed: false,
          retryAfter: Math.max(1, Math.ceil((Number(oldest) + windowMs - now) / 1000)),
        };
      },
      async retryAfter(key) {
        if (never) return Math.max(1, Math.ceil(windowMs / 1000));
        const now = clock.now();
        const [count, oldest] = await commands.hypernexThrottleCheck(keyOf(key), now, windowMs, maxFailures);
        if (count < maxFailures || oldest === undefined) return 0;
        return Math.max(1, Math.ceil((Number(oldest) + windowMs - now) / 1000));
      },
      async fail(key) {
        if (never) return;
        await commands.hypernexThrottleFail(
          keyOf(key),
          clock.now(),
          windowMs,
          maxFailures,
          randomBytes(8).toString('hex'),
        );
      },
      async succeed(key) {
        await redis.del(keyOf(key));
      },
    };
  }

  return { cooldowns, throttle };
}
