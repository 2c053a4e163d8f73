import { Rank } from '../../../server/protocol/enums.js';
import { TIME_END_MAX, type ModerationAction } from '../../../server/protocol/schemas.js';
import { BAN_UNTIL_LIFTED, isUntilLifted } from '../../../server/protocol/audit.js';
import type { BanStatusDto, WarnStatusDto } from '../../../server/protocol/types.js';
import { rankLabel } from '../../shared/ranks.js';
import { formatDateTime } from '../../shared/time.js';

/** The moderation view of a user, as `moderation`, `moderationLookup` and log entries carry it. */
export interface ModerationState {
  Id: string;
  Username: string;
  Rank: Rank;
  Badges: string[];
  BanStatus: BanStatusDto;
  BanCount: number;
  WarnStatus: WarnStatusDto;
  WarnCount: number;
  /** A ban in force now (BanStatus.isBanned with its end still ahead). */
  isBanned: boolean;
}

export interface LogEntry {
  id: string;
  time: number;
  moderatorId: string;
  moderatorName: string;
  action: ModerationAction;
  targetUserId: string;
  targetName: string;
  fields: Record<string, unknown>;
  before: ModerationState;
  after: ModerationState;
}

export interface LookupUser extends ModerationState {
  RecentActions: LogEntry[];
}

export interface Caller {
  Id: string;
  Rank: Rank;
}

export function rankName(rank: number): string {
  return rankLabel(rank);
}

/** Why the caller may not act on `target`, or null when they may (strictly higher rank, never themselves). */
export function whyNotModeratable(
  caller: Caller,
  target: Pick<ModerationState, 'Id' | 'Rank' | 'Username'>,
): string | null {
  if (caller.Rank < Rank.Moderator) return 'Moderation needs rank Moderator or higher.';
  if (caller.Id === target.Id) return 'This is you. Nobody can moderate themselves.';
  if (target.Rank >= caller.Rank) {
    const relation = target.Rank === caller.Rank ? 'the same rank as you' : 'ranked above you';
    return `${target.Username} is ${rankName(target.Rank)}, ${relation}. You can act only on users ranked below you (${rankName(caller.Rank)}).`;
  }
  return null;
}

/** Ranks the caller may give `target`: strictly below the caller's own, other than the target's current one. */
export function grantableRanks(callerRank: Rank, targetRank: Rank): Rank[] {
  const out: Rank[] = [];
  for (let rank = Rank.Guest; rank < callerRank; rank++) {
    if (rank !== targetRank) out.push(rank as Rank);
  }
  return out;
}

export const BAN_PRESETS = [
  { id: '1h', label: '1 hour', seconds: 3600 },
  { id: '1d', label: '1 day', seconds: 86_400 },
  { id: '7d', label: '7 days', seconds: 7 * 86_400 },
  { id: '30d', label: '30 days', seconds: 30 * 86_400 },
  { id: 'lifted', label: 'Until lifted', seconds: null },
  { id: 'custom', label: 'Custom date', seconds: null },
] as const;
export type BanPreset = (typeof BAN_PRESETS)[number]['id'];

/**
 * The ban's end in Unix seconds for a preset or a custom `datetime-local` value (read in the viewer's time zone),
 * or the reason it cannot be used.
 */
export function banEnd(
  preset: BanPreset,
  nowMs: number,
  customLocal: string,
): { timeEnd: number } | { problem: string } {
  const found = BAN_PRESETS.find((p) => p.id === preset);
  if (found && found.seconds !== null) return { timeEnd: Math.floor(nowMs / 1000) + found.seconds };
  // No end: the largest BanEnd the protocol allows, which real clients read as banned (server/protocol/audit.ts).
  if (preset === 'lifted') return { timeEnd: BAN_UNTIL_LIFTED };
  if (customLocal.trim() === '') return { problem: 'Pick the date and time the ban ends' };
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(customLocal.trim());
  if (!match) return { problem: 'Enter a date and time' };
  const [, y, mo, d, h, mi, s] = match;
  const date = new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s ?? '0'));
  if (Number.isNaN(date.getTime())) return { problem: 'Enter a valid date and time' };
  const timeEnd = Math.floor(date.getTime() / 1000);
  if (timeEnd * 1000 <= nowMs) return { problem: 'The end must be in the future' };
  if (timeEnd > TIME_END_MAX) {
    return { problem: `The end must be on or before ${formatDateTime(TIME_END_MAX)}` };
  }
  return { timeEnd };
}

/** `datetime-local` value for a moment, in the viewer's time zone (for the picker's min/max and default). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export const ACTION_LABELS: Record<ModerationAction, string> = {
  addbadge: 'Badge added',
  removebadge: 'Badge removed',
  setrank: 'Rank changed',
  warnuser: 'Warned',
  unwarnuser: 'Warning lifted',
  banuser: 'Banned',
  unbanuser: 'Unbanned',
  deleteavatar: 'Avatar deleted',
  deleteworld: 'World deleted',
  deletefile: 'File deleted',
};

/** "until lifted" for a ban with no end, else "until <date>". */
export function banUntilText(timeEnd: number): string {
  return isUntilLifted(timeEnd) ? 'until lifted' : `until ${formatDateTime(timeEnd)}`;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}

/** One line saying what a log entry changed, e.g. "Registered → Verified" or "until Mon, … · Spam". */
export function describeEntry(entry: LogEntry): string {
  const f = entry.fields;
  switch (entry.action) {
    case 'addbadge':
    case 'removebadge':
      return `“${text(f.badgeName)}”`;
    case 'setrank':
      return `${rankName(entry.before.Rank)} → ${rankName(entry.after.Rank)}`;
    case 'warnuser':
      return [text(f.warnReason), text(f.warnDescription)].filter(Boolean).join(' · ');
    case 'banuser': {
      const end = typeof f.timeEnd === 'number' ? banUntilText(f.timeEnd) : '';
      return [end, text(f.banReason)].filter(Boolean).join(' · ');
    }
    case 'deleteavatar':
      return text(f.avatarId);
    case 'deleteworld':
      return text(f.worldId);
    case 'deletefile':
      return text(f.fileId);
    case 'unbanuser':
    case 'unwarnuser':
      return '';
  }
}
