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

/**
 * The database could not be reached or did not answer within its time limits (a read, or a commit that surely
 * did not happen). The host keeps serving and recovers by itself when the database is back.
 */
export class StorageUnavailableError extends Error {
  constructor(
    override readonly cause: unknown,
    detail?: string,
  ) {
    super(
      detail ??
        `The host's database is not answering (${cause instanceof Error ? cause.message : String(cause)}). Nothing was changed; try again shortly.`,
    );
    this.name = 'StorageUnavailableError';
  }
}

/** Thrown for a commit the log could not make durable; nothing of it is kept or visible. */
export class StorageWriteError extends Error {
  constructor(override readonly cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | null)?.code;
    super(
      code === 'ENOSPC'
        ? 'The host could not save this change: its disk is full. Nothing was changed; try again once space is free.'
        : `The host could not save this change (${cause instanceof Error ? cause.message : String(cause)}). Nothing was changed.`,
    );
    this.name = 'StorageWriteError';
  }
}
