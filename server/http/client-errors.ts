import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';

/**
 * Writes a whole HTTP 200 answer carrying a refusal envelope on a raw socket and closes it. For what never becomes
 * a request Koa sees: what Node's parser refuses (it would answer a bare 400 or 431), a refused socket upgrade.
 * HypernexSharp hangs on any answer that is not 2xx.
 */
export function refuseOnSocket(socket: Duplex, code: ErrorCode, message: string): void {
  const body = JSON.stringify({ success: false, message, result: { error: { code } } });
  const head =
    'HTTP/1.1 200 OK\r\n' +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${randomUUID()}\r\n` +
    'X-Content-Type-Options: nosniff\r\n' +
    'Connection: close\r\n\r\n';
  // Once written, the connection is done: nothing after a parse error can be trusted to be a request.
  socket.end(head + body, () => socket.destroy());
}

const REFUSALS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    code: ErrorCode.HEADERS_TOO_LARGE,
    message: 'Invalid parameters! The address or headers of the request are too large.',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    code: ErrorCode.HEADERS_TOO_LARGE,
    message: 'Invalid parameters! The chunk extensions of the request are too large.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    code: ErrorCode.REQUEST_TIMEOUT,
    message: 'The request did not arrive in time.',
  },
};

const MALFORMED = {
  code: ErrorCode.MALFORMED_REQUEST,
  message: 'Invalid parameters! The request is not valid HTTP.',
};

interface InFlight {
  req: IncomingMessage;
  res: ServerResponse;
}

/**
 * Answers what Node's parser refuses (the http server's `clientError`) with the envelope, minding the answers to
 * earlier requests of the same connection that are still on their way: bytes of ours must not land inside them.
 * When those requests arrived whole, the refusal follows their answers; when one was cut short by the error (a
 * body that stopped making sense, a request timeout), the refusal goes now if none of them started answering,
 * else the connection is only cut, as Node does.
 */
export class ClientErrors {
  readonly #log: Logger;
  readonly #inFlight = new WeakMap<object, Set<InFlight>>();
  /** A refusal waiting for the answers in flight on a connection. */
  readonly #after = new WeakMap<object, () => void>();

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Called for every request (app.ts's listener): its connection has an answer on the way until `res` closes. */
  track(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    let set = this.#inFlight.get(socket);
    if (!set) {
      set = new Set();
      this.#inFlight.set(socket, set);
    }
    const entry = { req, res };
    set.add(entry);
    // The connection's set stays (it goes with the socket): most connections carry request after request.
    res.once('close', () => {
      set.delete(entry);
      if (set.size > 0) return;
      const then = this.#after.get(socket);
      if (then === undefined) return;
      this.#after.delete(socket);
      then();
    });
  }

  /** The http server's `clientError` listener. */
  readonly listener = (error: Error & { code?: string }, socket: Duplex): void => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const refusal = REFUSALS[error.code ?? ''] ?? MALFORMED;
    if (this.#log.isLevelEnabled('debug'))
      this.#log.debug({ err: error }, 'refused a request Node could not read');
    const refuse = (): void => {
      if (socket.writable) refuseOnSocket(socket, refusal.code, refusal.message);
      else socket.destroy();
    };
    const inFlight = this.#inFlight.get(socket);
    if (!inFlight || inFlight.size === 0) return refuse();
    const all = [...inFlight];
    if (all.every((entry) => entry.req.complete)) this.#after.set(socket, refuse);
    else if (all.every((entry) => !entry.res.headersSent)) refuse();
    else socket.destroy();
  };
}
