import {
  AUDIT_GROUPS,
  COMMAND_LINE_ACTOR,
  COMMAND_LINE_NAME,
  isUntilLifted,
  type AuditAction,
  type AuditFilter,
  type BanRecordDto,
  type StaffAction,
  type StaffLogEntryDto,
} from '../protocol/audit.js';
import type { LogFilter, LogPage, ReadLog, Tx } from '../store/seam.js';
import { UsersRepo, type StoredUser } from '../store/users.js';
import { unixSeconds, type Clock, type Ids } from './context.js';
import { isBannedNow } from './moderation-plan.js';
import { MODERATION_LOG, type LogKey, type ModerationLogEntry } from './moderation.js';

/**
 * The audit log (issue 28): every action by staff in one log. Moderation actions are written by moderation.ts;
 * the other staff actions (password resets, invite codes, game-server tokens, host and webhook settings, builds)
 * append an entry here, in the same store transaction as the change when the change is one. Fields never hold a
 * secret: no password, token, invite code or webhook URL.
 */
export type AuditLogEntry = ModerationLogEntry | StaffLogEntryDto;
export type AuditLogStore = ReadLog<AuditLogEntry, LogKey>;

/** What a staff action acted on. */
export interface StaffTarget {
  targetId: string;
  targetName: string;
  /** Set when the target is a user. */
  targetUserId?: string;
}

/** A user as the target of a staff action. */
export const userTarget = (user: StoredUser): StaffTarget => ({
  targetId: user.Id,
  targetUserId: user.Id,
  targetName: user.Username,
});

/**
 * Stages a staff action's entry in `t`. `actorId` is the acting user's id (their name is read in the same commit),
 * or COMMAND_LINE_ACTOR for the host's command line.
 */
export async function appendStaffEntry(
  t: Tx,
  deps: { clock: Clock; ids: Ids },
  actorId: string,
  action: StaffAction,
  target: StaffTarget,
  fields: Record<string, unknown>,
): Promise<StaffLogEntryDto> {
  const actor = await UsersRepo.in(t).get(actorId);
  const entry: StaffLogEntryDto = {
    id: deps.ids.id('modlog'),
    seq: 0,
    time: unixSeconds(deps.clock),
    moderatorId: actorId,
    moderatorName: actor?.Username ?? (actorId === COMMAND_LINE_ACTOR ? COMMAND_LINE_NAME : actorId),
    action,
    ...(target.targetUserId === undefined ? {} : { targetUserId: target.targetUserId }),
    targetId: target.targetId,
    targetName: target.targetName,
    fields,
  };
  return t.append(MODERATION_LOG, entry);
}

type AuditDeps = {
  store: { tx<R>(fn: (t: Tx) => R | Promise<R>): Promise<R> };
  users: Pick<UsersRepo, 'get' | 'byUsername' | 'banned'>;
  clock: Clock;
  ids: Ids;
  log: AuditLogStore;
};

/** Reads the audit log with the audit view's filters; records staff actions made outside a store transaction. */
export function createAuditLog(deps: AuditDeps) {
  const { users, clock, log } = deps;

  /** A user id, or the id of the user with that name, or the text as given (the id of some other target). */
  async function userIdOf(text: string): Promise<{ id: string; user: boolean }> {
    if (await users.get(text)) return { id: text, user: true };
    const named = await users.byUsername(text);
    return named ? { id: named.Id, user: true } : { id: text, user: false };
  }

  /** The store filter of the audit view's filters, or null when they match nothing. */
  async function storeFilter(filter: AuditFilter): Promise<LogFilter<LogKey> | null> {
    const out: LogFilter<LogKey> = {};
    let actions: readonly AuditAction[] | null = filter.group ? AUDIT_GROUPS[filter.group] : null;
    if (filter.action) {
      if (actions && !actions.includes(filter.action)) return null;
      actions = [filter.action];
    }
    if (actions) out.action = actions.length === 1 ? actions[0] : { anyOf: actions };
    if (filter.moderator) out.moderatorId = (await userIdOf(filter.moderator)).id;
    if (filter.target) {
      const target = await userIdOf(filter.target);
      if (target.user) out.targetUserId = target.id;
      else out.targetId = target.id;
    }
    if (filter.from !== undefined || filter.to !== undefined) out.time = { from: filter.from, to: filter.to };
    return out;
  }

  return {
    /** A page of entries matching `filter`, newest first. */
    async query(filter: AuditFilter, page: number, itemsPerPage: number): Promise<LogPage<AuditLogEntry>> {
      const match = await storeFilter(filter);
      if (!match) return { entries: [], total: 0 };
      return log.query(match, page * itemsPerPage, itemsPerPage);
    },

    /** Every entry matching `filter`, newest first, a page at a time (for an export). */
    async *all(filter: AuditFilter, pageSize = 500): AsyncGenerator<AuditLogEntry> {
      const match = await storeFilter(filter);
      if (!match) return;
      for (let offset = 0; ; offset += pageSize) {
        const { entries } = await log.query(match, offset, pageSize);
        yield* entries;
        if (entries.length < pageSize) return;
      }
    },

    /** Records a staff action whose change is not a store transaction (builds are folders on disk). */
    record(
      actorId: string,
      action: StaffAction,
      target: StaffTarget,
      fields: Record<string, unknown>,
    ): Promise<StaffLogEntryDto> {
      return deps.store.tx((t) => appendStaffEntry(t, deps, actorId, action, target, fields));
    },

    /** The bans in force now, by username. */
    async bans(): Promise<BanRecordDto[]> {
      // The banned users' index (a query on PostgreSQL), not a walk of every user.
      const out = (await users.banned()).filter((user) => isBannedNow(clock, user)).map(banRecordOf);
      return out.sort((a, b) => a.username.localeCompare(b.username));
    },
  };
}

export function banRecordOf(user: StoredUser): BanRecordDto {
  const ban = user.BanStatus;
  return {
    username: user.Username,
    userId: user.Id,
    banReason: ban.BanReason,
    banDescription: ban.BanDescription,
    banBegin: ban.BanBegin,
    banEnd: ban.BanEnd,
    untilLifted: isUntilLifted(ban.BanEnd),
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;
