import type { InviteRequestState } from '../protocol/socket.js';

/**
 * The invite-request history: every request a user received (their inbox) and sent (their outbox), with its
 * state. Two implementations behind one interface: a compacted log file in the data folder on the embedded store
 * (file-invite-history.ts), a table on PostgreSQL shared by every host (pg-invite-history.ts).
 */

export interface StoredInviteRequest {
  requestId: string;
  fromUserId: string;
  sentAt: number;
  expiresAt: number;
  state: Exclude<InviteRequestState, 'expired'>;
  updatedAt: number;
}

export type StoredInviteState = StoredInviteRequest['state'];

/** A request as its sender sees it: with whom it was sent to. */
export interface SentInvite {
  to: string;
  stored: StoredInviteRequest;
}

export interface InviteHistory {
  /**
   * Makes `request` (received by `to`) durable; resolves once it is. Until then `find` and `latestFrom` return it
   * (the target saw it live and may act on it), the lists do not.
   */
  add(to: string, request: StoredInviteRequest): Promise<void>;
  /** Makes a new state of `stored` durable, then gives it to `stored`; never if the write fails. */
  setState(to: string, stored: StoredInviteRequest, state: StoredInviteState, at: number): Promise<void>;
  /** `to`'s request `requestId`, durable or on its way. */
  find(to: string, requestId: string): Promise<StoredInviteRequest | undefined>;
  /** The newest request `from` sent `to`, durable or on its way. */
  latestFrom(to: string, from: string): Promise<StoredInviteRequest | undefined>;
  /** The requests `to` received, oldest first, at most the history bound. */
  inbox(to: string): Promise<StoredInviteRequest[]>;
  /** The requests `from` sent that their targets still keep, oldest first, at most the history bound. */
  outbox(from: string): Promise<SentInvite[]>;
  /** Work done now and then (dropping what is past the bound); called from the heartbeat. */
  sweep(): Promise<void>;
  /** Waits for the writes under way and releases what the history holds. */
  close(): Promise<void>;
}

/**
 * Requests and state changes this process handed to the history that are not durable yet. A request on its way can
 * already be acted on (its target saw it live); a change of state shows once it is durable.
 */
export class InvitesInFlight {
  readonly requests = new Set<SentInvite>();
  readonly states = new Map<StoredInviteRequest, { state: StoredInviteState; at: number }>();

  /** Runs `write` with `request` counted as on its way. */
  async adding(to: string, request: StoredInviteRequest, write: () => Promise<void>): Promise<void> {
    const item = { to, stored: request };
    this.requests.add(item);
    try {
      await write();
    } finally {
      this.requests.delete(item);
    }
  }

  /** Runs `write`, then gives `stored` its new state (never when the write failed). */
  async changing(
    stored: StoredInviteRequest,
    state: StoredInviteState,
    at: number,
    write: () => Promise<void>,
  ): Promise<void> {
    const change = { state, at };
    this.states.set(stored, change);
    try {
      await write();
      stored.state = state;
      stored.updatedAt = at;
    } finally {
      if (this.states.get(stored) === change) this.states.delete(stored);
    }
  }

  find(to: string, requestId: string): StoredInviteRequest | undefined {
    for (const item of this.requests)
      if (item.to === to && item.stored.requestId === requestId) return item.stored;
    return undefined;
  }

  /** The newest request on its way from `from` to `to`. */
  latestFrom(to: string, from: string): StoredInviteRequest | undefined {
    let found: StoredInviteRequest | undefined;
    for (const item of this.requests)
      if (item.to === to && item.stored.fromUserId === from) found = item.stored;
    return found;
  }
}
