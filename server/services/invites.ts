import { Status } from '../protocol/enums.js';
import { ErrorCode } from '../protocol/errors.js';
import {
  InviteRefusal,
  InviteRequestState,
  ServerMessage,
  type InviteRequestDto,
} from '../protocol/socket.js';
import { AppError } from '../errors.js';
import type { Change, Collection } from '../store/store.js';
import { unixSeconds, type Notifier, type Presence, type ServiceDeps } from './context.js';

/**
 * Each user's received requests in pages of PAGE_SIZE, oldest first: a new request rewrites only the newest
 * page (a few kB, not the whole history), and a checkpoint has about one file per active user to write, not one
 * per request.
 */
export const INVITE_REQUESTS = 'invite-request-pages';
/** The first layout: one record per target user holding all their requests (rewritten whole on each one). */
export const LEGACY_INVITE_INBOXES = 'inviterequests';
const PAGE_SIZE = 20;

interface StoredInviteRequest {
  requestId: string;
  fromUserId: string;
  sentAt: number;
  expiresAt: number;
  state: Exclude<InviteRequestState, 'expired'>;
  updatedAt: number;
}

interface InvitePage {
  userId: string;
  /** Increasing per user. */
  page: number;
  requests: StoredInviteRequest[];
}

interface LegacyInbox {
  userId: string;
  requests: StoredInviteRequest[];
}

const pageId = (userId: string, page: number): string => `${userId}_p${page}`;

export type InviteRequestOutcome =
  | { ok: true; requestId: string; delivered: Promise<void> }
  | { ok: false; reason: InviteRefusal; retryAfter?: number };

/** States a user may set on a request they received. */
export const SETTABLE_INVITE_STATES = ['seen', 'answered', 'dismissed'] as const;
export type SettableInviteState = (typeof SETTABLE_INVITE_STATES)[number];

/**
 * requestinvite (SPEC section 5): checks, per-pair cooldown, delivery to every socket of the target, and the
 * target's invite-request history.
 */
export function createInvitesService(
  deps: Pick<ServiceDeps, 'users' | 'store' | 'clock' | 'ids' | 'config'> & {
    presence: Presence;
    notifier: Notifier;
  },
) {
  const { users, store, clock, ids, config, presence, notifier } = deps;
  const pages: Collection<InvitePage> = store.collection<InvitePage>(INVITE_REQUESTS);
  /** Each request's JSON, made once: committing a page joins these instead of serialising every request again. */
  const jsonOf = new WeakMap<StoredInviteRequest, string>();
  const requestJson = (stored: StoredInviteRequest): string => {
    let json = jsonOf.get(stored);
    if (json === undefined) jsonOf.set(stored, (json = JSON.stringify(stored)));
    return json;
  };
  /** A request's state changed: its JSON is made again at the next commit. */
  const changed = (stored: StoredInviteRequest): void => {
    jsonOf.delete(stored);
  };
  pages.serialize = (page) =>
    `{"userId":${JSON.stringify(page.userId)},"page":${page.page},"requests":[${page.requests.map(requestJson).join(',')}]}`;
  /** Each user's pages, oldest first, with how many requests they hold in all. */
  const inboxes = new Map<string, { pages: InvitePage[]; count: number }>();
  /** requestId -> the page holding it. */
  const pageOf = new Map<string, InvitePage>();
  const inboxOf = (userId: string): { pages: InvitePage[]; count: number } => {
    let inbox = inboxes.get(userId);
    if (!inbox) inboxes.set(userId, (inbox = { pages: [], count: 0 }));
    return inbox;
  };
  for (const page of pages.values()) {
    const inbox = inboxOf(page.userId);
    inbox.pages.push(page);
    inbox.count += page.requests.length;
    for (const stored of page.requests) pageOf.set(stored.requestId, page);
  }
  for (const inbox of inboxes.values()) inbox.pages.sort((a, b) => a.page - b.page);

  /** Adds `stored` to the newest page of `userId` (a new one when full) and trims the oldest past the bound. */
  function file(userId: string, stored: StoredInviteRequest): Change[] {
    const inbox = inboxOf(userId);
    let last = inbox.pages.at(-1);
    if (!last || last.requests.length >= PAGE_SIZE) {
      last = { userId, page: last ? last.page + 1 : 0, requests: [] };
      inbox.pages.push(last);
    }
    last.requests.push(stored);
    inbox.count++;
    pageOf.set(stored.requestId, last);
    const changes = [pages.put(pageId(userId, last.page), last)];
    while (inbox.count > config.socket.inviteRequestHistory) {
      const oldest = inbox.pages[0]!;
      const dropped = oldest.requests.shift()!;
      pageOf.delete(dropped.requestId);
      inbox.count--;
      if (oldest.requests.length === 0) {
        inbox.pages.shift();
        changes.push(pages.remove(pageId(userId, oldest.page)));
      } else if (oldest !== last) {
        changes.push(pages.put(pageId(userId, oldest.page), oldest));
      }
    }
    return changes;
  }
  /** `sender|target` -> ms of the last delivered request. */
  const lastSent = new Map<string, number>();
  /** Friend lists as sets, rebuilt when the list object changes (the social service replaces it). */
  const friendSets = new WeakMap<string[], Set<string>>();
  function isFriend(user: { Friends: string[] }, otherId: string): boolean {
    if (user.Friends.length < 16) return user.Friends.includes(otherId);
    let set = friendSets.get(user.Friends);
    if (!set) friendSets.set(user.Friends, (set = new Set(user.Friends)));
    return set.has(otherId);
  }

  function view(stored: StoredInviteRequest, toUserId: string, now: number): InviteRequestDto {
    const expired = stored.state === 'new' || stored.state === 'seen' ? now >= stored.expiresAt : false;
    return {
      requestId: stored.requestId,
      fromUserId: stored.fromUserId,
      fromUsername: users.get(stored.fromUserId)?.Username ?? '',
      toUserId,
      sentAt: stored.sentAt,
      expiresAt: stored.expiresAt,
      state: expired ? InviteRequestState.Expired : stored.state,
      updatedAt: stored.updatedAt,
    };
  }

  function sweepCooldowns(nowMs: number): void {
    const cooldownMs = config.socket.inviteRequestCooldownSeconds * 1000;
    for (const [key, at] of lastSent) if (nowMs - at >= cooldownMs) lastSent.delete(key);
  }

  return {
    request(senderId: string, targetUserId: unknown): InviteRequestOutcome {
      if (typeof targetUserId !== 'string' || targetUserId.length === 0 || targetUserId.length > 200) {
        return { ok: false, reason: InviteRefusal.INVALID_ARGS };
      }
      const sender = users.get(senderId);
      const target = users.get(targetUserId);
      if (!sender || !target) return { ok: false, reason: InviteRefusal.UNKNOWN_USER };
      if (target.Id === sender.Id) return { ok: false, reason: InviteRefusal.SELF };
      // Blocks end friendships, so a block shows as NOT_FRIENDS: the sender never learns they were blocked.
      if (!isFriend(target, sender.Id) || target.BlockedUsers.includes(sender.Id)) {
        return { ok: false, reason: InviteRefusal.NOT_FRIENDS };
      }
      if (!presence.isConnected(target.Id) || target.Bio.Status === Status.Offline) {
        return { ok: false, reason: InviteRefusal.OFFLINE };
      }
      if (target.Bio.Status === Status.DoNotDisturb)
        return { ok: false, reason: InviteRefusal.DO_NOT_DISTURB };
      const nowMs = clock.now();
      const key = `${sender.Id}|${target.Id}`;
      const cooldownMs = config.socket.inviteRequestCooldownSeconds * 1000;
      const last = lastSent.get(key);
      if (last !== undefined && nowMs - last < cooldownMs) {
        return {
          ok: false,
          reason: InviteRefusal.RATE_LIMITED,
          retryAfter: Math.max(1, Math.ceil((last + cooldownMs - nowMs) / 1000)),
        };
      }
      if (cooldownMs > 0) {
        lastSent.set(key, nowMs);
        if (lastSent.size > 10_000) sweepCooldowns(nowMs);
      }

      const now = unixSeconds(clock);
      const stored: StoredInviteRequest = {
        requestId: ids.id('invreq'),
        fromUserId: sender.Id,
        sentAt: now,
        expiresAt: now + config.socket.inviteRequestTtlSeconds,
        state: 'new',
        updatedAt: now,
      };
      // Deliver first (latency matters to a person waiting in VR), then make the history durable.
      notifier.send(target.Id, ServerMessage.gotInviteRequest, {
        fromUserId: sender.Id,
        requestId: stored.requestId,
        fromUsername: sender.Username,
        sentAt: stored.sentAt,
        expiresAt: stored.expiresAt,
      });
      const delivered = store.commit(file(target.Id, stored));
      return { ok: true, requestId: stored.requestId, delivered };
    },

    /** The user's received requests, newest first. */
    list(userId: string, filter?: { state?: InviteRequestState }): InviteRequestDto[] {
      const now = unixSeconds(clock);
      const inbox = inboxes.get(userId);
      if (!inbox) return [];
      const out: InviteRequestDto[] = [];
      for (let p = inbox.pages.length - 1; p >= 0; p--) {
        const requests = inbox.pages[p]!.requests;
        for (let i = requests.length - 1; i >= 0; i--) {
          const dto = view(requests[i]!, userId, now);
          if (!filter?.state || dto.state === filter.state) out.push(dto);
        }
      }
      return out;
    },

    async update(userId: string, requestId: string, state: SettableInviteState): Promise<InviteRequestDto> {
      const page = pageOf.get(requestId);
      const stored =
        page?.userId === userId ? page.requests.find((r) => r.requestId === requestId) : undefined;
      if (!page || !stored) {
        throw new AppError(ErrorCode.NOT_FOUND, 'No invite request with that id.', {
          requestId: 'not found',
        });
      }
      const now = unixSeconds(clock);
      // Seen never downgrades an answered or dismissed request.
      if (!(state === 'seen' && stored.state !== 'new')) {
        stored.state = state;
        stored.updatedAt = now;
        changed(stored);
        await store.commit([pages.put(pageId(userId, page.page), page)]);
      }
      const dto = view(stored, userId, now);
      notifier.send(userId, ServerMessage.inviteRequestUpdated, { request: dto });
      return dto;
    },

    /** `ownerId` sent an invite to `fromUserId`: their latest open request to `ownerId` is answered. */
    async markAnswered(ownerId: string, fromUserId: string): Promise<void> {
      const inbox = inboxes.get(ownerId);
      if (!inbox) return;
      const now = unixSeconds(clock);
      for (let p = inbox.pages.length - 1; p >= 0; p--) {
        const page = inbox.pages[p]!;
        for (let i = page.requests.length - 1; i >= 0; i--) {
          const stored = page.requests[i]!;
          if (stored.fromUserId !== fromUserId) continue;
          if ((stored.state === 'new' || stored.state === 'seen') && now < stored.expiresAt) {
            stored.state = 'answered';
            stored.updatedAt = now;
            changed(stored);
            await store.commit([pages.put(pageId(ownerId, page.page), page)]);
            notifier.send(ownerId, ServerMessage.inviteRequestUpdated, {
              request: view(stored, ownerId, now),
            });
          }
          return;
        }
      }
    },

    /**
     * Moves the first layout's inboxes (one record per user) into one record per request, in one commit, at
     * startup. Nothing to do on a folder created since.
     */
    async upgradeLegacyInboxes(): Promise<void> {
      const legacy = store.collection<LegacyInbox>(LEGACY_INVITE_INBOXES);
      if (legacy.size === 0) return;
      const changes: Change[] = [];
      for (const inbox of [...legacy.values()]) {
        for (const old of inbox.requests) {
          if (!pageOf.has(old.requestId)) changes.push(...file(inbox.userId, { ...old }));
        }
        changes.push(legacy.remove(inbox.userId));
      }
      await store.commit(changes);
    },

    /** Forgets cooldowns that have run out; called from the heartbeat. */
    sweep(): void {
      sweepCooldowns(clock.now());
    },
  };
}

export type InvitesService = ReturnType<typeof createInvitesService>;
