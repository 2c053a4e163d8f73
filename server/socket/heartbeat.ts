import { closeSocket, CloseCode, HEARTBEAT_SLICES } from './connection.js';
import { closeIfRevoked } from './revocation.js';
import { background, type SocketContext } from './socket-context.js';

/**
 * Pings every socket once per heartbeat, terminating those that did not answer the last ping, closing those not
 * verified in time and those whose token expired. Each socket is looked at once per heartbeat, but in
 * HEARTBEAT_SLICES groups spread over the interval: with thousands of sockets one pass would stall the event loop
 * (a write per ping) and every message behind it.
 */
export function startHeartbeat(ctx: SocketContext): NodeJS.Timeout {
  const { limits } = ctx;
  let slice = 0;
  const heartbeat = setInterval(() => {
    const now = Date.now();
    const nowSeconds = Math.floor(ctx.deps.clock.now() / 1000);
    const current = slice;
    slice = (slice + 1) % HEARTBEAT_SLICES;
    // Never rejects: its errors are reported where they happen.
    if (current === 0) ctx.deps.invites.sweep().catch(() => undefined);
    for (const conn of ctx.connections) {
      if (conn.slice !== current) continue;
      if (!conn.alive) {
        conn.ws.terminate();
        continue;
      }
      if (
        conn.userId === null &&
        conn.gameServerId === null &&
        now - conn.openedAt > limits.verifyTimeoutMs
      ) {
        closeSocket(conn, CloseCode.NOT_VERIFIED_IN_TIME, 'not verified in time');
        continue;
      }
      // Only an expiring token needs a look here (a clock comparison, no hashing per socket per tick).
      if (conn.userId !== null && conn.token !== null && nowSeconds >= conn.tokenExpiresAt) {
        background(ctx, closeIfRevoked(ctx, conn), 'closing a socket whose token expired', conn.userId);
      }
      conn.alive = false;
      conn.ws.ping();
    }
  }, limits.heartbeatMs / HEARTBEAT_SLICES);
  heartbeat.unref();
  return heartbeat;
}
