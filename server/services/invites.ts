import { Status } from '../protocol/enums.js';
import { ErrorCode } from '../protocol/errors.js';
import {
  gotInviteRequestJson,
  InviteRefusal,
  InviteRequestState,
  type InviteRequestDto,
  type SentInviteRequestDto,
} from '../protocol/socket.js';
import { AppError } from '../errors.js';
import type { InviteHistory, StoredInviteRequest } from '../store/invite-history.js';
import type { StoredUser } from '../store/users.js';
import { InviteExpiries, InviteViews, isFriend } from './invite-views.js';
import { unixSeconds, type Notifier, type Presence, type ServiceDeps } from './context.js';
import type { Cooldowns } from './limits.js';

/** The first layout: one record per target user holding all their requests (rewritten whole on each one). */
export const LEGACY_INVITE_INBOXES = 'inviterequests';

interface LegacyInbox {
  userId: string;
  requests: StoredInviteRequest[];
}

export type InviteRequestOutcome =
  | { ok: true; targetUserId: string; requestId: string; delivered: Promise<void> }
  | { ok: false; reason: InviteRefusal; retryAfter?: number };

/** Delivers invite requests: at once to sockets on this process, confirmed to sockets only on other processes. */
export interface InviteNotifier extends Notifier {
  /**
   * Sends `json` to every socket of `userId`: null when that is settled at once, else a promise that rejects when
   * the message did not reach the other processes holding the user's sockets (server/socket/hub.ts).
   */
  sendJsonConfirmed(userId: string, json: string): Promise<void> | null;
}

/** States a user may set on a request they received. */
export const SETTABLE_INVITE_STATES = ['seen', 'answered', 'dismissed'] as const;
export type SettableInviteState = (typeof SETTABLE_INVITE_STATES)[number];

/**
 * requestinvite (SPEC section 5): checks, per-pair cooldown, delivery to every socket of the target, and the
 * target's invite-request history.
 */
export function createInvitesService(
  deps: Pick<ServiceDeps, 'users' | 'clock' | 'ids' | 'config'> & {
    /** Where a failed background task (telling senders of expiries, pruning the history) is reported. */
    onBackgroundError?: (error: unknown, task: string) => void;
    presence: Presence;
    notifier: InviteNotifier;
    /** One request per sender and target per cooldown, across every host process sharing the community. */
    cooldowns: Cooldowns;
    /** Where requests and their states are kept (a file, or a table every host shares). */
    history: InviteHistory;
  },
) {
  const { users, clock, ids, config, presence, notifier, cooldowns, history } = deps;
  const views = new InviteViews(users, notifier);
  const expiries = new InviteExpiries();

  /** Pushes "expired" to the senders of requests that just ran out unanswered. */
  async function sweepExpired(now: number): Promise<void> {
    const due = expiries.due(now);
    if (due.length === 0) return;
    // As stored now: the target may have answered or dismissed it through another host.
    const current = await Promise.all(due.map(({ to, stored }) => history.find(to, stored.requestId)));
    const expired = due.flatMap(({ to }, i) => {
      const stored = current[i];
      return stored && (stored.state === 'new' || stored.state === 'seen') ? [{ to, stored }] : [];
    });
    if (expired.length === 0) return;
    const names = await views.namesOf(expired.flatMap(({ to, stored }) => [to, stored.fromUserId]));
    for (const { to, stored } of expired) views.notifySender(stored, to, now, names);
  }

  /** Why `sender` may not ask `target` for an invite now (cooldown aside), or null. */
  function refusal(sender: StoredUser, target: StoredUser): InviteRefusal | null {
    if (target.Id === sender.Id) return InviteRefusal.SELF;
    // Blocks end friendships, so a block shows as NOT_FRIENDS: the sender never learns they were blocked.
    if (!isFriend(target, sender.Id) || target.BlockedUsers.includes(sender.Id))
      return InviteRefusal.NOT_FRIENDS;
    if (!presence.isConnected(target.Id) || target.Bio.Status === Status.Offline)
      return InviteRefusal.OFFLINE;
    if (target.Bio.Status === Status.DoNotDisturb) return InviteRefusal.DO_NOT_DISTURB;
    return null;
  }

  /** Starts the pair's cooldown: null when there is none, else the cooldown or how long until the next request. */
  async function startCooldown(
    sender: StoredUser,
    target: StoredUser,
  ): Promise<{ cancel(): Promise<void> } | { retryAfter: number } | null> {
    const cooldownMs = config.socket.inviteRequestCooldownSeconds * 1000;
    if (cooldownMs <= 0) return null;
    const started = await cooldowns.start(`${sender.Id}|${target.Id}`, cooldownMs);
    if (started.started) return started;
    return { retryAfter: Math.max(1, Math.ceil(started.retryAfterMs / 1000)) };
  }

  /**
   * Whether a request for a target on other processes reached them; when it did not, the request never happened:
   * its cooldown is lifted (before the sender is answered) and nothing is recorded. The link logged the failure.
   */
  async function deliveredElsewhere(
    confirmed: Promise<void>,
    cooldown: { cancel(): Promise<void> } | null,
  ): Promise<boolean> {
    try {
      await confirmed;
      return true;
    } catch {
      await cooldown?.cancel().catch(() => undefined);
      return false;
    }
  }

  return {
    /**
     * Refuses with TARGET_UNREACHABLE when the target's sockets are all on other processes and the request could
     * not be handed to them (nothing recorded, the cooldown lifted). Rejects only when the shared cooldowns cannot
     * be reached (nothing was delivered then).
     */
    async request(senderId: string, targetUserId: unknown): Promise<InviteRequestOutcome> {
      if (typeof targetUserId !== 'string' || targetUserId.length === 0 || targetUserId.length > 200) {
        return { ok: false, reason: InviteRefusal.INVALID_ARGS };
      }
      // One read for both (one round trip on PostgreSQL).
      const found = await users.getMany([senderId, targetUserId]);
      const sender = found.find((u) => u.Id === senderId);
      const target = found.find((u) => u.Id === targetUserId);
      if (!sender || !target) return { ok: false, reason: InviteRefusal.UNKNOWN_USER };
      const refused = refusal(sender, target);
      if (refused) return { ok: false, reason: refused };
      const started = await startCooldown(sender, target);
      if (started && 'retryAfter' in started) {
        return { ok: false, reason: InviteRefusal.RATE_LIMITED, retryAfter: started.retryAfter };
      }
      const cooldown = started;
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
      const confirmed = notifier.sendJsonConfirmed(
        target.Id,
        gotInviteRequestJson({
          fromUserId: sender.Id,
          requestId: stored.requestId,
          fromUsername: sender.Username,
          sentAt: stored.sentAt,
          expiresAt: stored.expiresAt,
        }),
      );
      // Only a target whose sockets are all on other processes waits here (through Redis); one on this process,
      // or a host on its own, goes straight on.
      if (confirmed !== null && !(await deliveredElsewhere(confirmed, cooldown))) {
        return { ok: false, reason: InviteRefusal.TARGET_UNREACHABLE };
      }
      expiries.add({ to: target.Id, stored });
      const delivered = history.add(target.Id, stored).catch(async (error: unknown) => {
        expiries.unsaved(stored);
        // A request the host could not save does not count against asking again (lifted before the answer).
        await cooldown?.cancel().catch(() => undefined);
        throw error;
      });
      return { ok: true, targetUserId: target.Id, requestId: stored.requestId, delivered };
    },

    /** The requests the user sent (kept while their target keeps them), newest first, with their state. */
    async sent(userId: string): Promise<SentInviteRequestDto[]> {
      const now = unixSeconds(clock);
      const outbox = await history.outbox(userId);
      const names = await views.namesOf([userId, ...outbox.map((item) => item.to)]);
      return outbox.reverse().map(({ stored, to }) => views.sent(stored, to, now, names));
    },

    /** The user's received requests, newest first. */
    async list(userId: string, filter?: { state?: InviteRequestState }): Promise<InviteRequestDto[]> {
      const now = unixSeconds(clock);
      const inbox = await history.inbox(userId);
      const names = await views.namesOf(inbox.map((stored) => stored.fromUserId));
      const all = inbox.reverse().map((stored) => views.received(stored, userId, now, names));
      return filter?.state ? all.filter((dto) => dto.state === filter.state) : all;
    },

    async update(userId: string, requestId: string, state: SettableInviteState): Promise<InviteRequestDto> {
      const stored = await history.find(userId, requestId);
      if (!stored) {
        throw new AppError(ErrorCode.NOT_FOUND, 'No invite request with that id.', {
          requestId: 'not found',
        });
      }
      const now = unixSeconds(clock);
      // Seen never downgrades an answered or dismissed request.
      if (!(state === 'seen' && stored.state !== 'new')) await history.setState(userId, stored, state, now);
      return views.notifyBoth(stored, userId, now);
    },

    /** `ownerId` sent an invite to `fromUserId`: their latest open request to `ownerId` is answered. */
    async markAnswered(ownerId: string, fromUserId: string): Promise<void> {
      const stored = await history.latestFrom(ownerId, fromUserId);
      const now = unixSeconds(clock);
      if (!stored || !(stored.state === 'new' || stored.state === 'seen') || now >= stored.expiresAt) return;
      await history.setState(ownerId, stored, 'answered', now);
      await views.notifyBoth(stored, ownerId, now);
    },

    /** Waits for the history's last writes and closes it. */
    close(): Promise<void> {
      return history.close();
    },

    /** Tells senders of requests that just expired; called from the heartbeat. Never rejects (errors reported). */
    async sweep(): Promise<void> {
      await Promise.all([
        sweepExpired(unixSeconds(clock)).catch((error: unknown) =>
          deps.onBackgroundError?.(error, 'telling senders of expired invite requests'),
        ),
        history
          .sweep()
          .catch((error: unknown) => deps.onBackgroundError?.(error, 'pruning the invite-request history')),
      ]);
    },
  };
}

export type InvitesService = ReturnType<typeof createInvitesService>;

/**
 * Moves the first layout's inboxes (one record per user) into the invite-request history, at startup. Nothing to
 * do on a folder created since.
 */
export async function upgradeLegacyInboxes(
  store: ServiceDeps['store'],
  history: InviteHistory,
): Promise<void> {
  const legacy = store.collection<LegacyInbox>(LEGACY_INVITE_INBOXES);
  if ((await legacy.count()) === 0) return;
  // Into the history first; a crash before the old records go only repeats this (known ids are skipped).
  const moved: Array<Promise<void>> = [];
  const emptied: string[] = [];
  for await (const inbox of legacy.scan()) {
    for (const old of inbox.requests) {
      if (await history.find(inbox.userId, old.requestId)) continue;
      moved.push(history.add(inbox.userId, { ...old }));
    }
    emptied.push(inbox.userId);
  }
  await Promise.all(moved);
  await store.tx(async (t) => {
    const repo = t.repo<LegacyInbox>(LEGACY_INVITE_INBOXES);
    for (const userId of emptied) await repo.remove(userId);
  });
}
