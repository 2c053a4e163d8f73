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
  EMAIL_NOT_CONFIGURED: 'EMAIL_NOT_CONFIGURED',
  SOCIAL_REFUSED: 'SOCIAL_REFUSED',
  SETUP_ALREADY_DONE: 'SETUP_ALREADY_DONE',
  INVALID_SETUP_SECRET: 'INVALID_SETUP_SECRET',
  RATE_LIMITED: 'RATE_LIMITED',
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
