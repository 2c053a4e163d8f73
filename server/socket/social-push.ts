import { ServerMessage, type SocialPushResult } from '../protocol/socket.js';
import type { PublicUserDto } from '../protocol/types.js';
import type { HostEvents, Notifier } from '../services/context.js';
import type { StoredUser } from '../store/users.js';

/** Which message each social action sends, and whether the target hears of it too. */
const PUSHED: Record<string, { message: string; toTarget: boolean }> = {
  sendFriendRequest: { message: ServerMessage.friendRequest, toTarget: true },
  acceptFriendRequest: { message: ServerMessage.friendAccepted, toTarget: true },
  declineFriendRequest: { message: ServerMessage.friendDeclined, toTarget: true },
  // A withdrawn request ends the same way for both lists as a declined one; `action` tells the two apart.
  cancelFriendRequest: { message: ServerMessage.friendDeclined, toTarget: true },
  removeFriend: { message: ServerMessage.friendRemoved, toTarget: true },
  // The blocked user is never told they were blocked; their lists changed, so they hear "friendremoved".
  blockUser: { message: ServerMessage.blockChanged, toTarget: false },
  unblockUser: { message: ServerMessage.blockChanged, toTarget: false },
};

/**
 * Pushes friend requests, acceptances, declines and removals to both sides' sockets once committed, so no screen
 * polls for them (issue 18). Returns the function that stops it.
 */
export function attachSocialPush(deps: {
  events: HostEvents;
  notifier: Notifier;
  publicView(user: StoredUser): PublicUserDto;
}): () => void {
  const { events, notifier, publicView } = deps;
  // The two users as the action committed them.
  const onAction = ({ action, actor, target }: { action: string; actor: StoredUser; target: StoredUser }) => {
    const pushed = PUSHED[action];
    if (!pushed) return;
    const actorId = actor.Id;
    const targetId = target.Id;
    const result = (user: StoredUser): SocialPushResult => ({
      action,
      fromUserId: actorId,
      targetUserId: targetId,
      user: publicView(user),
    });
    notifier.send(actorId, pushed.message, { ...result(target) });
    if (pushed.toTarget) notifier.send(targetId, pushed.message, { ...result(actor) });
    else if (action === 'blockUser') {
      notifier.send(targetId, ServerMessage.friendRemoved, {
        ...result(actor),
        action: 'removeFriend',
      });
    }
  };
  events.on('socialAction', onAction);
  return () => events.off('socialAction', onAction);
}
