import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { HostConfig } from '../config.js';
import { maskWebhookUrl, type WebhookDeliveryDto, type WebhookEvent } from '../protocol/webhooks.js';
import { unixSeconds, type Clock } from './context.js';
import { postWebhook, type Attempt } from './webhook-delivery.js';
import type { WebhookMessage } from './webhook-messages.js';
import type { WebhookSettingsRecord } from './webhook-settings.js';

/** A message waiting to be sent: which setting lets it go, and what it is, for the log. */
export interface WebhookJob {
  event: WebhookEvent;
  /** e.g. "banuser of user_… by user_…", "sign-up of user_…". */
  what: string;
  message: WebhookMessage;
}

export interface WebhookQueueDeps {
  limits: HostConfig['webhooks'];
  clock: Clock;
  log: Logger;
  /** The settings as they are now (read for every try: a URL removed meanwhile stops the message). */
  readSettings(): Promise<WebhookSettingsRecord>;
  /**
   * Keeps how a try to `url` went where every host of the community reads it (never rejects: a failure to keep it
   * is logged there, and the delivery goes on).
   */
  keepLast(url: string, delivery: WebhookDeliveryDto): Promise<void>;
}

/**
 * The webhook's messages in a bounded queue (when full, the oldest is dropped with a line in the log) and the one
 * sender that posts them in order, in the background: tries each up to `maxAttempts` times with exponential backoff,
 * waits what an HTTP 429 asks, gives a message up for good on a refusal (4xx), and logs every failure with what was
 * being sent. Nothing here is awaited by whoever queues a message.
 */
export class WebhookQueue {
  readonly #deps: WebhookQueueDeps;
  readonly #queue: WebhookJob[] = [];
  /** Aborted at close: a POST in flight and a wait before a retry end at once. */
  readonly #stop = new AbortController();
  #closing = false;
  #sender: Promise<void> | null = null;

  constructor(deps: WebhookQueueDeps) {
    this.#deps = deps;
  }

  /** Queues `job` and returns at once; the sender starts if it is not running. */
  push(job: WebhookJob): void {
    if (this.#closing) return;
    const { queueSize } = this.#deps.limits;
    if (this.#queue.length >= queueSize) {
      const dropped = this.#queue.shift()!;
      this.#deps.log.warn(
        { what: dropped.what, queueSize },
        'webhook queue full: dropped its oldest message',
      );
    }
    this.#queue.push(job);
    this.#startSender();
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
    return this.#record(url, what, 1, result, true);
  }

  /** Takes no more; what is being sent gets `closeGraceMs` to finish; the rest is logged and dropped. */
  async close(): Promise<void> {
    this.#closing = true;
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
    if (this.#queue.length > 0) {
      this.#deps.log.warn(
        { dropped: this.#queue.map((job) => job.what) },
        'webhook messages not sent: the host closed',
      );
      this.#queue.length = 0;
    }
  }

  #startSender(): void {
    if (this.#sender) return;
    this.#sender = this.#sendAll()
      .catch((error: unknown) => this.#deps.log.error({ err: error }, 'the webhook sender failed'))
      .finally(() => {
        this.#sender = null;
        if (this.#queue.length > 0 && !this.#stop.signal.aborted) this.#startSender();
      });
  }

  async #sendAll(): Promise<void> {
    for (let job = this.#queue.shift(); job; job = this.#queue.shift()) {
      const current = job;
      await this.#deliver(current).catch((error: unknown) =>
        this.#deps.log.error(
          { err: error, what: current.what },
          'a webhook message was dropped: sending it failed',
        ),
      );
    }
  }

  /** Tries `job` until it is delivered, refused for good, out of tries, or the host closes. */
  async #deliver(job: WebhookJob): Promise<void> {
    const { limits, log } = this.#deps;
    for (let attempt = 1; ; attempt++) {
      const settings = await this.#deps.readSettings();
      if (settings.url === null || !settings[job.event]) return;
      const result = await postWebhook(settings.url, job.message, {
        timeoutMs: limits.timeoutMs,
        stop: this.#stop.signal,
      });
      if (this.#stop.signal.aborted) {
        log.warn({ what: job.what }, 'a webhook message was not sent: the host closed');
        return;
      }
      const wait = result.ok ? 0 : (result.retryAfterMs ?? this.#backoff(attempt));
      const final =
        result.ok ||
        !result.retry ||
        this.#closing ||
        attempt >= limits.maxAttempts ||
        wait > limits.retryAfterMaxMs;
      await this.#record(settings.url, job.what, attempt, result, final);
      if (result.ok) return;
      const context = { what: job.what, content: job.message.content, url: maskWebhookUrl(settings.url) };
      if (final) {
        log.error({ ...context, attempts: attempt, detail: result.detail }, 'a webhook message was given up');
        return;
      }
      log.warn(
        { ...context, attempt, detail: result.detail, retryInMs: wait },
        'a webhook message will be retried',
      );
      if (!(await this.#pause(wait))) return;
    }
  }

  /** base·2^(n−1), capped, less up to half of it at random so that retries from many messages do not bunch. */
  #backoff(attempt: number): number {
    const { retryBaseMs, retryMaxMs } = this.#deps.limits;
    const full = Math.min(retryMaxMs, retryBaseMs * 2 ** (attempt - 1));
    return Math.round(full * (0.5 + Math.random() / 2));
  }

  /** Waits `ms`; false when the host closed meanwhile. */
  async #pause(ms: number): Promise<boolean> {
    try {
      await sleep(ms, undefined, { signal: this.#stop.signal });
      return true;
    } catch {
      return false;
    }
  }

  async #record(
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
