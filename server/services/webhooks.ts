import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { maskWebhookUrl, type WebhookDeliveryDto, type WebhookSettingsDto } from '../protocol/webhooks.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { ServiceDeps } from './context.js';
import { testMessage } from './webhook-messages.js';
import { WebhookQueue } from './webhook-queue.js';
import { createWebhookSettings, type WebhookSettingsPatch } from './webhook-settings.js';

export interface WebhooksDeps extends Pick<ServiceDeps, 'config' | 'clock' | 'store' | 'ids'> {
  log: Logger;
  /** The `host:port`s this host answers on: a webhook URL pointing back at the host is refused. */
  localHosts(): string[];
}

/**
 * Outgoing notifications (issue 28). Moderation actions and new accounts put their message in the store's queue in
 * their own commit (webhook-outbox.ts), once per action in the community whichever host ran it; the queue's sender
 * (webhook-queue.ts) posts them in the background once `startSending` is called (a served host: the command line's
 * one-off commands leave their messages to it). An action never waits for the webhook, and a webhook that is down
 * never fails one.
 */
export function createWebhooks(deps: WebhooksDeps) {
  const { clock, log } = deps;
  const settings = createWebhookSettings(deps);
  const queue = new WebhookQueue({
    limits: deps.config.webhooks,
    clock,
    log,
    store: deps.store,
    shared: deps.config.database !== null,
    readSettings: () => settings.read(),
    keepLast: (url, delivery) =>
      settings
        .keepLast(url, delivery)
        .catch((error: unknown) =>
          log.warn({ err: error, what: delivery.what }, 'could not keep how a webhook try went'),
        ),
  });

  async function view(): Promise<WebhookSettingsDto> {
    const current = await settings.read();
    return {
      configured: current.url !== null,
      maskedUrl: current.url === null ? null : maskWebhookUrl(current.url),
      events: { moderation: current.moderation, signups: current.signups },
      lastDelivery: await settings.last(),
    };
  }

  return {
    /** The settings as clients may see them: the URL masked, never whole. */
    view,

    async change(patch: WebhookSettingsPatch, by: StoredUser): Promise<WebhookSettingsDto> {
      const before = await settings.read();
      const saved = await settings.change(patch, by);
      const urlChanged = saved.url !== before.url;
      log.info({ by: by.Id, configured: saved.url !== null, urlChanged }, 'webhook settings changed');
      return view();
    },

    /** Sends a test message to the saved URL now (one try, outside the queue) and answers how it went. */
    async sendTest(by: StoredUser): Promise<WebhookDeliveryDto> {
      const current = await settings.read();
      if (current.url === null) {
        throw new AppError(ErrorCode.WEBHOOK_NOT_SET, 'No webhook URL is set: save one first.', {
          url: 'is not set',
        });
      }
      return queue.sendNow(current.url, 'test', testMessage(current, by.Username, clock.now()));
    },

    /** Sends what is queued, now and as it is queued (a served host). */
    startSending(): void {
      queue.start();
    },

    async close(): Promise<void> {
      await queue.close();
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooks>;
