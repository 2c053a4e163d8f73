import { ErrorCode } from '../protocol/errors.js';
import { Rank, RANK_NAMES } from '../protocol/enums.js';
import {
  BADGES_MAX,
  MOD_DESCRIPTION_MAX,
  MOD_REASON_MAX,
  normaliseBadge,
  TIME_END_MAX,
  type ModerationAction,
} from '../protocol/schemas.js';
import { AppError } from '../errors.js';
import type { BanStatusDto, WarnStatusDto } from '../protocol/types.js';
import type { StoredUser } from '../store/users.js';
import { unixSeconds, type Clock } from './context.js';

/** The part of a user that moderation reads and changes. */
export interface ModerationState {
  Id: string;
  Username: string;
  Rank: Rank;
  Badges: string[];
  BanStatus: BanStatusDto;
  BanCount: number;
  WarnStatus: WarnStatusDto;
  WarnCount: number;
  /** True while a ban is in force (BanStatus.isBanned and BanEnd still ahead). */
  isBanned: boolean;
}

/** What an action makes of its target, and the fields its log entry keeps. */
type Planned = { after: ModerationState; fields: Record<string, unknown> };
type Input = Record<string, unknown>;

export function fail(code: ErrorCode, message: string, fields?: Record<string, string>): never {
  throw new AppError(code, message, fields);
}

export function isBannedNow(clock: Clock, user: Pick<StoredUser, 'BanStatus'>): boolean {
  return user.BanStatus.isBanned && user.BanStatus.BanEnd > unixSeconds(clock);
}

export function stateOf(clock: Clock, user: StoredUser): ModerationState {
  return {
    Id: user.Id,
    Username: user.Username,
    Rank: user.Rank,
    Badges: [...user.Badges],
    BanStatus: { ...user.BanStatus },
    BanCount: user.BanCount,
    WarnStatus: { ...user.WarnStatus },
    WarnCount: user.WarnCount,
    isBanned: isBannedNow(clock, user),
  };
}

/** Writes a planned state onto the stored user (a draft inside the action's commit). */
export function applyState(user: StoredUser, state: ModerationState, action: ModerationAction): void {
  user.Rank = state.Rank;
  user.Badges = [...state.Badges];
  user.BanStatus = { ...state.BanStatus };
  user.BanCount = state.BanCount;
  user.WarnStatus = { ...state.WarnStatus };
  user.WarnCount = state.WarnCount;
  // A ban ends every session for good: old tokens do not come back when it lifts (reference 10 #11).
  if (action === 'banuser') user.AccountTokens = [];
}

/** Computes the target's next state, or refuses. Pure: nothing is changed here. */
export function plan(
  clock: Clock,
  action: ModerationAction,
  caller: StoredUser,
  target: StoredUser,
  input: Input,
): Planned {
  const after = stateOf(clock, target);
  const now = unixSeconds(clock);
  switch (action) {
    case 'addbadge':
    case 'removebadge':
      return planBadge(action, target, input, after);
    case 'setrank':
      return planRank(caller, target, input, after);
    case 'warnuser':
      return planWarn(input, after, now);
    case 'unwarnuser':
      if (!target.WarnStatus.isWarned)
        fail(ErrorCode.NOT_WARNED, `${target.Username} has no warning to lift.`);
      after.WarnStatus = { ...after.WarnStatus, isWarned: false };
      return { after, fields: {} };
    case 'banuser':
      return planBan(input, after, now);
    case 'unbanuser':
      if (!isBannedNow(clock, target)) fail(ErrorCode.NOT_BANNED, `${target.Username} is not banned.`);
      after.BanStatus = { ...after.BanStatus, isBanned: false };
      after.isBanned = false;
      return { after, fields: {} };
    case 'deleteavatar':
    case 'deleteworld':
      return planContentRemoval(action, target, input, after);
    case 'deletefile':
      // Whether the file is the target's is checked where it is removed, in the same commit.
      return { after, fields: { fileId: input.fileId as string } };
  }
}

function planBadge(
  action: 'addbadge' | 'removebadge',
  target: StoredUser,
  input: Input,
  after: ModerationState,
): Planned {
  const normal = normaliseBadge(input.badgeName as string);
  if ('problem' in normal) {
    fail(ErrorCode.INVALID_BADGE, `Invalid badge name: it ${normal.problem}.`, {
      badgeName: normal.problem,
    });
  }
  const has = after.Badges.includes(normal.badge);
  if (action === 'addbadge') {
    if (has)
      fail(ErrorCode.BADGE_ALREADY_PRESENT, `${target.Username} already has the badge "${normal.badge}".`);
    if (after.Badges.length >= BADGES_MAX) {
      fail(
        ErrorCode.TOO_MANY_BADGES,
        `${target.Username} already has ${BADGES_MAX} badges, the most allowed.`,
      );
    }
    after.Badges.push(normal.badge);
  } else {
    if (!has)
      fail(ErrorCode.BADGE_NOT_PRESENT, `${target.Username} does not have the badge "${normal.badge}".`);
    after.Badges = after.Badges.filter((b) => b !== normal.badge);
  }
  return { after, fields: { badgeName: normal.badge } };
}

function planRank(caller: StoredUser, target: StoredUser, input: Input, after: ModerationState): Planned {
  const newRank = input.newRank as number;
  if (!Number.isInteger(newRank) || newRank < Rank.Guest || newRank > Rank.Owner) {
    fail(ErrorCode.INVALID_RANK, 'newRank must be a whole number from 0 (Guest) to 6 (Owner).', {
      newRank: 'must be an integer 0..6',
    });
  }
  if (newRank >= caller.Rank) {
    fail(
      ErrorCode.RANK_NOT_GRANTABLE,
      `You can only grant ranks below your own (${RANK_NAMES[caller.Rank]}).`,
      {
        newRank: `must be below ${caller.Rank}`,
      },
    );
  }
  if (newRank === target.Rank) {
    fail(ErrorCode.RANK_UNCHANGED, `${target.Username} already has rank ${RANK_NAMES[newRank as Rank]}.`);
  }
  after.Rank = newRank as Rank;
  return { after, fields: { newRank } };
}

function planWarn(input: Input, after: ModerationState, now: number): Planned {
  const reason = text(input.warnReason as string, 'warnReason', MOD_REASON_MAX, true);
  const description = text(input.warnDescription as string, 'warnDescription', MOD_DESCRIPTION_MAX, false);
  after.WarnStatus = {
    isWarned: true,
    TimeWarned: now,
    WarnReason: reason,
    WarnDescription: description,
  };
  after.WarnCount += 1;
  return { after, fields: { warnReason: reason, warnDescription: description } };
}

function planBan(input: Input, after: ModerationState, now: number): Planned {
  const reason = text(input.banReason as string, 'banReason', MOD_REASON_MAX, true);
  const description = text(input.banDescription as string, 'banDescription', MOD_DESCRIPTION_MAX, false);
  const timeEnd = input.timeEnd as number;
  if (!Number.isInteger(timeEnd) || timeEnd <= now) {
    fail(ErrorCode.INVALID_TIME_END, 'timeEnd must be a whole number of Unix seconds in the future.', {
      timeEnd: 'must be a Unix time (seconds) in the future',
    });
  }
  if (timeEnd > TIME_END_MAX) {
    fail(ErrorCode.INVALID_TIME_END, `timeEnd must be at most ${TIME_END_MAX} (the year 2038).`, {
      timeEnd: `must be at most ${TIME_END_MAX}`,
    });
  }
  after.BanStatus = {
    isBanned: true,
    BanBegin: now,
    BanEnd: timeEnd,
    BanReason: reason,
    BanDescription: description,
  };
  after.BanCount += 1;
  after.isBanned = true;
  return { after, fields: { banReason: reason, banDescription: description, timeEnd } };
}

function planContentRemoval(
  action: 'deleteavatar' | 'deleteworld',
  target: StoredUser,
  input: Input,
  after: ModerationState,
): Planned {
  if (action === 'deleteavatar') {
    const avatarId = input.avatarId as string;
    if (!target.Avatars.includes(avatarId)) {
      fail(
        ErrorCode.CONTENT_NOT_FOUND,
        `Failed to remove avatar! ${target.Username} has no avatar ${avatarId}.`,
      );
    }
    return { after, fields: { avatarId } };
  }
  const worldId = input.worldId as string;
  if (!target.Worlds.includes(worldId)) {
    fail(ErrorCode.CONTENT_NOT_FOUND, `Failed to remove world! ${target.Username} has no world ${worldId}.`);
  }
  return { after, fields: { worldId } };
}

function text(value: string, field: string, max: number, required: boolean): string {
  const trimmed = value.trim();
  if (required && trimmed.length === 0)
    fail(ErrorCode.INVALID_REASON, `${field} must not be empty.`, { [field]: 'is required' });
  if (trimmed.length > max)
    fail(ErrorCode.INVALID_REASON, `${field} must be at most ${max} characters.`, {
      [field]: `at most ${max} characters`,
    });
  return trimmed;
}
