import { Status, STATUS_NAMES } from '../../../server/protocol/enums.js';
import { InviteRefusal } from '../../../server/protocol/socket.js';
import type { PublicUserDto } from '../../../server/protocol/types.js';

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
