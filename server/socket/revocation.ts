import { RevokedReason } from '../protocol/socket.js';
import type { StoredUser } from '../store/users.js';
import { closeSocket, CloseCode, type Connection } from './connection.js';
import { friendStatus } from './presence.js';
import { background, type SocketContext } from './socket-context.js';

/** Closes every socket of `userId` whose token no longer verifies (expired, logged out, banned, warned). */
async function recheck(ctx: SocketContext, userId: string): Promise<void> {
  for (const conn of [...ctx.connections]) if (conn.userId === userId) await closeIfRevoked(ctx, conn);
}

/** Closes the socket when its token no longer verifies, saying why. */
export async function closeIfRevoked(ctx: SocketContext, conn: Connection): Promise<void> {
  const userId = conn.userId;
  if (userId === null || conn.token === null) return;
  if (await ctx.deps.accounts.authenticate(userId, conn.token)) return;
  closeSocket(conn, CloseCode.TOKEN_REVOKED, await revokedReason(ctx, userId));
}

/** Why a user's token stopped verifying, as the close reason: a client can tell a ban from an expiry. */
async function revokedReason(ctx: SocketContext, userId: string): Promise<string> {
  const user = await ctx.deps.users.get(userId);
  if (user && ctx.deps.accounts.isBanned(user)) return RevokedReason.BANNED;
  if (user?.WarnStatus.isWarned) return RevokedReason.WARNED;
  return RevokedReason.TOKEN;
}

/**
 * Follows the host's events that change what a socket may do or what friends see: sign-outs, bans and warnings
 * (tokensRevoked), a new status (bioUpdated), a revoked game-server token. Returns what stops following them.
 */
export function followHostEvents(ctx: SocketContext): () => void {
  const { events } = ctx.deps;
  const onTokensRevoked = ({ userId }: { userId: string }): void =>
    background(ctx, recheck(ctx, userId), 'closing the sockets of a signed-out user', userId);
  const onBioUpdated = ({ user }: { user: StoredUser }): void =>
    background(ctx, friendStatus(ctx, user), 'telling friends a new status', user.Id);
  // Revoked here, by a host through Redis, or seen changed in the database: each server of the token is checked.
  const onGameServerToken = ({ tokenId }: { tokenId: string | null }): void =>
    background(ctx, closeRevokedGameServers(ctx, tokenId), 'closing the servers of a revoked token', null);
  events.on('tokensRevoked', onTokensRevoked);
  events.on('bioUpdated', onBioUpdated);
  events.on('gameServerTokenRevoked', onGameServerToken);
  events.on('gameServerTokensChanged', onGameServerToken);
  return () => {
    events.off('tokensRevoked', onTokensRevoked);
    events.off('bioUpdated', onBioUpdated);
    events.off('gameServerTokenRevoked', onGameServerToken);
    events.off('gameServerTokensChanged', onGameServerToken);
  };
}

/** Closes the game servers here whose token (`tokenId`, or any when null) no longer lets servers in. */
async function closeRevokedGameServers(ctx: SocketContext, tokenId: string | null): Promise<void> {
  for (const conn of [...ctx.connections]) {
    const held = conn.gameServerTokenId;
    if (held === null || (tokenId !== null && held !== tokenId)) continue;
    if (!(await ctx.deps.gameServerTokens.stillValid(held)))
      closeSocket(conn, CloseCode.BAD_GAME_SERVER_TOKEN, 'game-server token revoked');
  }
}
