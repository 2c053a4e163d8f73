import {
  InstancePublicity,
  InstanceRefusal,
  type InstanceMeta,
  type SafeInstance,
} from '../../protocol/instances.js';
import type { StoredUser } from '../../store/users.js';
import type { InstancesShared, People } from './state.js';

function isFriendOf(owner: StoredUser | undefined, userId: string): boolean {
  return owner?.Friends.includes(userId) ?? false;
}

/** The users whose friend lists decide who may join or invite to these instances, and `extra` ones. */
export async function peopleFor(
  up: InstancesShared,
  list: readonly InstanceMeta[],
  extra: readonly string[],
): Promise<People> {
  const ids = new Set(extra);
  for (const instance of list) {
    ids.add(instance.InstanceCreatorId);
    for (const id of instance.ConnectedUsers) ids.add(id);
  }
  return new Map((await up.deps.users.getMany([...ids])).map((user) => [user.Id, user]));
}

/** Who may join (reference 8.6); `people` holds the creator and those connected (peopleFor). */
export function welcome(instance: InstanceMeta, userId: string, people: People): InstanceRefusal | null {
  if (instance.InstanceCreatorId === userId || instance.Moderators.includes(userId)) return null;
  if (instance.BannedUsers.includes(userId)) return InstanceRefusal.BANNED_FROM_INSTANCE;
  switch (instance.InstancePublicity) {
    case InstancePublicity.ClosedRequest:
    case InstancePublicity.ModeratorRequest:
    case InstancePublicity.OpenRequest:
      return instance.InvitedUsers.includes(userId) ? null : InstanceRefusal.NOT_WELCOME;
    case InstancePublicity.Friends:
      return isFriendOf(people.get(instance.InstanceCreatorId), userId) ||
        instance.InvitedUsers.includes(userId)
        ? null
        : InstanceRefusal.NOT_WELCOME;
    case InstancePublicity.Acquaintances:
      return instance.ConnectedUsers.some((id) => isFriendOf(people.get(id), userId)) ||
        instance.InvitedUsers.includes(userId)
        ? null
        : InstanceRefusal.NOT_WELCOME;
    default:
      return null;
  }
}

/** Who may invite whom (reference canUserInvite, without its index-0 bug). */
export function mayInvite(
  instance: InstanceMeta,
  targetId: string,
  senderId: string,
  people: People,
): boolean {
  if (instance.InstanceCreatorId === senderId) return true;
  switch (instance.InstancePublicity) {
    case InstancePublicity.ClosedRequest:
      return false;
    case InstancePublicity.ModeratorRequest:
      return instance.Moderators.includes(senderId);
    case InstancePublicity.OpenRequest:
      return instance.ConnectedUsers.includes(senderId);
    case InstancePublicity.Friends:
      return isFriendOf(people.get(instance.InstanceCreatorId), targetId);
    case InstancePublicity.Acquaintances:
      return isFriendOf(people.get(senderId), targetId);
    default:
      return true;
  }
}

/** An instance as a client may see it (no tokens, invitations or bans). */
export function safe(instance: InstanceMeta): SafeInstance {
  return {
    GameServerId: instance.GameServerId,
    InstanceId: instance.InstanceId,
    InstanceCreatorId: instance.InstanceCreatorId,
    InstancePublicity: instance.InstancePublicity,
    InstanceProtocol: instance.InstanceProtocol,
    ConnectedUsers: [...instance.ConnectedUsers],
    WorldId: instance.WorldId,
  };
}
