import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { HostConfig } from '../config.js';
import { StorageUnavailableError } from '../errors.js';
import { Status } from '../protocol/enums.js';
import {
  ClientMessage,
  InviteRefusal,
  RevokedReason,
  sentInviteRequestJson,
  ServerMessage,
  type ClientEnvelope,
} from '../protocol/socket.js';
import type { AccountsService } from '../services/accounts.js';
import type { AvatarSharing } from '../services/avatar-sharing.js';
import type { HostEvents } from '../services/context.js';
import type { GameServerTokens } from '../services/game-servers.js';
import type { InstancesService } from '../services/instances.js';
import type { InvitesService } from '../services/invites.js';
import type { UsersRepo } from '../store/users.js';
import type { HubSocket, SocketHub } from './hub.js';
import type { ClientAddresses } from './forwarded-address.js';

export interface SocketDeps {
  config: HostConfig;
  log: Logger;
  accounts: AccountsService;
  invites: InvitesService;
  instances: InstancesService;
  gameServerTokens: GameServerTokens;
  users: UsersRepo;
  hub: SocketHub;
  events: HostEvents;
  ids: { id(prefix: 'gameserver'): string; secret(): string };
  clock: { now(): number };
  /** shareavatartoken (reference 8.4); without it the message is ignored. */
  avatarSharing?: AvatarSharing;
  /** Whether a page of this Origin may open a socket (requests without one always may). */
  originAllowed?: (origin: string) => boolean;
  /** Answers a refused upgrade on the raw socket (the API's envelope), then ends it. */
  refuseUpgrade?: (socket: Duplex) => void;
  /** Where each upgrade comes from (through trusted proxies): the address presence and asset access go by. */
  addresses: ClientAddresses;
}

/** Messages only a game server may send (reference 8.5). */
const GAME_SERVER_MESSAGES = new Set([
  'claiminstancerequest',
  'instanceready',
  'removeinstance',
  'addmoderator',
  'removemoderator',
  'kickuser',
  'banuser',
  'unbanuser',
]);

/** Game servers relay many players: their message allowance is this many times a user's. */
const GAME_SERVER_RATE_FACTOR = 50;

/** Close codes we use (4000-4999 are for applications). */
export const CloseCode = {
  TOKEN_REVOKED: 4001,
  NOT_VERIFIED_IN_TIME: 4002,
  WRONG_USER: 4003,
  BAD_GAME_SERVER_TOKEN: 4004,
  WRONG_GAME_SERVER: 4005,
  SHUTTING_DOWN: 1001,
} as const;

const HEARTBEAT_SLICES = 10;
let nextSlice = 0;

interface Connection {
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

export interface SocketServer {
  /** Every open connection, verified or not. */
  readonly connections: number;
  /** Accepts an upgrade from another HTTP server (the optional separate socket port). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): Promise<void>;
}

/**
 * The user socket (SPEC section 5) on an HTTP server: upgrades on any path, as real clients connect to `/`.
 * Heartbeat, size and rate limits, verification once per socket, and re-checks that close the sockets of a user
 * whose token expired or who got banned.
 */
export function attachSocket(server: Server, deps: SocketDeps): SocketServer {
  const { config, log, accounts, invites, instances, users, hub, events } = deps;
  const limits = config.socket;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const connections = new Set<Connection>();

  const handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    // A browser page says where it comes from; one of another site may not act with its visitor's socket.
    const origin = req.headers.origin;
    if (origin !== undefined && deps.originAllowed && !deps.originAllowed(origin)) {
      log.info({ origin, remote: deps.addresses.of(req) }, 'refused a socket from a page of another origin');
      if (deps.refuseUpgrade) deps.refuseUpgrade(socket);
      else socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req, socket));
  };
  server.on('upgrade', handleUpgrade);

  function closeSocket(conn: Connection, code: number, reason: string): void {
    conn.ws.close(code, reason);
  }

  /**
   * Sends `text` through ws (its public API keeps the count of unsent bytes). The connection is corked until the
   * event loop has handled the I/O it woke for, so a socket owed several frames this turn gets them in one write.
   * A client that stops reading makes the unsent count grow; when it is past `maxBufferedBytes` once the turn's
   * frames went to the kernel, its socket is dropped at once (a close frame would wait behind what it does not
   * read), freeing what was queued for it. The cork is Node's public Writable API on the socket the upgrade gave
   * us; ws's own writes nest inside it and its bufferedAmount counts what it holds.
   */
  function sendText(conn: Connection, text: string): void {
    const ws = conn.ws;
    if (ws.readyState !== ws.OPEN) return;
    if (!conn.corked) {
      conn.corked = true;
      conn.raw.cork();
      if (corked.push(conn) === 1) setImmediate(uncorkAll);
    }
    ws.send(text);
  }

  let corked: Connection[] = [];
  function uncorkAll(): void {
    const list = corked;
    corked = [];
    for (const conn of list) {
      conn.corked = false;
      conn.raw.uncork();
      const buffered = conn.ws.bufferedAmount;
      if (buffered > limits.maxBufferedBytes && conn.ws.readyState === conn.ws.OPEN) {
        log.warn(
          {
            remote: conn.remote,
            userId: conn.userId,
            gameServerId: conn.gameServerId,
            buffered,
            limit: limits.maxBufferedBytes,
          },
          'dropped a socket that is not reading what it is sent (socket.maxBufferedBytes)',
        );
        conn.ws.terminate();
      }
    }
  }

  function send(conn: Connection, message: string, result: Record<string, unknown>): void {
    conn.out.send(JSON.stringify({ message, result }));
  }

  /**
   * sentinviterequest answers waiting for the history write that makes their request durable. Requests of the
   * same tick share that write (the log's group commit), so they are answered together, with one promise reaction
   * per write instead of one per request (a socket owed several answers then gets them in one socket write).
   */
  let waiting: {
    saved: Promise<void>;
    answers: Array<{ conn: Connection; text: string; targetUserId: string }>;
  } | null = null;

  function answerWhenSaved(conn: Connection, saved: Promise<void>, text: string, targetUserId: string): void {
    if (waiting?.saved !== saved) {
      const group = {
        saved,
        answers: [] as Array<{ conn: Connection; text: string; targetUserId: string }>,
      };
      waiting = group;
      saved.then(
        () => {
          if (waiting === group) waiting = null;
          for (const answer of group.answers) answer.conn.out.send(answer.text);
        },
        (error: unknown) => {
          if (waiting === group) waiting = null;
          log.error({ err: error, requests: group.answers.length }, 'could not save invite requests');
          for (const answer of group.answers) {
            send(answer.conn, ServerMessage.failedToRequestInvite, {
              targetUserId: answer.targetUserId,
              reason: InviteRefusal.NOT_SAVED,
            });
          }
        },
      );
    }
    waiting.answers.push({ conn, text, targetUserId });
  }

  /** Logs the failure of work nobody waits for (pushes after a change), with what it was. */
  function background(work: Promise<unknown>, what: string, userId: string | null): void {
    work.catch((error: unknown) => log.error({ err: error, userId }, `${what} failed`));
  }

  /** Tells the user's friends their status; `localOnly`: only those on this process (see hub.onRemoteOffline). */
  async function friendStatus(userId: string, localOnly = false): Promise<void> {
    const user = await users.get(userId);
    if (!user) return;
    const result = {
      userId,
      Status: hub.isConnected(userId) ? user.Bio.Status : Status.Offline,
      StatusText: user.Bio.StatusText,
    };
    hub.sendToMany(user.Friends, ServerMessage.friendStatus, result, localOnly);
  }
  // A user whose sockets were all on other processes went offline: they leave this process's instances, and when
  // their process could not tell their friends (it died), this process tells its own.
  hub.onRemoteOffline((userId, told) => {
    instances.userGone(userId);
    if (told) background(friendStatus(userId, true), 'telling friends a user went offline', userId);
  });

  function onConnection(ws: WebSocket, req: IncomingMessage, raw: Duplex): void {
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
      remote: deps.addresses.of(req),
      queue: null,
    };
    connections.add(conn);
    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('message', (data, isBinary) => onMessage(conn, data, isBinary));
    ws.on('error', (error) => log.debug({ err: error, remote: conn.remote }, 'socket error'));
    ws.on('close', () => {
      connections.delete(conn);
      if (conn.userId !== null) {
        const last = hub.remove(conn.userId, conn.out);
        if (last) {
          // Still connected to another process: still in their instances.
          if (!hub.isConnected(conn.userId)) instances.userGone(conn.userId);
          background(friendStatus(conn.userId), 'telling friends a user went offline', conn.userId);
        }
      }
      if (conn.gameServerId !== null) {
        hub.removeGameServer(conn.gameServerId);
        instances.gameServerGone(conn.gameServerId);
      }
    });
  }

  /** Token bucket: `messagesPerSecond` sustained, `messageBurst` at once. */
  function takeAllowance(conn: Connection): boolean {
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

  function onMessage(conn: Connection, data: RawData, _isBinary: boolean): void {
    // Any message proves the peer is alive, as a pong does: a busy client is not cut off for a late pong.
    conn.alive = true;
    if (!takeAllowance(conn)) {
      const now = Date.now();
      if (now - conn.rateNoticeAt >= 1000) {
        conn.rateNoticeAt = now;
        send(conn, ServerMessage.error, {
          code: 'RATE_LIMITED',
          reason: 'Too many messages; some were dropped.',
        });
      }
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawText(data));
    } catch {
      send(conn, ServerMessage.error, { code: 'INVALID_JSON', reason: 'Messages must be JSON.' });
      return;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      send(conn, ServerMessage.error, {
        code: 'INVALID_MESSAGE',
        reason: 'A message must be a JSON object.',
      });
      return;
    }
    const envelope = parsed as ClientEnvelope;
    if (typeof envelope.message !== 'string') {
      send(conn, ServerMessage.error, { code: 'INVALID_MESSAGE', reason: 'The message name is missing.' });
      return;
    }
    if (conn.queue) {
      inOrder(
        conn,
        conn.queue.then(() => route(conn, envelope)),
      );
      return;
    }
    const done = route(conn, envelope);
    if (done) inOrder(conn, done);
  }

  /** Holds the socket's later messages until `work` is done; a failure is logged and the client told. */
  function inOrder(conn: Connection, work: Promise<void>): void {
    const queued: Promise<void> = work
      .catch((error: unknown) => {
        log.error(
          { err: error, userId: conn.userId, remote: conn.remote },
          'handling a socket message failed',
        );
        const unavailable = error instanceof StorageUnavailableError;
        send(conn, ServerMessage.error, {
          code: unavailable ? 'STORAGE_UNAVAILABLE' : 'INTERNAL_ERROR',
          reason: unavailable
            ? "The host's database is not answering; try again shortly."
            : 'The host could not handle that message; try again.',
        });
      })
      .then(() => {
        if (conn.queue === queued) conn.queue = null;
      });
    conn.queue = queued;
  }

  /** Handles one message; a promise when it waits for the store (the socket's next messages wait for it). */
  function route(conn: Connection, envelope: ClientEnvelope): void | Promise<void> {
    const name = (envelope.message as string).toLowerCase();
    if (conn.gameServerId !== null) {
      // A verified game server: every message names it, and never a user.
      if (envelope.userId !== undefined || envelope.gameServerId !== conn.gameServerId) {
        closeSocket(conn, CloseCode.WRONG_GAME_SERVER, 'message for another sender');
        return;
      }
      dispatchGameServer(conn.gameServerId, name, envelope.args);
      return;
    }

    if (conn.userId === null) return verify(conn, envelope, name);
    if (envelope.userId !== undefined && envelope.userId !== conn.userId) {
      closeSocket(conn, CloseCode.WRONG_USER, 'message for another user');
      return;
    }
    return dispatch(conn, conn.userId, name, envelope.args);
  }

  /** The first message of a socket: a user's verification (then the message itself), or a game server's login. */
  async function verify(conn: Connection, envelope: ClientEnvelope, name: string): Promise<void> {
    if (typeof envelope.userId !== 'string') return loginGameServer(conn, envelope.serverTokenContent);
    if (typeof envelope.tokenContent !== 'string') {
      send(conn, ServerMessage.authFailed, {
        reason: 'Send userId and tokenContent to verify this socket first.',
      });
      return;
    }
    const user = await accounts.authenticate(envelope.userId, envelope.tokenContent);
    if (!user) {
      // As the real server, the socket stays open and unverified; unlike it, the client is told.
      send(conn, ServerMessage.authFailed, { reason: 'The token is not valid for that user.' });
      return;
    }
    const expiresAt = await accounts.tokenExpiry(user.Id, envelope.tokenContent);
    // The socket may have closed while the store answered: then it never joins the hub.
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    conn.userId = user.Id;
    conn.token = envelope.tokenContent;
    conn.tokenExpiresAt = expiresAt;
    const first = hub.add(user.Id, conn.out, conn.remote, user.Username);
    send(conn, ServerMessage.authenticated, { userId: user.Id });
    if (first) await friendStatus(user.Id);
    return dispatch(conn, user.Id, name, envelope.args);
  }

  /** No userId: a game-server login, as on the real server. */
  async function loginGameServer(conn: Connection, serverToken: unknown): Promise<void> {
    const tokenId = await deps.gameServerTokens.verify(serverToken);
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    if (tokenId !== null || config.allowAnyGameServer) {
      conn.gameServerId = deps.ids.id('gameserver');
      conn.gameServerTokenId = tokenId;
      conn.allowance = limits.messageBurst * GAME_SERVER_RATE_FACTOR;
      // With its id, this is what the server proves itself with to read server scripts over HTTP (its id
      // alone is public: GET gameServers lists it). A server with a valid token gets it back, as from the
      // real server; one let in without a token (allowAnyGameServer) gets a secret of its own.
      const proof = tokenId !== null ? (serverToken as string) : deps.ids.secret();
      hub.addGameServer(conn.gameServerId, conn.out, proof, conn.remote);
      send(conn, 'sendauth', { gameServerId: conn.gameServerId, gameServerToken: proof });
      return;
    }
    if (serverToken !== undefined) {
      closeSocket(conn, CloseCode.BAD_GAME_SERVER_TOKEN, 'game-server token not accepted');
      return;
    }
    send(conn, ServerMessage.authFailed, {
      reason: 'Send userId and tokenContent to verify this socket first.',
    });
  }

  function dispatchGameServer(gameServerId: string, name: string, rawArgs: unknown): void {
    const args = rawArgs !== null && typeof rawArgs === 'object' ? (rawArgs as Record<string, unknown>) : {};
    switch (name) {
      case 'claiminstancerequest':
        return instances.claim(gameServerId, args);
      case 'instanceready':
        return instances.ready(gameServerId, args);
      case 'removeinstance':
        return instances.remove(gameServerId, args);
      case 'addmoderator':
      case 'removemoderator':
      case 'kickuser':
      case 'banuser':
      case 'unbanuser':
        return instances.moderate(gameServerId, name, args);
      default:
        return;
    }
  }

  function dispatch(conn: Connection, userId: string, name: string, args: unknown): void | Promise<void> {
    const argObject = args !== null && typeof args === 'object' ? (args as Record<string, unknown>) : {};
    switch (name) {
      case ClientMessage.auth:
        return;
      case 'joininstance':
        return instances.join(userId, argObject);
      case 'leaveinstance':
        return instances.leave(userId, argObject);
      case 'requestnewinstance':
        return instances.requestNew(userId, argObject);
      case 'sendinvite':
        return instances.sendInvite(userId, argObject, (id) => hub.isConnected(id));
      case ClientMessage.shareAvatarToken:
        return shareAvatarToken(conn, userId, argObject);
      case ClientMessage.requestInvite: {
        const target =
          args !== null && typeof args === 'object'
            ? (args as { targetUserId?: unknown }).targetUserId
            : undefined;
        void invites.request(userId, target).then(
          (outcome) => {
            if (outcome.ok) {
              answerWhenSaved(
                conn,
                outcome.delivered,
                sentInviteRequestJson(outcome.targetUserId, outcome.requestId),
                outcome.targetUserId,
              );
            } else {
              send(conn, ServerMessage.failedToRequestInvite, {
                targetUserId: typeof target === 'string' ? target : '',
                reason: outcome.reason,
                ...(outcome.retryAfter !== undefined && { retryAfter: outcome.retryAfter }),
              });
            }
          },
          (error: unknown) => {
            // The shared cooldowns could not be reached: nothing was delivered or saved.
            log.error({ err: error }, 'could not check the invite-request cooldown');
            send(conn, ServerMessage.failedToRequestInvite, {
              targetUserId: typeof target === 'string' ? target : '',
              reason: InviteRefusal.NOT_SAVED,
            });
          },
        );
        return;
      }
      default:
        if (GAME_SERVER_MESSAGES.has(name)) {
          send(conn, ServerMessage.error, {
            code: 'NOT_ALLOWED',
            reason: `${name} is a game-server message.`,
          });
        }
        // Unknown names are ignored, as the real server does; the socket stays open.
        return;
    }
  }

  /** Target and sender both get sharedavatartoken, as the real server; a refusal goes to the sender only. */
  async function shareAvatarToken(
    conn: Connection,
    userId: string,
    args: Record<string, unknown>,
  ): Promise<void> {
    if (!deps.avatarSharing) return;
    const outcome = await deps.avatarSharing.share(userId, args);
    if (outcome.ok) {
      const shared = { ...outcome.shared };
      hub.send(outcome.shared.targetUserId, ServerMessage.sharedAvatarToken, shared);
      send(conn, ServerMessage.sharedAvatarToken, shared);
    } else {
      send(conn, ServerMessage.failedToShareAvatarToken, { ...outcome.asked, reason: outcome.reason });
    }
  }

  /** Closes every socket of `userId` whose token no longer verifies (expired, logged out, banned, warned). */
  async function recheck(userId: string): Promise<void> {
    for (const conn of [...connections]) if (conn.userId === userId) await closeIfRevoked(conn);
  }

  /** Closes the socket when its token no longer verifies, saying why. */
  async function closeIfRevoked(conn: Connection): Promise<void> {
    const userId = conn.userId;
    if (userId === null || conn.token === null) return;
    if (await accounts.authenticate(userId, conn.token)) return;
    closeSocket(conn, CloseCode.TOKEN_REVOKED, await revokedReason(userId));
  }

  /** Why a user's token stopped verifying, as the close reason: a client can tell a ban from an expiry. */
  async function revokedReason(userId: string): Promise<string> {
    const user = await users.get(userId);
    if (user && accounts.isBanned(user)) return RevokedReason.BANNED;
    if (user?.WarnStatus.isWarned) return RevokedReason.WARNED;
    return RevokedReason.TOKEN;
  }

  const onTokensRevoked = ({ userId }: { userId: string }): void =>
    background(recheck(userId), 'closing the sockets of a signed-out user', userId);
  const onBioUpdated = ({ userId }: { userId: string }): void =>
    background(friendStatus(userId), 'telling friends a new status', userId);
  const onGameServerTokenRevoked = ({ tokenId }: { tokenId: string }): void => {
    for (const conn of connections) {
      if (conn.gameServerTokenId === tokenId)
        closeSocket(conn, CloseCode.BAD_GAME_SERVER_TOKEN, 'game-server token revoked');
    }
  };
  events.on('tokensRevoked', onTokensRevoked);
  events.on('bioUpdated', onBioUpdated);
  events.on('gameServerTokenRevoked', onGameServerTokenRevoked);

  // Each socket is looked at once per heartbeat, but in HEARTBEAT_SLICES groups spread over the interval: with
  // thousands of sockets one pass would stall the event loop (a write per ping) and every message behind it.
  let slice = 0;
  const heartbeat = setInterval(() => {
    const now = Date.now();
    const nowSeconds = Math.floor(deps.clock.now() / 1000);
    const current = slice;
    slice = (slice + 1) % HEARTBEAT_SLICES;
    if (current === 0) invites.sweep();
    for (const conn of connections) {
      if (conn.slice !== current) continue;
      if (!conn.alive) {
        conn.ws.terminate();
        continue;
      }
      if (
        conn.userId === null &&
        conn.gameServerId === null &&
        now - conn.openedAt > limits.verifyTimeoutMs
      ) {
        closeSocket(conn, CloseCode.NOT_VERIFIED_IN_TIME, 'not verified in time');
        continue;
      }
      // Only an expiring token needs a look here (a clock comparison, no hashing per socket per tick).
      if (conn.userId !== null && conn.token !== null && nowSeconds >= conn.tokenExpiresAt) {
        background(closeIfRevoked(conn), 'closing a socket whose token expired', conn.userId);
      }
      conn.alive = false;
      conn.ws.ping();
    }
  }, limits.heartbeatMs / HEARTBEAT_SLICES);
  heartbeat.unref();

  return {
    get connections() {
      return connections.size;
    },
    handleUpgrade,
    async close() {
      clearInterval(heartbeat);
      server.off('upgrade', handleUpgrade);
      events.off('tokensRevoked', onTokensRevoked);
      events.off('bioUpdated', onBioUpdated);
      events.off('gameServerTokenRevoked', onGameServerTokenRevoked);
      for (const conn of connections) conn.ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
