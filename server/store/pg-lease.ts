/**
 * When a host may answer a read from its cache without asking PostgreSQL, and how long a commit waits before it is
 * acknowledged, so that a change any host acknowledged is seen by every read any host starts after that.
 *
 * - Every commit that changes records announces them inside itself (NOTIFY), and PostgreSQL hands announcements to
 *   each listening connection in commit order.
 * - A host's cache is current while its listening connection has handed it a beat this host sent less than
 *   `leaseMs` ago: everything committed before that beat left was heard (and dropped from the cache) first. Under
 *   read load a host beats every `leaseMs / 4` on a channel of its own; idle, it sends nothing.
 * - A commit is acknowledged the longest lease of the hosts listening after its answer came. A read started after
 *   that acknowledgement uses a cache whose beat left after the commit, so the commit was heard; or it asks
 *   PostgreSQL.
 * - A host alone waits for nothing: every host says it is alive on the shared channel every ALIVE_MS, and a commit
 *   waits only when, once its own announcement came back to it (so it has heard everything said before it), another
 *   host was heard within ALIVE_LAPSE_MS, or the host cannot tell yet. A host stops using its cache when its own
 *   "alive" has not come back for ALIVE_LAPSE_MS less a second: by then the others may take it for gone.
 */

/** How often a host says it is alive, with its lease (ms). */
const ALIVE_MS = 1000;
/** A host not heard from for this long is taken for gone: commits no longer wait for it (ms). */
const ALIVE_LAPSE_MS = 5000;
/** A host whose "alive" has not come back for ALIVE_LAPSE_MS less this no longer trusts its cache (ms). */
const ALIVE_MARGIN_MS = 1000;
/** Beats and "alive"s kept waiting to be heard back at most (older ones were lost with a connection). */
const SENT_KEPT = 64;
/** A failing beat or "alive" is logged at most this often (ms). */
const WARN_EVERY_MS = 10_000;
/** The longest lease a host accepts, its own or another's (ms). */
export const MAX_LEASE_MS = 1000;

/** What a host says on the shared channel: alive, with its lease. */
export interface AliveMessage {
  o: string;
  alive: number;
  lease: number;
}

export interface LeaseLink {
  /** Sends a beat on this host's own channel (its sequence number as the payload). */
  beat(seq: number): Promise<void>;
  /** Says on the shared channel that this host is alive. */
  alive(message: AliveMessage): Promise<void>;
  /** How many other processes listen on the shared channel now (whoever connected before this answer). */
  listeners(): Promise<number>;
}

export class PgLease {
  /** Sent beats and "alive"s not heard back yet: their send time by sequence number. */
  readonly #sent = new Map<number, number>();
  #seq = 0;
  #beating = false;
  #lastBeat = -Infinity;
  /** When the newest beat (or "alive") heard back was sent. */
  #currentFrom = -Infinity;
  /** When the newest "alive" of this host heard back was sent. */
  #aliveFrom = -Infinity;
  /** Other hosts heard: when, and their lease. */
  readonly #others = new Map<string, { heardAt: number; lease: number }>();
  /** Other listening connections when this one connected, and when they were counted (null: not answered yet). */
  #counted: { others: number; at: number } | null = null;
  /** Commit announcements of this host waiting to be heard back, by number. */
  readonly #echoes = new Map<number, () => void>();
  #timer: NodeJS.Timeout | null = null;
  #warnedAt = -Infinity;
  /** Callers of whenUsable waiting for a beat to come back. */
  readonly #waiters = new Set<() => void>();

  constructor(
    readonly origin: string,
    readonly leaseMs: number,
    private readonly link: LeaseLink,
    private readonly warn: (error: unknown, what: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Starts saying "alive" (call once the listening connection is up). */
  start(): void {
    this.#timer = setInterval(() => {
      // Never rejects (a failure is logged there).
      this.#sayAlive().catch(() => undefined);
    }, ALIVE_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Whether a read may be answered from the cache now; keeps beating while reads ask. */
  usable(): boolean {
    if (this.leaseMs <= 0) return false;
    const now = this.now();
    if (!this.#beating && now - this.#lastBeat >= this.leaseMs / 4) this.#beat(now);
    return now - this.#currentFrom < this.leaseMs && now - this.#aliveFrom < ALIVE_LAPSE_MS - ALIVE_MARGIN_MS;
  }

  /**
   * Whether the cache is usable, waiting up to `timeoutMs` for a beat to come back when it is not yet (a host
   * whose event loop or database is busy hears its beats late): for reads a query would make costly.
   */
  async whenUsable(timeoutMs: number): Promise<boolean> {
    if (this.usable()) return true;
    if (this.leaseMs <= 0) return false;
    return new Promise((resolve) => {
      const done = (usable: boolean): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(usable);
      };
      const check = (): void => {
        if (this.usable()) done(true);
      };
      const timer = setTimeout(() => done(this.usable()), timeoutMs);
      this.#waiters.add(check);
    });
  }

  #wake(): void {
    for (const check of [...this.#waiters]) check();
  }

  #beat(now: number): void {
    this.#beating = true;
    this.#lastBeat = now;
    const seq = this.#send(now);
    this.link
      .beat(seq)
      .catch((error: unknown) => this.#failed(seq, error, 'a cache beat failed'))
      .finally(() => (this.#beating = false));
  }

  #sayAlive(): Promise<void> {
    const seq = this.#send(this.now());
    return this.link
      .alive({ o: this.origin, alive: seq, lease: this.leaseMs })
      .catch((error: unknown) => this.#failed(seq, error, 'telling other hosts this one is alive failed'));
  }

  /** A number for a beat or "alive" sent at `at`, kept until it is heard back. */
  #send(at: number): number {
    const seq = ++this.#seq;
    this.#sent.set(seq, at);
    if (this.#sent.size > SENT_KEPT) this.#sent.delete(this.#sent.keys().next().value!);
    return seq;
  }

  /** Not sent (the database or the listening connection is away): logged now and then, not each time. */
  #failed(seq: number, error: unknown, what: string): void {
    this.#sent.delete(seq);
    const now = this.now();
    if (now - this.#warnedAt < WARN_EVERY_MS) return;
    this.#warnedAt = now;
    this.warn(error, what);
  }

  /** When beat or "alive" `seq` was sent, once it is heard back (those sent before it were heard, or lost). */
  #heard(seq: number): number | undefined {
    const sentAt = this.#sent.get(seq);
    if (sentAt === undefined) return undefined;
    for (const earlier of this.#sent.keys()) {
      if (earlier > seq) break;
      this.#sent.delete(earlier);
    }
    return sentAt;
  }

  /** One of this host's beats came back. */
  heardBeat(seq: number): void {
    const sentAt = this.#heard(seq);
    if (sentAt === undefined) return;
    this.#currentFrom = Math.max(this.#currentFrom, sentAt);
    this.#wake();
  }

  /** A host (this one or another) said it is alive. */
  heardAlive(message: AliveMessage): void {
    if (message.o !== this.origin) {
      const known = this.#others.has(message.o);
      this.#others.set(message.o, { heardAt: this.now(), lease: clampLease(message.lease) });
      // A host just heard of answers at once: one that just connected learns every lease within a round trip.
      if (!known) this.#sayAlive().catch(() => undefined);
      return;
    }
    const sentAt = this.#heard(message.alive);
    if (sentAt === undefined) return;
    this.#aliveFrom = Math.max(this.#aliveFrom, sentAt);
    this.#currentFrom = Math.max(this.#currentFrom, sentAt);
    this.#wake();
  }

  /** This host's commit announcement number `n` came back: everything committed before it was heard. */
  heardOwn(n: number): void {
    this.#echoes.get(n)?.();
    this.#echoes.delete(n);
  }

  /**
   * The listening connection is (back) up: what was said meanwhile is lost, so nothing beaten before counts, and
   * who else listens is asked again. Resolves once counted and this host's "alive" is sent (never rejects).
   */
  reconnected(): Promise<void> {
    this.#sent.clear();
    this.#currentFrom = this.#aliveFrom = -Infinity;
    this.#others.clear();
    this.#counted = null;
    // Those still awaited may have come while nobody listened: their commits wait the whole lease.
    this.#echoes.clear();
    const askedAt = this.now();
    const counting = this.link.listeners().then(
      (others) => {
        // Whoever connects after this answer says "alive" where this host hears it.
        this.#counted = { others, at: askedAt };
      },
      (error: unknown) => {
        this.warn(error, 'counting the hosts that listen failed');
        this.#counted = { others: Infinity, at: askedAt };
      },
    );
    return Promise.all([counting, this.#sayAlive()]).then(() => undefined);
  }

  /**
   * Whether another host may listen whose lease is not known yet: the count at connection not answered, or more
   * counted than heard since (for ALIVE_LAPSE_MS at most: one that never says it is alive is no host).
   */
  #unsure(now: number): boolean {
    const counted = this.#counted;
    if (counted === null) return true;
    return counted.others > this.#others.size && now - counted.at < ALIVE_LAPSE_MS;
  }

  /** A number for a commit announcement about to be sent, and a promise of it coming back to this host. */
  expectEcho(): { n: number; heard: Promise<void> } {
    const n = ++this.#seq;
    return { n, heard: new Promise((resolve) => this.#echoes.set(n, resolve)) };
  }

  /** An announcement that was never sent (its statement failed): nobody waits for it. */
  dropEcho(n: number): void {
    this.#echoes.delete(n);
  }

  /**
   * Waits until a commit answered at `answeredAt` (this host's clock) may be acknowledged: at once when this host
   * is alone (once its announcement, `echo`, came back), else until the longest lease of any host has passed.
   */
  async acknowledgeable(answeredAt: number, echo: Promise<void> | null): Promise<void> {
    if (echo) {
      // Once its announcement is back, every host that said "alive" before the commit is known, with its lease
      // (one just started may hold a longer lease than this host or any it knew). Not back: the longest there is.
      const heard = await Promise.race([echo.then(() => true), pause(MAX_LEASE_MS).then(() => false)]);
      if (!heard || this.#alone()) return;
    }
    const left = answeredAt + this.#longestLease() - this.now();
    if (left > 0) await pause(left);
  }

  /** The hosts listening that this one heard within ALIVE_LAPSE_MS, itself included. */
  hosts(): number {
    return 1 + this.#liveOthers(this.now()).length;
  }

  #alone(): boolean {
    const now = this.now();
    return !this.#unsure(now) && this.#liveOthers(now).length === 0;
  }

  #longestLease(): number {
    const now = this.now();
    // Another host's lease is not known yet: the longest any may have.
    if (this.#unsure(now)) return MAX_LEASE_MS;
    return Math.max(clampLease(this.leaseMs), ...this.#liveOthers(now).map((other) => other.lease));
  }

  /** The other hosts heard within ALIVE_LAPSE_MS; those not heard for longer are taken for gone (forgotten). */
  #liveOthers(now: number): Array<{ heardAt: number; lease: number }> {
    const live = [];
    for (const [origin, other] of this.#others) {
      if (now - other.heardAt < ALIVE_LAPSE_MS) live.push(other);
      else this.#others.delete(origin);
    }
    return live;
  }
}

function clampLease(ms: number): number {
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_LEASE_MS) : 0;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
