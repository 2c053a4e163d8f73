import { ErrorCode } from '../protocol/errors.js';
import { Rank, RANK_NAMES } from '../protocol/enums.js';
import {
  fieldErrorsOf,
  MODERATION_ACTIONS,
  ModerationFields,
  type ModerationAction,
} from '../protocol/schemas.js';
import { AppError } from '../errors.js';
import type { AuditAction, StaffLogEntryDto } from '../protocol/audit.js';
import type { ReadLog } from '../store/seam.js';
import type { Tx } from '../store/seam.js';
import { UsersRepo, type StoredUser } from '../store/users.js';
import type { StoredFile } from './uploads.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import { applyState, fail, plan, stateOf, type ModerationState } from './moderation-plan.js';
import { createKeyedSerial } from './serial.js';

export type { ModerationState } from './moderation-plan.js';

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
  /** The log also holds staff actions (server/services/audit-log.ts), read only through the audit view. */
  action: AuditAction;
  time: number;
  /** What a staff action acted on (absent on moderation entries). */
  targetId?: string;
}

/** The store log that holds the moderation log (moderation-log.jsonl). */
export const MODERATION_LOG = 'moderation';
export const MODERATION_LOG_FILE = 'moderation-log.jsonl';

export type ModerationLog = ReadLog<ModerationLogEntry, LogKey>;

export const logKeyOf = (entry: ModerationLogEntry | StaffLogEntryDto): LogKey => ({
  targetUserId: entry.targetUserId as string,
  moderatorId: entry.moderatorId,
  action: entry.action,
  time: entry.time,
  targetId: 'targetId' in entry ? entry.targetId : undefined,
});
/** The moderation log's own readers see its ten actions, never the staff actions beside them. */
const ONLY_MODERATION = { anyOf: MODERATION_ACTIONS };

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

type ModerationDeps = Pick<ServiceDeps, 'users' | 'store' | 'clock' | 'ids' | 'events' | 'webhookOutbox'> & {
  log: ModerationLog;
  content?: ContentRemover;
};

type ActionOutcome = { action: ModerationAction; state: ModerationState; entry: ModerationLogEntry };

export function createModerationService(deps: ModerationDeps) {
  const { users, clock, log } = deps;

  /** Actions on one target run one at a time, so each one's "before" is the previous one's "after". */
  const onTarget = createKeyedSerial();

  return {
    successMessage: (action: ModerationAction) => SUCCESS[action],
    stateOf: (user: StoredUser): ModerationState => stateOf(clock, user),

    /** Runs one moderation action for `caller` (already authenticated). */
    async act(
      caller: StoredUser,
      rawAction: string,
      targetUserId: string,
      body: Record<string, unknown>,
      /** More to write in the action's own commit (a content job's count of what it removed). */
      alsoInCommit?: (t: Tx) => Promise<unknown>,
    ): Promise<ActionOutcome> {
      const { known, input } = actionOrThrow(caller, rawAction, body);
      return onTarget(targetUserId, async () => {
        // The action, its effect and its log entry are one commit: all of them or none.
        const { entry, doomed, state } = await deps.store.tx(async (t) => {
          const done = await commitAction(deps, t, caller, targetUserId, known, input);
          await alsoInCommit?.(t);
          return done;
        });
        if (doomed) await deps.content?.removeFiles(doomed);
        return { action: known, state, entry };
      });
    },

    /** Log entries, newest first, filtered and paged. */
    query: (filter: LogFilter): Promise<{ entries: ModerationLogEntry[]; total: number }> => {
      const { page, itemsPerPage, ...match } = filter;
      return log.query(
        { ...match, action: match.action ?? ONLY_MODERATION },
        page * itemsPerPage,
        itemsPerPage,
      );
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
        // A query on the name index (never a walk of every user).
        found.push(...(await users.byNamePrefix(query.trim(), 20)));
      }
      return Promise.all(
        found.slice(0, 20).map(async (user) => {
          const { entries } = await log.query({ targetUserId: user.Id, action: ONLY_MODERATION }, 0, recent);
          return { ...stateOf(clock, user), RecentActions: entries };
        }),
      );
    },
  };
}

/** The action asked (its 1.4.0 aliases read), and its fields, checked before anything is read. */
function actionOrThrow(
  caller: StoredUser,
  rawAction: string,
  body: Record<string, unknown>,
): { known: ModerationAction; input: Record<string, unknown> } {
  let action = rawAction.trim().toLowerCase();
  if (action === 'ban') action = 'banuser';
  if (action === 'addbadge' && body.badgeName === undefined && ('banReason' in body || 'timeEnd' in body)) {
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
  return { known, input: parsed.data as Record<string, unknown> };
}

/**
 * One action in transaction `t`: checks the ranks as of this commit, applies the planned state (or stages the
 * content removal) and appends the log entry. Returns the files to delete once the commit is durable.
 */
async function commitAction(
  deps: ModerationDeps,
  t: Tx,
  caller: StoredUser,
  targetUserId: string,
  known: ModerationAction,
  input: Record<string, unknown>,
): Promise<{ entry: ModerationLogEntry; doomed: StoredFile[] | null; state: ModerationState }> {
  const { clock, events } = deps;
  const repo = UsersRepo.in(t);
  const target = await repo.get(targetUserId);
  if (!target)
    fail(ErrorCode.USER_NOT_FOUND, 'Could not find user!', { targetUserId: 'no user has that id' });
  // The caller as of this commit: a rank lowered meanwhile counts.
  const acting = (await repo.get(caller.Id)) ?? caller;
  if (target.Id === acting.Id) fail(ErrorCode.CANNOT_MODERATE_SELF, 'You cannot moderate yourself.');
  if (acting.Rank < Rank.Moderator) {
    fail(ErrorCode.NOT_A_MODERATOR, 'Invalid permissions! Moderation needs rank Moderator or higher.');
  }
  if (target.Rank >= acting.Rank) {
    fail(
      ErrorCode.TARGET_RANK_TOO_HIGH,
      `You can only act on users ranked below you; ${target.Username} is ${RANK_NAMES[target.Rank]}.`,
    );
  }
  const before = stateOf(clock, target);
  const { after, fields } = plan(clock, known, acting, target, input);
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
  if (known === 'deletefile' || known === 'deleteavatar' || known === 'deleteworld') {
    doomed = await removeContentIn(deps, t, known, target, fields);
  } else {
    changed = await repo.update(target.Id, (draft) => applyState(draft, after, known));
  }
  t.append(MODERATION_LOG, entry);
  await deps.webhookOutbox.moderation(t, entry);
  t.afterCommit(() => events.emit('moderationRecorded', { entry }));
  if (known === 'banuser' || known === 'warnuser') {
    t.afterCommit(() => events.emit('tokensRevoked', { userId: target.Id }));
  }
  return { entry, doomed, state: stateOf(clock, changed) };
}

/** deletefile, deleteavatar, deleteworld: stages the removal in `t`; the files to delete once it is durable. */
async function removeContentIn(
  deps: ModerationDeps,
  t: Tx,
  known: 'deletefile' | 'deleteavatar' | 'deleteworld',
  target: StoredUser,
  fields: Record<string, unknown>,
): Promise<StoredFile[]> {
  if (known === 'deletefile') {
    const doomed = (await deps.content?.deleteFileIn(t, fields.fileId as string, target.Id)) ?? null;
    if (!doomed) {
      fail(
        ErrorCode.FILE_NOT_FOUND,
        `Failed to delete file! ${target.Username} has no file ${fields.fileId as string}.`,
      );
    }
    return doomed;
  }
  const doomed =
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
  return doomed;
}

type LogFilter = {
  targetUserId?: string;
  moderatorId?: string;
  action?: ModerationAction;
  page: number;
  itemsPerPage: number;
};

export type ModerationService = ReturnType<typeof createModerationService>;
