import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import type { HostConfig } from '../config.js';
import { ErrorCode } from '../protocol/errors.js';
import { AppError } from '../errors.js';
import type { ClientAddresses } from '../socket/forwarded-address.js';

/**
 * `POST /api/v1/upload`, `/uploadPart` and `/builds/publish`, as the router matches them (any case, optional
 * trailing slash): the routes that take files.
 */
const UPLOAD_PATH = /^\/api\/v1\/(upload|uploadpart|builds\/publish)\/?$/i;

interface Ticket {
  /** Why the host dropped this request, once it did. */
  dropped: AppError | null;
  /** Answers the request now with `reason` and closes its connection. */
  drop(reason: AppError): void;
  /** Its credentials were checked: it no longer counts as anonymous. */
  verified(): void;
}

/** The ticket of each upload request in flight, for the storage engine and routes that only hold the request. */
const tickets = new WeakMap<IncomingMessage, Ticket>();

/**
 * Guards upload requests against anonymous resource exhaustion (each one holds a socket, and a temp file once its
 * file part starts): at most `unverifiedPerAddress` requests per address and `unverifiedTotal` in all may be
 * arriving without valid credentials (the longest-waiting one makes room for a newcomer, so a flood of stalled
 * requests can never keep a signed-in user out), and a body that sends nothing for `idleTimeoutSeconds` is
 * dropped. A dropped request is answered at once with the error envelope and the connection closed, which
 * removes any partial file. Mount before the body parsers.
 */
export function uploadGuard(limits: HostConfig['uploads'], addresses: ClientAddresses): Middleware {
  /** Requests arriving without valid credentials, oldest first (a Map keeps insertion order). */
  const anonymous = new Set<Ticket>();
  const perAddress = new Map<string, number>();
  const idleMs = limits.idleTimeoutSeconds * 1000;

  // Every other request only passes through: no promise of its own for it.
  return (ctx, next) => (ctx.method !== 'POST' || !UPLOAD_PATH.test(ctx.path) ? next() : guard(ctx, next));

  async function guard(ctx: Context, next: Next): Promise<void> {
    const req = ctx.req;
    const address = addresses.of(req);
    if ((perAddress.get(address) ?? 0) >= limits.unverifiedPerAddress) {
      hangUpAfterAnswer(ctx);
      throw new AppError(
        ErrorCode.RATE_LIMITED,
        `Too many uploads from your address are still arriving without credentials (at most ${limits.unverifiedPerAddress}); send userid and tokenContent first, or try again shortly.`,
      );
    }
    if (anonymous.size >= limits.unverifiedTotal) {
      const oldest = anonymous.values().next().value;
      oldest?.drop(
        new AppError(
          ErrorCode.RATE_LIMITED,
          'The host is receiving too many uploads without credentials and dropped this one, the longest waiting; send userid and tokenContent first, or try again shortly.',
        ),
      );
    }
    let reject!: (reason: AppError) => void;
    const dropped = new Promise<never>((_resolve, fail) => {
      reject = fail;
    });
    // Raced against the handler below, which is what reports the failure; this copy alone must not count as
    // unhandled.
    dropped.catch(() => undefined);
    let counted = true;
    const leaveAnonymous = (): void => {
      if (!counted) return;
      counted = false;
      anonymous.delete(ticket);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    };
    const ticket: Ticket = {
      dropped: null,
      drop(reason) {
        if (ticket.dropped || req.complete) return;
        ticket.dropped = reason;
        leaveAnonymous();
        reject(reason);
      },
      verified: leaveAnonymous,
    };
    anonymous.add(ticket);
    perAddress.set(address, (perAddress.get(address) ?? 0) + 1);
    tickets.set(req, ticket);

    // The socket's own idle timer: Node resets it on every byte read. A listener on the request keeps Node's
    // default (destroying the socket) from running, so the dropped request still gets its envelope.
    const socket = req.socket;
    const onIdle = (): void =>
      ticket.drop(
        new AppError(
          ErrorCode.TIMED_OUT,
          `The upload stopped: nothing arrived for ${limits.idleTimeoutSeconds} seconds.`,
        ),
      );
    const disarm = (): void => {
      req.off('timeout', onIdle);
      socket.setTimeout(0);
    };
    const onEnd = (): void => {
      // The whole body is here: no longer waiting on the sender, whatever the handler does next.
      leaveAnonymous();
      disarm();
    };
    req.on('timeout', onIdle);
    req.once('end', onEnd);
    socket.setTimeout(idleMs);
    try {
      const handled = next();
      // Awaited through the race below (its failure is rethrown there); this only keeps a drop that wins the race
      // from leaving it unhandled.
      handled.catch(() => undefined);
      await Promise.race([handled, dropped]);
    } catch (error) {
      // Refused before the body ended: answer and hang up rather than read the rest.
      if (!req.complete) hangUpAfterAnswer(ctx);
      throw error;
    } finally {
      req.off('end', onEnd);
      leaveAnonymous();
      disarm();
      // A dropped request's connection closes once its answer is out; should the peer not even read that,
      // the socket's idle timer (now with no listener) has Node destroy it.
      if (ticket.dropped) socket.setTimeout(idleMs);
    }
  }
}

/**
 * Closes the connection once the answer is out, unread body and all. Node stops tracking a request once its
 * answer is sent, so nothing would tell the body's reader that no more is coming: the request is destroyed here,
 * which makes the multipart parser drop its file stream (and the partial file with it).
 */
function hangUpAfterAnswer(ctx: Context): void {
  ctx.set('Connection', 'close');
  const req = ctx.req;
  ctx.res.once('close', () => {
    if (!req.destroyed) req.destroy();
  });
}

/**
 * The request's credentials were checked: it no longer counts as anonymous. Throws the reason when the host
 * already dropped the request, so that nothing of it is kept.
 */
export function uploadVerified(req: IncomingMessage): void {
  const ticket = tickets.get(req);
  if (ticket?.dropped) throw ticket.dropped;
  ticket?.verified();
}

/** Answers an upload request now with `reason` and closes its connection, without reading the rest. */
export function refuseUpload(req: IncomingMessage, reason: AppError): void {
  tickets.get(req)?.drop(reason);
}
