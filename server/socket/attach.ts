import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { newConnection, type Connection } from './connection.js';
import { startHeartbeat } from './heartbeat.js';
import { createInviteAnswers } from './invite-requests.js';
import { onMessage } from './messages.js';
import { createOutbox, type SendText } from './outbox.js';
import { connectionClosed, followRemoteOffline } from './presence.js';
import { followHostEvents } from './revocation.js';
import type { SocketContext, SocketDeps } from './socket-context.js';

export { CloseCode } from './connection.js';
export type { SocketDeps } from './socket-context.js';

export interface SocketServer {
  /** Every open connection, verified or not. */
  readonly connections: number;
  /** Accepts an upgrade from another HTTP server (the optional separate socket port). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): Promise<void>;
}

/**
 * The user socket (SPEC section 5) on an HTTP server: upgrades on any path, as real clients connect to `/`.
 * Heartbeat, size and rate limits, verification once per socket, and re-checks that close the sockets of a user
 * whose token expired or who got banned. Wires the parts of server/socket/ to one shared context.
 */
export function attachSocket(server: Server, deps: SocketDeps): SocketServer {
  const { log } = deps;
  const limits = deps.config.socket;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const ctx: SocketContext = {
    deps,
    limits,
    connections: new Set<Connection>(),
    inviteAnswers: createInviteAnswers(log),
  };
  const sendText = createOutbox(limits, log);

  const handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    // A browser page says where it comes from; one of another site may not act with its visitor's socket.
    const origin = req.headers.origin;
    if (origin !== undefined && deps.originAllowed && !deps.originAllowed(origin)) {
      log.info({ origin, remote: deps.addresses.of(req) }, 'refused a socket from a page of another origin');
      if (deps.refuseUpgrade) deps.refuseUpgrade(socket);
      else socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ctx, sendText, ws, req, socket));
  };
  server.on('upgrade', handleUpgrade);
  followRemoteOffline(ctx);
  const stopFollowing = followHostEvents(ctx);
  const heartbeat = startHeartbeat(ctx);

  return {
    get connections() {
      return ctx.connections.size;
    },
    handleUpgrade,
    async close() {
      clearInterval(heartbeat);
      server.off('upgrade', handleUpgrade);
      stopFollowing();
      for (const conn of ctx.connections) conn.ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** A socket the upgrade opened: tracked until it closes, its frames handled in order. */
function onConnection(
  ctx: SocketContext,
  sendText: SendText,
  ws: WebSocket,
  req: IncomingMessage,
  raw: Duplex,
): void {
  const conn = newConnection(ws, raw, ctx.deps.addresses.of(req), ctx.limits, sendText);
  ctx.connections.add(conn);
  ws.on('pong', () => {
    conn.alive = true;
  });
  ws.on('message', (data, isBinary) => onMessage(ctx, conn, data, isBinary));
  ws.on('error', (error) => ctx.deps.log.debug({ err: error, remote: conn.remote }, 'socket error'));
  ws.on('close', () => connectionClosed(ctx, conn));
}
