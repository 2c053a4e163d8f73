import type { Clock } from './clock.js';

/**
 * Slows password guessing: after `maxFailures` wrong passwords for one username from one address within
 * `windowSeconds`, further attempts from there are refused until the window has passed. Keyed by address and
 * name together, so a stranger cannot lock a user out from elsewhere. Memory is bounded by `maxKeys`; no number of
 * other keys makes it forget one still in its window: when full, keys whose window passed go, and while it is
 * still full, new keys are refused (a flood cannot push a limited key out). One source (the part of a key before
 * its first `|`, the address) holds at most `maxKeysPerSource` keys, so one address flooding names is refused
 * before anyone else is.
 */
export function createLoginThrottle(
  opts: { maxFailures: number; windowSeconds: number; maxKeys?: number; maxKeysPerSource?: number },
  clock: Clock,
) {
  const failures = new Map<string, number[]>();
  const perSource = new Map<string, number>();
  const maxKeys = opts.maxKeys ?? 10_000;
  const maxKeysPerSource = opts.maxKeysPerSource ?? 1_000;
  const windowMs = opts.windowSeconds * 1000;
  const sourceOf = (key: string): string => key.slice(0, Math.max(0, key.indexOf('|')));

  function forget(key: string): void {
    if (!failures.delete(key)) return;
    const source = sourceOf(key);
    const left = (perSource.get(source) ?? 1) - 1;
    if (left > 0) perSource.set(source, left);
    else perSource.delete(source);
  }

  /** Room for a new key: the expired ones go first; false when it is still full (or its source's share is). */
  function roomFor(key: string): boolean {
    if (failures.size >= maxKeys) for (const k of [...failures.keys()]) recent(k);
    return failures.size < maxKeys && (perSource.get(sourceOf(key)) ?? 0) < maxKeysPerSource;
  }

  function remember(key: string, list: number[]): void {
    if (!failures.has(key)) perSource.set(sourceOf(key), (perSource.get(sourceOf(key)) ?? 0) + 1);
    failures.set(key, list);
  }

  function recent(key: string): number[] {
    const now = clock.now();
    const list = (failures.get(key) ?? []).filter((at) => now - at < windowMs);
    if (list.length === 0) forget(key);
    else failures.set(key, list);
    return list;
  }

  function wait(list: number[]): number {
    const oldest = list[list.length - opts.maxFailures] ?? clock.now();
    return Math.max(1, Math.ceil((oldest + windowMs - clock.now()) / 1000));
  }

  return {
    /** Counts an attempt before it is checked (see FailureThrottle.attempt): refused, or allowed and counted. */
    attempt(key: string): { allowed: true } | { allowed: false; retryAfter: number } {
      const list = recent(key);
      if (list.length >= opts.maxFailures) return { allowed: false, retryAfter: wait(list) };
      if (list.length === 0 && !roomFor(key))
        return { allowed: false, retryAfter: Math.ceil(windowMs / 1000) };
      remember(key, [...list, clock.now()]);
      return { allowed: true };
    },
    /** Seconds to wait before another attempt is allowed; 0 when allowed now. */
    retryAfter(key: string): number {
      const list = recent(key);
      return list.length < opts.maxFailures ? 0 : wait(list);
    },
    fail(key: string): void {
      const list = recent(key);
      if (list.length === 0 && !roomFor(key)) return;
      remember(key, [...list, clock.now()].slice(-opts.maxFailures));
    },
    succeed(key: string): void {
      forget(key);
    },
  };
}
