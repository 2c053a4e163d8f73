import { join } from 'node:path';
import { jsonNumber, jsonString } from '../protocol/socket.js';
import { AppendLog } from './append-log.js';
import {
  InvitesInFlight,
  type InviteHistory,
  type SentInvite,
  type StoredInviteRequest,
  type StoredInviteState,
} from './invite-history.js';

/** The invite-request history on the embedded store: an append-only log of events in the data folder, compacted. */
export const INVITE_LOG_FILE = 'invite-requests.jsonl';
/** The log is compacted once it holds this many lines and more than COMPACT_RATIO times the live requests. */
const COMPACT_MIN_LINES = 1000;
const COMPACT_RATIO = 3;

/** A line of the log: a request received by `to`, or a new state of one. */
export type InviteEvent =
  | { t: 'request'; to: string; request: StoredInviteRequest }
  | { t: 'state'; to: string; requestId: string; state: StoredInviteState; at: number };

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

/** Each user's requests, received and sent, as this process holds them (the whole history: it is one host's). */
class Inboxes {
  /** Each user's received requests, oldest first. No index by request id: a map of every live request cost more
   * per delivered request than all the checks before it, while lookups by id only ever search one inbox. */
  readonly received = new Map<string, StoredInviteRequest[]>();
  /** Each sender's requests (the same objects as in the inboxes), oldest first. */
  readonly sent = new Map<string, SentInvite[]>();
  live = 0;

  constructor(private readonly bound: number) {}

  /** Files `request` for `to`, dropping the oldest past the history bound. */
  file(to: string, request: StoredInviteRequest): void {
    let outbox = this.sent.get(request.fromUserId);
    if (!outbox) this.sent.set(request.fromUserId, (outbox = []));
    outbox.push({ to, stored: request });
    if (outbox.length > this.bound) outbox.shift();
    let inbox = this.received.get(to);
    if (!inbox) this.received.set(to, (inbox = []));
    inbox.push(request);
    this.live++;
    while (inbox.length > this.bound) {
      inbox.shift();
      this.live--;
    }
  }

  /** `to`'s request `requestId`, searched newest first (updates are nearly always about recent requests). */
  find(to: string, requestId: string): StoredInviteRequest | undefined {
    const inbox = this.received.get(to) ?? [];
    for (let i = inbox.length - 1; i >= 0; i--) if (inbox[i]!.requestId === requestId) return inbox[i];
    return undefined;
  }
}

export class FileInviteHistory implements InviteHistory {
  readonly #inFlight = new InvitesInFlight();

  private constructor(
    private readonly log: AppendLog<InviteEvent, null>,
    private readonly held: Inboxes,
    private readonly bound: number,
    private readonly onCompactionError: (error: unknown, file: string) => void,
  ) {}

  /** Opens (or creates) the log in `dataDir` and replays it. */
  static async open(
    dataDir: string,
    options: { bound: number; fsync: boolean; onCompactionError: (error: unknown, file: string) => void },
  ): Promise<FileInviteHistory> {
    const held = new Inboxes(options.bound);
    const seen = new Set<string>();
    const apply = (event: InviteEvent): void => {
      if (event.t === 'request') {
        // Recorded twice (a compaction racing an append): filed once.
        if (seen.has(event.request.requestId)) return;
        seen.add(event.request.requestId);
        held.file(event.to, event.request);
        return;
      }
      const found = held.find(event.to, event.requestId);
      if (found) {
        found.state = event.state;
        found.updatedAt = event.at;
      }
    };
    const log = await AppendLog.open<InviteEvent, null>(join(dataDir, INVITE_LOG_FILE), () => null, {
      fsync: options.fsync,
      onEntry: apply,
      // Never read back by position: the history is held in memory.
      indexed: false,
    });
    return new FileInviteHistory(log, held, options.bound, options.onCompactionError);
  }

  add(to: string, request: StoredInviteRequest): Promise<void> {
    return this.#inFlight.adding(to, request, async () => {
      await this.#append({ t: 'request', to, request });
      this.held.file(to, request);
    });
  }

  setState(to: string, stored: StoredInviteRequest, state: StoredInviteState, at: number): Promise<void> {
    return this.#inFlight.changing(stored, state, at, () =>
      this.#append({ t: 'state', to, requestId: stored.requestId, state, at }),
    );
  }

  async find(to: string, requestId: string): Promise<StoredInviteRequest | undefined> {
    return this.#inFlight.find(to, requestId) ?? this.held.find(to, requestId);
  }

  async latestFrom(to: string, from: string): Promise<StoredInviteRequest | undefined> {
    const pending = this.#inFlight.latestFrom(to, from);
    if (pending) return pending;
    const inbox = this.held.received.get(to) ?? [];
    for (let i = inbox.length - 1; i >= 0; i--) if (inbox[i]!.fromUserId === from) return inbox[i];
    return undefined;
  }

  async inbox(to: string): Promise<StoredInviteRequest[]> {
    return [...(this.held.received.get(to) ?? [])];
  }

  async outbox(from: string): Promise<SentInvite[]> {
    return [...(this.held.sent.get(from) ?? [])];
  }

  async sweep(): Promise<void> {}

  close(): Promise<void> {
    return this.log.close();
  }

  /** Appends `event`; compacts the file when most of it no longer matters. */
  #append(event: InviteEvent): Promise<void> {
    const done = this.log.add(event, inviteEventJson(event));
    const log = this.log;
    // Once per compaction: the live requests are gathered only when none is under way.
    if (!log.compacting && log.length >= COMPACT_MIN_LINES && log.length > COMPACT_RATIO * this.held.live) {
      // A failed compaction leaves the log as it was; the next append tries again.
      log
        .compact(this.#liveRequests(), inviteEventJson)
        .catch((error: unknown) => this.onCompactionError(error, log.path));
    }
    return done;
  }

  /**
   * Every kept request as of now, as the compaction's events. Which requests is fixed here (each inbox copied: a
   * request filed after the call must come after them, from the appends that follow); the event objects are made
   * as the compaction writes them (making all 200,000 at once held the event loop for 12-35 ms). A request whose
   * state changes meanwhile is written as it is then; its state event follows and replays to the same state.
   */
  #liveRequests(): Iterable<InviteEvent> {
    // What is on its way to disk is in the compacted file too (the compaction covers those appends), with the
    // state it is being given, though readers see it only once it is durable; the history bound holds for both.
    const byTarget = new Map<string, StoredInviteRequest[]>();
    for (const [to, inbox] of this.held.received) byTarget.set(to, inbox.slice());
    for (const { to, stored } of this.#inFlight.requests) {
      const list = byTarget.get(to);
      if (list) list.push(stored);
      else byTarget.set(to, [stored]);
    }
    const kept = Array.from(byTarget, ([to, requests]) => ({ to, requests: requests.slice(-this.bound) }));
    const states = new Map(this.#inFlight.states);
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
}
