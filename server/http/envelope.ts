import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { ErrorCode, type FieldErrors } from '../protocol/errors.js';
import { fieldErrorsOf } from '../protocol/schemas.js';
import { AppError, StorageUnavailableError, StorageWriteError } from '../errors.js';

/** Under /api/ (in any case, as the router's prefix matches). */
export function isApiPath(path: string): boolean {
  // Asked several times per request: compared in place (c | 32 lower-cases an ASCII letter; only 'A' and 'a' give
  // 'a', and so on) rather than through a lower-cased copy.
  return (
    path.length >= 5 &&
    path.charCodeAt(0) === 0x2f &&
    (path.charCodeAt(1) | 32) === 0x61 &&
    (path.charCodeAt(2) | 32) === 0x70 &&
    (path.charCodeAt(3) | 32) === 0x69 &&
    path.charCodeAt(4) === 0x2f
  );
}

/** What `ctx.type = 'application/json'` sets. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The only place that writes a successful answer. Serialised here, as Koa would when it sends an object body: as
 * text, Koa sends it as it is (the same bytes and headers) with less work on each request.
 */
export function reply(ctx: Context, message: string, result?: Record<string, unknown>): void {
  ctx.status = 200;
  ctx.res.setHeader('Content-Type', JSON_TYPE);
  ctx.body = JSON.stringify(
    result === undefined ? { success: true, message } : { success: true, message, result },
  );
}

/** Validates `input` against `schema`, or throws "Invalid parameters!" naming each bad field. */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const parsed = schema.safeParse(input ?? {});
  if (!parsed.success) {
    throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', fieldErrorsOf(parsed.error));
  }
  return parsed.data;
}

interface HttpishError {
  status?: number;
  type?: string;
  expose?: boolean;
}

function classify(error: unknown): {
  code: ErrorCode;
  message: string;
  fields?: FieldErrors;
  extra?: Record<string, unknown>;
  unexpected: boolean;
} {
  if (error instanceof AppError) {
    return {
      code: error.code,
      message: error.message,
      fields: error.fields,
      extra: error.extra,
      unexpected: false,
    };
  }
  if (error instanceof StorageUnavailableError) {
    return { code: ErrorCode.STORAGE_UNAVAILABLE, message: error.message, unexpected: false };
  }
  if (error instanceof StorageWriteError) {
    const full = (error.cause as NodeJS.ErrnoException | null)?.code === 'ENOSPC';
    return {
      code: full ? ErrorCode.STORAGE_FULL : ErrorCode.STORAGE_FAILED,
      message: error.message,
      unexpected: false,
    };
  }
  if ((error as NodeJS.ErrnoException | null)?.code === 'ENOSPC') {
    // A file being received (an upload) hit a full disk: it was removed, nothing else changed.
    return {
      code: ErrorCode.STORAGE_FULL,
      message:
        'The host could not save this: its disk is full. Nothing was changed; try again once space is free.',
      unexpected: false,
    };
  }
  const http = (error ?? {}) as HttpishError;
  const multer = multerProblem(error);
  if (multer) return { ...multer, unexpected: false };
  if (error instanceof SyntaxError && http.status === 400) {
    // co-body's JSON parse failure (also a JSON body that is not an object or array).
    return {
      code: ErrorCode.INVALID_JSON,
      message: 'Invalid parameters! The body is not valid JSON.',
      unexpected: false,
    };
  }
  switch (http.type) {
    case 'entity.parse.failed':
      return {
        code: ErrorCode.INVALID_JSON,
        message: 'Invalid parameters! The body is not valid JSON.',
        unexpected: false,
      };
    case 'entity.too.large':
      return {
        code: ErrorCode.BODY_TOO_LARGE,
        message: 'Invalid parameters! The body is too large.',
        unexpected: false,
      };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return {
        code: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        message: 'Invalid parameters! Unsupported body encoding.',
        unexpected: false,
      };
    case 'request.aborted':
      return { code: ErrorCode.INVALID_PARAMETERS, message: 'Request aborted.', unexpected: false };
  }
  if (http.status === 400 || http.status === 413 || http.status === 415) {
    return { code: ErrorCode.INVALID_PARAMETERS, message: 'Invalid parameters!', unexpected: false };
  }
  return {
    code: ErrorCode.INTERNAL_ERROR,
    message: 'Internal server error. The host logged the details.',
    unexpected: true,
  };
}

const MULTER_CODES: Record<string, { code: ErrorCode; message: string }> = {
  LIMIT_FILE_SIZE: {
    code: ErrorCode.FILE_TOO_LARGE,
    message: 'Failed to upload file! It is larger than this host allows.',
  },
  LIMIT_UNEXPECTED_FILE: {
    code: ErrorCode.UNEXPECTED_FILE_FIELD,
    message: 'Invalid parameters! Send exactly one file, in a part named "file".',
  },
  LIMIT_FILE_COUNT: {
    code: ErrorCode.UNEXPECTED_FILE_FIELD,
    message: 'Invalid parameters! Send exactly one file.',
  },
  LIMIT_FIELD_VALUE: {
    code: ErrorCode.BODY_TOO_LARGE,
    message: 'Invalid parameters! A text field is too large.',
  },
};

/** multer and busboy failures: limits, a wrongly named part, a malformed or cut-off body. */
function multerProblem(error: unknown): { code: ErrorCode; message: string } | null {
  if (!(error instanceof Error)) return null;
  const { name, message } = error;
  const code = (error as { code?: string }).code;
  if (name === 'MulterError') {
    return (
      MULTER_CODES[code ?? ''] ?? {
        code: ErrorCode.INVALID_MULTIPART,
        message: `Invalid upload: ${message}.`,
      }
    );
  }
  if (
    /^(Unexpected end of form|Malformed part header|Multipart: Boundary not found|Unexpected end of multipart data)/.test(
      message,
    )
  ) {
    return { code: ErrorCode.INVALID_MULTIPART, message: `Invalid upload: ${message}.` };
  }
  if (message === 'Request aborted' || message === 'Request closed') {
    return { code: ErrorCode.INVALID_MULTIPART, message: 'The upload was interrupted.' };
  }
  return null;
}

/**
 * The error funnel (Koa's one-place error handling): every failure under /api/ becomes an HTTP 200 envelope
 * with `result.error.code`, because HypernexSharp hangs on anything that is not 2xx. Unexpected errors are logged
 * with the request id; their details never leave the process.
 */
export function envelopeFunnel(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (isApiPath(ctx.path) && ctx.body === undefined && ctx.status === 404) {
        throw new AppError(ErrorCode.NOT_FOUND, `Unknown endpoint: ${ctx.method} ${ctx.path}`);
      }
    } catch (error) {
      ctx.status = 200;
      ctx.type = 'application/json';
      ctx.body = errorEnvelope(error, log, ctx.state.reqId as string, ctx.path);
    }
  };
}

/** The refusal envelope for `error`; an unexpected one is logged with the request id and never described. */
export function errorEnvelope(error: unknown, log: Logger, reqId: string, path: string): object {
  const { code, message, fields, extra, unexpected } = classify(error);
  if (unexpected) log.error({ err: error, reqId, path }, 'request failed');
  else if (
    code === ErrorCode.STORAGE_FULL ||
    code === ErrorCode.STORAGE_FAILED ||
    code === ErrorCode.STORAGE_UNAVAILABLE
  ) {
    log.warn({ err: error, reqId, path }, 'a change could not be saved');
  }
  return {
    success: false,
    message,
    result: { ...extra, error: fields && Object.keys(fields).length > 0 ? { code, fields } : { code } },
  };
}
