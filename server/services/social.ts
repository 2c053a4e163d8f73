import { ErrorCode } from '../protocol/errors.js';
import { AppError } from '../errors.js';
import { UsersRepo, type StoredUser } from '../store/users.js';
import type { ServiceDeps } from './context.js';

export type SocialAction =
  | 'sendFriendRequest'
  | 'acceptFriendRequest'
  | 'declineFriendRequest'
  | 'cancelFriendRequest'
  | 'removeFriend'
  | 'blockUser'
  | 'unblockUser'
  | 'followUser'
  | 'unfollowUser';

/** Success and failure wording of each action, after the real server's pattern. */
export const SOCIAL_MESSAGES: Record<SocialAction, { ok: string; fail: string }> = {
  sendFriendRequest: { ok: 'Sent friend request!', fail: 'Failed to send friend request!' },
  acceptFriendRequest: { ok: 'Accepted friend request!', fail: 'Failed to accept friend request!' },
  declineFriendRequest: { ok: 'Declined friend request!', fail: 'Failed to decline friend request!' },
  // Our addition (the real server has no way to withdraw a request; clients ignore endpoints they do not know).
  cancelFriendRequest: { ok: 'Withdrew friend request!', fail: 'Failed to withdraw friend request!' },
  removeFriend: { ok: 'Removed friend!', fail: 'Failed to remove friend!' },
  blockUser: { ok: 'Blocked user!', fail: 'Failed to block user!' },
  unblockUser: { ok: 'Unblocked user!', fail: 'Failed to unblock user!' },
  followUser: { ok: 'Followed user!', fail: 'Failed to follow user!' },
  unfollowUser: { ok: 'Unfollowed user!', fail: 'Failed to unfollow user!' },
};

const without = (list: string[], id: string): string[] => list.filter((x) => x !== id);
const withId = (list: string[], id: string): string[] => (list.includes(id) ? list : [...list, id]);

/** Friends, requests, follows and blocks. Each action changes both users in one journaled commit. */
export function createSocialService(deps: Pick<ServiceDeps, 'users' | 'store' | 'events'>) {
  const { users, store, events } = deps;

  function refuse(action: SocialAction, why: string): never {
    throw new AppError(ErrorCode.SOCIAL_REFUSED, `${SOCIAL_MESSAGES[action].fail} ${why}`);
  }

  function apply(action: SocialAction, me: StoredUser, other: StoredUser): void {
    const blockedEitherWay = me.BlockedUsers.includes(other.Id) || other.BlockedUsers.includes(me.Id);
    switch (action) {
      case 'sendFriendRequest':
        if (me.Friends.includes(other.Id)) refuse(action, 'You are already friends.');
        if (blockedEitherWay) refuse(action, 'One of you has blocked the other.');
        if (me.OutgoingFriendRequests.includes(other.Id)) refuse(action, 'A request is already pending.');
        me.OutgoingFriendRequests = withId(me.OutgoingFriendRequests, other.Id);
        other.FriendRequests = withId(other.FriendRequests, me.Id);
        return;
      case 'acceptFriendRequest':
        if (!me.FriendRequests.includes(other.Id) || !other.OutgoingFriendRequests.includes(me.Id)) {
          refuse(action, 'There is no request from that user.');
        }
        me.FriendRequests = without(me.FriendRequests, other.Id);
        other.OutgoingFriendRequests = without(other.OutgoingFriendRequests, me.Id);
        // A crossed request (both asked) is settled by this accept too.
        me.OutgoingFriendRequests = without(me.OutgoingFriendRequests, other.Id);
        other.FriendRequests = without(other.FriendRequests, me.Id);
        me.Friends = withId(me.Friends, other.Id);
        other.Friends = withId(other.Friends, me.Id);
        return;
      case 'declineFriendRequest':
        if (!me.FriendRequests.includes(other.Id)) refuse(action, 'There is no request from that user.');
        me.FriendRequests = without(me.FriendRequests, other.Id);
        other.OutgoingFriendRequests = without(other.OutgoingFriendRequests, me.Id);
        return;
      case 'cancelFriendRequest':
        // The sender takes back a request the other has not answered yet.
        if (!me.OutgoingFriendRequests.includes(other.Id))
          refuse(action, 'There is no request to that user.');
        me.OutgoingFriendRequests = without(me.OutgoingFriendRequests, other.Id);
        other.FriendRequests = without(other.FriendRequests, me.Id);
        return;
      case 'removeFriend':
        if (!me.Friends.includes(other.Id)) refuse(action, 'You are not friends.');
        me.Friends = without(me.Friends, other.Id);
        other.Friends = without(other.Friends, me.Id);
        return;
      case 'blockUser':
        if (me.BlockedUsers.includes(other.Id)) refuse(action, 'That user is already blocked.');
        me.BlockedUsers = withId(me.BlockedUsers, other.Id);
        for (const [a, b] of [
          [me, other],
          [other, me],
        ] as const) {
          a.Friends = without(a.Friends, b.Id);
          a.FriendRequests = without(a.FriendRequests, b.Id);
          a.OutgoingFriendRequests = without(a.OutgoingFriendRequests, b.Id);
          a.Following = without(a.Following, b.Id);
          a.Followers = without(a.Followers, b.Id);
        }
        return;
      case 'unblockUser':
        if (!me.BlockedUsers.includes(other.Id)) refuse(action, 'That user is not blocked.');
        me.BlockedUsers = without(me.BlockedUsers, other.Id);
        return;
      case 'followUser':
        if (blockedEitherWay) refuse(action, 'One of you has blocked the other.');
        if (me.Following.includes(other.Id)) refuse(action, 'You already follow that user.');
        me.Following = withId(me.Following, other.Id);
        other.Followers = withId(other.Followers, me.Id);
        return;
      case 'unfollowUser':
        if (!me.Following.includes(other.Id)) refuse(action, 'You do not follow that user.');
        me.Following = without(me.Following, other.Id);
        other.Followers = without(other.Followers, me.Id);
        return;
    }
  }

  return {
    async act(action: SocialAction, me: StoredUser, targetUserId: string): Promise<void> {
      const other = await users.get(targetUserId);
      if (!other) {
        throw new AppError(ErrorCode.USER_NOT_FOUND, `${SOCIAL_MESSAGES[action].fail} No user has that id.`, {
          targetUserId: 'No user has that id',
        });
      }
      if (other.Id === me.Id) refuse(action, 'You cannot do that to yourself.');
      await store.tx(async (t) => {
        const repo = UsersRepo.in(t);
        // Validate and change copies of the newest versions: a refusal halfway changes nothing.
        const meDraft = structuredClone((await repo.get(me.Id))!);
        const otherDraft = structuredClone((await repo.get(other.Id))!);
        apply(action, meDraft, otherDraft);
        const actor = repo.put(me.Id, meDraft);
        const target = repo.put(other.Id, otherDraft);
        t.afterCommit(() => {
          events.emit('socialChanged', { userIds: [me.Id, other.Id] });
          events.emit('socialAction', { action, actor, target });
        });
      });
    },
  };
}

export type SocialService = ReturnType<typeof createSocialService>;
