import { ErrorCode, type Envelope, type FieldErrors } from '../../server/protocol/errors.js';

/**
 * The only module that knows the `/api/v1/` envelope. Everything else gets either the `result` object or an
 * ApiError, so screens branch on codes and field names, never on message wording.
 */

/** Failures that happen before an envelope exists: the host is unreachable or answered something else. */
export type ClientErrorCode = 'NETWORK_ERROR' | 'BAD_RESPONSE';

export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly code: ErrorCode | ClientErrorCode,
    message: string,
    /** Field name to a reason a person can read, as the server's shared rules phrase it. */
    readonly fields: FieldErrors = {},
    /** The whole failed `result`, for endpoints that add data beside the error (login's LoginResult). */
    readonly result: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

// Same origin as the page: the host serves this UI, so LAN browsers and the desktop window both reach it here.
export const API_BASE = '/api/v1/';

const KNOWN_CODES = new Set<string>(Object.values(ErrorCode));

/** Calls `path` (e.g. `login`): POSTs `body` as JSON, or GETs when there is no body. Resolves to `result`. */
export async function call<R extends object = Record<string, unknown>>(
  path: string,
  body?: object,
  options: { signal?: AbortSignal } = {},
): Promise<R> {
  let response: Response;
  try {
    response = await fetch(API_BASE + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: body === undefined ? { Accept: 'application/json' } : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal,
      cache: 'no-store',
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError('NETWORK_ERROR', 'Could not reach the host. Check that it is running and reachable.');
  }

  let envelope: unknown;
  try {
    envelope = await response.json();
  } catch {
    throw new ApiError(
      'BAD_RESPONSE',
      `The host answered something that is not the API (HTTP ${response.status}).`,
    );
  }
  return readEnvelope<R>(envelope);
}

/**
 * The `result` of a parsed answer body, or the ApiError it stands for. Exported for transports other than
 * fetch (XMLHttpRequest uploads with progress, renderer/shared/upload-request.ts).
 */
export function readEnvelope<R extends object = Record<string, unknown>>(envelope: unknown): R {
  if (!isEnvelope(envelope)) {
    throw new ApiError('BAD_RESPONSE', 'The host answered something that is not the API.');
  }

  const result = isRecord(envelope.result) ? envelope.result : {};
  if (!envelope.success) {
    const error = isRecord(result.error) ? result.error : {};
    const code =
      typeof error.code === 'string' && KNOWN_CODES.has(error.code)
        ? (error.code as ErrorCode)
        : ErrorCode.INTERNAL_ERROR;
    throw new ApiError(code, envelope.message || 'The request failed.', stringRecord(error.fields), result);
  }
  return result as R;
}

function isEnvelope(value: unknown): value is Envelope<unknown> {
  return isRecord(value) && typeof value.success === 'boolean' && typeof value.message === 'string';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringRecord(value: unknown): FieldErrors {
  const out: FieldErrors = {};
  if (!isRecord(value)) return out;
  for (const [key, reason] of Object.entries(value)) {
    if (typeof reason === 'string') out[key] = reason;
  }
  return out;
}

/** A sentence for any error a call can throw, for places that show one line. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return 'Something went wrong.';
}
