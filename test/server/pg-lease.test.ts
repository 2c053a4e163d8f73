import { afterEach, describe, expect, it, vi } from 'vitest';
import { PgLease, type AliveMessage } from '../../server/store/pg-lease.js';

/** A lease on a clock the test moves, whose beats and "alive"s are kept for the test to hand back. */
function setup(leaseMs = 50, listeners = 0) {
  let now = 1000;
  const beats: number[] = [];
  const alives: AliveMessage[] = [];
  const warnings: string[] = [];
  const lease = new PgLease(
    'me',
    leaseMs,
    {
      beat: async (seq) => void beats.push(seq),
      alive: async (message) => void alives.push(message),
      listeners: async () => listeners,
    },
    (_error, what) => warnings.push(what),
    () => now,
  );
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return {
    lease,
    beats,
    alives,
    warnings,
    settle,
    advance: (ms: number) => (now += ms),
    now: () => now,
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('PgLease: when a host may answer from its cache', () => {
  it('only once something it sent less than the lease ago came back to it', async () => {
    const { lease, beats, alives, settle, advance } = setup();
    await lease.reconnected();
    expect(lease.usable()).toBe(false);
    await settle();
    // Its "alive" (sent when it connected) came back: everything committed before that was heard.
    lease.heardAlive(alives.at(-1)!);
    expect(lease.usable()).toBe(true);
    // That grows old: the beats sent meanwhile keep the lease only once heard back.
    advance(49);
    expect(lease.usable()).toBe(true);
    advance(1);
    expect(lease.usable()).toBe(false);
    await settle();
    lease.heardBeat(beats.at(-1)!);
    expect(lease.usable()).toBe(true);
  });

  it('never with a lease of 0, and not after its listening connection came back', async () => {
    const off = setup(0);
    off.lease.reconnected();
    expect(off.lease.usable()).toBe(false);
    const { lease, beats, alives, settle } = setup();
    await lease.reconnected();
    lease.usable();
    await settle();
    lease.heardAlive(alives.at(-1)!);
    lease.heardBeat(beats.at(-1)!);
    expect(lease.usable()).toBe(true);
    await lease.reconnected();
    expect(lease.usable()).toBe(false);
  });

  it('not when its own "alive" has not come back for four seconds (the others take it for gone at five)', async () => {
    const { lease, beats, alives, settle, advance } = setup();
    await lease.reconnected();
    lease.heardAlive(alives.at(-1)!);
    for (let waited = 0; waited < 4000; waited += 10) {
      advance(10);
      lease.usable();
      await settle();
      lease.heardBeat(beats.at(-1)!);
    }
    expect(lease.usable()).toBe(false);
  });
});

describe('PgLease: when a commit may be acknowledged', () => {
  it('at once when no other host listens, once its announcement came back', async () => {
    const { lease, settle, now } = setup(1000, 0);
    await lease.reconnected();
    await settle();
    const echo = lease.expectEcho();
    const acked = lease.acknowledgeable(now(), echo.heard);
    let done = false;
    void acked.then(() => (done = true));
    await settle();
    expect(done).toBe(false);
    lease.heardOwn(echo.n);
    await acked;
  });

  it('after the longest lease heard when another host is alive, or the longest there is while it cannot tell', async () => {
    vi.useFakeTimers();
    const { lease, now } = setup(50, 1);
    await lease.reconnected();
    const acknowledged = async (waits: number) => {
      const echo = lease.expectEcho();
      let done = false;
      void lease.acknowledgeable(now(), echo.heard).then(() => (done = true));
      lease.heardOwn(echo.n);
      await vi.advanceTimersByTimeAsync(waits - 1);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(done).toBe(true);
    };
    // Another host listened when this one connected: until it is heard, its lease may be the longest there is.
    await acknowledged(1000);
    lease.heardAlive({ o: 'other', alive: 1, lease: 300 });
    await acknowledged(300);
    lease.heardAlive({ o: 'other', alive: 2, lease: 20 });
    await acknowledged(50);
  });
  it('after the lease of a host heard before its announcement came back, even with a lease of its own of 0', async () => {
    vi.useFakeTimers();
    const { lease, now } = setup(0, 0);
    await lease.reconnected();
    const echo = lease.expectEcho();
    let done = false;
    void lease.acknowledgeable(now(), echo.heard).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(false);
    // A host that just started said it is alive before this commit's announcement: it may keep what it changed.
    lease.heardAlive({ o: 'newcomer', alive: 1, lease: 300 });
    lease.heardOwn(echo.n);
    await vi.advanceTimersByTimeAsync(299);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });
});

describe('PgLease: how many hosts share the database', () => {
  it('counts itself and every other host heard within five seconds', async () => {
    const { lease, advance } = setup();
    await lease.reconnected();
    expect(lease.hosts()).toBe(1);
    lease.heardAlive({ o: 'a', alive: 1, lease: 50 });
    advance(3000);
    lease.heardAlive({ o: 'b', alive: 1, lease: 50 });
    expect(lease.hosts()).toBe(3);
    advance(2000);
    expect(lease.hosts()).toBe(2);
    advance(3000);
    expect(lease.hosts()).toBe(1);
  });
});
