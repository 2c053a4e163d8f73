import { Status, STATUS_NAMES } from '../../../server/protocol/enums.js';
import { InviteRefusal, ServerMessage } from '../../../server/protocol/socket.js';
import type { PublicUserDto } from '../../../server/protocol/types.js';
import type { SocialPushMessage } from '../../shared/socket-client.js';

/** Someone on one of your lists, as anyone may see them. */
export interface Person {
  id: string;
  username: string;
  status: number;
  statusText: string;
}

export interface Presence {
  status: number;
  statusText: string;
}

export function personOf(user: PublicUserDto): Person {
  return {
    id: user.Id,
    username: user.Username,
    status: user.Bio.Status,
    statusText: user.Bio.StatusText ?? '',
  };
}

export function isOnline(status: number): boolean {
  return status !== Status.Offline;
}

export function statusName(status: number): string {
  return STATUS_NAMES[status as Status] ?? `Status ${status}`;
}

/** Online friends first, then by name; live presence overrides what was loaded. */
export function sortFriends(people: Person[], presence: ReadonlyMap<string, Presence>): Person[] {
  return people
    .map((p) => {
      const live = presence.get(p.id);
      return live ? { ...p, status: live.status, statusText: live.statusText } : p;
    })
    .sort(
      (a, b) =>
        Number(isOnline(b.status)) - Number(isOnline(a.status)) ||
        a.username.localeCompare(b.username, undefined, { sensitivity: 'base' }),
    );
}

/** "25 seconds", "1 minute", "2 minutes 5 seconds". */
export function formatWait(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  const minutes = Math.floor(s / 60);
  const rest = s % 60;
  const part = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (minutes === 0) return part(rest, 'second');
  return rest === 0 ? part(minutes, 'minute') : `${part(minutes, 'minute')} ${part(rest, 'second')}`;
}

/** The host's refusal of an invite request, in words about `name`. */
export function refusalText(reason: InviteRefusal, name: string, retryAfter?: number): string {
  switch (reason) {
    case InviteRefusal.UNKNOWN_USER:
      return `${name} no longer has an account on this host.`;
    case InviteRefusal.SELF:
      return 'You cannot ask yourself for an invite.';
    case InviteRefusal.NOT_FRIENDS:
      return `Not sent: ${name} does not have you as a friend.`;
    case InviteRefusal.OFFLINE:
      return `Not sent: ${name} is offline.`;
    case InviteRefusal.DO_NOT_DISTURB:
      return `Not sent: ${name} is on Do Not Disturb.`;
    case InviteRefusal.RATE_LIMITED:
      return retryAfter !== undefined
        ? `Not sent: you asked ${name} a moment ago. You can ask again in ${formatWait(retryAfter)}.`
        : `Not sent: you asked ${name} a moment ago. Try again shortly.`;
    case InviteRefusal.INVALID_ARGS:
      return 'Not sent: the host did not understand the request.';
    case InviteRefusal.NOT_SAVED:
      return `The host could not save your request to ${name} (its disk may be full); ask again later.`;
    case InviteRefusal.TARGET_UNREACHABLE:
      return `Not sent: ${name} is signed in on another host that cannot be reached right now; try again in a moment.`;
  }
}

/** Your friends, the requests both ways and your blocks, as ids. */
export interface Lists {
  friends: string[];
  incoming: string[];
  outgoing: string[];
  blocked: string[];
}

const drop = (list: string[], id: string): string[] => list.filter((x) => x !== id);
const add = (list: string[], id: string): string[] => (list.includes(id) ? list : [...list, id]);

/** The lists after a pushed social action between me and `otherId` (`mine`: I acted). */
export function applySocialPush(
  lists: Lists,
  message: SocialPushMessage,
  action: string,
  mine: boolean,
  otherId: string,
): Lists {
  const cleared = {
    friends: lists.friends,
    incoming: drop(lists.incoming, otherId),
    outgoing: drop(lists.outgoing, otherId),
    blocked: lists.blocked,
  };
  switch (message) {
    case ServerMessage.friendRequest:
      return mine
        ? { ...lists, outgoing: add(lists.outgoing, otherId) }
        : { ...lists, incoming: add(lists.incoming, otherId) };
    case ServerMessage.friendAccepted:
      return { ...cleared, friends: add(lists.friends, otherId) };
    case ServerMessage.friendDeclined:
      // Declining their request leaves a request of mine to them (crossed requests) standing, and the other way.
      if (action === 'declineFriendRequest') {
        return mine ? { ...lists, incoming: cleared.incoming } : { ...lists, outgoing: cleared.outgoing };
      }
      if (action === 'cancelFriendRequest') {
        return mine ? { ...lists, outgoing: cleared.outgoing } : { ...lists, incoming: cleared.incoming };
      }
      return cleared;
    case ServerMessage.friendRemoved:
      return { ...cleared, friends: drop(lists.friends, otherId) };
    case ServerMessage.blockChanged:
      return action === 'unblockUser'
        ? { ...lists, blocked: drop(lists.blocked, otherId) }
        : { ...cleared, friends: drop(lists.friends, otherId), blocked: add(lists.blocked, otherId) };
  }
  return lists;
}

/** What became of a friend request you sent. */
export type RequestOutcome = 'accepted' | 'declined' | 'withdrawn';

/** What a pushed action did to your request to `otherId`, or null when it settled none of yours. */
export function outcomeOfPush(
  lists: Lists,
  message: SocialPushMessage,
  action: string,
  mine: boolean,
  otherId: string,
): RequestOutcome | null {
  if (!lists.outgoing.includes(otherId)) return null;
  if (message === ServerMessage.friendAccepted) return 'accepted';
  // A request cannot be pending between friends: "removed" while one is means they blocked you, which you are
  // never told; to you they did not accept.
  if (message === ServerMessage.friendRemoved) return mine ? null : 'declined';
  if (message !== ServerMessage.friendDeclined) return null;
  if (action === 'cancelFriendRequest' && mine) return 'withdrawn';
  if (action === 'declineFriendRequest' && !mine) return 'declined';
  return null;
}

/**
 * Requests of yours that a reload no longer lists, and why (missed while the socket was down): now friends, so
 * accepted; blocked by you, not a question any more; otherwise they did not accept.
 */
export function outcomesOfReload(before: Lists, after: Lists): Array<[string, RequestOutcome]> {
  return before.outgoing
    .filter((id) => !after.outgoing.includes(id) && !after.blocked.includes(id))
    .map((id) => [id, after.friends.includes(id) ? 'accepted' : 'declined']);
}

/** The line the sender reads about their request to `name`, waiting (no outcome yet) or settled. */
export function requestOutcomeText(outcome: RequestOutcome | undefined, name: string): string {
  switch (outcome) {
    case undefined:
      return `Friend request sent to ${name}. It waits in their Friends screen until they answer.`;
    case 'accepted':
      return `${name} accepted your friend request: you are friends now.`;
    case 'declined':
      return `${name} declined your friend request.`;
    case 'withdrawn':
      return `You withdrew your friend request to ${name}.`;
  }
}
