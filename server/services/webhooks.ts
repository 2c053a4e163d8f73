import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { maskWebhookUrl, type WebhookDeliveryDto, type WebhookSettingsDto } from '../protocol/webhooks.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { ModerationRecorded, ServiceDeps } from './context.js';
import { moderationMessage, signupMessage, testMessage } from './webhook-messages.js';
import { WebhookQueue, type WebhookJob } from './webhook-queue.js';
import { createWebhookSettings, type WebhookSettingsPatch } from './webhook-settings.js';

export interface WebhooksDeps extends Pick<ServiceDeps, 'config' | 'clock' | 'events' | 'store' | 'ids'> {
  log: Logger;
  /** The `host:port`s this host answers on: a webhook URL pointing back at the host is refused. */
  localHosts(): string[];
}

/**
 * Outgoing notifications (issue 28). Moderation actions and new accounts this host committed reach it as HostEvents,
 * emitted after the commit and only by the host that made it, so a change another host of the community made is
 * never sent twice. The listeners only queue (webhook-queue.ts sends in the background): an action never waits
 * for the webhook, and a webhook that is down never fails one.
 */
export function createWebhooks(deps: WebhooksDeps) {
  const { clock, events, log } = deps;
  const settings = createWebhookSettings(deps);
  const queue = new WebhookQueue({
    limits: deps.config.webhooks,
    clock,
    log,
    readSettings: () => settings.read(),
    keepLast: (url, delivery) =>
      settings
        .keepLast(url, delivery)
        .catch((error: unknown) =>
          log.warn({ err: error, what: delivery.what }, 'could not keep how a webhook try went'),
        ),
  });

  function enqueue(make: () => WebhookJob): void {
    try {
      queue.push(make());
    } catch (error) {
      // A listener runs among the action's after-commit effects: whatever goes wrong here stays here.
      log.error({ err: error }, 'could not queue a webhook message');
    }
  }
  const onModeration = ({ entry }: { entry: ModerationRecorded }): void =>
    enqueue(() => ({
      event: 'moderation',
      what: `${entry.action} of ${entry.targetUserId} by ${entry.moderatorId}`,
      message: moderationMessage(entry),
    }));
  const onAccount = ({ user }: { user: StoredUser }): void =>
    enqueue(() => ({
      event: 'signups',
      what: `sign-up of ${user.Id}`,
      message: signupMessage(user, clock.now()),
    }));
  events.on('moderationRecorded', onModeration);
  events.on('accountCreated', onAccount);

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

    async close(): Promise<void> {
      events.off('moderationRecorded', onModeration);
      events.off('accountCreated', onAccount);
      await queue.close();
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooks>;
