import type { RawData } from 'ws';
import { StorageUnavailableError } from '../errors.js';
import { ServerMessage, type ClientEnvelope } from '../protocol/socket.js';
import { closeSocket, CloseCode, send, takeAllowance, type Connection } from './connection.js';
import { dispatchGameServer } from './game-server-messages.js';
import type { SocketContext } from './socket-context.js';
import { dispatchUser } from './user-messages.js';
import { verify } from './verify.js';

/** One incoming frame: rate-limited, parsed, then routed in the socket's order. */
export function onMessage(ctx: SocketContext, conn: Connection, data: RawData, _isBinary: boolean): void {
  // Any message proves the peer is alive, as a pong does: a busy client is not cut off for a late pong.
  conn.alive = true;
  if (!takeAllowance(conn, ctx.limits)) {
    const now = Date.now();
    if (now - conn.rateNoticeAt >= 1000) {
      conn.rateNoticeAt = now;
      send(conn, ServerMessage.error, {
        code: 'RATE_LIMITED',
        reason: 'Too many messages; some were dropped.',
      });
    }
    return;
  }
  const envelope = envelopeOf(conn, data);
  if (envelope === null) return;
  if (conn.queue) {
    inOrder(
      ctx,
      conn,
      conn.queue.then(() => route(ctx, conn, envelope)),
    );
    return;
  }
  const done = route(ctx, conn, envelope);
  if (done) inOrder(ctx, conn, done);
}

/** The frame as a message envelope, or null when it is not one (the client is told why). */
function envelopeOf(conn: Connection, data: RawData): ClientEnvelope | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawText(data));
  } catch {
    send(conn, ServerMessage.error, { code: 'INVALID_JSON', reason: 'Messages must be JSON.' });
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    send(conn, ServerMessage.error, {
      code: 'INVALID_MESSAGE',
      reason: 'A message must be a JSON object.',
    });
    return null;
  }
  const envelope = parsed as ClientEnvelope;
  if (typeof envelope.message !== 'string') {
    send(conn, ServerMessage.error, { code: 'INVALID_MESSAGE', reason: 'The message name is missing.' });
    return null;
  }
  return envelope;
}

/** Holds the socket's later messages until `work` is done; a failure is logged and the client told. */
function inOrder(ctx: SocketContext, conn: Connection, work: Promise<void>): void {
  const queued: Promise<void> = work
    .catch((error: unknown) => {
      ctx.deps.log.error(
        { err: error, userId: conn.userId, remote: conn.remote },
        'handling a socket message failed',
      );
      const unavailable = error instanceof StorageUnavailableError;
      send(conn, ServerMessage.error, {
        code: unavailable ? 'STORAGE_UNAVAILABLE' : 'INTERNAL_ERROR',
        reason: unavailable
          ? "The host's database is not answering; try again shortly."
          : 'The host could not handle that message; try again.',
      });
    })
    .then(() => {
      if (conn.queue === queued) conn.queue = null;
    });
  conn.queue = queued;
}

/** Handles one message; a promise when it waits for the store (the socket's next messages wait for it). */
function route(ctx: SocketContext, conn: Connection, envelope: ClientEnvelope): void | Promise<void> {
  const name = (envelope.message as string).toLowerCase();
  if (conn.gameServerId !== null) {
    // A verified game server: every message names it, and never a user.
    if (envelope.userId !== undefined || envelope.gameServerId !== conn.gameServerId) {
      closeSocket(conn, CloseCode.WRONG_GAME_SERVER, 'message for another sender');
      return;
    }
    dispatchGameServer(ctx.deps.instances, conn.gameServerId, name, envelope.args);
    return;
  }

  if (conn.userId === null) return verify(ctx, conn, envelope, name);
  if (envelope.userId !== undefined && envelope.userId !== conn.userId) {
    closeSocket(conn, CloseCode.WRONG_USER, 'message for another user');
    return;
  }
  return dispatchUser(ctx, conn, conn.userId, name, envelope.args);
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
