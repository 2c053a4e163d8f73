import { Status } from '../protocol/enums.js';
import { ErrorCode } from '../protocol/errors.js';
import {
  gotInviteRequestJson,
  InviteRefusal,
  InviteRequestState,
  jsonNumber,
  jsonString,
  ServerMessage,
  type InviteRequestDto,
  type SentInviteRequestDto,
} from '../protocol/socket.js';
import { AppError } from '../errors.js';
import { join } from 'node:path';
import { AppendLog } from '../store/append-log.js';
import { unixSeconds, type Notifier, type Presence, type ServiceDeps } from './context.js';

/** The invite-request history: an append-only log of events (a request, a change of state), compacted. */
export const INVITE_LOG_FILE = 'invite-requests.jsonl';
/** The first layout: one record per target user holding all their requests (rewritten whole on each one). */
export const LEGACY_INVITE_INBOXES = 'inviterequests';
/** The log is compacted once it holds this many lines and more than COMPACT_RATIO times the live requests. */
const COMPACT_MIN_LINES = 1000;
const COMPACT_RATIO = 3;

interface StoredInviteRequest {
  requestId: string;
  fromUserId: string;
  sentAt: number;
  expiresAt: number;
  state: Exclude<InviteRequestState, 'expired'>;
  updatedAt: number;
}

/** A line of the log: a request received by `to`, or a new state of one. */
export type InviteEvent =
  | { t: 'request'; to: string; request: StoredInviteRequest }
  | { t: 'state'; to: string; requestId: string; state: StoredInviteRequest['state']; at: number };

/**
 * A line of the log, as JSON.stringify would write it. Requests (nearly every line, and all of a compacted log)
 * are built as text, several times faster than JSON.stringify on this hot path.
 */
export function inviteEventJson(event: InviteEvent): string {
  if (event.t !== 'request') return JSON.stringify(event);
  const r = event.request;
  return (
    `{"t":"request","to":${jsonString(event.to)},"request":{"requestId":${jsonString(r.requestId)},` +
    `"fromUserId":${jsonString(r.fromUserId)},"sentAt":${jsonNumber(r.sentAt)},` +
    `"expiresAt":${jsonNumber(r.expiresAt)},"state":${jsonString(r.state)},` +
    `"updatedAt":${jsonNumber(r.updatedAt)}}}`
  );
}

interface LegacyInbox {
  userId: string;
  requests: StoredInviteRequest[];
}

export type InviteRequestOutcome =
  | { ok: true; targetUserId: string; requestId: string; delivered: Promise<void> }
  | { ok: false; reason: InviteRefusal; retryAfter?: number };

/** States a user may set on a request they received. */
export const SETTABLE_INVITE_STATES = ['seen', 'answered', 'dismissed'] as const;
export type SettableInviteState = (typeof SETTABLE_INVITE_STATES)[number];

/**
 * requestinvite (SPEC section 5): checks, per-pair cooldown, delivery to every socket of the target, and the
 * target's invite-request history.
 */
export async function openInvitesService(
  deps: Pick<ServiceDeps, 'users' | 'store' | 'clock' | 'ids' | 'config'> & {
    /** Where a failed background compaction is reported. */
    onBackgroundError?: (error: unknown, file: string) => void;
    presence: Presence;
    notifier: Notifier;
  },
) {
  const { users, store, clock, ids, config, presence, notifier } = deps;
  /** Each user's received requests, oldest first, at most `inviteRequestHistory`. No index by request id: a
   * map of every live request (up to 200 per user) cost more per delivered request than all the checks before it,
   * while lookups by id (a user updating one of their own requests) only ever search one inbox. */
  const inboxes = new Map<string, StoredInviteRequest[]>();
  let live = 0;
  /** Requests sent but not durable yet: delivered live, filed (visible in histories) once durable. */
  const pendingRequests = new Set<{ to: string; request: StoredInviteRequest }>();
  /** State changes not durable yet: applied to the request once they are. */
  const pendingStates = new Map<StoredInviteRequest, { state: StoredInviteRequest['state']; at: number }>();
  /** While the log is replayed at start: the ids seen, so a request recorded twice is filed once. */
  let replayed: Set<string> | null = new Set();

  /** Each sender's requests (the same objects as in the inboxes), oldest first, at most `inviteRequestHistory`. */
  const outboxes = new Map<string, Array<{ to: string; stored: StoredInviteRequest }>>();
  /** Requests sent since start, in order of expiry (the lifetime is one setting), for the sender's "expired". */
  const expiring: Array<{ to: string; stored: StoredInviteRequest }> = [];
  /** Requests the host could not save: their sender was told at once, not again when they would expire. */
  const unsaved = new WeakSet<StoredInviteRequest>();
  let expiringHead = 0;

  /** Files `request` for `to`, dropping the oldest past the history bound. */
  function file(to: string, request: StoredInviteRequest): void {
    let outbox = outboxes.get(request.fromUserId);
    if (!outbox) outboxes.set(request.fromUserId, (outbox = []));
    outbox.push({ to, stored: request });
    if (outbox.length > config.socket.inviteRequestHistory) outbox.shift();
    let inbox = inboxes.get(to);
    if (!inbox) inboxes.set(to, (inbox = []));
    inbox.push(request);
    live++;
    while (inbox.length > config.socket.inviteRequestHistory) {
      inbox.shift();
      live--;
    }
  }
  /** `to`'s request `requestId`, searched newest first (updates are nearly always about recent requests). */
  function find(to: string, requestId: string): StoredInviteRequest | undefined {
    // One on its way to disk can already be acted on (the target saw it live); its change follows it in the log.
    for (const pending of pendingRequests) {
      if (pending.to === to && pending.request.requestId === requestId) return pending.request;
    }
    const inbox = inboxes.get(to);
    if (!inbox) return undefined;
    for (let i = inbox.length - 1; i >= 0; i--) if (inbox[i]!.requestId === requestId) return inbox[i];
    return undefined;
  }
  function apply(event: InviteEvent): void {
    if (event.t === 'request') {
      if (replayed?.has(event.request.requestId)) return;
      replayed?.add(event.request.requestId);
      file(event.to, event.request);
      return;
    }
    const found = find(event.to, event.requestId);
    if (found) {
      found.state = event.state;
      found.updatedAt = event.at;
    }
  }
  const log = await AppendLog.open<InviteEvent, null>(join(config.dataDir, INVITE_LOG_FILE), () => null, {
    fsync: config.fsync,
    onEntry: apply,
    // Never read back by position: the service keeps what it needs in memory.
    indexed: false,
  });
  replayed = null;

  /** Appends `event` (serialised at once: later changes to its objects are not in this line); compacts the log
   * when most of it no longer matters. */
  function record(event: InviteEvent): Promise<void> {
    const done = log.add(event, inviteEventJson(event));
    // Once per compaction: the live requests are gathered only when none is under way.
    if (!log.compacting && log.length >= COMPACT_MIN_LINES && log.length > COMPACT_RATIO * live) {
      // A failed compaction leaves the log as it was; the next append tries again.
      void log
        .compact(liveRequests(), inviteEventJson)
        .catch((error: unknown) => deps.onBackgroundError?.(error, log.path));
    }
    return done;
  }

  /**
   * Every kept request as of now, as the compaction's events. Which requests is fixed here (each inbox copied: a
   * request filed after the call must come after them, from the appends that follow); the event objects are made
   * as the compaction writes them (making all 200,000 at once held the event loop for 12-35 ms). A request whose
   * state changes meanwhile is written as it is then; its state event follows and replays to the same state.
   */
  function liveRequests(): Iterable<InviteEvent> {
    // What is on its way to disk is in the compacted file too (the compaction covers those appends), with the
    // state it is being given, though readers see it only once it is durable; the history bound holds for both.
    const byTarget = new Map<string, StoredInviteRequest[]>();
    for (const [to, inbox] of inboxes) byTarget.set(to, inbox.slice());
    for (const { to, request } of pendingRequests) {
      const list = byTarget.get(to);
      if (list) list.push(request);
      else byTarget.set(to, [request]);
    }
    const bound = config.socket.inviteRequestHistory;
    const kept = Array.from(byTarget, ([to, requests]) => ({ to, requests: requests.slice(-bound) }));
    const states = new Map(pendingStates);
    const withState = (request: StoredInviteRequest): StoredInviteRequest => {
      const pending = states.get(request);
      return pending ? { ...request, state: pending.state, updatedAt: pending.at } : request;
    };
    return (function* () {
      for (const { to, requests } of kept) {
        for (const request of requests)
          yield { t: 'request', to, request: withState(request) } satisfies InviteEvent;
      }
    })();
  }

  /** Records a state change of `stored`; readers see it once it is durable, never if the write fails. */
  async function changeState(
    to: string,
    stored: StoredInviteRequest,
    state: StoredInviteRequest['state'],
    at: number,
  ) {
    const change = { state, at };
    pendingStates.set(stored, change);
    try {
      await record({ t: 'state', to, requestId: stored.requestId, state, at });
      stored.state = state;
      stored.updatedAt = at;
    } finally {
      if (pendingStates.get(stored) === change) pendingStates.delete(stored);
    }
  }

  /** `sender|target` -> ms of the last delivered request. */
  const lastSent = new Map<string, number>();
  /**
   * Friend lists as sets, rebuilt when the list object changes (the social service replaces it). The set holds
   * each friend's own `Id` string where that user exists: a lookup by a user record's `Id` then matches by
   * identity instead of comparing two copies of the id character by character (half the cost of the check, with
   * a thousand friends).
   */
  const friendSets = new WeakMap<string[], Set<string>>();
  function isFriend(user: { Friends: string[] }, otherId: string): boolean {
    if (user.Friends.length < 16) return user.Friends.includes(otherId);
    let set = friendSets.get(user.Friends);
    if (!set) {
      set = new Set();
      for (const id of user.Friends) set.add(users.get(id)?.Id ?? id);
      friendSets.set(user.Friends, set);
    }
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

  /** Tells the sender's sockets the request's new state (seen, answered, dismissed, expired). */
  function notifySender(stored: StoredInviteRequest, to: string, now: number): void {
    notifier.send(stored.fromUserId, ServerMessage.sentInviteRequestUpdated, {
      request: sentView(stored, to, now),
    });
  }

  function sentView(stored: StoredInviteRequest, to: string, now: number): SentInviteRequestDto {
    return { ...view(stored, to, now), toUsername: users.get(to)?.Username ?? '' };
  }

  /** Pushes "expired" to the senders of requests that just ran out unanswered. */
  function sweepExpired(now: number): void {
    while (expiringHead < expiring.length && expiring[expiringHead]!.stored.expiresAt <= now) {
      const { to, stored } = expiring[expiringHead++]!;
      if ((stored.state === 'new' || stored.state === 'seen') && !unsaved.has(stored))
        notifySender(stored, to, now);
    }
    if (expiringHead > 1024 && expiringHead * 2 > expiring.length) {
      expiring.splice(0, expiringHead);
      expiringHead = 0;
    }
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
      const cooldownMs = config.socket.inviteRequestCooldownSeconds * 1000;
      let cooldown: { key: string; at: number } | null = null;
      if (cooldownMs > 0) {
        const nowMs = clock.now();
        const key = `${sender.Id}|${target.Id}`;
        const last = lastSent.get(key);
        if (last !== undefined && nowMs - last < cooldownMs) {
          return {
            ok: false,
            reason: InviteRefusal.RATE_LIMITED,
            retryAfter: Math.max(1, Math.ceil((last + cooldownMs - nowMs) / 1000)),
          };
        }
        lastSent.set(key, nowMs);
        cooldown = { key, at: nowMs };
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
      notifier.sendJson(
        target.Id,
        gotInviteRequestJson({
          fromUserId: sender.Id,
          requestId: stored.requestId,
          fromUsername: sender.Username,
          sentAt: stored.sentAt,
          expiresAt: stored.expiresAt,
        }),
      );
      expiring.push({ to: target.Id, stored });
      const pending = { to: target.Id, request: stored };
      pendingRequests.add(pending);
      const delivered = record({ t: 'request', to: target.Id, request: stored }).then(
        () => {
          pendingRequests.delete(pending);
          file(target.Id, stored);
        },
        (error: unknown) => {
          pendingRequests.delete(pending);
          unsaved.add(stored);
          // A request the host could not save does not count against asking again.
          if (cooldown && lastSent.get(cooldown.key) === cooldown.at) lastSent.delete(cooldown.key);
          throw error;
        },
      );
      return { ok: true, targetUserId: target.Id, requestId: stored.requestId, delivered };
    },

    /** The requests the user sent (kept while their target keeps them), newest first, with their state. */
    sent(userId: string): SentInviteRequestDto[] {
      const now = unixSeconds(clock);
      const outbox = outboxes.get(userId) ?? [];
      const out: SentInviteRequestDto[] = [];
      for (let i = outbox.length - 1; i >= 0; i--) out.push(sentView(outbox[i]!.stored, outbox[i]!.to, now));
      return out;
    },

    /** The user's received requests, newest first. */
    list(userId: string, filter?: { state?: InviteRequestState }): InviteRequestDto[] {
      const now = unixSeconds(clock);
      const inbox = inboxes.get(userId);
      if (!inbox) return [];
      const out: InviteRequestDto[] = [];
      for (let i = inbox.length - 1; i >= 0; i--) {
        const dto = view(inbox[i]!, userId, now);
        if (!filter?.state || dto.state === filter.state) out.push(dto);
      }
      return out;
    },

    async update(userId: string, requestId: string, state: SettableInviteState): Promise<InviteRequestDto> {
      const stored = find(userId, requestId);
      if (!stored) {
        throw new AppError(ErrorCode.NOT_FOUND, 'No invite request with that id.', {
          requestId: 'not found',
        });
      }
      const now = unixSeconds(clock);
      // Seen never downgrades an answered or dismissed request.
      if (!(state === 'seen' && stored.state !== 'new')) await changeState(userId, stored, state, now);
      const dto = view(stored, userId, now);
      notifier.send(userId, ServerMessage.inviteRequestUpdated, { request: dto });
      notifySender(stored, userId, now);
      return dto;
    },

    /** `ownerId` sent an invite to `fromUserId`: their latest open request to `ownerId` is answered. */
    async markAnswered(ownerId: string, fromUserId: string): Promise<void> {
      // Newest first: requests still on their way to disk, then the history.
      const pending = [...pendingRequests].filter((p) => p.to === ownerId).map((p) => p.request);
      const inbox = [...(inboxes.get(ownerId) ?? []), ...pending];
      const now = unixSeconds(clock);
      for (let i = inbox.length - 1; i >= 0; i--) {
        const stored = inbox[i]!;
        if (stored.fromUserId !== fromUserId) continue;
        if ((stored.state === 'new' || stored.state === 'seen') && now < stored.expiresAt) {
          await changeState(ownerId, stored, 'answered', now);
          notifier.send(ownerId, ServerMessage.inviteRequestUpdated, { request: view(stored, ownerId, now) });
          notifySender(stored, ownerId, now);
        }
        return;
      }
    },

    /**
     * Moves the first layout's inboxes (one record per user) into one record per request, in one commit, at
     * startup. Nothing to do on a folder created since.
     */
    async upgradeLegacyInboxes(): Promise<void> {
      const legacy = store.collection<LegacyInbox>(LEGACY_INVITE_INBOXES);
      if (legacy.size === 0) return;
      // Into the log first; a crash before the old records go only repeats this (known ids are skipped).
      const moved: Array<Promise<void>> = [];
      const emptied: string[] = [];
      const known = new Set<string>();
      for (const inbox of inboxes.values()) for (const request of inbox) known.add(request.requestId);
      for (const inbox of [...legacy.values()]) {
        for (const old of inbox.requests) {
          if (known.has(old.requestId)) continue;
          known.add(old.requestId);
          file(inbox.userId, { ...old });
          moved.push(record({ t: 'request', to: inbox.userId, request: { ...old } }));
        }
        emptied.push(inbox.userId);
      }
      await Promise.all(moved);
      await store.tx((t) => {
        const repo = t.repo<LegacyInbox>(LEGACY_INVITE_INBOXES);
        for (const userId of emptied) repo.remove(userId);
      });
    },

    /** Waits for the log's last appends and closes it. */
    close(): Promise<void> {
      return log.close();
    },

    /** Forgets cooldowns that have run out; called from the heartbeat. */
    sweep(): void {
      sweepCooldowns(clock.now());
      sweepExpired(unixSeconds(clock));
    },
  };
}

export type InvitesService = Awaited<ReturnType<typeof openInvitesService>>;
