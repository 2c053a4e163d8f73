import { RANK_NAMES, type Rank } from '../protocol/enums.js';
import type { ModerationAction } from '../protocol/schemas.js';
import type { ModerationRecorded } from './context.js';

/**
 * The messages the webhook sends (issue 28), as Discord's "execute webhook" takes them: a line of `content` and one
 * embed. Other receivers that speak Discord's format (Guilded, Matrix bridges...) take the same JSON. Nothing here
 * sends anything: these are pure functions from an event to its message.
 */

export interface WebhookEmbed {
  title: string;
  description?: string;
  color: number;
  fields: Array<{ name: string; value: string; inline?: boolean }>;
  /** ISO 8601, as Discord wants it. */
  timestamp: string;
  footer: { text: string };
}

export interface WebhookMessage {
  content: string;
  embeds: WebhookEmbed[];
  /** Empty: nothing in the message may ping anyone, whatever a moderator typed in a reason (@everyone...). */
  allowed_mentions: { parse: never[] };
}

// Discord's limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits).
const CONTENT_MAX = 2000;
const TITLE_MAX = 256;
const FIELD_VALUE_MAX = 1024;

const FOOTER = 'Hypernex Companion';
const RED = 0xd83c3e;
const AMBER = 0xe8a33d;
const GREEN = 0x3ba55d;
const BLUE = 0x5865f2;
const GREY = 0x80848e;

/**
 * `text` shown as typed: Discord's markdown characters escaped, and every `@` followed by a zero-width space so
 * neither a name nor a reason can look like (or, with allowed_mentions left empty, be) a mention.
 */
export function plain(text: string): string {
  return text
    .replace(/[\\*_~`|<>[\]()#]/g, '\\$&')
    .replace(/^(\s*)-/gm, '$1\\-')
    .replace(/@/g, '@\u200b');
}

/** `text` cut to `max` characters, with an ellipsis when it was longer. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** An id in a code span, where markdown does not apply (and backslashes would show): only a backtick could end it. */
function code(id: string): string {
  return `\`${id.replace(/`/g, "'")}\``;
}

/** A user as a field shows them: the name in bold, the id under it. */
function who(name: string, id: string): string {
  return `**${plain(name)}**\n${code(id)}`;
}

function field(name: string, value: string, inline = false): WebhookEmbed['fields'][number] {
  return { name, value: clip(value === '' ? '(none)' : value, FIELD_VALUE_MAX), inline };
}

function utc(unixSeconds: number): string {
  return `${new Date(unixSeconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const ACTIONS: Record<ModerationAction, { title: string; verb: string; color: number }> = {
  addbadge: { title: 'Badge given', verb: 'gave a badge to', color: BLUE },
  removebadge: { title: 'Badge taken away', verb: 'took a badge from', color: GREY },
  setrank: { title: 'Rank changed', verb: 'changed the rank of', color: BLUE },
  warnuser: { title: 'User warned', verb: 'warned', color: AMBER },
  unwarnuser: { title: 'Warning lifted', verb: 'lifted the warning of', color: GREEN },
  banuser: { title: 'User banned', verb: 'banned', color: RED },
  unbanuser: { title: 'Ban lifted', verb: 'lifted the ban of', color: GREEN },
  deleteavatar: { title: 'Avatar removed', verb: 'removed an avatar of', color: RED },
  deleteworld: { title: 'World removed', verb: 'removed a world of', color: RED },
  deletefile: { title: 'File removed', verb: 'removed a file of', color: RED },
};

const rankName = (rank: number): string => RANK_NAMES[rank as Rank] ?? String(rank);
const str = (value: unknown): string => (typeof value === 'string' ? value : String(value ?? ''));

/** The fields particular to an action: its reason, badge, rank or removed content. */
function actionFields(entry: ModerationRecorded): WebhookEmbed['fields'] {
  const f = entry.fields;
  switch (entry.action) {
    case 'addbadge':
    case 'removebadge':
      return [field('Badge', plain(str(f.badgeName)))];
    case 'setrank':
      return [field('Rank', `${rankName(entry.before.Rank)} → ${rankName(entry.after.Rank)}`)];
    case 'warnuser':
      return [field('Reason', plain(str(f.warnReason))), field('Details', plain(str(f.warnDescription)))];
    case 'banuser':
      return [
        field('Reason', plain(str(f.banReason))),
        field('Details', plain(str(f.banDescription))),
        field('Until', utc(Number(f.timeEnd)), true),
      ];
    case 'deleteavatar':
      return [field('Avatar', code(str(f.avatarId)))];
    case 'deleteworld':
      return [field('World', code(str(f.worldId)))];
    case 'deletefile':
      return [field('File', code(str(f.fileId)))];
    case 'unwarnuser':
    case 'unbanuser':
      return [];
  }
}

/** The message for a moderation action, e.g. "**mod** banned **someone**" with the reason and the end. */
export function moderationMessage(entry: ModerationRecorded): WebhookMessage {
  const action = ACTIONS[entry.action];
  return {
    content: clip(
      `**${plain(entry.moderatorName)}** ${action.verb} **${plain(entry.targetName)}**`,
      CONTENT_MAX,
    ),
    embeds: [
      {
        title: clip(action.title, TITLE_MAX),
        color: action.color,
        fields: [
          field('Moderator', who(entry.moderatorName, entry.moderatorId), true),
          field('User', who(entry.targetName, entry.targetUserId), true),
          ...actionFields(entry),
        ],
        timestamp: new Date(entry.time * 1000).toISOString(),
        footer: { text: `${FOOTER} · moderation log ${entry.id}` },
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

/** The message for a new account. */
export function signupMessage(
  user: { Id: string; Username: string; Rank: Rank },
  atMs: number,
): WebhookMessage {
  return {
    content: `New account: **${plain(user.Username)}**`,
    embeds: [
      {
        title: 'New account',
        color: GREEN,
        fields: [
          field('User', who(user.Username, user.Id), true),
          field('Rank', RANK_NAMES[user.Rank], true),
        ],
        timestamp: new Date(atMs).toISOString(),
        footer: { text: FOOTER },
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

/** The Host screen's "Send test": says which events the webhook gets. */
export function testMessage(
  events: { moderation: boolean; signups: boolean },
  byName: string,
  atMs: number,
): WebhookMessage {
  const list = [events.moderation ? 'moderation actions' : null, events.signups ? 'new accounts' : null]
    .filter((e): e is string => e !== null)
    .join(' and ');
  return {
    content: `Test message from Hypernex Companion, sent by **${plain(byName)}**.`,
    embeds: [
      {
        title: 'Webhook test',
        description: list === '' ? 'No events are chosen yet.' : `This channel will hear of ${list}.`,
        color: GREY,
        fields: [],
        timestamp: new Date(atMs).toISOString(),
        footer: { text: FOOTER },
      },
    ],
    allowed_mentions: { parse: [] },
  };
}
