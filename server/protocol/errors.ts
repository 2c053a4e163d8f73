/**
 * Error codes carried in `result.error.code` of a failed envelope. `message` stays human-readable and keeps the
 * real server's wording where one exists; the code is what our UI and tests branch on.
 */
export const ErrorCode = {
  INVALID_PARAMETERS: 'INVALID_PARAMETERS',
  INVALID_JSON: 'INVALID_JSON',
  BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  NOT_FOUND: 'NOT_FOUND',
  INTERNAL_ERROR: 'INTERNAL_ERROR',
  /** The host could not save the change (its disk is full, or a write failed); nothing was changed. */
  STORAGE_FULL: 'STORAGE_FULL',
  STORAGE_FAILED: 'STORAGE_FAILED',
  /** The host's database (PostgreSQL) is unreachable or too slow right now; nothing was changed; try again. */
  STORAGE_UNAVAILABLE: 'STORAGE_UNAVAILABLE',
  INVALID_TOKEN: 'INVALID_TOKEN',
  INCORRECT_CREDENTIALS: 'INCORRECT_CREDENTIALS',
  USER_NOT_FOUND: 'USER_NOT_FOUND',
  USERNAME_TAKEN: 'USERNAME_TAKEN',
  EMAIL_TAKEN: 'EMAIL_TAKEN',
  INVALID_USERNAME: 'INVALID_USERNAME',
  WEAK_PASSWORD: 'WEAK_PASSWORD',
  INVALID_EMAIL: 'INVALID_EMAIL',
  INVITE_CODE_REQUIRED: 'INVITE_CODE_REQUIRED',
  INVALID_BIO: 'INVALID_BIO',
  INVALID_2FA_CODE: 'INVALID_2FA_CODE',
  TWO_FA_NOT_ENABLED: 'TWO_FA_NOT_ENABLED',
  TWO_FA_ALREADY_ENABLED: 'TWO_FA_ALREADY_ENABLED',
  /** A change to how you sign in needs you to confirm it is you: the current password, and a 2FA code if on. */
  CONFIRMATION_REQUIRED: 'CONFIRMATION_REQUIRED',
  EMAIL_NOT_CONFIGURED: 'EMAIL_NOT_CONFIGURED',
  SOCIAL_REFUSED: 'SOCIAL_REFUSED',
  SETUP_ALREADY_DONE: 'SETUP_ALREADY_DONE',
  INVALID_SETUP_SECRET: 'INVALID_SETUP_SECRET',
  RATE_LIMITED: 'RATE_LIMITED',
  /** A request body stopped arriving for longer than the host waits; it was dropped. */
  TIMED_OUT: 'TIMED_OUT',
  NOT_A_MODERATOR: 'NOT_A_MODERATOR',
  UNKNOWN_ACTION: 'UNKNOWN_ACTION',
  USE_BANUSER: 'USE_BANUSER',
  CANNOT_MODERATE_SELF: 'CANNOT_MODERATE_SELF',
  TARGET_RANK_TOO_HIGH: 'TARGET_RANK_TOO_HIGH',
  RANK_NOT_GRANTABLE: 'RANK_NOT_GRANTABLE',
  RANK_UNCHANGED: 'RANK_UNCHANGED',
  INVALID_RANK: 'INVALID_RANK',
  INVALID_BADGE: 'INVALID_BADGE',
  BADGE_ALREADY_PRESENT: 'BADGE_ALREADY_PRESENT',
  BADGE_NOT_PRESENT: 'BADGE_NOT_PRESENT',
  TOO_MANY_BADGES: 'TOO_MANY_BADGES',
  INVALID_TIME_END: 'INVALID_TIME_END',
  INVALID_REASON: 'INVALID_REASON',
  NOT_BANNED: 'NOT_BANNED',
  NOT_WARNED: 'NOT_WARNED',
  CONTENT_NOT_FOUND: 'CONTENT_NOT_FOUND',
  NO_FILE: 'NO_FILE',
  UNEXPECTED_FILE_FIELD: 'UNEXPECTED_FILE_FIELD',
  FILE_TYPE_NOT_ALLOWED: 'FILE_TYPE_NOT_ALLOWED',
  FILE_TOO_LARGE: 'FILE_TOO_LARGE',
  INVALID_MULTIPART: 'INVALID_MULTIPART',
  INVALID_META: 'INVALID_META',
  META_TYPE_MISMATCH: 'META_TYPE_MISMATCH',
  NOT_OWNER: 'NOT_OWNER',
  INVALID_CHUNK: 'INVALID_CHUNK',
  UNKNOWN_CHUNK_SET: 'UNKNOWN_CHUNK_SET',
  MISSING_CHUNKS: 'MISSING_CHUNKS',
  /** The user holds as many unfinished chunk sets, or as many bytes in them, as the host allows. */
  CHUNK_QUOTA_EXCEEDED: 'CHUNK_QUOTA_EXCEEDED',
  FILE_IN_USE: 'FILE_IN_USE',
  FILE_NOT_FOUND: 'FILE_NOT_FOUND',
  FORBIDDEN: 'FORBIDDEN',
  RANGE_NOT_SATISFIABLE: 'RANGE_NOT_SATISFIABLE',
  BUILD_NOT_FOUND: 'BUILD_NOT_FOUND',
  BUILD_EXISTS: 'BUILD_EXISTS',
  /** A browser page of an origin this host does not allow (see allowedOrigins). */
  ORIGIN_NOT_ALLOWED: 'ORIGIN_NOT_ALLOWED',
  /** Node's HTTP parser could not read the request (e.g. a malformed or contradictory Content-Length). */
  MALFORMED_REQUEST: 'MALFORMED_REQUEST',
  /** The request's address and headers are over Node's limit (16 KiB). */
  HEADERS_TOO_LARGE: 'HEADERS_TOO_LARGE',
  /** The request did not arrive whole in time. */
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  /** A webhook test was asked for while no webhook URL is saved. */
  WEBHOOK_NOT_SET: 'WEBHOOK_NOT_SET',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Field name to a reason a person can read, e.g. `{password: 'needs an uppercase letter'}`. */
export type FieldErrors = Record<string, string>;

export interface FailureResult {
  error: { code: ErrorCode; fields?: FieldErrors };
  [extra: string]: unknown;
}

/** The envelope every `/api/v1/` answer has (SPEC section 1). */
export interface Envelope<R = Record<string, unknown>> {
  success: boolean;
  message: string;
  result?: R;
}
