import type { WebhookMessage } from './webhook-messages.js';

/** How one POST to the webhook went, and whether trying again may help. */
export type Attempt =
  | { ok: true; detail: string }
  | {
      ok: false;
      /** A network fault, a timeout, a 5xx or a 429: the same message may go through later. */
      retry: boolean;
      /** What an HTTP 429 asked for (its retry_after), in ms; null for the usual backoff. */
      retryAfterMs: number | null;
      detail: string;
    };

/** Enough of an answer's body for Discord's `{"message": ..., "retry_after": ...}`; the rest is not read. */
const BODY_READ_MAX = 4096;
const REASON_MAX = 100;

/**
 * POSTs `message` to `url` once, with Node's fetch (undici): at most `timeoutMs` for connecting, sending and the
 * whole answer, and cut short by `stop` (the host closing). Never throws. Redirects are not followed: the URL the
 * owner saved (and the host checked) is the only place a message goes.
 */
export async function postWebhook(
  url: string,
  message: WebhookMessage,
  options: { timeoutMs: number; stop: AbortSignal },
): Promise<Attempt> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([timeout, options.stop]);
  let response: Response;
  let body: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'HypernexCompanion-Webhook' },
      body: JSON.stringify(message),
      redirect: 'manual',
      signal,
    });
    body = await readSome(response);
  } catch (error) {
    if (options.stop.aborted)
      return { ok: false, retry: false, retryAfterMs: null, detail: 'the host closed' };
    const detail = timeout.aborted ? `timed out after ${options.timeoutMs} ms` : networkFault(error);
    return { ok: false, retry: true, retryAfterMs: null, detail };
  }
  return judge(response, body);
}

/** What an answer means for this message. */
function judge(response: Response, body: string): Attempt {
  const status = response.status;
  if (status >= 200 && status < 300) return { ok: true, detail: `HTTP ${status}` };
  const reason = reasonOf(body);
  const detail = `HTTP ${status}${reason ? `: ${reason}` : ''}`;
  if (status === 429) return { ok: false, retry: true, retryAfterMs: retryAfterOf(response, body), detail };
  if (status >= 500 || status === 408) return { ok: false, retry: true, retryAfterMs: null, detail };
  if (status >= 300 && status < 400) {
    return { ok: false, retry: false, retryAfterMs: null, detail: `${detail} (redirects are not followed)` };
  }
  // 400, 401, 403, 404...: the receiver refuses this message or this URL; sending it again changes nothing.
  return { ok: false, retry: false, retryAfterMs: null, detail };
}

/** The first bytes of the answer (the timeout covers reading them too). */
async function readSome(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < BODY_READ_MAX) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    // The rest is not wanted: cancelling frees the connection.
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, BODY_READ_MAX);
}

/**
 * Discord's `message` ("Unknown Webhook"...), short: what the owner needs to fix the URL. The rest of a body is
 * not shown: the host must not become a way to read what some other server on its network answers.
 */
function reasonOf(body: string): string | null {
  const parsed = parseJson(body);
  const message = parsed?.message;
  return typeof message === 'string' && message !== '' ? message.slice(0, REASON_MAX) : null;
}

/** An HTTP 429's wait: Discord's `retry_after` (seconds, in the body), else the Retry-After header (seconds). */
function retryAfterOf(response: Response, body: string): number | null {
  const fromBody = parseJson(body)?.retry_after;
  if (typeof fromBody === 'number' && Number.isFinite(fromBody) && fromBody >= 0)
    return Math.ceil(fromBody * 1000);
  const header = Number(response.headers.get('retry-after') ?? NaN);
  return Number.isFinite(header) && header >= 0 ? Math.ceil(header * 1000) : null;
}

function parseJson(body: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed',
};

/** undici's "fetch failed" says little; its cause's code says what happened. */
function networkFault(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : null;
  if (code && NETWORK_CODES[code]) return NETWORK_CODES[code];
  if (code && /CERT|SSL|TLS/.test(code)) return `TLS certificate refused (${code})`;
  if (code) return code;
  return error instanceof Error ? error.message : String(error);
}
