import {
  InviteRequestState,
  ServerMessage,
  type InviteRequestDto,
  type SentInviteRequestDto,
} from '../protocol/socket.js';
import type { StoredInviteRequest } from '../store/invite-history.js';
import type { UsersRepo } from '../store/users.js';
import type { Notifier } from './context.js';

/** Usernames the invites service keeps (they never change once an account exists). */
const NAME_CACHE_MAX = 10_000;

/** A request and whom it was sent to. */
export interface AddressedInvite {
  to: string;
  stored: StoredInviteRequest;
}

/** Invite requests as their target and their sender see them, and the pushes that tell the sender. */
export class InviteViews {
  /**
   * Usernames by id. A username never changes once an account exists, so names once read stay right; the cache
   * is bounded and starts over when full.
   */
  readonly #names = new Map<string, string>();

  constructor(
    private readonly users: Pick<UsersRepo, 'getMany'>,
    private readonly notifier: Notifier,
  ) {}

  async namesOf(ids: Iterable<string>): Promise<ReadonlyMap<string, string>> {
    const missing = [...new Set(ids)].filter((id) => !this.#names.has(id));
    if (missing.length > 0) {
      if (this.#names.size + missing.length > NAME_CACHE_MAX) this.#names.clear();
      for (const user of await this.users.getMany(missing)) this.#names.set(user.Id, user.Username);
    }
    return this.#names;
  }

  received(
    stored: StoredInviteRequest,
    toUserId: string,
    now: number,
    names: ReadonlyMap<string, string>,
  ): InviteRequestDto {
    const expired = stored.state === 'new' || stored.state === 'seen' ? now >= stored.expiresAt : false;
    return {
      requestId: stored.requestId,
      fromUserId: stored.fromUserId,
      fromUsername: names.get(stored.fromUserId) ?? '',
      toUserId,
      sentAt: stored.sentAt,
      expiresAt: stored.expiresAt,
      state: expired ? InviteRequestState.Expired : stored.state,
      updatedAt: stored.updatedAt,
    };
  }

  sent(
    stored: StoredInviteRequest,
    to: string,
    now: number,
    names: ReadonlyMap<string, string>,
  ): SentInviteRequestDto {
    return { ...this.received(stored, to, now, names), toUsername: names.get(to) ?? '' };
  }

  /** Tells the sender's sockets the request's new state (seen, answered, dismissed, expired). */
  notifySender(
    stored: StoredInviteRequest,
    to: string,
    now: number,
    names: ReadonlyMap<string, string>,
  ): void {
    this.notifier.send(stored.fromUserId, ServerMessage.sentInviteRequestUpdated, {
      request: this.sent(stored, to, now, names),
    });
  }

  /** Tells both sides of a request its new state. */
  async notifyBoth(stored: StoredInviteRequest, to: string, now: number): Promise<InviteRequestDto> {
    const names = await this.namesOf([to, stored.fromUserId]);
    const dto = this.received(stored, to, now, names);
    this.notifier.send(to, ServerMessage.inviteRequestUpdated, { request: dto });
    this.notifySender(stored, to, now, names);
    return dto;
  }
}

/**
 * The requests this host accepted, in order of expiry (the lifetime is one setting), so that their senders hear
 * "expired" from the host they sent them through, once.
 */
export class InviteExpiries {
  readonly #expiring: AddressedInvite[] = [];
  /** Requests the host could not save: their sender was told at once, not again when they would expire. */
  readonly #unsaved = new WeakSet<StoredInviteRequest>();
  #head = 0;

  add(item: AddressedInvite): void {
    this.#expiring.push(item);
  }

  unsaved(stored: StoredInviteRequest): void {
    this.#unsaved.add(stored);
  }

  /** The requests that ran out unanswered by `now`, each once. */
  due(now: number): AddressedInvite[] {
    const expired: AddressedInvite[] = [];
    const list = this.#expiring;
    while (this.#head < list.length && list[this.#head]!.stored.expiresAt <= now) {
      const item = list[this.#head++]!;
      const open = item.stored.state === 'new' || item.stored.state === 'seen';
      if (open && !this.#unsaved.has(item.stored)) expired.push(item);
    }
    if (this.#head > 1024 && this.#head * 2 > list.length) {
      list.splice(0, this.#head);
      this.#head = 0;
    }
    return expired;
  }
}

/** Friend lists as sets, rebuilt when the list object changes (records are frozen; a change is a new list). */
const friendSets = new WeakMap<readonly string[], Set<string>>();

export function isFriend(user: { Friends: readonly string[] }, otherId: string): boolean {
  if (user.Friends.length < 16) return user.Friends.includes(otherId);
  let set = friendSets.get(user.Friends);
  if (!set) {
    set = new Set(user.Friends);
    friendSets.set(user.Friends, set);
  }
  return set.has(otherId);
}
