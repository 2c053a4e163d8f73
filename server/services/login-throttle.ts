import type { Clock } from './context.js';

/**
 * Slows password guessing: after `maxFailures` wrong passwords for one username from one address within
 * `windowSeconds`, further attempts from there are refused until the window has passed. Keyed by address and
 * name together, so a stranger cannot lock a user out from elsewhere. Memory is bounded by `maxKeys`.
 */
export function createLoginThrottle(
  opts: { maxFailures: number; windowSeconds: number; maxKeys?: number },
  clock: Clock,
) {
  const failures = new Map<string, number[]>();
  const maxKeys = opts.maxKeys ?? 10_000;
  const windowMs = opts.windowSeconds * 1000;

  function recent(key: string): number[] {
    const now = clock.now();
    const list = (failures.get(key) ?? []).filter((at) => now - at < windowMs);
    if (list.length === 0) failures.delete(key);
    else failures.set(key, list);
    return list;
  }

  return {
    /** Seconds to wait before another attempt is allowed; 0 when allowed now. */
    retryAfter(key: string): number {
      const list = recent(key);
      if (list.length < opts.maxFailures) return 0;
      const oldest = list[list.length - opts.maxFailures] ?? clock.now();
      return Math.max(1, Math.ceil((oldest + windowMs - clock.now()) / 1000));
    },
    fail(key: string): void {
      const list = recent(key);
      list.push(clock.now());
      failures.delete(key);
      failures.set(key, list.slice(-opts.maxFailures));
      if (failures.size > maxKeys) {
        const oldestKey = failures.keys().next().value;
        if (oldestKey !== undefined) failures.delete(oldestKey);
      }
    },
    succeed(key: string): void {
      failures.delete(key);
    },
  };
}
