import { ServerMessage, type ClientEnvelope } from '../protocol/socket.js';
import { closeSocket, CloseCode, GAME_SERVER_RATE_FACTOR, send, type Connection } from './connection.js';
import { friendStatus } from './presence.js';
import { closeIfRevoked } from './revocation.js';
import type { SocketContext } from './socket-context.js';
import { dispatchUser } from './user-messages.js';

/** The first message of a socket: a user's verification (then the message itself), or a game server's login. */
export async function verify(
  ctx: SocketContext,
  conn: Connection,
  envelope: ClientEnvelope,
  name: string,
): Promise<void> {
  const { accounts, hub } = ctx.deps;
  if (typeof envelope.userId !== 'string') return loginGameServer(ctx, conn, envelope.serverTokenContent);
  if (typeof envelope.tokenContent !== 'string') {
    send(conn, ServerMessage.authFailed, {
      reason: 'Send userId and tokenContent to verify this socket first.',
    });
    return;
  }
  const user = await accounts.authenticate(envelope.userId, envelope.tokenContent);
  if (!user) {
    // As the real server, the socket stays open and unverified; unlike it, the client is told.
    send(conn, ServerMessage.authFailed, { reason: 'The token is not valid for that user.' });
    return;
  }
  const expiresAt = await accounts.tokenExpiry(user.Id, envelope.tokenContent);
  // The socket may have closed while the store answered: then it never joins the hub.
  if (conn.ws.readyState !== conn.ws.OPEN) return;
  conn.userId = user.Id;
  conn.token = envelope.tokenContent;
  conn.tokenExpiresAt = expiresAt;
  const first = hub.add(user.Id, conn.out, conn.remote, user.Username);
  // A ban, warning or sign-out committed while the store answered found no socket of this user here to close.
  await closeIfRevoked(ctx, conn);
  if (conn.ws.readyState !== conn.ws.OPEN) return;
  send(conn, ServerMessage.authenticated, { userId: user.Id });
  if (first) await friendStatus(ctx, user);
  return dispatchUser(ctx, conn, user.Id, name, envelope.args);
}

/** No userId: a game-server login, as on the real server. */
async function loginGameServer(ctx: SocketContext, conn: Connection, serverToken: unknown): Promise<void> {
  const { gameServerTokens, config, ids, hub } = ctx.deps;
  const tokenId = await gameServerTokens.verify(serverToken);
  if (conn.ws.readyState !== conn.ws.OPEN) return;
  if (tokenId !== null || config.allowAnyGameServer) {
    conn.gameServerId = ids.id('gameserver');
    conn.gameServerTokenId = tokenId;
    conn.allowance = ctx.limits.messageBurst * GAME_SERVER_RATE_FACTOR;
    // With its id, this is what the server proves itself with to read server scripts over HTTP (its id
    // alone is public: GET gameServers lists it). A server with a valid token gets it back, as from the
    // real server; one let in without a token (allowAnyGameServer) gets a secret of its own.
    const proof = tokenId !== null ? (serverToken as string) : ids.secret();
    hub.addGameServer(conn.gameServerId, conn.out, proof, conn.remote);
    send(conn, 'sendauth', { gameServerId: conn.gameServerId, gameServerToken: proof });
    return;
  }
  if (serverToken !== undefined) {
    closeSocket(conn, CloseCode.BAD_GAME_SERVER_TOKEN, 'game-server token not accepted');
    return;
  }
  send(conn, ServerMessage.authFailed, {
    reason: 'Send userId and tokenContent to verify this socket first.',
  });
}
