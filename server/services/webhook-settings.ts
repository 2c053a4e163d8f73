import { ErrorCode } from '../protocol/errors.js';
import { webhookUrlProblem, type WebhookDeliveryDto, type WebhookEvent } from '../protocol/webhooks.js';
import { AppError } from '../errors.js';
import { SETTINGS } from '../store/settings.js';
import type { StoredUser } from '../store/users.js';
import { appendStaffEntry } from './audit-log.js';
import { unixSeconds, type ServiceDeps } from './context.js';

/** The settings record holding the webhook (one record of the settings collection, beside `host`). */
export const WEBHOOK_SETTING = 'webhook';
/** The settings record holding how the community's newest try went, whichever host made it. */
export const WEBHOOK_LAST = 'webhook-last';

/** As stored: the URL in full (it is needed to send), which no answer to a client ever holds. */
export interface WebhookSettingsRecord {
  url: string | null;
  moderation: boolean;
  signups: boolean;
  /** Unix seconds of the last change, and who made it. */
  changedAt?: number;
  changedBy?: string;
}

export type WebhookSettingsPatch = { url?: string | null } & Partial<Record<WebhookEvent, boolean>>;

/** Until the owner chooses, a URL once set gets both kinds of events. */
const DEFAULTS: WebhookSettingsRecord = { url: null, moderation: true, signups: true };

/** `host:port` of `url`, the port spelled out (so `http://h/` and `h:80` compare equal). */
function hostAndPort(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return `${url.hostname.toLowerCase()}:${port}`;
}

/**
 * Reads and changes the webhook's settings. Read afresh for every message, so a URL removed on one host of a
 * community is not used by another a moment later (the settings are one record: a read is cheap).
 */
export function createWebhookSettings(
  deps: Pick<ServiceDeps, 'store' | 'clock' | 'ids'> & {
    /** The `host:port`s this host answers on: a webhook pointing back at the host itself is refused. */
    localHosts(): string[];
  },
) {
  const { store, clock } = deps;
  const settings = store.collection<WebhookSettingsRecord>(SETTINGS);

  /** Throws the field error for a URL the host will not send to. */
  function checkUrl(url: string): void {
    const problem = webhookUrlProblem(url);
    if (problem) {
      throw new AppError(ErrorCode.INVALID_PARAMETERS, `Invalid parameters! The webhook URL ${problem}.`, {
        url: problem,
      });
    }
    const target = hostAndPort(new URL(url));
    const self = deps.localHosts().flatMap((h) => {
      // A bind address such as `:::5180` (IPv6 any) is no URL host: it names nothing a webhook could point at.
      try {
        return [hostAndPort(new URL(`http://${h}`))];
      } catch {
        return [];
      }
    });
    if (self.includes(target)) {
      throw new AppError(
        ErrorCode.INVALID_PARAMETERS,
        'Invalid parameters! The webhook URL points at this host itself.',
        { url: 'must not point at this host itself' },
      );
    }
  }

  return {
    async read(): Promise<WebhookSettingsRecord> {
      return (await settings.get(WEBHOOK_SETTING)) ?? DEFAULTS;
    },

    /** Applies `patch` (`url` "" or null removes it); returns the settings as saved. */
    async change(patch: WebhookSettingsPatch, by: StoredUser): Promise<WebhookSettingsRecord> {
      const url = patch.url === undefined ? undefined : patch.url === null ? null : patch.url.trim() || null;
      if (url) checkUrl(url);
      return store.tx(async (t) => {
        const repo = t.repo<WebhookSettingsRecord>(SETTINGS);
        const current = (await repo.get(WEBHOOK_SETTING)) ?? DEFAULTS;
        const saved = repo.put(WEBHOOK_SETTING, {
          url: url === undefined ? current.url : url,
          moderation: patch.moderation ?? current.moderation,
          signups: patch.signups ?? current.signups,
          changedAt: unixSeconds(clock),
          changedBy: by.Id,
        });
        // The URL is a secret (it often carries a token): the log says only whether it is set and changed.
        const fields = {
          configured: saved.url !== null,
          urlChanged: saved.url !== current.url,
          moderation: saved.moderation,
          signups: saved.signups,
        };
        const target = { targetId: 'webhook', targetName: 'Webhook' };
        await appendStaffEntry(t, deps, by.Id, 'changewebhook', target, fields);
        // The last delivery went to the old address: it says nothing about the new one.
        if (fields.urlChanged) await t.repo(SETTINGS).remove(WEBHOOK_LAST);
        return saved;
      });
    },

    /** How the community's newest try went (test or message), whichever host made it; null before any. */
    async last(): Promise<WebhookDeliveryDto | null> {
      return (await store.collection<WebhookDeliveryDto>(SETTINGS).get(WEBHOOK_LAST)) ?? null;
    },

    /**
     * Keeps `delivery` as the newest try, unless the URL it went to is no longer the one set (it says nothing about
     * the new one) or another host kept a newer one meanwhile.
     */
    async keepLast(url: string, delivery: WebhookDeliveryDto): Promise<void> {
      await store.tx(async (t) => {
        const current = await t.repo<WebhookSettingsRecord>(SETTINGS).get(WEBHOOK_SETTING);
        if (current?.url !== url) return;
        const repo = t.repo<WebhookDeliveryDto>(SETTINGS);
        const kept = await repo.get(WEBHOOK_LAST);
        if (!kept || kept.at <= delivery.at) repo.put(WEBHOOK_LAST, delivery);
      });
    },
  };
}

export type WebhookSettings = ReturnType<typeof createWebhookSettings>;
