import { z } from 'zod';
import { AuthRequest } from './schemas.js';

/**
 * Outgoing notifications (issue 28): one webhook URL, Discord-compatible, set by the owner and admins on the Host
 * screen. Anyone holding the URL can post to its channel, so it is a secret: the host keeps it and only ever shows
 * it masked. The URL rules live here, the same on the server and in the UI.
 */

/** Discord's webhook URLs are about 120 characters; this leaves room for any other receiver. */
export const WEBHOOK_URL_MAX = 2048;

/** What a webhook can be told about. */
export const WEBHOOK_EVENTS = ['moderation', 'signups'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Why `url` cannot be the webhook URL, or null when it can (the host also refuses its own address). */
export function webhookUrlProblem(url: string): string | null {
  if (url.length > WEBHOOK_URL_MAX) return `must be at most ${WEBHOOK_URL_MAX} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be a full address starting with https:// or http://';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return 'must start with https:// or http://';
  // A password in the URL would be sent in the clear to whoever logs requests on the way, and shown nowhere.
  if (parsed.username !== '' || parsed.password !== '') return 'must not hold a user name or password';
  if (parsed.hostname === '') return 'must name a host';
  return null;
}

/**
 * The URL as clients see it: scheme and host, then the last 4 characters of the rest when the rest is long
 * enough that those 4 give nothing away (a Discord token is 68 characters).
 */
export function maskWebhookUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '…';
  }
  const rest = `${parsed.pathname}${parsed.search}${parsed.hash}`;
  return `${parsed.protocol}//${parsed.host}/…${rest.length >= 16 ? rest.slice(-4) : ''}`;
}

const webhookUrl = z
  .string()
  .trim()
  .superRefine((value, ctx) => {
    const problem = value === '' ? null : webhookUrlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * `POST webhookSettings` (owner and admins): reads the settings, and changes those given. `url`: a new address;
 * `""` or null removes it; absent keeps the current one (which clients never see in full).
 */
export const WebhookSettingsRequest = AuthRequest.extend({
  url: webhookUrl.nullable().optional(),
  moderation: z.boolean().optional(),
  signups: z.boolean().optional(),
});
export type WebhookSettingsRequest = z.infer<typeof WebhookSettingsRequest>;

/** `POST testWebhook` (owner and admins): sends a test message to the saved URL now and answers how it went. */
export const TestWebhookRequest = AuthRequest;

/** How the last message this host sent went. */
export interface WebhookDeliveryDto {
  ok: boolean;
  /** Unix seconds of the last attempt. */
  at: number;
  /** What was sent: a test, a moderation action (e.g. "banuser"), or a sign-up. */
  what: string;
  attempts: number;
  /** "HTTP 204" when it went through; otherwise why not, e.g. "connection refused", "HTTP 404", "timed out". */
  detail: string;
}

export interface WebhookSettingsDto {
  configured: boolean;
  /** e.g. `https://discord.com/…x9Qa`; null when no URL is set. */
  maskedUrl: string | null;
  events: Record<WebhookEvent, boolean>;
  /** The last delivery this host made (since it started), or null. */
  lastDelivery: WebhookDeliveryDto | null;
}
