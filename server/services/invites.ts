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
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { AppendLog } from '../store/append-log.js';
import { CorruptDataFileError } from '../store/durable-file.js';
import type { ReadLog } from '../store/seam.js';
import { unixSeconds, type Notifier, type Presence, type ServiceDeps } from './context.js';
import type { Cooldowns } from './limits.js';

/**
 * The invite-request history on the embedded store: an append-only log of events (a request, a change of state)
 * in the data folder, compacted.
 */
export const INVITE_LOG_FILE = 'invite-requests.jsonl';
/**
 * The same history with a database (PostgreSQL): a store log, shared by every host process of the community, so
 * each serves the requests the others handled (a file in a shared folder would be appended by several processes).
 */
export const INVITE_LOG = 'invite-requests';
/** The first layout: one record per target user holding all their requests (rewritten whole on each one). */
export const LEGACY_INVITE_INBOXES = 'inviterequests';
/** Requests per commit when a folder's history moves into the database. */
const IMPORT_BATCH = 5000;
/** The log is compacted once it holds this many lines and more than COMPACT_RATIO times the live requests. */
const COMPACT_MIN_LINES = 1000;
const COMPACT_RATIO = 3;
/** Usernames the invites service keeps (they never change once an account exists). */
const NAME_CACHE_MAX = 10_000;

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

/** An entry of the store log `invite-requests`: an event and its commit's sequence number. */
export type InviteLogEntry = InviteEvent & { seq: number };

/**
 * The store log's key of an entry: the entry itself, so a host rebuilds the history at start from what the store
 * loaded, without reading the entries back one at a time.
 */
export const inviteLogKeyOf = (entry: InviteLogEntry): InviteLogEntry => entry;

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
export async function openInvitesService(
  deps: Pick<ServiceDeps, 'users' | 'store' | 'clock' | 'ids' | 'config'> & {
    /** Where a failed background compaction is reported. */
    onBackgroundError?: (error: unknown, file: string) => void;
    presence: Presence;
    notifier: InviteNotifier;
    /** One request per sender and target per cooldown, across every host process sharing the community. */
    cooldowns: Cooldowns;
  },
) {
  const { users, store, clock, ids, config, presence, notifier, cooldowns } = deps;
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
  /** Applies an event recorded before start, or (with a database) one another host process recorded. */
  function apply(event: InviteEvent): void {
    if (event.t === 'request') {
      if (replayed) {
        if (replayed.has(event.request.requestId)) return;
        replayed.add(event.request.requestId);
      } else if (find(event.to, event.request.requestId)) {
        // Recorded twice (two hosts upgrading the first layout at once): filed once.
        return;
      }
      file(event.to, event.request);
      return;
    }
    const found = find(event.to, event.requestId);
    if (found) {
      found.state = event.state;
      found.updatedAt = event.at;
    }
  }
  /**
   * Makes `event` durable (serialised at once: later changes to its objects are not recorded); resolves once it
   * is. This process applies its own events itself (when they resolve); events of other processes are applied
   * as the store hears of them, without notifications: the process that handled an action sent those.
   */
  let record: (event: InviteEvent) => Promise<void>;
  let closeHistory: () => Promise<void>;
  let sharedLog: ReadLog<InviteLogEntry, InviteLogEntry> | null = null;
  if (config.database === null) {
    const log = await AppendLog.open<InviteEvent, null>(join(config.dataDir, INVITE_LOG_FILE), () => null, {
      fsync: config.fsync,
      onEntry: apply,
      // Never read back by position: the service keeps what it needs in memory.
      indexed: false,
    });
    record = (event) => appendToFile(log, event);
    closeHistory = () => log.close();
  } else {
    // The store loaded every entry (keys are the entries): replayed, then those of other processes as they come.
    // Kept requests share their objects with those keys (read by nobody else once replayed), so they are not
    // held twice. Old entries stay in the table and in memory; pruning them is left for later.
    const log = store.log<InviteLogEntry, InviteLogEntry>(INVITE_LOG);
    sharedLog = log;
    for (let position = 0; position < log.length; position++) apply(log.indexAt(position)!.key);
    const mine = new WeakSet<InviteLogEntry>();
    log.onAppend((entry) => {
      if (!mine.has(entry)) apply(entry);
    });
    // Events arriving while one commit is on its way share the next one (group commit): one transaction, one
    // WAL flush, one turn of the log's lock for all of them.
    let next: { events: InviteEvent[]; saved: Promise<void> } | null = null;
    let inFlight: Promise<void> = Promise.resolve();
    const commit = (events: InviteEvent[]) =>
      store.tx((t) => {
        for (const event of events) {
          const entry: InviteLogEntry =
            event.t === 'request'
              ? { ...event, request: { ...event.request }, seq: 0 }
              : { ...event, seq: 0 };
          mine.add(t.append(INVITE_LOG, entry));
        }
      });
    record = (event) => {
      if (!next) {
        const events: InviteEvent[] = [];
        const saved = inFlight.then(() => {
          next = null;
          return commit(events);
        });
        next = { events, saved };
        inFlight = saved.catch(() => undefined);
      }
      // Serialised now: later changes to its objects are not recorded.
      next.events.push(structuredClone(event));
      return next.saved;
    };
    closeHistory = () => Promise.resolve();
  }
  replayed = null;

  /** Appends `event` to the file; compacts it when most of it no longer matters. */
  function appendToFile(log: AppendLog<InviteEvent, null>, event: InviteEvent): Promise<void> {
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

  /** Friend lists as sets, rebuilt when the list object changes (records are frozen; a change is a new list). */
  const friendSets = new WeakMap<readonly string[], Set<string>>();
  function isFriend(user: { Friends: readonly string[] }, otherId: string): boolean {
    if (user.Friends.length < 16) return user.Friends.includes(otherId);
    let set = friendSets.get(user.Friends);
    if (!set) {
      set = new Set(user.Friends);
      friendSets.set(user.Friends, set);
    }
    return set.has(otherId);
  }

  /**
   * Usernames by id, for the views below. A username never changes once an account exists, so names once read
   * stay right; the cache is bounded and starts over when full.
   */
  const knownNames = new Map<string, string>();
  async function namesOf(ids: Iterable<string>): Promise<ReadonlyMap<string, string>> {
    const missing = [...new Set(ids)].filter((id) => !knownNames.has(id));
    if (missing.length > 0) {
      if (knownNames.size + missing.length > NAME_CACHE_MAX) knownNames.clear();
      for (const user of await users.getMany(missing)) knownNames.set(user.Id, user.Username);
    }
    return knownNames;
  }

  function view(
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

  /** Tells the sender's sockets the request's new state (seen, answered, dismissed, expired). */
  function notifySender(
    stored: StoredInviteRequest,
    to: string,
    now: number,
    names: ReadonlyMap<string, string>,
  ) {
    notifier.send(stored.fromUserId, ServerMessage.sentInviteRequestUpdated, {
      request: sentView(stored, to, now, names),
    });
  }

  function sentView(
    stored: StoredInviteRequest,
    to: string,
    now: number,
    names: ReadonlyMap<string, string>,
  ): SentInviteRequestDto {
    return { ...view(stored, to, now, names), toUsername: names.get(to) ?? '' };
  }

  /** Pushes "expired" to the senders of requests that just ran out unanswered. */
  async function sweepExpired(now: number): Promise<void> {
    const expired: Array<{ to: string; stored: StoredInviteRequest }> = [];
    while (expiringHead < expiring.length && expiring[expiringHead]!.stored.expiresAt <= now) {
      const item = expiring[expiringHead++]!;
      if ((item.stored.state === 'new' || item.stored.state === 'seen') && !unsaved.has(item.stored))
        expired.push(item);
    }
    if (expiringHead > 1024 && expiringHead * 2 > expiring.length) {
      expiring.splice(0, expiringHead);
      expiringHead = 0;
    }
    if (expired.length === 0) return;
    const names = await namesOf(expired.flatMap(({ to, stored }) => [to, stored.fromUserId]));
    for (const { to, stored } of expired) notifySender(stored, to, now, names);
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
      const [sender, target] = await Promise.all([users.get(senderId), users.get(targetUserId)]);
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
      let cooldown: { cancel(): Promise<void> } | null = null;
      if (cooldownMs > 0) {
        const started = await cooldowns.start(`${sender.Id}|${target.Id}`, cooldownMs);
        if (!started.started) {
          return {
            ok: false,
            reason: InviteRefusal.RATE_LIMITED,
            retryAfter: Math.max(1, Math.ceil(started.retryAfterMs / 1000)),
          };
        }
        cooldown = started;
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
      expiring.push({ to: target.Id, stored });
      const pending = { to: target.Id, request: stored };
      pendingRequests.add(pending);
      const delivered = record({ t: 'request', to: target.Id, request: stored }).then(
        () => {
          pendingRequests.delete(pending);
          file(target.Id, stored);
        },
        async (error: unknown) => {
          pendingRequests.delete(pending);
          unsaved.add(stored);
          // A request the host could not save does not count against asking again (lifted before the answer).
          await cooldown?.cancel().catch(() => undefined);
          throw error;
        },
      );
      return { ok: true, targetUserId: target.Id, requestId: stored.requestId, delivered };
    },

    /** The requests the user sent (kept while their target keeps them), newest first, with their state. */
    async sent(userId: string): Promise<SentInviteRequestDto[]> {
      const now = unixSeconds(clock);
      const outbox = outboxes.get(userId) ?? [];
      const names = await namesOf([userId, ...outbox.map((item) => item.to)]);
      const out: SentInviteRequestDto[] = [];
      for (let i = outbox.length - 1; i >= 0; i--)
        out.push(sentView(outbox[i]!.stored, outbox[i]!.to, now, names));
      return out;
    },

    /** The user's received requests, newest first. */
    async list(userId: string, filter?: { state?: InviteRequestState }): Promise<InviteRequestDto[]> {
      const now = unixSeconds(clock);
      const inbox = inboxes.get(userId);
      if (!inbox) return [];
      const names = await namesOf(inbox.map((stored) => stored.fromUserId));
      const out: InviteRequestDto[] = [];
      for (let i = inbox.length - 1; i >= 0; i--) {
        const dto = view(inbox[i]!, userId, now, names);
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
      const names = await namesOf([userId, stored.fromUserId]);
      const dto = view(stored, userId, now, names);
      notifier.send(userId, ServerMessage.inviteRequestUpdated, { request: dto });
      notifySender(stored, userId, now, names);
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
          const names = await namesOf([ownerId, stored.fromUserId]);
          notifier.send(ownerId, ServerMessage.inviteRequestUpdated, {
            request: view(stored, ownerId, now, names),
          });
          notifySender(stored, ownerId, now, names);
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
      if ((await legacy.count()) === 0) return;
      // Into the log first; a crash before the old records go only repeats this (known ids are skipped).
      const moved: Array<Promise<void>> = [];
      const emptied: string[] = [];
      const known = new Set<string>();
      for (const inbox of inboxes.values()) for (const request of inbox) known.add(request.requestId);
      for await (const inbox of legacy.scan()) {
        for (const old of inbox.requests) {
          if (known.has(old.requestId)) continue;
          known.add(old.requestId);
          file(inbox.userId, { ...old });
          moved.push(record({ t: 'request', to: inbox.userId, request: { ...old } }));
        }
        emptied.push(inbox.userId);
      }
      await Promise.all(moved);
      await store.tx(async (t) => {
        const repo = t.repo<LegacyInbox>(LEGACY_INVITE_INBOXES);
        for (const userId of emptied) await repo.remove(userId);
      });
    },

    /**
     * With a database: moves a history the data folder still holds (written by hosts of an earlier version, or
     * left there by `migrate`) into the store log, each kept request with its last state, then renames the file
     * `invite-requests.jsonl.imported`. Requests the store log already holds are skipped, so a host stopped
     * before the rename, or two hosts starting together, add nothing twice. Returns how many requests moved.
     */
    async importFolderHistory(): Promise<number> {
      if (sharedLog === null) return 0;
      const path = join(config.dataDir, INVITE_LOG_FILE);
      let content: string;
      try {
        content = await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw new CorruptDataFileError(path, error);
      }
      const found = new Map<string, { to: string; request: StoredInviteRequest }>();
      const lines = content.split('\n');
      // The last piece has no newline: empty, or an append that died half-way (never acknowledged).
      for (let i = 0; i < lines.length - 1; i++) {
        let event: InviteEvent;
        try {
          event = JSON.parse(lines[i]!) as InviteEvent;
        } catch (error) {
          throw new CorruptDataFileError(path, new Error(`line ${i + 1}: ${(error as Error).message}`));
        }
        if (event.t === 'request') {
          if (!found.has(event.request.requestId))
            found.set(event.request.requestId, { to: event.to, request: { ...event.request } });
        } else {
          const kept = found.get(event.requestId);
          if (kept) {
            kept.request.state = event.state;
            kept.request.updatedAt = event.at;
          }
        }
      }
      const known = new Set<string>();
      for (let position = 0; position < sharedLog.length; position++) {
        const entry = sharedLog.indexAt(position)!.key;
        if (entry.t === 'request') known.add(entry.request.requestId);
      }
      // Each target's newest requests up to the history bound, oldest first (the file's order).
      const perTarget = new Map<string, number>();
      const moving: Array<{ to: string; request: StoredInviteRequest }> = [];
      for (const item of [...found.values()].reverse()) {
        const count = perTarget.get(item.to) ?? 0;
        if (count >= config.socket.inviteRequestHistory) continue;
        perTarget.set(item.to, count + 1);
        if (!known.has(item.request.requestId)) moving.push(item);
      }
      moving.reverse();
      // Recorded as another process's would be: the store log's listener files them once durable.
      for (let start = 0; start < moving.length; start += IMPORT_BATCH) {
        const batch = moving.slice(start, start + IMPORT_BATCH);
        await store.tx((t) => {
          for (const { to, request } of batch)
            t.append<InviteLogEntry>(INVITE_LOG, { t: 'request', to, request: { ...request }, seq: 0 });
        });
      }
      await rename(path, `${path}.imported`).catch((error: unknown) => {
        // Another host starting at the same time moved it first.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      });
      return moving.length;
    },

    /** Waits for the log's last appends and closes it. */
    close(): Promise<void> {
      return closeHistory();
    },

    /** Tells senders of requests that just expired; called from the heartbeat. */
    sweep(): void {
      sweepExpired(unixSeconds(clock)).catch((error: unknown) =>
        deps.onBackgroundError?.(error, 'telling senders of expired invite requests'),
      );
    },
  };
}

export type InvitesService = Awaited<ReturnType<typeof openInvitesService>>;
