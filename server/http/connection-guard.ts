import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { normalAddress } from '../socket/hub.js';
import type { ClientAddresses } from '../socket/forwarded-address.js';

export interface ConnectionLimits {
  /** Open connections (HTTP and sockets) one address may hold; more are closed as they arrive. */
  connectionsPerAddress: number;
  /** Open connections in all; more are refused by Node (`server.maxConnections`). */
  connections: number;
  /** A request body that sends nothing for this long has its connection closed. */
  bodyIdleSeconds: number;
}

/**
 * Connection limits for the API port, below any route: at most `connectionsPerAddress` open connections per
 * address and `connections` in all, so one machine (or a handful) cannot use up the host's file descriptors.
 * Upgraded sockets count as connections too, so one address holds at most that many of those as well. A trusted
 * proxy's connections carry many clients (and which ones is only known per request), so they count only against
 * `connections`.
 */
export function guardConnections(
  server: Server,
  limits: ConnectionLimits,
  log: Logger,
  addresses: Pick<ClientAddresses, 'trusts'>,
): void {
  server.maxConnections = limits.connections;
  const perAddress = new Map<string, number>();
  /** Addresses refused lately, so a flood is logged once a minute per address, not once per connection. */
  const refusedAt = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = normalAddress(socket.remoteAddress);
    if (addresses.trusts(address)) return;
    const open = perAddress.get(address) ?? 0;
    if (open >= limits.connectionsPerAddress) {
      const now = Date.now();
      if ((refusedAt.get(address) ?? 0) < now - 60_000) {
        refusedAt.set(address, now);
        if (refusedAt.size > 10_000) refusedAt.clear();
        log.warn(
          { remote: address, limit: limits.connectionsPerAddress },
          'refused connections from an address that holds too many (limits.connectionsPerAddress)',
        );
      }
      socket.destroy();
      return;
    }
    perAddress.set(address, open + 1);
    socket.once('close', () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
}

/**
 * Arms the idle timer of a request that has a body: a sender that stops sending mid-body has its connection
 * closed after `idleMs` (Node destroys a socket whose timeout nobody handles), and the timer is disarmed once the
 * body has arrived, so a slow handler is never cut off. Routes that answer such a request themselves (uploads)
 * arm the same timer with their own listener.
 */
export function armBodyIdleTimer(req: IncomingMessage, idleMs: number): void {
  const headers = req.headers;
  const hasBody =
    headers['transfer-encoding'] !== undefined ||
    (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (!hasBody || req.complete) return;
  const socket = req.socket;
  socket.setTimeout(idleMs);
  // The body is whole once it ended (read by a route, or dumped by Node after an answer that did not read it);
  // a connection cannot carry another request before that.
  req.once('end', () => socket.setTimeout(0));
}
