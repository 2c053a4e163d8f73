import { Status } from '../protocol/enums.js';
import { ServerMessage } from '../protocol/socket.js';
import type { StoredUser } from '../store/users.js';
import type { Connection } from './connection.js';
import { background, type SocketContext } from './socket-context.js';

/**
 * Tells the user's friends their status: the user as just committed or verified, or (an id) as stored now;
 * `localOnly`: only those on this process (see hub.onRemoteOffline).
 */
export async function friendStatus(
  ctx: SocketContext,
  who: string | StoredUser,
  localOnly = false,
): Promise<void> {
  const { users, hub } = ctx.deps;
  const user = typeof who === 'string' ? await users.get(who) : who;
  if (!user) return;
  const userId = user.Id;
  const result = {
    userId,
    Status: hub.isConnected(userId) ? user.Bio.Status : Status.Offline,
    StatusText: user.Bio.StatusText,
  };
  hub.sendToMany(user.Friends, ServerMessage.friendStatus, result, localOnly);
}

/**
 * A user whose sockets were all on other processes went offline: they leave this process's instances, and when
 * their process could not tell their friends (it died), this process tells its own.
 */
export function followRemoteOffline(ctx: SocketContext): void {
  const { hub, instances } = ctx.deps;
  hub.onRemoteOffline((userId, told) => {
    instances.userGone(userId);
    if (told) background(ctx, friendStatus(ctx, userId, true), 'telling friends a user went offline', userId);
  });
}

/** A socket closed: it leaves the hub, and its user or game server leaves when it was their last. */
export function connectionClosed(ctx: SocketContext, conn: Connection): void {
  const { hub, instances } = ctx.deps;
  ctx.connections.delete(conn);
  if (conn.userId !== null) {
    const last = hub.remove(conn.userId, conn.out);
    if (last) {
      // Still connected to another process: still in their instances.
      if (!hub.isConnected(conn.userId)) instances.userGone(conn.userId);
      background(ctx, friendStatus(ctx, conn.userId), 'telling friends a user went offline', conn.userId);
    }
  }
  if (conn.gameServerId !== null) {
    hub.removeGameServer(conn.gameServerId);
    instances.gameServerGone(conn.gameServerId);
  }
}
