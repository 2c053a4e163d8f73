import { ClientMessage, ServerMessage } from '../protocol/socket.js';
import { send, type Connection } from './connection.js';
import { GAME_SERVER_MESSAGES } from './game-server-messages.js';
import { requestInvite } from './invite-requests.js';
import type { SocketContext } from './socket-context.js';

/** A verified user's message, to the service of its feature; a promise when the socket's next ones must wait. */
export function dispatchUser(
  ctx: SocketContext,
  conn: Connection,
  userId: string,
  name: string,
  args: unknown,
): void | Promise<void> {
  const { instances, hub } = ctx.deps;
  const argObject = args !== null && typeof args === 'object' ? (args as Record<string, unknown>) : {};
  switch (name) {
    case ClientMessage.auth:
      return;
    case 'joininstance':
      return instances.join(userId, argObject);
    case 'leaveinstance':
      return instances.leave(userId, argObject);
    case 'requestnewinstance':
      return instances.requestNew(userId, argObject);
    case 'sendinvite':
      return instances.sendInvite(userId, argObject, (id) => hub.isConnected(id));
    case ClientMessage.shareAvatarToken:
      return shareAvatarToken(ctx, conn, userId, argObject);
    case ClientMessage.requestInvite:
      return requestInvite(ctx, conn, userId, args);
    default:
      if (GAME_SERVER_MESSAGES.has(name)) {
        send(conn, ServerMessage.error, {
          code: 'NOT_ALLOWED',
          reason: `${name} is a game-server message.`,
        });
      }
      // Unknown names are ignored, as the real server does; the socket stays open.
      return;
  }
}

/** Target and sender both get sharedavatartoken, as the real server; a refusal goes to the sender only. */
async function shareAvatarToken(
  ctx: SocketContext,
  conn: Connection,
  userId: string,
  args: Record<string, unknown>,
): Promise<void> {
  const { avatarSharing, hub } = ctx.deps;
  if (!avatarSharing) return;
  const outcome = await avatarSharing.share(userId, args);
  if (outcome.ok) {
    const shared = { ...outcome.shared };
    hub.send(outcome.shared.targetUserId, ServerMessage.sharedAvatarToken, shared);
    send(conn, ServerMessage.sharedAvatarToken, shared);
  } else {
    send(conn, ServerMessage.failedToShareAvatarToken, { ...outcome.asked, reason: outcome.reason });
  }
}
