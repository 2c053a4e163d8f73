import type { ErrorCode, FieldErrors } from './protocol/errors.js';

/** The one error type handlers and services throw; the envelope funnel turns it into a failed answer. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields?: FieldErrors,
    /** Extra keys for `result`, e.g. `{LoginResult: 0}` for clients that read it. */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}
