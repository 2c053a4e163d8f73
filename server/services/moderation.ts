import { ErrorCode } from '../protocol/errors.js';
import { Rank, RANK_NAMES } from '../protocol/enums.js';
import {
  BADGES_MAX,
  fieldErrorsOf,
  MOD_DESCRIPTION_MAX,
  MOD_REASON_MAX,
  MODERATION_ACTIONS,
  ModerationFields,
  normaliseBadge,
  TIME_END_MAX,
  type ModerationAction,
} from '../protocol/schemas.js';
import type { BanStatusDto, WarnStatusDto } from '../protocol/types.js';
import { AppError } from '../errors.js';
import type { ReadLog } from '../store/seam.js';
import type { Tx } from '../store/seam.js';
import { UsersRepo, type StoredUser } from '../store/users.js';
import type { StoredFile } from './uploads.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import { createKeyedSerial } from './serial.js';

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

export interface ModerationLogEntry {
  id: string;
  /** Store sequence number: lets startup finish an action whose log entry reached disk but whose user did not. */
  seq: number;
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

export interface LogKey {
  targetUserId: string;
  moderatorId: string;
  action: ModerationAction;
}

/** The store log that holds the moderation log (moderation-log.jsonl). */
export const MODERATION_LOG = 'moderation';
export const MODERATION_LOG_FILE = 'moderation-log.jsonl';

export type ModerationLog = ReadLog<ModerationLogEntry, LogKey>;

export const logKeyOf = (entry: ModerationLogEntry): LogKey => ({
  targetUserId: entry.targetUserId,
  moderatorId: entry.moderatorId,
  action: entry.action,
});

/** Deletes uploaded content inside a moderation commit; provided by the uploads service. */
export interface ContentRemover {
  /** Stages the removal in `t`; the files to delete once it is durable, or null when there is no such asset. */
  deleteAssetIn(t: Tx, kind: 'avatar' | 'world', id: string): Promise<StoredFile[] | null>;
  /** Stages removing `ownerId`'s file `fileId` (refusing one in use); null when there is no such file. */
  deleteFileIn(t: Tx, fileId: string, ownerId: string): Promise<StoredFile[] | null>;
  removeFiles(files: StoredFile[]): Promise<void>;
}

const SUCCESS: Record<ModerationAction, string> = {
  addbadge: 'Done!',
  removebadge: 'Done!',
  setrank: 'Done!',
  warnuser: 'Done!',
  unwarnuser: 'Done!',
  banuser: 'Done!',
  unbanuser: 'Done!',
  deleteavatar: 'Removed avatar!',
  deleteworld: 'Removed world!',
  deletefile: 'Deleted file!',
};

export function createModerationService(
  deps: Pick<ServiceDeps, 'users' | 'store' | 'clock' | 'ids' | 'events'> & {
    log: ModerationLog;
    content?: ContentRemover;
  },
) {
  const { users, store, clock, events, log } = deps;

  function isBannedNow(user: Pick<StoredUser, 'BanStatus'>): boolean {
    return user.BanStatus.isBanned && user.BanStatus.BanEnd > unixSeconds(clock);
  }

  function stateOf(user: StoredUser): ModerationState {
    return {
      Id: user.Id,
      Username: user.Username,
      Rank: user.Rank,
      Badges: [...user.Badges],
      BanStatus: { ...user.BanStatus },
      BanCount: user.BanCount,
      WarnStatus: { ...user.WarnStatus },
      WarnCount: user.WarnCount,
      isBanned: isBannedNow(user),
    };
  }

  /** Actions on one target run one at a time, so each one's "before" is the previous one's "after". */
  const onTarget = createKeyedSerial();

  function fail(code: ErrorCode, message: string, fields?: Record<string, string>): never {
    throw new AppError(code, message, fields);
  }

  /** Computes the target's next state, or refuses. Pure: nothing is changed here. */
  function plan(
    action: ModerationAction,
    caller: StoredUser,
    target: StoredUser,
    input: Record<string, unknown>,
  ): { after: ModerationState; fields: Record<string, unknown> } {
    const after = stateOf(target);
    const now = unixSeconds(clock);
    switch (action) {
      case 'addbadge':
      case 'removebadge': {
        const normal = normaliseBadge(input.badgeName as string);
        if ('problem' in normal) {
          fail(ErrorCode.INVALID_BADGE, `Invalid badge name: it ${normal.problem}.`, {
            badgeName: normal.problem,
          });
        }
        const has = after.Badges.includes(normal.badge);
        if (action === 'addbadge') {
          if (has)
            fail(
              ErrorCode.BADGE_ALREADY_PRESENT,
              `${target.Username} already has the badge "${normal.badge}".`,
            );
          if (after.Badges.length >= BADGES_MAX) {
            fail(
              ErrorCode.TOO_MANY_BADGES,
              `${target.Username} already has ${BADGES_MAX} badges, the most allowed.`,
            );
          }
          after.Badges.push(normal.badge);
        } else {
          if (!has)
            fail(
              ErrorCode.BADGE_NOT_PRESENT,
              `${target.Username} does not have the badge "${normal.badge}".`,
            );
          after.Badges = after.Badges.filter((b) => b !== normal.badge);
        }
        return { after, fields: { badgeName: normal.badge } };
      }
      case 'setrank': {
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
            { newRank: `must be below ${caller.Rank}` },
          );
        }
        if (newRank === target.Rank) {
          fail(
            ErrorCode.RANK_UNCHANGED,
            `${target.Username} already has rank ${RANK_NAMES[newRank as Rank]}.`,
          );
        }
        after.Rank = newRank as Rank;
        return { after, fields: { newRank } };
      }
      case 'warnuser': {
        const reason = text(input.warnReason as string, 'warnReason', MOD_REASON_MAX, true);
        const description = text(
          input.warnDescription as string,
          'warnDescription',
          MOD_DESCRIPTION_MAX,
          false,
        );
        after.WarnStatus = {
          isWarned: true,
          TimeWarned: now,
          WarnReason: reason,
          WarnDescription: description,
        };
        after.WarnCount += 1;
        return { after, fields: { warnReason: reason, warnDescription: description } };
      }
      case 'unwarnuser':
        if (!target.WarnStatus.isWarned)
          fail(ErrorCode.NOT_WARNED, `${target.Username} has no warning to lift.`);
        after.WarnStatus = { ...after.WarnStatus, isWarned: false };
        return { after, fields: {} };
      case 'banuser': {
        const reason = text(input.banReason as string, 'banReason', MOD_REASON_MAX, true);
        const description = text(
          input.banDescription as string,
          'banDescription',
          MOD_DESCRIPTION_MAX,
          false,
        );
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
      case 'unbanuser':
        if (!isBannedNow(target)) fail(ErrorCode.NOT_BANNED, `${target.Username} is not banned.`);
        after.BanStatus = { ...after.BanStatus, isBanned: false };
        after.isBanned = false;
        return { after, fields: {} };
      case 'deleteavatar': {
        const avatarId = input.avatarId as string;
        if (!target.Avatars.includes(avatarId)) {
          fail(
            ErrorCode.CONTENT_NOT_FOUND,
            `Failed to remove avatar! ${target.Username} has no avatar ${avatarId}.`,
          );
        }
        return { after, fields: { avatarId } };
      }
      case 'deleteworld': {
        const worldId = input.worldId as string;
        if (!target.Worlds.includes(worldId)) {
          fail(
            ErrorCode.CONTENT_NOT_FOUND,
            `Failed to remove world! ${target.Username} has no world ${worldId}.`,
          );
        }
        return { after, fields: { worldId } };
      }
      case 'deletefile':
        // Whether the file is the target's is checked where it is removed, in the same commit.
        return { after, fields: { fileId: input.fileId as string } };
    }
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

  function applyState(user: StoredUser, state: ModerationState, action: ModerationAction): void {
    user.Rank = state.Rank;
    user.Badges = [...state.Badges];
    user.BanStatus = { ...state.BanStatus };
    user.BanCount = state.BanCount;
    user.WarnStatus = { ...state.WarnStatus };
    user.WarnCount = state.WarnCount;
    // A ban ends every session for good: old tokens do not come back when it lifts (reference 10 #11).
    if (action === 'banuser') user.AccountTokens = [];
  }

  return {
    successMessage: (action: ModerationAction) => SUCCESS[action],
    stateOf,

    /** Runs one moderation action for `caller` (already authenticated). */
    async act(
      caller: StoredUser,
      rawAction: string,
      targetUserId: string,
      body: Record<string, unknown>,
    ): Promise<{ action: ModerationAction; state: ModerationState; entry: ModerationLogEntry }> {
      let action = rawAction.trim().toLowerCase();
      if (action === 'ban') action = 'banuser';
      if (
        action === 'addbadge' &&
        body.badgeName === undefined &&
        ('banReason' in body || 'timeEnd' in body)
      ) {
        fail(
          ErrorCode.USE_BANUSER,
          'This looks like a ban sent as "addbadge" (the 1.4.0 changelog example is wrong). To ban, send action "banuser" with banReason, banDescription and timeEnd.',
          { action: 'use "banuser" to ban' },
        );
      }
      if (!(MODERATION_ACTIONS as readonly string[]).includes(action)) {
        fail(
          ErrorCode.UNKNOWN_ACTION,
          `Invalid parameters! Unknown action "${rawAction}". Use one of: ${MODERATION_ACTIONS.join(', ')}.`,
          {
            action: 'unknown action',
          },
        );
      }
      const known = action as ModerationAction;
      if (caller.Rank < Rank.Moderator) {
        fail(ErrorCode.NOT_A_MODERATOR, 'Invalid permissions! Moderation needs rank Moderator or higher.');
      }
      const parsed = ModerationFields[known].safeParse(body);
      if (!parsed.success) {
        throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', fieldErrorsOf(parsed.error));
      }
      const input = parsed.data as Record<string, unknown>;

      return onTarget(targetUserId, async () => {
        // The action, its effect and its log entry are one commit: all of them or none.
        const { entry, doomed, state } = await store.tx(async (t) => {
          const repo = UsersRepo.in(t);
          const target = await repo.get(targetUserId);
          if (!target)
            fail(ErrorCode.USER_NOT_FOUND, 'Could not find user!', { targetUserId: 'no user has that id' });
          // The caller as of this commit: a rank lowered meanwhile counts.
          const acting = (await repo.get(caller.Id)) ?? caller;
          if (target.Id === acting.Id) fail(ErrorCode.CANNOT_MODERATE_SELF, 'You cannot moderate yourself.');
          if (acting.Rank < Rank.Moderator) {
            fail(
              ErrorCode.NOT_A_MODERATOR,
              'Invalid permissions! Moderation needs rank Moderator or higher.',
            );
          }
          if (target.Rank >= acting.Rank) {
            fail(
              ErrorCode.TARGET_RANK_TOO_HIGH,
              `You can only act on users ranked below you; ${target.Username} is ${RANK_NAMES[target.Rank]}.`,
            );
          }
          const before = stateOf(target);
          const { after, fields } = plan(known, acting, target, input);
          const entry: ModerationLogEntry = {
            id: deps.ids.id('modlog'),
            seq: 0,
            time: unixSeconds(clock),
            moderatorId: acting.Id,
            moderatorName: acting.Username,
            action: known,
            targetUserId: target.Id,
            targetName: target.Username,
            fields,
            before,
            after,
          };
          let doomed: StoredFile[] | null = null;
          let changed: StoredUser = target;
          if (known === 'deletefile') {
            doomed = (await deps.content?.deleteFileIn(t, fields.fileId as string, target.Id)) ?? null;
            if (!doomed) {
              fail(
                ErrorCode.FILE_NOT_FOUND,
                `Failed to delete file! ${target.Username} has no file ${fields.fileId as string}.`,
              );
            }
          } else if (known === 'deleteavatar' || known === 'deleteworld') {
            doomed =
              (await deps.content?.deleteAssetIn(
                t,
                known === 'deleteavatar' ? 'avatar' : 'world',
                (known === 'deleteavatar' ? fields.avatarId : fields.worldId) as string,
              )) ?? null;
            if (!doomed) {
              fail(
                ErrorCode.CONTENT_NOT_FOUND,
                known === 'deleteavatar' ? 'Failed to remove avatar!' : 'Failed to remove world!',
              );
            }
          } else {
            changed = await repo.update(target.Id, (draft) => applyState(draft, after, known));
          }
          t.append(MODERATION_LOG, entry);
          if (known === 'banuser' || known === 'warnuser') {
            t.afterCommit(() => events.emit('tokensRevoked', { userId: target.Id }));
          }
          return { entry, doomed, state: stateOf(changed) };
        });
        if (doomed) await deps.content?.removeFiles(doomed);
        return { action: known, state, entry };
      });
    },

    /** Log entries, newest first, filtered and paged. */
    async query(filter: {
      targetUserId?: string;
      moderatorId?: string;
      action?: ModerationAction;
      page: number;
      itemsPerPage: number;
    }): Promise<{ entries: ModerationLogEntry[]; total: number }> {
      const { page, itemsPerPage, ...match } = filter;
      return log.query(match, page * itemsPerPage, itemsPerPage);
    },

    /** Users whose name starts with `query` (any case), or whose id is `query`, with recent actions on them. */
    async lookup(
      query: string,
      recent = 5,
    ): Promise<Array<ModerationState & { RecentActions: ModerationLogEntry[] }>> {
      const found: StoredUser[] = [];
      const exact = await users.get(query.trim());
      if (exact) found.push(exact);
      else {
        const prefix = query.trim().toLowerCase();
        for await (const user of users.scan()) {
          if (user.Username.toLowerCase().startsWith(prefix)) found.push(user);
        }
        found.sort((a, b) => a.Username.localeCompare(b.Username));
      }
      return Promise.all(
        found.slice(0, 20).map(async (user) => {
          const { entries } = await log.query({ targetUserId: user.Id }, 0, recent);
          return { ...stateOf(user), RecentActions: entries };
        }),
      );
    },
  };
}

export type ModerationService = ReturnType<typeof createModerationService>;
