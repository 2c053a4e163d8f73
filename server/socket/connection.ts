import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { HostConfig } from '../config.js';
import type { HubSocket } from './hub.js';

/** Close codes we use (4000-4999 are for applications). */
export const CloseCode = {
  TOKEN_REVOKED: 4001,
  NOT_VERIFIED_IN_TIME: 4002,
  WRONG_USER: 4003,
  BAD_GAME_SERVER_TOKEN: 4004,
  WRONG_GAME_SERVER: 4005,
  SHUTTING_DOWN: 1001,
} as const;

export type SocketLimits = HostConfig['socket'];

/** The heartbeat looks at the sockets in this many groups, one group per tick (heartbeat.ts). */
export const HEARTBEAT_SLICES = 10;
let nextSlice = 0;

/** Game servers relay many players: their message allowance is this many times a user's. */
export const GAME_SERVER_RATE_FACTOR = 50;

/** One open socket and what this host knows of it. */
export interface Connection {
  /** Which of the heartbeat's groups this socket is in. */
  slice: number;
  ws: WebSocket;
  /** Sends text to this socket; what the hub holds for it. */
  out: HubSocket;
  /** The connection under ws, as the upgrade handed it over: corked while this turn's frames gather. */
  raw: Duplex;
  corked: boolean;
  userId: string | null;
  token: string | null;
  /** Unix seconds when the token expires; bans, warnings and logouts arrive as events instead. */
  tokenExpiresAt: number;
  /** Set once the socket authenticated as a game server. */
  gameServerId: string | null;
  gameServerTokenId: string | null;
  alive: boolean;
  openedAt: number;
  /** Token bucket for the message rate limit. */
  allowance: number;
  refilledAt: number;
  rateNoticeAt: number;
  remote: string;
  /**
   * Set while a message of this socket waits for the store (verification, a lookup): later messages of the
   * socket wait behind it, so each socket's messages are handled in the order they came.
   */
  queue: Promise<void> | null;
}

/** A new, unverified connection; its frames go out through `sendText`. */
export function newConnection(
  ws: WebSocket,
  raw: Duplex,
  remote: string,
  limits: SocketLimits,
  sendText: (conn: Connection, text: string) => void,
): Connection {
  const now = Date.now();
  const conn: Connection = {
    slice: nextSlice++ % HEARTBEAT_SLICES,
    ws,
    out: { send: (text) => sendText(conn, text) },
    raw,
    corked: false,
    userId: null,
    token: null,
    tokenExpiresAt: 0,
    gameServerId: null,
    gameServerTokenId: null,
    alive: true,
    openedAt: now,
    allowance: limits.messageBurst,
    refilledAt: now,
    rateNoticeAt: 0,
    remote,
    queue: null,
  };
  return conn;
}

export function closeSocket(conn: Connection, code: number, reason: string): void {
  conn.ws.close(code, reason);
}

/** Sends one message to this socket (through its corked sending). */
export function send(conn: Connection, message: string, result: Record<string, unknown>): void {
  conn.out.send(JSON.stringify({ message, result }));
}

/** Token bucket: `messagesPerSecond` sustained, `messageBurst` at once. */
export function takeAllowance(conn: Connection, limits: SocketLimits): boolean {
  const now = Date.now();
  const factor = conn.gameServerId !== null ? GAME_SERVER_RATE_FACTOR : 1;
  conn.allowance = Math.min(
    limits.messageBurst * factor,
    conn.allowance + ((now - conn.refilledAt) / 1000) * limits.messagesPerSecond * factor,
  );
  conn.refilledAt = now;
  if (conn.allowance < 1) return false;
  conn.allowance -= 1;
  return true;
}
