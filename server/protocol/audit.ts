import { z } from 'zod';
import { Rank } from './enums.js';
import { MODERATION_ACTIONS, TIME_END_MAX, type ModerationAction } from './schemas.js';

/**
 * Our additions (issue 28): the audit log, bans "until lifted", export of the log and the bans, and ban import.
 * None of these exist on the real server. The moderation log's ten actions keep their wire form; the staff actions
 * below are entries of the same log, read only through `auditLog` (never through `moderationLog`).
 */

/** The acting "user" of staff actions taken from the host's command line (`user create`, `user reset-password`). */
export const COMMAND_LINE_ACTOR = 'cli';
export const COMMAND_LINE_NAME = 'command line';

/** Staff actions beyond moderation, recorded in the same log as moderation actions. */
export const STAFF_ACTIONS = [
  'resetpassword',
  'createuser',
  'createinvitecode',
  'revokeinvitecode',
  'addgameservertoken',
  'revokegameservertoken',
  'changehostsettings',
  'changewebhook',
  'publishbuild',
  'removebuild',
] as const;
export type StaffAction = (typeof STAFF_ACTIONS)[number];
export type AuditAction = ModerationAction | StaffAction;
export const AUDIT_ACTIONS: readonly AuditAction[] = [...MODERATION_ACTIONS, ...STAFF_ACTIONS];

/** Groups the audit view filters by. */
export const AUDIT_GROUPS = {
  moderation: ['addbadge', 'removebadge', 'setrank', 'warnuser', 'unwarnuser', 'banuser', 'unbanuser'],
  content: ['deleteavatar', 'deleteworld', 'deletefile'],
  accounts: ['resetpassword', 'createuser'],
  invites: ['createinvitecode', 'revokeinvitecode'],
  gameservers: ['addgameservertoken', 'revokegameservertoken'],
  host: ['changehostsettings', 'changewebhook'],
  builds: ['publishbuild', 'removebuild'],
} as const satisfies Record<string, readonly AuditAction[]>;
export type AuditGroup = keyof typeof AUDIT_GROUPS;
export const AUDIT_GROUP_NAMES = Object.keys(AUDIT_GROUPS) as AuditGroup[];

/**
 * "Until lifted": a ban whose BanEnd is the largest the protocol allows (2^31 - 1, 2038-01-19; HypernexSharp reads
 * BanEnd as a 32-bit int). Real clients read it as banned like any other ban; a BanEnd of 0 would be read as "not
 * banned" by the reference server's login (wire reference 3.2), so 0 is never used for it.
 */
export const BAN_UNTIL_LIFTED = TIME_END_MAX;
export const isUntilLifted = (banEnd: number): boolean => banEnd >= BAN_UNTIL_LIFTED;

/** The least rank that exports the log or the bans, and imports bans. */
export const AUDIT_EXPORT_MIN_RANK = Rank.Admin;
/** The least rank that reads the audit view (the moderation log's own readers). */
export const AUDIT_READ_MIN_RANK = Rank.Moderator;

/** Ban import bounds: the file's bytes (inside the API's 256 KiB JSON body), and its bans (CSV lines, JSON elements). */
export const BAN_IMPORT_MAX_BYTES = 200_000;
export const BAN_IMPORT_MAX_LINES = 2_000;

const id = z.string().min(1).max(200);
const token = z.string().min(1).max(500);
const Auth = z.object({ userid: id, tokenContent: token });
const time = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** The audit view's filters; `action` and `group` narrow together when both are set. */
export const AuditFilterFields = z.object({
  action: z.enum(AUDIT_ACTIONS as [AuditAction, ...AuditAction[]]).optional(),
  group: z.enum(AUDIT_GROUP_NAMES as [AuditGroup, ...AuditGroup[]]).optional(),
  /** A user id or a username. */
  moderator: z.string().min(1).max(200).optional(),
  /** A user id or a username (entries on a user), or the id of what a staff action acted on. */
  target: z.string().min(1).max(200).optional(),
  /** Unix seconds, inclusive. */
  from: time.optional(),
  to: time.optional(),
});
export type AuditFilter = z.infer<typeof AuditFilterFields>;

export const AuditLogRequest = Auth.extend(AuditFilterFields.shape).extend({
  page: z.number().int().min(0).max(1_000_000).optional(),
  itemsPerPage: z.number().int().min(1).max(200).optional(),
});

export const EXPORT_FORMATS = ['csv', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** GET /api/v1/auditExport and /api/v1/bansExport take these as query parameters (a download link). */
export const ExportQuery = Auth.extend(AuditFilterFields.shape).extend({
  format: z.enum(EXPORT_FORMATS),
  from: z.coerce.number().int().min(0).optional(),
  to: z.coerce.number().int().min(0).optional(),
});

export const BAN_IMPORT_MODES = ['strict', 'lenient'] as const;
export const BanImportRequest = Auth.extend({
  mode: z.enum(BAN_IMPORT_MODES),
  format: z.enum(EXPORT_FORMATS),
  /** The file's text (the UI reads the file; bounded by BAN_IMPORT_MAX_BYTES). */
  content: z.string().max(BAN_IMPORT_MAX_BYTES * 2),
});

/** A staff action's log entry (moderation actions keep their own shape, with before and after). */
export interface StaffLogEntryDto {
  id: string;
  seq: number;
  time: number;
  moderatorId: string;
  moderatorName: string;
  action: StaffAction;
  /** Set when the action was on a user (resetpassword). */
  targetUserId?: string;
  /** The id of what it acted on: a user, an invite code, a game-server token, "name@version" of a build, "host". */
  targetId: string;
  targetName: string;
  fields: Record<string, unknown>;
}

/** A ban as exported and imported. */
export interface BanRecordDto {
  username: string;
  userId: string;
  banReason: string;
  banDescription: string;
  banBegin: number;
  /** Unix seconds; BAN_UNTIL_LIFTED for a ban until lifted. */
  banEnd: number;
  untilLifted: boolean;
}

export interface BanImportResult {
  Imported: Array<{ line: number; username: string }>;
  Skipped: Array<{ line: number; username: string; reason: string }>;
}
