import { z } from 'zod';
import { EMAIL_MAX, isAcceptedEmail } from './email.js';
import { PRONOUN_ID_MAX, PRONOUN_ID_MIN } from './pronouns.js';
import { lineText, multilineText, textProblem } from './text-rules.js';

/**
 * Request schemas and field rules shared by the server (boundary validation) and the renderer (the same field
 * errors before sending). Type checks come first and answer "Invalid parameters!" (a null, a missing value or a
 * wrong type, the 1.4.0 null fix); the rules below then give each field its own reason.
 */

export const USERNAME_MIN = 3;
export const USERNAME_MAX = 20;
export const PASSWORD_MIN = 8;
/** Bounds the work of one hash; far above any real password. */
export const PASSWORD_MAX = 256;
export { EMAIL_MAX };
export const BIO_DESCRIPTION_MAX = 1000;
export const BIO_DISPLAY_NAME_MAX = 20;
export const BIO_STATUS_TEXT_MAX = 200;
export const URL_MAX = 2048;

/** Reason a username breaks the reference rules (3-20 of A-Z a-z 0-9, at most one `_`), or null. */
export function usernameProblem(username: string): string | null {
  if (username.length < USERNAME_MIN || username.length > USERNAME_MAX) {
    return `must be ${USERNAME_MIN} to ${USERNAME_MAX} characters`;
  }
  if (!/^[A-Za-z0-9_]+$/.test(username)) return 'may only use letters, digits and one underscore';
  if ((username.match(/_/g) ?? []).length > 1) return 'may contain at most one underscore';
  return null;
}

/** Reason a password is too weak (reference 3.1), or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`;
  if (password.length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`;
  if (!/[A-Z]/.test(password)) return 'needs an uppercase letter';
  if (!/[a-z]/.test(password)) return 'needs a lowercase letter';
  if (!/[0-9]/.test(password)) return 'needs a digit';
  if (!/[^A-Za-z0-9]/.test(password)) return 'needs a symbol (a character that is not a letter or digit)';
  return null;
}

/** Reason an email address is not accepted (server/protocol/email.ts: LAN addresses like `owner@lan` are), or null. */
export function emailProblem(email: string): string | null {
  if (email.length > EMAIL_MAX) return `must be at most ${EMAIL_MAX} characters`;
  return isAcceptedEmail(email) ? null : 'is not a valid email address';
}

const id = z.string().min(1).max(200);
const token = z.string().min(1).max(512);

export const CreateUserRequest = z.object({
  username: z.string().max(200),
  password: z.string().max(4096),
  email: z.string().max(1000),
  // HypernexSharp drops an empty inviteCode (reference 3.1): missing means "".
  inviteCode: z.string().max(200).optional(),
});
export type CreateUserRequest = z.infer<typeof CreateUserRequest>;

export const SetupOwnerRequest = CreateUserRequest.omit({ inviteCode: true }).extend({
  setupSecret: z.string().min(1).max(512),
});
export type SetupOwnerRequest = z.infer<typeof SetupOwnerRequest>;

export const LoginRequest = z.object({
  username: z.string().min(1).max(200),
  password: z.string().min(1).max(4096),
  twofacode: z.string().max(32).optional(),
  app: z.string().max(100).optional(),
});
export type LoginRequest = z.infer<typeof LoginRequest>;

export const AuthRequest = z.object({ userid: id, tokenContent: token });
export type AuthRequest = z.infer<typeof AuthRequest>;

export const IsValidTokenRequest = z
  .object({ username: z.string().min(1).max(200).optional(), userid: id.optional(), tokenContent: token })
  .refine((v) => v.username !== undefined || v.userid !== undefined, {
    message: 'username or userid is required',
    path: ['userid'],
  });

export const GetUserRequest = z
  .object({
    username: z.string().min(1).max(200).optional(),
    userid: id.optional(),
    // As the real server: a token that is not a string (the web dashboard sends its whole token object) counts as
    // absent, so the answer is the public view, never the private one.
    tokenContent: z.preprocess((v) => (typeof v === 'string' ? v : undefined), token.optional()),
  })
  .refine((v) => v.username !== undefined || v.userid !== undefined, {
    message: 'username or userid is required',
    path: ['userid'],
  });

export const GetUserQuery = z
  .object({ username: z.string().min(1).max(200).optional(), userid: id.optional() })
  .refine((v) => v.username !== undefined || v.userid !== undefined, {
    message: 'username or userid is required',
    path: ['userid'],
  });

export const TargetRequest = AuthRequest.extend({ targetUserId: id });
export type TargetRequest = z.infer<typeof TargetRequest>;

export const Verify2faRequest = AuthRequest.extend({ code: z.string().min(1).max(32) });

/**
 * What confirms that the person holding a session is the account's owner, for changes a stolen session must not
 * make (remove2fa, resetPassword and changePassword): the current password, and the 2FA code when 2FA is on.
 * Optional here so a missing one gets its own clear refusal (CONFIRMATION_REQUIRED).
 */
export const IdentityConfirmation = z.object({
  currentPassword: z.string().max(4096).optional(),
  twofacode: z.string().max(32).optional(),
});
export type IdentityConfirmation = z.infer<typeof IdentityConfirmation>;

export const Remove2faRequest = AuthRequest.extend(IdentityConfirmation.shape);

export const ChangePasswordRequest = AuthRequest.extend({
  newPassword: z.string().max(4096),
  ...IdentityConfirmation.shape,
});

const pronounId = z.number().int().min(PRONOUN_ID_MIN).max(PRONOUN_ID_MAX);
const caseId = z.number().int().min(0).max(4);
export const PronounsInput = z.union([
  z.literal('remove'),
  z.object({
    nominativeId: pronounId,
    accusativeId: pronounId,
    reflexiveId: pronounId.optional(),
    independentId: pronounId.optional(),
    dependentId: pronounId.optional(),
    DisplayThree: z.boolean(),
    // Our addition: which three cases to show (PronounCase numbers); the real server always stores [0, 1, 2].
    Display: z.tuple([caseId, caseId, caseId]).optional(),
  }),
]);

/** Status values a user may set: Offline (0) is what others see without a socket, never a choice. */
export const SETTABLE_STATUSES = [1, 2, 3, 4] as const;

export const BioInput = z
  .object({
    isPrivateAccount: z.boolean(),
    Status: z
      .number()
      .int()
      .refine(
        (s) => (SETTABLE_STATUSES as readonly number[]).includes(s),
        'must be 1 (Online) to 4 (DoNotDisturb)',
      ),
    StatusText: lineText(z.string().max(BIO_STATUS_TEXT_MAX)),
    Description: multilineText(z.string().max(BIO_DESCRIPTION_MAX)),
    DisplayName: lineText(z.string().max(BIO_DISPLAY_NAME_MAX)),
    PfpURL: z.string().max(URL_MAX),
    BannerURL: z.string().max(URL_MAX),
    Pronouns: PronounsInput,
  })
  .partial();
export type BioInput = z.infer<typeof BioInput>;

export const UpdateBioRequest = AuthRequest.extend({
  // HypernexSharp sends the object; a JSON string (urlencoded forms) is accepted too.
  bio: z.union([z.record(z.string(), z.unknown()), z.string().max(20_000)]),
});

export const DoesUserExistQuery = z.object({ userid: id });

/** Turns a zod error into `{field: reason}` for `result.error.fields`. */
export function fieldErrorsOf(error: z.ZodError): Record<string, string> {
  const out: Record<string, string> = {};
  for (const issue of error.issues) {
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : '_';
    if (out[key] === undefined) out[key] = describeIssue(issue);
  }
  return out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    return issue.input === undefined ? 'is required' : `must be ${issue.expected}`;
  }
  return issue.message;
}

export const ListInviteRequestsRequest = AuthRequest.extend({
  state: z.enum(['new', 'seen', 'answered', 'dismissed', 'expired']).optional(),
});

export const UpdateInviteRequestRequest = AuthRequest.extend({
  requestId: z.string().min(1).max(200),
  state: z.enum(['seen', 'answered', 'dismissed']),
});

export const BADGE_NAME_MAX = 32;
export const BADGES_MAX = 50;
export const MOD_REASON_MAX = 200;
export const MOD_DESCRIPTION_MAX = 2000;
/** HypernexSharp reads BanEnd as a 32-bit int: no ban may end later than this. */
export const TIME_END_MAX = 2_147_483_647;

/** Trims and lowercases a badge name; returns the reason it is not acceptable, or the name. */
export function normaliseBadge(name: string): { badge: string } | { problem: string } {
  // The text rule first, on what was sent: its reason names the hidden character the next rules would not.
  const hidden = textProblem(name, 'line');
  if (hidden !== null) return { problem: hidden };
  const badge = name.trim().toLowerCase();
  if (badge.length === 0) return { problem: 'must not be empty' };
  if (badge.length > BADGE_NAME_MAX) return { problem: `must be at most ${BADGE_NAME_MAX} characters` };
  if (!/^[\p{L}\p{N} ._-]+$/u.test(badge))
    return { problem: 'may use letters, digits, spaces, dot, dash, underscore' };
  return { badge };
}

export const MODERATION_ACTIONS = [
  'addbadge',
  'removebadge',
  'setrank',
  'warnuser',
  'unwarnuser',
  'banuser',
  'unbanuser',
  'deleteavatar',
  'deleteworld',
  'deletefile',
] as const;
export type ModerationAction = (typeof MODERATION_ACTIONS)[number];

export const ModerationRequest = AuthRequest.extend({
  action: z.string().min(1).max(50),
  targetUserId: id,
});

export const ModerationFields = {
  addbadge: z.object({ badgeName: z.string().max(10_000) }),
  removebadge: z.object({ badgeName: z.string().max(10_000) }),
  setrank: z.object({ newRank: z.number() }),
  warnuser: z.object({
    warnReason: lineText(z.string().max(10_000)),
    warnDescription: multilineText(z.string().max(100_000)),
  }),
  unwarnuser: z.object({}),
  banuser: z.object({
    banReason: lineText(z.string().max(10_000)),
    banDescription: multilineText(z.string().max(100_000)),
    timeEnd: z.number(),
  }),
  unbanuser: z.object({}),
  deleteavatar: z.object({ avatarId: id }),
  deleteworld: z.object({ worldId: id }),
  deletefile: z.object({ fileId: id }),
} as const;

export const ModerationLogRequest = AuthRequest.extend({
  targetUserId: id.optional(),
  moderatorId: id.optional(),
  action: z.enum(MODERATION_ACTIONS).optional(),
  page: z.number().int().min(0).max(1_000_000).optional(),
  itemsPerPage: z.number().int().min(1).max(200).optional(),
});

export const ModerationLookupRequest = AuthRequest.extend({
  query: z.string().min(1).max(200),
});

export const RemoveAvatarRequest = AuthRequest.extend({ avatarid: id });
export const RemoveWorldRequest = AuthRequest.extend({ worldid: id });
export const RemoveFileRequest = AuthRequest.extend({ fileid: id });
export const AddGameServerTokenRequest = AuthRequest.extend({ label: lineText(z.string().max(100)) });
export const RevokeGameServerTokenRequest = AuthRequest.extend({ tokenId: id });
export const ManageAssetTokenRequest = AuthRequest.extend({
  /** The number 0 (add) or 1 (remove); checked by the route so a string gets its own clear refusal. */
  action: z.unknown(),
  assetId: id,
  assetToken: z.string().max(512).optional(),
});
/** Most sign-ups one invite code can allow (beyond that, make it unlimited). */
export const INVITE_CODE_MAX_USES = 10_000;
/** Longest an invite code can stay valid. */
export const INVITE_CODE_MAX_SECONDS = 366 * 86_400;
export const CreateInviteCodeRequest = AuthRequest.extend({
  label: lineText(z.string().max(100)).optional(),
  singleUse: z.boolean().optional(),
  /** How many sign-ups the code allows, 0 for no limit; wins over `singleUse`. */
  maxUses: z.number().int().min(0).max(INVITE_CODE_MAX_USES).optional(),
  expiresInSeconds: z.number().int().min(0).max(INVITE_CODE_MAX_SECONDS).optional(),
});
export const RevokeInviteCodeRequest = AuthRequest.extend({ codeId: id });
export const HostSettingsRequest = AuthRequest.extend({ requireInviteCode: z.boolean().optional() });
export const JsonUploadRequest = AuthRequest.extend({
  file: z.object({ name: z.string().min(1).max(255), data: z.string() }),
  avatarMeta: z.unknown().optional(),
  worldMeta: z.unknown().optional(),
});
/** An avatarmeta / worldmeta: a JSON string as HypernexSharp sends it (an object is accepted too). */
const assetMeta = z.union([z.string().max(1024 * 1024), z.record(z.string(), z.unknown())]);
/**
 * update/avatar (wire reference 12.3): with `fileid`, that uploaded .hna becomes a build of a new or an own avatar;
 * without, the details only. The meta key is lowercase as the 1.5 library sends it; `avatarMeta` is accepted too.
 */
export const UpdateAvatarRequest = AuthRequest.extend({
  fileid: id.optional(),
  avatarmeta: assetMeta.optional(),
  avatarMeta: assetMeta.optional(),
}).refine((v) => v.avatarmeta !== undefined || v.avatarMeta !== undefined, {
  message: 'is required',
  path: ['avatarmeta'],
});
/** update/world: as update/avatar, with a .hnw and `worldmeta`. */
export const UpdateWorldRequest = AuthRequest.extend({
  fileid: id.optional(),
  worldmeta: assetMeta.optional(),
  worldMeta: assetMeta.optional(),
}).refine((v) => v.worldmeta !== undefined || v.worldMeta !== undefined, {
  message: 'is required',
  path: ['worldmeta'],
});
/** POST instances: `worldid` (as the 1.5 library sends it) keeps only that world's instances. */
export const InstancesRequest = AuthRequest.extend({ worldid: id.optional() });
export const UploadPartStatusRequest = AuthRequest.extend({ chunkId: z.string().max(100) });
/** The text fields of a multipart upload (the file part is named `file`), for documentation. */
export const MultipartUploadFields = z.object({
  userid: z.string(),
  tokenContent: z.string(),
  avatarMeta: z.string().optional(),
  worldMeta: z.string().optional(),
  file: z.string().describe('the file part (binary)'),
});
export const MultipartUploadPartFields = MultipartUploadFields.extend({
  chunkId: z.string().describe('"" for the first chunk, then the id the host returned'),
  chunkNumber: z.string().describe('0-based'),
  amountOfChunks: z.string(),
  originalFileName: z.string(),
});
