import type { Clock } from './clock.js';
import { createLoginThrottle } from './login-throttle.js';

/**
 * Limits that must hold across every host process of a community (issue 15): per-key cooldowns (one invite request
 * per sender and target per cooldown) and failure throttles (wrong passwords). One process keeps them in memory
 * (this file); hosts sharing a database keep them in Redis (server/cluster/redis-limits.ts), so a client cannot get
 * around a limit by reaching another process behind the proxy.
 */
export interface Cooldowns {
  /**
   * Starts `key`'s cooldown of `ms` unless one is running. Resolves `{ started: true, cancel }` when it started
   * (`cancel` ends it early, only if it is still this one: a request that was not delivered after all), or
   * `{ started: false, retryAfterMs }` with the time left.
   */
  start(
    key: string,
    ms: number,
  ): Promise<{ started: true; cancel(): Promise<void> } | { started: false; retryAfterMs: number }>;
}

/** An attempt counted before it is checked: refused, or allowed with the way to give it back when it succeeds. */
export type Attempt = { allowed: true; succeeded(): Promise<void> } | { allowed: false; retryAfter: number };

/** Counts failures per key in a sliding window (wrong passwords per address and username). */
export interface FailureThrottle {
  /**
   * Counts an attempt for `key` before it is checked, so attempts racing each other all count: refused (with the
   * seconds to wait) when the window already holds `maxFailures`; allowed otherwise. `succeeded()` gives it back and
   * clears the key (a right password). An allowed attempt never given back stays counted as a failure.
   */
  attempt(key: string): Promise<Attempt>;
  /** Seconds to wait before another attempt is allowed; 0 when allowed now. */
  retryAfter(key: string): Promise<number>;
  fail(key: string): Promise<void>;
  succeed(key: string): Promise<void>;
}

/** What a host's services get: shared limits, in memory or in Redis. */
export interface SharedLimits {
  cooldowns: Cooldowns;
  throttle(name: string, opts: { maxFailures: number; windowSeconds: number }): FailureThrottle;
}

/** Cooldowns of one process: key -> ms it started and how long it lasts; bounded by sweeping run-out keys. */
export function memoryCooldowns(clock: Clock, maxKeys = 10_000): Cooldowns {
  const running = new Map<string, { at: number; until: number }>();
  return {
    start(key, ms) {
      const now = clock.now();
      const current = running.get(key);
      if (current && current.until > now) {
        return Promise.resolve({ started: false, retryAfterMs: current.until - now });
      }
      const mine = { at: now, until: now + ms };
      running.set(key, mine);
      if (running.size > maxKeys) {
        for (const [k, v] of running) if (v.until <= now) running.delete(k);
      }
      return Promise.resolve({
        started: true,
        cancel: () => {
          if (running.get(key) === mine) running.delete(key);
          return Promise.resolve();
        },
      });
    },
  };
}

/**
 * The limits of a host process that shares them with nobody: memory cooldowns, and failure throttles as
 * login-throttle.ts keeps them. One throttle per name and options, as the Redis ones share their keys by name.
 */
export function memoryLimits(clock: Clock): SharedLimits {
  const throttles = new Map<string, FailureThrottle>();
  return {
    cooldowns: memoryCooldowns(clock),
    throttle(name, opts) {
      const id = `${name}|${opts.maxFailures}|${opts.windowSeconds}`;
      let throttle = throttles.get(id);
      if (!throttle) {
        const inMemory = createLoginThrottle(opts, clock);
        throttle = {
          attempt: (key) => {
            const counted = inMemory.attempt(key);
            return Promise.resolve(
              counted.allowed
                ? { allowed: true, succeeded: () => Promise.resolve(inMemory.succeed(key)) }
                : counted,
            );
          },
          retryAfter: (key) => Promise.resolve(inMemory.retryAfter(key)),
          fail: (key) => Promise.resolve(inMemory.fail(key)),
          succeed: (key) => Promise.resolve(inMemory.succeed(key)),
        };
        throttles.set(id, throttle);
      }
      return throttle;
    },
  };
}
