import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { HostConfig } from '../config.js';
import { maskWebhookUrl, type WebhookDeliveryDto } from '../protocol/webhooks.js';
import type { HostStore, ReadCollection } from '../store/seam.js';
import { SETTINGS } from '../store/settings.js';
import { unixSeconds, type Clock } from './context.js';
import { postWebhook, type Attempt } from './webhook-delivery.js';
import type { WebhookMessage } from './webhook-messages.js';
import { BY_QUEUE_ORDER, WEBHOOK_OUTBOX, type StoredWebhookJob } from './webhook-outbox.js';
import type { WebhookSettingsRecord } from './webhook-settings.js';

/** The settings record naming which process sends the community's webhook messages, and since when. */
export const WEBHOOK_SENDER = 'webhook-sender';

/** The sender's claim: `by` null once it let go (at close). */
export interface WebhookSenderLease {
  by: string | null;
  /** Unix ms of the claim or its last renewal. */
  at: number;
}

export interface WebhookQueueDeps {
  limits: HostConfig['webhooks'];
  clock: Clock;
  log: Logger;
  store: HostStore;
  /** Whether other host processes share the store (PostgreSQL): a claim another process holds may be alive. */
  shared: boolean;
  /** The settings as they are now (read for every try: a URL removed meanwhile stops the message). */
  readSettings(): Promise<WebhookSettingsRecord>;
  /**
   * Keeps how a try to `url` went where every host of the community reads it (never rejects: a failure to keep it
   * is logged there, and the delivery goes on).
   */
  keepLast(url: string, delivery: WebhookDeliveryDto): Promise<void>;
}

/** A failed step (the store unreachable, say) is tried again after this. */
const STEP_FAILED_WAIT_MS = 1000;

/**
 * Sends the community's queued webhook messages (webhook-outbox.ts puts them in the store with their action), in
 * the order they were queued, in the background. With several hosts on one database one process sends at a time:
 * it holds a claim (the `webhook-sender` setting) that it renews before each try, and another host takes over when
 * it lapses. A message stays queued until it is delivered or given up, so a host that closes or dies mid-send
 * leaves it to the next sender (a message may then be sent twice, never lost). Each message is tried up to
 * `maxAttempts` times with exponential backoff, waits what an HTTP 429 asks, is given up for good on a refusal
 * (4xx), and every failure is logged with what was being sent. When more than `queueSize` wait, the oldest go with a
 * line in the log. Nothing here is awaited by the action that queued a message.
 */
export class WebhookQueue {
  readonly #deps: WebhookQueueDeps;
  readonly #processId = randomBytes(8).toString('hex');
  readonly #leaseMs: number;
  /** Aborted at close: a POST in flight and a wait end at once. */
  readonly #stop = new AbortController();
  #closing = false;
  #sender: Promise<void> | null = null;
  /** Ends the sender's current wait (a message was queued or sent, on any host). */
  #wake: (() => void) | null = null;
  /** A change to the queue since the current step began: the wait after it is skipped. */
  #woken = false;

  constructor(deps: WebhookQueueDeps) {
    this.#deps = deps;
    this.#leaseMs = Math.max(deps.limits.senderLeaseMs, deps.limits.timeoutMs * 2);
  }

  /** Starts sending: what earlier runs (or a host that died) left queued, then each message as it is queued. */
  start(): void {
    this.#deps.store.watch(WEBHOOK_OUTBOX, () => this.#poke());
    // A sender that lets go at close: another host goes on at once.
    this.#deps.store.watch(SETTINGS, (id) => {
      if (id === WEBHOOK_SENDER || id === null) this.#poke();
    });
    this.#sender = this.#run().catch((error: unknown) =>
      this.#deps.log.error({ err: error }, 'the webhook sender stopped'),
    );
  }

  /** One try now, outside the queue (the Host screen's test); its outcome is kept as the last delivery. */
  async sendNow(url: string, what: string, message: WebhookMessage): Promise<WebhookDeliveryDto> {
    const result = await postWebhook(url, message, {
      timeoutMs: this.#deps.limits.timeoutMs,
      stop: this.#stop.signal,
    });
    if (!result.ok) {
      this.#deps.log.warn({ what, url: maskWebhookUrl(url), detail: result.detail }, 'a webhook test failed');
    }
    return this.#keep(url, what, 1, result, true);
  }

  /** Stops: a message being sent gets `closeGraceMs` to finish; the queue stays in the store for the next sender. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#poke();
    if (this.#sender) {
      const grace = new AbortController();
      await Promise.race([
        this.#sender,
        sleep(this.#deps.limits.closeGraceMs, undefined, { signal: grace.signal }).catch(() => undefined),
      ]);
      grace.abort();
    }
    this.#stop.abort();
    await this.#sender;
    await this.#letGo().catch((error: unknown) =>
      this.#deps.log.warn({ err: error }, 'could not give up the webhook sender claim; it lapses by itself'),
    );
  }

  async #run(): Promise<void> {
    while (!this.#closing) {
      this.#woken = false;
      const wait = await this.#step().catch((error: unknown) => {
        this.#deps.log.error({ err: error }, 'the webhook sender failed a step; it tries again');
        return STEP_FAILED_WAIT_MS;
      });
      if (wait > 0) await this.#pause(wait);
    }
  }

  /** Sends or drops the oldest message if it is time; how long to wait before the next step (0: none). */
  async #step(): Promise<number> {
    const jobs = this.#deps.store.collection<StoredWebhookJob>(WEBHOOK_OUTBOX);
    const [head] = await jobs.findByPrefix(BY_QUEUE_ORDER, '', 1);
    // Nothing queued: a message queued on any host wakes the sender; the claim's length is a check besides.
    if (!head) return this.#leaseMs;
    const due = head.notBefore - this.#deps.clock.now();
    if (due > 0) return due;
    const heldElsewhere = await this.#claim();
    if (heldElsewhere > 0) return heldElsewhere;
    if (await this.#trim(jobs)) return 0;
    // Read again now that this process holds the claim: the sender before it may have sent that one meanwhile.
    const [current] = await jobs.findByPrefix(BY_QUEUE_ORDER, '', 1);
    if (current && current.notBefore <= this.#deps.clock.now()) await this.#tryOnce(current);
    return 0;
  }

  /**
   * Takes or renews the sender's claim: 0 when this process holds it now, else how long until another process's
   * claim lapses. On the embedded store one process owns the folder: a claim an earlier run left is dead.
   */
  async #claim(): Promise<number> {
    const { store, clock, shared } = this.#deps;
    return store.tx(async (t) => {
      const repo = t.repo<WebhookSenderLease>(SETTINGS);
      const lease = await repo.get(WEBHOOK_SENDER);
      const now = clock.now();
      const mine = lease?.by === this.#processId;
      const age = now - (lease?.at ?? 0);
      if (lease?.by && !mine && shared && age < this.#leaseMs) return this.#leaseMs - age;
      // Renewed a third of the way: a try (at most timeoutMs, half the claim) always ends within it.
      if (!mine || age > this.#leaseMs / 3) repo.put(WEBHOOK_SENDER, { by: this.#processId, at: now });
      return 0;
    });
  }

  /** Gives up the claim at close, so another host sends at once (not after it lapses). */
  async #letGo(): Promise<void> {
    await this.#deps.store.tx(async (t) => {
      const repo = t.repo<WebhookSenderLease>(SETTINGS);
      const lease = await repo.get(WEBHOOK_SENDER);
      if (lease?.by === this.#processId) repo.put(WEBHOOK_SENDER, { by: null, at: this.#deps.clock.now() });
    });
  }

  /** Drops the oldest messages beyond `queueSize`, each with a line in the log; whether any went. */
  async #trim(jobs: ReadCollection<StoredWebhookJob>): Promise<boolean> {
    const { queueSize } = this.#deps.limits;
    const over = (await jobs.count()) - queueSize;
    if (over <= 0) return false;
    const oldest = await jobs.findByPrefix(BY_QUEUE_ORDER, '', over);
    for (const dropped of oldest) {
      await this.#remove(dropped);
      this.#deps.log.warn(
        { what: dropped.what, queueSize },
        'webhook queue full: dropped its oldest message',
      );
    }
    return true;
  }

  /** One try of `job`: then it is delivered, given up, dropped (its event turned off) or waits for its next try. */
  async #tryOnce(job: StoredWebhookJob): Promise<void> {
    const { limits, log, clock } = this.#deps;
    const settings = await this.#deps.readSettings();
    if (settings.url === null || !settings[job.event]) return this.#remove(job);
    const result = await postWebhook(settings.url, job.message, {
      timeoutMs: limits.timeoutMs,
      stop: this.#stop.signal,
    });
    if (this.#stop.signal.aborted) {
      log.warn({ what: job.what }, 'a webhook message was not sent: the host closed; it stays queued');
      return;
    }
    const attempt = job.attempts + 1;
    const wait = result.ok ? 0 : (result.retryAfterMs ?? this.#backoff(attempt));
    const final =
      result.ok || !result.retry || attempt >= limits.maxAttempts || wait > limits.retryAfterMaxMs;
    await this.#keep(settings.url, job.what, attempt, result, final);
    if (final) await this.#remove(job);
    else await this.#update(job, { attempts: attempt, notBefore: clock.now() + wait });
    if (result.ok) return;
    const context = { what: job.what, content: job.message.content, url: maskWebhookUrl(settings.url) };
    if (final) {
      log.error({ ...context, attempts: attempt, detail: result.detail }, 'a webhook message was given up');
    } else {
      log.warn(
        { ...context, attempt, detail: result.detail, retryInMs: wait },
        'a webhook message will be retried',
      );
    }
  }

  async #remove(job: StoredWebhookJob): Promise<void> {
    await this.#deps.store.tx(async (t) => {
      const repo = t.repo<StoredWebhookJob>(WEBHOOK_OUTBOX);
      if (await repo.has(job.id)) await repo.remove(job.id);
    });
  }

  async #update(
    job: StoredWebhookJob,
    change: Pick<StoredWebhookJob, 'attempts' | 'notBefore'>,
  ): Promise<void> {
    await this.#deps.store.tx(async (t) => {
      const repo = t.repo<StoredWebhookJob>(WEBHOOK_OUTBOX);
      const current = await repo.get(job.id);
      if (current) repo.put(job.id, { ...current, ...change });
    });
  }

  /** base·2^(n−1), capped, less up to half of it at random so that retries from many messages do not bunch. */
  #backoff(attempt: number): number {
    const { retryBaseMs, retryMaxMs } = this.#deps.limits;
    const full = Math.min(retryMaxMs, retryBaseMs * 2 ** (attempt - 1));
    return Math.round(full * (0.5 + Math.random() / 2));
  }

  #poke(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Waits `ms`, or less when woken (a change to the queue) or closing. */
  async #pause(ms: number): Promise<void> {
    if (this.#closing || this.#woken) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
    this.#wake = null;
  }

  async #keep(
    url: string,
    what: string,
    attempts: number,
    result: Attempt,
    final: boolean,
  ): Promise<WebhookDeliveryDto> {
    const detail = result.ok || final ? result.detail : `${result.detail}; trying again`;
    const delivery = { ok: result.ok, at: unixSeconds(this.#deps.clock), what, attempts, detail };
    await this.#deps.keepLast(url, delivery);
    return delivery;
  }
}
