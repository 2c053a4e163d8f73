import type { WebhookEvent } from '../protocol/webhooks.js';
import type { HostStore, Tx } from '../store/seam.js';
import { SETTINGS } from '../store/settings.js';
import type { StoredUser } from '../store/users.js';
import type { Clock, Ids, ModerationRecorded, WebhookOutbox } from './context.js';
import { moderationMessage, signupMessage, type WebhookMessage } from './webhook-messages.js';
import { WEBHOOK_SETTING, type WebhookSettingsRecord } from './webhook-settings.js';

/** The store collection of webhook messages waiting to be sent: the community's queue, whichever host sends. */
export const WEBHOOK_OUTBOX = 'webhookoutbox';
/** Unique index of the queue's order: the time a message was queued (ms, zero-padded), then its id. */
export const BY_QUEUE_ORDER = 'order';

/** A message as queued: what it is and which setting lets it go, with how its tries went so far. */
export interface StoredWebhookJob {
  id: string;
  order: string;
  event: WebhookEvent;
  /** e.g. "banuser of user_… by user_…", "sign-up of user_…" (for the log and the Host screen). */
  what: string;
  message: WebhookMessage;
  /** Unix ms. */
  queuedAt: number;
  /** Tries made so far. */
  attempts: number;
  /** Unix ms before which it is not tried again (a retry's wait). */
  notBefore: number;
}

export interface WebhookOutboxDeps {
  store: HostStore;
  clock: Clock;
  ids: Ids;
}

/**
 * Puts webhook messages in the store in the commit of what they tell (a moderation action, a sign-up), so a message
 * is queued exactly when its action is acknowledged: a host that dies before sending it leaves it to the next sender
 * (webhook-queue.ts), on any host of the community. Nothing is queued while no URL is set or its event is off.
 */
export function createWebhookOutbox(deps: WebhookOutboxDeps): WebhookOutbox {
  const { store, clock, ids } = deps;
  store.collection<StoredWebhookJob>(WEBHOOK_OUTBOX).addIndex(BY_QUEUE_ORDER, (job) => job.order);

  async function stage(t: Tx, event: WebhookEvent, what: string, message: () => WebhookMessage) {
    // Read in the commit: a URL set or removed meanwhile makes the commit run again (with what it says then).
    const settings = await t.repo<WebhookSettingsRecord>(SETTINGS).get(WEBHOOK_SETTING);
    if (!settings?.url || !settings[event]) return;
    const id = ids.id('webhook');
    const queuedAt = clock.now();
    const order = `${String(queuedAt).padStart(15, '0')}_${id}`;
    const job = { id, order, event, what, message: message(), queuedAt, attempts: 0, notBefore: 0 };
    t.repo<StoredWebhookJob>(WEBHOOK_OUTBOX).put(id, job);
  }

  return {
    moderation(t: Tx, entry: ModerationRecorded): Promise<void> {
      const what = `${entry.action} of ${entry.targetUserId} by ${entry.moderatorId}`;
      return stage(t, 'moderation', what, () => moderationMessage(entry));
    },
    signup(t: Tx, user: StoredUser): Promise<void> {
      return stage(t, 'signups', `sign-up of ${user.Id}`, () => signupMessage(user, clock.now()));
    },
  };
}
