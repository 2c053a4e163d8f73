import { z } from 'zod';
import { MODERATION_ACTIONS } from '../protocol/schemas.js';
import { STAFF_ACTIONS } from '../protocol/audit.js';
import { WEBHOOK_EVENTS } from '../protocol/webhooks.js';
import { INVITE_LOG_FILE } from './file-invite-history.js';

/**
 * The shape of every record the embedded store keeps, and of every other file a start reads (issue 27): a record
 * read at startup is checked here before anything is written, so a record of the wrong shape stops the start
 * instead of crashing it half-way (after the log was already replayed into the record files).
 *
 * The schemas ask for what the code writes and relies on: every field the services write, with its type (enums as
 * their values). Fields an earlier version did not write yet are optional; fields this version does not know are
 * allowed (and kept as they are: the parsed value, not the schema's output, is what the store holds). The services
 * that define the record types sit above server/store, so the names of their collections are repeated here; a test
 * (test/server/startup-validation.test.ts) checks that the host opens no collection without a schema and that
 * every record type the services write is admitted.
 */

const text = z.string();
const time = z.number();
const ids = z.array(z.string());

/** Rank 0 Guest .. 6 Owner; Status 0 Offline .. 4 DoNotDisturb (server/protocol/enums.ts). */
const rank = z.literal([0, 1, 2, 3, 4, 5, 6]);
const status = z.literal([0, 1, 2, 3, 4]);
/** UploadType 0 media, 1 avatar, 2 world, 3 server script. */
const uploadType = z.literal([0, 1, 2, 3]);
/** BuildPlatform 0 Windows, 1 Android; Publicity 0 Anyone, 1 OwnerOnly (typed as numbers by the wire DTOs). */
const zeroOrOne = z.number().int().min(0).max(1);

const banStatus = z.object({
  isBanned: z.boolean(),
  BanBegin: time,
  BanEnd: time,
  BanReason: text,
  BanDescription: text,
});

const warnStatus = z.object({
  isWarned: z.boolean(),
  TimeWarned: time,
  WarnReason: text,
  WarnDescription: text,
});

/** A login token or an asset token as stored: its SHA-256, never the token. */
const storedToken = z.object({ hash: text, dateCreated: time, dateExpire: time, app: text });

export const UserRecord = z.object({
  Id: text,
  Username: text,
  HashedPassword: text,
  Email: text,
  isEmailVerified: z.boolean(),
  AccountTokens: z.array(
    // signIn is absent on tokens made before it was kept.
    storedToken.extend({ signIn: z.enum(['password', 'password+2fa']).optional() }),
  ),
  is2FAVerified: z.boolean(),
  TwoFA: z.object({ base32: text }).nullable(),
  BlockedUsers: ids,
  Following: ids,
  Followers: ids,
  OutgoingFriendRequests: ids,
  FriendRequests: ids,
  Friends: ids,
  Badges: ids,
  Bio: z.object({
    isPrivateAccount: z.boolean(),
    Status: status,
    StatusText: text,
    Description: text,
    PfpURL: text,
    BannerURL: text,
    DisplayName: text,
    // Stored as answered, or as the ids earlier versions kept; anything else reads as no pronouns (pronouns.ts).
    Pronouns: z.unknown().optional(),
  }),
  Rank: rank,
  AccountCreationDate: time,
  BanStatus: banStatus,
  BanCount: z.number(),
  WarnStatus: warnStatus,
  WarnCount: z.number(),
  Avatars: ids,
  Worlds: ids,
});

/** An uploaded file (collection `uploads`): UploadDataDto plus what the host keeps beside it. */
export const FileRecord = z.object({
  UserId: text,
  FileId: text,
  FileName: text,
  UploadType: uploadType,
  FileType: uploadType,
  Key: text,
  Hash: text,
  Size: z.number(),
  OriginalName: text,
  DateUploaded: time,
});

const assetFields = {
  Id: text,
  OwnerId: text,
  Publicity: zeroOrOne,
  Name: text,
  Description: text,
  Tags: z.array(text),
  DateCreated: time,
  DateUpdated: time,
  /** manageAssetToken's tokens (their hashes), absent until the owner hands one out. */
  Tokens: z.array(storedToken).optional(),
};

export const AvatarRecord = z.object({
  ...assetFields,
  ImageURL: text,
  Builds: z.array(z.object({ FileId: text, BuildPlatform: zeroOrOne })),
});

export const WorldRecord = z.object({
  ...assetFields,
  ThumbnailURL: text,
  IconURLs: z.array(text),
  Builds: z.array(z.object({ FileId: text, BuildPlatform: zeroOrOne, ServerScripts: z.array(text) })),
});

export const GameServerTokenRecord = z.object({
  id: text,
  hash: text,
  label: text,
  createdAt: time,
  createdBy: text,
});

export const InviteCodeRecord = z.object({
  id: text,
  hash: text,
  label: text,
  singleUse: z.boolean(),
  // Absent on codes made before the number of uses could be chosen.
  maxUses: z.number().optional(),
  createdAt: time,
  createdBy: text,
  expiresAt: time,
  uses: z.array(z.object({ userId: text, at: time })),
  revoked: z.boolean(),
});

const counts = z.record(z.string(), z.number());
export const PopularityRecord = z.object({
  id: text,
  kind: z.enum(['avatar', 'world']),
  five: counts,
  hours: counts,
  days: counts,
  totals: z.array(z.number()).optional(),
});

export const ChunkSetRecord = z.object({
  chunkId: text,
  userId: text,
  originalFileName: text,
  amountOfChunks: z.number().int().min(1),
  createdAt: time,
  updatedAt: time,
  parts: z.record(z.string(), z.object({ bytes: z.number(), file: text })),
  avatarMeta: z.unknown().optional(),
  worldMeta: z.unknown().optional(),
  assembling: z.boolean().optional(),
  assemblingBy: text.optional(),
  assemblingAt: time.optional(),
});

export const ChunkOwnerRecord = z.object({ userId: text, sets: ids });

const inviteState = z.enum(['new', 'seen', 'answered', 'dismissed']);
const storedInviteRequest = z.object({
  requestId: text,
  fromUserId: text,
  sentAt: time,
  expiresAt: time,
  state: inviteState,
  updatedAt: time,
});

/** The first layout's invite inboxes (collection `inviterequests`), moved into the history at start. */
export const LegacyInviteInboxRecord = z.object({ userId: text, requests: z.array(storedInviteRequest) });

/** The settings collection holds one record per name. */
export const HostSettingsRecord = z.object({
  ownerSetupDone: z.boolean(),
  requireInviteCode: z.boolean().optional(),
});
/** The community's name in Redis (written by hosts on PostgreSQL; a folder they migrated from may hold it). */
export const CommunitySettingsRecord = z.object({ id: text });
/** The outgoing webhook (server/services/webhook-settings.ts): its URL and which events it gets. */
export const WebhookSettingsRecord = z.object({
  url: text.nullable(),
  moderation: z.boolean(),
  signups: z.boolean(),
  changedAt: time.optional(),
  changedBy: text.optional(),
});
/** How the community's newest webhook try went, whichever host made it (webhook-settings.ts). */
export const WebhookLastRecord = z.object({
  ok: z.boolean(),
  at: time,
  what: text,
  attempts: z.number(),
  detail: text,
});
/** Which process sends the community's webhook messages (webhook-queue.ts); `by` null once it let go. */
export const WebhookSenderRecord = z.object({ by: text.nullable(), at: time });
const SETTINGS_RECORDS: Record<string, z.ZodType> = {
  host: HostSettingsRecord,
  community: CommunitySettingsRecord,
  webhook: WebhookSettingsRecord,
  'webhook-last': WebhookLastRecord,
  'webhook-sender': WebhookSenderRecord,
};
const UNKNOWN_SETTING = z.custom(() => false, { error: 'this version knows no setting of that name' });

/** A "remove all content of this user" job (server/services/content-jobs.ts, issue 28). */
export const ContentJobRecord = z.object({
  id: text,
  targetUserId: text,
  targetName: text,
  moderatorId: text,
  moderatorName: text,
  state: z.enum(['running', 'done', 'stopped']),
  total: z.number(),
  done: z.number(),
  failed: z.number(),
  failures: z.array(z.object({ kind: z.enum(['avatar', 'world', 'file']), id: text, reason: text })),
  stoppedReason: text.nullable(),
  createdAt: time,
  updatedAt: time,
  leaseBy: text.nullable(),
  leaseAt: time,
  skipped: ids,
});

/** A private note on a user (server/services/user-notes.ts, issue 28). */
export const UserNoteRecord = z.object({
  id: text,
  targetUserId: text,
  authorId: text,
  authorName: text,
  text,
  createdAt: time,
  createdAtMs: time.optional(),
});

/** A webhook message waiting to be sent (server/services/webhook-outbox.ts): Discord's message as it will go. */
export const WebhookJobRecord = z.object({
  id: text,
  order: text,
  event: z.enum(WEBHOOK_EVENTS),
  what: text,
  message: z.object({
    content: text,
    embeds: z.array(z.record(z.string(), z.unknown())),
    allowed_mentions: z.object({ parse: z.array(z.string()) }),
  }),
  queuedAt: time,
  attempts: z.number(),
  notBefore: time,
});

const RECORDS: Record<string, z.ZodType> = {
  contentjobs: ContentJobRecord,
  usernotes: UserNoteRecord,
  users: UserRecord,
  uploads: FileRecord,
  avatars: AvatarRecord,
  worlds: WorldRecord,
  gameservertokens: GameServerTokenRecord,
  invitecodes: InviteCodeRecord,
  popularity: PopularityRecord,
  chunksets: ChunkSetRecord,
  chunkowners: ChunkOwnerRecord,
  inviterequests: LegacyInviteInboxRecord,
  webhookoutbox: WebhookJobRecord,
};

/**
 * The schema of record `id` of `collection` (its data; null stands for a deletion and is checked before), or null
 * for a collection the host does not open (tests open stores of their own collections).
 */
export function recordSchema(collection: string, id: string): z.ZodType | null {
  if (collection === 'settings') return SETTINGS_RECORDS[id] ?? UNKNOWN_SETTING;
  return RECORDS[collection] ?? null;
}

const moderationState = z.object({
  Id: text,
  Username: text,
  Rank: rank,
  Badges: ids,
  BanStatus: banStatus,
  BanCount: z.number(),
  WarnStatus: warnStatus,
  WarnCount: z.number(),
  isBanned: z.boolean(),
});

/** A line of moderation-log.jsonl, and the entry a write-ahead log line carries for the log `moderation`. */
export const ModerationLogLine = z.object({
  id: text,
  seq: z.number(),
  time,
  moderatorId: text,
  moderatorName: text,
  action: z.enum(MODERATION_ACTIONS),
  targetUserId: text,
  targetName: text,
  fields: z.record(z.string(), z.unknown()),
  before: moderationState,
  after: moderationState,
});

/**
 * A line of the log `moderation` as it is now (issue 28's audit log): a moderation action (ModerationLogLine's
 * shape), or a staff action (no before/after, a `targetId`, never a secret in its fields). One object schema, so a
 * bad line is named by its field, not as "none of the accepted forms".
 */
export const AuditLogLine = z
  .object({
    id: text,
    seq: z.number(),
    time,
    moderatorId: text,
    moderatorName: text,
    action: z.enum([...MODERATION_ACTIONS, ...STAFF_ACTIONS]),
    targetUserId: text.optional(),
    targetId: text.optional(),
    targetName: text,
    fields: z.record(z.string(), z.unknown()),
    before: moderationState.optional(),
    after: moderationState.optional(),
  })
  .superRefine((entry, ctx) => {
    const moderation = (MODERATION_ACTIONS as readonly string[]).includes(entry.action);
    const needed = moderation ? (['targetUserId', 'before', 'after'] as const) : (['targetId'] as const);
    for (const field of needed) {
      if (entry[field] === undefined) {
        const expected = field === 'before' || field === 'after' ? 'object' : 'string';
        ctx.addIssue({ code: 'invalid_type', expected, input: undefined, path: [field] });
      }
    }
  });

const LOG_ENTRIES: Record<string, z.ZodType> = { moderation: AuditLogLine };

/** The schema of an entry of the store log `name`, or null for a log the host does not keep (tests' own). */
export function logEntrySchema(name: string): z.ZodType | null {
  return LOG_ENTRIES[name] ?? null;
}

/** A line of invite-requests.jsonl: a request received by `to`, or a new state of one. */
export const InviteEventLine = z.discriminatedUnion('t', [
  z.object({ t: z.literal('request'), to: text, request: storedInviteRequest }),
  z.object({ t: z.literal('state'), to: text, requestId: text, state: inviteState, at: time }),
]);

/**
 * Histories the data folder keeps beside the store's own logs (opened by the services after the store), checked
 * with everything else before the start writes anything.
 */
export const FOLDER_LOGS: ReadonlyArray<{ file: string; schema: z.ZodType }> = [
  { file: INVITE_LOG_FILE, schema: InviteEventLine },
];

/** meta.json: the schema version, the folder's birth and (first layout) the host settings. */
export const StoreMetaFile = z.object({
  schemaVersion: z.number().int().min(1),
  createdAt: time,
  ownerSetupDone: z.boolean().optional(),
  settings: z.object({ requireInviteCode: z.boolean().optional() }).optional(),
});
