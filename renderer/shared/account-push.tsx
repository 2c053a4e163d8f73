import { ServerMessage } from '../../server/protocol/socket.js';
import { useSession } from './session.js';
import { useSocketEvent } from './socket-context.js';

/**
 * Issue 28: a moderator's change to this user's rank, badges, warning or ban arrives as `accountchanged` (our
 * addition) and is applied to the signed-in user at once, so the Moderation and Host screens appear or go without a
 * reload. A ban or warning also ends the session a moment later (the socket closes with its reason).
 */
export function AccountFollowsPushes() {
  const { user, setUser } = useSession();
  useSocketEvent((event) => {
    if (event.message !== ServerMessage.accountChanged || event.result.userId !== user.Id) return;
    const { Rank, Badges, BanStatus, BanCount, WarnStatus, WarnCount } = event.result;
    setUser((old) => ({ ...old, Rank, Badges, BanStatus, BanCount, WarnStatus, WarnCount }));
  });
  return null;
}
