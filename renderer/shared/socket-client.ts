import {
  ClientMessage,
  InviteRefusal,
  RevokedReason,
  ServerMessage,
  type FailedToRequestInviteResult,
  type FriendStatusResult,
  type GotInviteRequestResult,
  type InviteRequestDto,
  type SentInviteRequestDto,
  type SocialPushResult,
} from '../../server/protocol/socket.js';
import type { AccountChangedResult, ContentJobDto } from '../../server/protocol/moderation-tools.js';

/**
 * The user socket as the UI needs it: verify with the session's token, keep it open (reconnect with exponential
 * backoff and jitter), hand typed events to listeners, and say how healthy it is. No React here, so the same
 * client runs in the browser, in the desktop window and in Node tests against a real host.
 */

export type SocketHealth = 'connecting' | 'connected' | 'reconnecting' | 'offline';

export interface SocketStatus {
  health: SocketHealth;
  /** When the next attempt starts (ms since the epoch) while waiting to reconnect; null otherwise. */
  retryAt: number | null;
  /** Attempts in a row that did not end in a verified connection. */
  failures: number;
  /** Counts verified connections: a change means "connected again", time to refetch what may have been missed. */
  connection: number;
  /** Why the connection is not up, in words; null while connected. */
  problem: string | null;
}

/** The server events a screen may listen to (SPEC section 5 and server/protocol/socket.ts). */
export type SocketEvent =
  | { message: typeof ServerMessage.gotInviteRequest; result: GotInviteRequestResult }
  | { message: typeof ServerMessage.sentInviteRequest; result: { targetUserId: string; requestId: string } }
  | { message: typeof ServerMessage.failedToRequestInvite; result: FailedToRequestInviteResult }
  | { message: typeof ServerMessage.inviteRequestUpdated; result: { request: InviteRequestDto } }
  | { message: typeof ServerMessage.friendStatus; result: FriendStatusResult }
  | { message: typeof ServerMessage.error; result: { code: string; reason: string } }
  | { message: typeof ServerMessage.sentInviteRequestUpdated; result: { request: SentInviteRequestDto } }
  | { message: SocialPushMessage; result: SocialPushResult }
  | { message: typeof ServerMessage.accountChanged; result: AccountChangedResult }
  | { message: typeof ServerMessage.contentJobProgress; result: { job: ContentJobDto } };

/** The social actions the host pushes to both sides (issue 18). */
export type SocialPushMessage =
  | typeof ServerMessage.friendRequest
  | typeof ServerMessage.friendAccepted
  | typeof ServerMessage.friendDeclined
  | typeof ServerMessage.friendRemoved
  | typeof ServerMessage.blockChanged;
const SOCIAL_PUSH = new Set<string>([
  ServerMessage.friendRequest,
  ServerMessage.friendAccepted,
  ServerMessage.friendDeclined,
  ServerMessage.friendRemoved,
  ServerMessage.blockChanged,
]);

type Incoming =
  | SocketEvent
  | { message: typeof ServerMessage.authenticated; result: { userId: string } }
  | { message: typeof ServerMessage.authFailed; result: { reason: string } };

export type InviteRequestOutcome =
  | { kind: 'sent'; requestId: string }
  | { kind: 'refused'; reason: InviteRefusal; retryAfter?: number }
  /** Not connected, or no answer in time: nothing is known about delivery. */
  | { kind: 'unknown'; problem: string };

/** What the client needs of a WebSocket; `browserSocket` adapts the DOM one, tests adapt `ws`. */
export interface SocketConnection {
  send(text: string): void;
  close(code?: number, reason?: string): void;
}

export interface SocketHandlers {
  onOpen(): void;
  onMessage(text: string): void;
  onClose(code: number, reason: string): void;
}

export type SocketFactory = (url: string, handlers: SocketHandlers) => SocketConnection;

export interface SocketClientOptions {
  url: string;
  userId: string;
  tokenContent: string;
  connect?: SocketFactory;
  random?: () => number;
  now?: () => number;
  /** Backoff: first delay, cap, and how long an attempt may take to verify. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  attemptTimeoutMs?: number;
  /** How long to wait for the answer to an invite request. */
  answerTimeoutMs?: number;
}

/** Close codes the host uses (server/socket/attach.ts). */
export const SocketCloseCode = { TOKEN_REVOKED: 4001, WRONG_USER: 4003 } as const;

/** What the sign-in screen says after the host ended the session with `why` (the 4001 close reason). */
export function sessionEndedNotice(why: string): string {
  switch (why) {
    case RevokedReason.BANNED:
      return 'A moderator banned this account, so this session has ended. Sign in to see the reason and until when.';
    case RevokedReason.WARNED:
      return 'A moderator warned this account, so this session has ended. Sign in again to read the warning.';
    default:
      return 'Your session has ended: you signed out elsewhere, it expired, or a moderator restricted the account. Sign in again.';
  }
}

/** After this many failed attempts in a row the indicator says "offline" (retries go on, further apart). */
export const OFFLINE_AFTER_FAILURES = 3;

/**
 * Delay before reconnect attempt number `failures` (1 for the first retry): exponential, capped, with "equal
 * jitter" (half fixed, half random) so a host restart is not met by every client at the same instant, while no
 * client retries sooner than half its step.
 */
export function reconnectDelay(
  failures: number,
  random: () => number,
  baseMs = 1000,
  maxMs = 30_000,
): number {
  const step = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(step / 2 + random() * (step / 2));
}

/** The socket address on the page's own origin; any path upgrades, and `/api/` also passes the dev proxy. */
export function socketUrlFor(location: Pick<Location, 'protocol' | 'host'>): string {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/v1/socket`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const REFUSALS = new Set<string>(Object.values(InviteRefusal));

/** Reads one server message, or null when it is not one this client understands (those are ignored). */
export function parseServerMessage(text: string): Incoming | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(value) || typeof value.message !== 'string' || !isRecord(value.result)) return null;
  const r = value.result;
  const str = (key: string): boolean => typeof r[key] === 'string';
  const num = (key: string): boolean => typeof r[key] === 'number';
  switch (value.message.toLowerCase()) {
    case ServerMessage.authenticated:
      return str('userId')
        ? { message: ServerMessage.authenticated, result: { userId: r.userId as string } }
        : null;
    case ServerMessage.authFailed:
      return {
        message: ServerMessage.authFailed,
        result: { reason: str('reason') ? (r.reason as string) : '' },
      };
    case ServerMessage.gotInviteRequest:
      return str('fromUserId') && str('requestId') && num('sentAt') && num('expiresAt')
        ? {
            message: ServerMessage.gotInviteRequest,
            result: {
              fromUserId: r.fromUserId as string,
              requestId: r.requestId as string,
              fromUsername: str('fromUsername') ? (r.fromUsername as string) : '',
              sentAt: r.sentAt as number,
              expiresAt: r.expiresAt as number,
            },
          }
        : null;
    case ServerMessage.sentInviteRequest:
      return str('targetUserId')
        ? {
            message: ServerMessage.sentInviteRequest,
            result: {
              targetUserId: r.targetUserId as string,
              requestId: str('requestId') ? (r.requestId as string) : '',
            },
          }
        : null;
    case ServerMessage.failedToRequestInvite: {
      if (!str('targetUserId') || !str('reason') || !REFUSALS.has(r.reason as string)) return null;
      const result: FailedToRequestInviteResult = {
        targetUserId: r.targetUserId as string,
        reason: r.reason as InviteRefusal,
      };
      if (num('retryAfter')) result.retryAfter = r.retryAfter as number;
      return { message: ServerMessage.failedToRequestInvite, result };
    }
    case ServerMessage.inviteRequestUpdated:
      return isRecord(r.request) && typeof r.request.requestId === 'string'
        ? {
            message: ServerMessage.inviteRequestUpdated,
            result: { request: r.request as unknown as InviteRequestDto },
          }
        : null;
    case ServerMessage.friendStatus:
      return str('userId') && num('Status')
        ? {
            message: ServerMessage.friendStatus,
            result: {
              userId: r.userId as string,
              Status: r.Status as number,
              StatusText: str('StatusText') ? (r.StatusText as string) : '',
            },
          }
        : null;
    case ServerMessage.sentInviteRequestUpdated:
      return isRecord(r.request) && typeof r.request.requestId === 'string'
        ? {
            message: ServerMessage.sentInviteRequestUpdated,
            result: { request: r.request as unknown as SentInviteRequestDto },
          }
        : null;
    case ServerMessage.accountChanged:
      return str('userId') &&
        num('Rank') &&
        Array.isArray(r.Badges) &&
        isRecord(r.BanStatus) &&
        isRecord(r.WarnStatus)
        ? { message: ServerMessage.accountChanged, result: r as unknown as AccountChangedResult }
        : null;
    case ServerMessage.contentJobProgress:
      return isRecord(r.job) && typeof r.job.id === 'string' && typeof r.job.done === 'number'
        ? { message: ServerMessage.contentJobProgress, result: { job: r.job as unknown as ContentJobDto } }
        : null;
    case ServerMessage.error:
      return {
        message: ServerMessage.error,
        result: {
          code: str('code') ? (r.code as string) : '',
          reason: str('reason') ? (r.reason as string) : '',
        },
      };
    default:
      return SOCIAL_PUSH.has(value.message.toLowerCase()) &&
        str('fromUserId') &&
        str('targetUserId') &&
        isRecord(r.user)
        ? {
            message: value.message.toLowerCase() as SocialPushMessage,
            result: {
              action: str('action') ? (r.action as string) : '',
              fromUserId: r.fromUserId as string,
              targetUserId: r.targetUserId as string,
              user: r.user as unknown as SocialPushResult['user'],
            },
          }
        : null;
  }
}

/** The DOM WebSocket behind the SocketFactory seam. */
export const browserSocket: SocketFactory = (url, handlers) => {
  const ws = new WebSocket(url);
  // Closing a socket that is still connecting makes the browser log an error; close it once it opened instead.
  let closeOnOpen: { code?: number; reason?: string } | null = null;
  ws.onopen = () => {
    if (closeOnOpen) ws.close(closeOnOpen.code, closeOnOpen.reason);
    else handlers.onOpen();
  };
  ws.onmessage = (event: MessageEvent<unknown>) => {
    if (typeof event.data === 'string') handlers.onMessage(event.data);
  };
  ws.onclose = (event) => handlers.onClose(event.code, event.reason);
  return {
    send: (text) => ws.send(text),
    close: (code, reason) => {
      if (ws.readyState === WebSocket.CONNECTING) closeOnOpen = { code, reason };
      else ws.close(code, reason);
    },
  };
};

interface PendingInvite {
  resolve(outcome: InviteRequestOutcome): void;
  timer: ReturnType<typeof setTimeout>;
}

export class SocketClient {
  readonly #options: SocketClientOptions;
  readonly #connect: SocketFactory;
  readonly #random: () => number;
  readonly #now: () => number;
  #status: SocketStatus = { health: 'connecting', retryAt: null, failures: 0, connection: 0, problem: null };
  #socket: SocketConnection | null = null;
  /** Bumped whenever a socket is abandoned, so late events from it are ignored. */
  #generation = 0;
  #verified = false;
  #running = false;
  #stoppedForGood = false;
  #retryTimer: ReturnType<typeof setTimeout> | null = null;
  #attemptTimer: ReturnType<typeof setTimeout> | null = null;
  readonly #eventListeners = new Set<(event: SocketEvent) => void>();
  readonly #statusListeners = new Set<() => void>();
  readonly #revokedListeners = new Set<(why: string) => void>();
  /** Invite requests waiting for their answer, per target, oldest first (answers come back in order). */
  readonly #pending = new Map<string, PendingInvite[]>();

  constructor(options: SocketClientOptions) {
    this.#options = options;
    this.#connect = options.connect ?? browserSocket;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? Date.now;
  }

  status(): SocketStatus {
    return this.#status;
  }

  /** Listens to status changes (useSyncExternalStore's subscribe). */
  onStatus(listener: () => void): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  /** The host ended this session (token revoked, expired, banned, or refused at verification); no retries follow. */
  onRevoked(listener: (why: string) => void): () => void {
    this.#revokedListeners.add(listener);
    return () => this.#revokedListeners.delete(listener);
  }

  subscribe(listener: (event: SocketEvent) => void): () => void {
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  /** Opens the socket and keeps it open until `stop`. Safe to call again after `stop` (React StrictMode does). */
  start(): void {
    if (this.#running || this.#stoppedForGood) return;
    this.#running = true;
    this.#open();
  }

  stop(): void {
    this.#running = false;
    this.#abandon(1000, 'closed by the page');
    this.#clearTimers();
    this.#failPending('The connection was closed.');
  }

  /** Skips the wait before the next attempt (a "retry now" button, the browser coming back online). */
  retryNow(): void {
    if (!this.#running || this.#stoppedForGood || this.#socket) return;
    this.#clearTimers();
    this.#open();
  }

  /** Tells the client the network went away: say "offline" at once instead of waiting for timeouts. */
  networkLost(): void {
    if (!this.#running || this.#stoppedForGood) return;
    this.#abandon(1000, 'network lost');
    this.#clearTimers();
    this.#failPending('The connection to the host was lost.');
    const delay = this.#options.maxDelayMs ?? 30_000;
    this.#setStatus({ health: 'offline', retryAt: this.#now() + delay, problem: 'This device is offline.' });
    // The "online" event normally brings us back sooner (retryNow); this is in case it never comes.
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (this.#running) this.#open();
    }, delay);
  }

  /** Asks the host to deliver an invite request to `targetUserId`; resolves with the host's answer. */
  requestInvite(targetUserId: string): Promise<InviteRequestOutcome> {
    const socket = this.#socket;
    if (!socket || !this.#verified) {
      return Promise.resolve({ kind: 'unknown', problem: 'Not connected to the host right now.' });
    }
    return new Promise((resolve) => {
      const entry: PendingInvite = {
        resolve,
        timer: setTimeout(() => {
          this.#takePending(targetUserId, entry);
          resolve({ kind: 'unknown', problem: 'The host did not answer in time.' });
        }, this.#options.answerTimeoutMs ?? 10_000),
      };
      const list = this.#pending.get(targetUserId) ?? [];
      list.push(entry);
      this.#pending.set(targetUserId, list);
      socket.send(
        JSON.stringify({
          userId: this.#options.userId,
          message: 'RequestInvite',
          args: { targetUserId },
        }),
      );
    });
  }

  #open(): void {
    const generation = ++this.#generation;
    const current = (): boolean => generation === this.#generation;
    this.#verified = false;
    if (this.#status.health !== 'connecting' || this.#status.retryAt !== null) {
      this.#setStatus({ retryAt: null });
    }
    let socket: SocketConnection;
    try {
      socket = this.#connect(this.#options.url, {
        onOpen: () => {
          if (!current()) return;
          socket.send(
            JSON.stringify({
              userId: this.#options.userId,
              tokenContent: this.#options.tokenContent,
              message: ClientMessage.auth,
              args: {},
            }),
          );
        },
        onMessage: (text) => {
          if (current()) this.#onMessage(text);
        },
        onClose: (code, reason) => {
          if (current()) this.#onClose(code, reason);
        },
      });
    } catch {
      this.#scheduleRetry('Could not open a connection to the host.');
      return;
    }
    this.#socket = socket;
    this.#attemptTimer = setTimeout(() => {
      if (!current() || this.#verified) return;
      this.#abandon(1000, 'no answer');
      this.#scheduleRetry('The host did not answer.');
    }, this.#options.attemptTimeoutMs ?? 10_000);
  }

  #onMessage(text: string): void {
    const incoming = parseServerMessage(text);
    if (!incoming) return;
    switch (incoming.message) {
      case ServerMessage.authenticated:
        this.#verified = true;
        if (this.#attemptTimer) clearTimeout(this.#attemptTimer);
        this.#attemptTimer = null;
        this.#setStatus({
          health: 'connected',
          retryAt: null,
          failures: 0,
          connection: this.#status.connection + 1,
          problem: null,
        });
        return;
      case ServerMessage.authFailed:
        this.#endForGood(incoming.result.reason || 'The host did not accept this session.');
        return;
      case ServerMessage.sentInviteRequest:
        this.#resolvePending(incoming.result.targetUserId, {
          kind: 'sent',
          requestId: incoming.result.requestId,
        });
        break;
      case ServerMessage.failedToRequestInvite: {
        const { reason, retryAfter } = incoming.result;
        this.#resolvePending(
          incoming.result.targetUserId,
          retryAfter === undefined ? { kind: 'refused', reason } : { kind: 'refused', reason, retryAfter },
        );
        break;
      }
      default:
        break;
    }
    for (const listener of [...this.#eventListeners]) listener(incoming);
  }

  #onClose(code: number, reason: string): void {
    this.#socket = null;
    this.#verified = false;
    if (this.#attemptTimer) clearTimeout(this.#attemptTimer);
    this.#attemptTimer = null;
    this.#failPending('The connection to the host was lost.');
    if (code === SocketCloseCode.TOKEN_REVOKED) {
      this.#endForGood(reason || 'The host ended this session.');
      return;
    }
    if (code === SocketCloseCode.WRONG_USER) {
      // Our own bug if it ever happens; retrying would repeat it.
      this.#stoppedForGood = true;
      this.#running = false;
      this.#setStatus({ health: 'offline', retryAt: null, problem: 'The host refused this connection.' });
      return;
    }
    this.#scheduleRetry('The connection to the host was lost.');
  }

  #endForGood(why: string): void {
    this.#stoppedForGood = true;
    this.#running = false;
    this.#abandon(1000, 'session ended');
    this.#clearTimers();
    this.#setStatus({ health: 'offline', retryAt: null, problem: 'This session has ended.' });
    for (const listener of [...this.#revokedListeners]) listener(why);
  }

  #scheduleRetry(problem: string): void {
    if (!this.#running) return;
    this.#socket = null;
    const failures = this.#status.failures + 1;
    const delay = reconnectDelay(
      failures,
      this.#random,
      this.#options.baseDelayMs ?? 1000,
      this.#options.maxDelayMs ?? 30_000,
    );
    this.#setStatus({
      health: failures >= OFFLINE_AFTER_FAILURES ? 'offline' : 'reconnecting',
      retryAt: this.#now() + delay,
      failures,
      problem,
    });
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (this.#running) this.#open();
    }, delay);
  }

  #abandon(code: number, reason: string): void {
    this.#generation++;
    const socket = this.#socket;
    this.#socket = null;
    this.#verified = false;
    try {
      socket?.close(code, reason);
    } catch {
      // Closing a socket that never opened may throw in some engines; it is gone either way.
    }
  }

  #clearTimers(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    if (this.#attemptTimer) clearTimeout(this.#attemptTimer);
    this.#retryTimer = null;
    this.#attemptTimer = null;
  }

  #takePending(targetUserId: string, entry: PendingInvite): void {
    const list = this.#pending.get(targetUserId);
    if (!list) return;
    const index = list.indexOf(entry);
    if (index >= 0) list.splice(index, 1);
    if (list.length === 0) this.#pending.delete(targetUserId);
  }

  #resolvePending(targetUserId: string, outcome: InviteRequestOutcome): void {
    const entry = this.#pending.get(targetUserId)?.[0];
    if (!entry) return;
    clearTimeout(entry.timer);
    this.#takePending(targetUserId, entry);
    entry.resolve(outcome);
  }

  #failPending(problem: string): void {
    for (const list of this.#pending.values()) {
      for (const entry of list) {
        clearTimeout(entry.timer);
        entry.resolve({ kind: 'unknown', problem });
      }
    }
    this.#pending.clear();
  }

  #setStatus(patch: Partial<SocketStatus>): void {
    this.#status = { ...this.#status, ...patch };
    for (const listener of [...this.#statusListeners]) listener();
  }
}
