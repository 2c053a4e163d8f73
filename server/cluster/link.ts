import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { InstanceMeta } from '../protocol/instances.js';
import { redactUrl } from '../store/pg-url.js';

/**
 * What several host processes sharing one database tell each other through Redis (issue 15). Each process has a
 * random id and two Redis connections: one publishes (and runs commands), one listens on the community's
 * broadcast channel and on the process's own channel.
 *
 * - Presence: a process announces each user whose first socket it holds (`on`) and whose last socket closed
 *   (`off`), numbered per process, and a heartbeat carrying its latest number. A process that sees a gap (a missed
 *   message, a restart of Redis) asks for a snapshot. One not heard from for `presenceExpiryMs` is taken for dead:
 *   its users stop counting as online. A new process asks everyone for their snapshot.
 * - Events for users: a message for a user with sockets on another process is published on that process's own
 *   channel, once per process, already serialised.
 * - Host events: sign-outs (a ban, a password change, a logout of all) and revoked game-server tokens are
 *   broadcast, so each process closes its own sockets.
 * - Game servers and instances: an instance lives in the process its game server's socket is on. That process
 *   announces its game servers (id, hash of the proof they got in `sendauth`, address) and each change of its
 *   instances, with the presence numbering; the others read them (instance lists, who is in a world, server
 *   scripts) and forward a user's instance messages (join, leave, invite, new instance) to it.
 *
 * Pub/sub delivers at most once: a live event lost while Redis is unreachable is not replayed (what it announced
 * is durable in the database; clients read it when they reconnect). Nothing acknowledged depends on it.
 */

/** What the link delivers to this process's sockets. */
export interface LocalSockets {
  /** Sends `json` to every socket of `userId` held by this process (never published again). */
  deliverLocal(userId: string, json: string): void;
  /** Whether this process holds a socket of `userId`. */
  holdsLocally(userId: string): boolean;
}

/** A game server connected to another process. */
export interface RemoteGameServer {
  processId: string;
  /** SHA-256 (hex) of the token it was handed in `sendauth`. */
  proof: string;
  address: string;
}

/** A user's instance message run by the process holding the instance's game server. */
export interface ForwardedInstanceMessage {
  op: 'join' | 'leave' | 'requestNew' | 'sendInvite';
  userId: string;
  args: Record<string, unknown>;
}

interface GameServerInfo {
  id: string;
  proof: string;
  address: string;
}

export type ClusterEvent =
  { name: 'tokensRevoked'; userId: string } | { name: 'gameServerTokenRevoked'; tokenId: string };

type Message =
  | { t: 'hello'; p: string }
  | { t: 'hb'; p: string; v: number }
  | { t: 'on' | 'off'; p: string; v: number; u: string }
  | { t: 'gs'; p: string; v: number; gs: GameServerInfo }
  | { t: 'gs-'; p: string; v: number; id: string }
  | { t: 'inst'; p: string; v: number; instance: InstanceMeta }
  | { t: 'inst-'; p: string; v: number; id: string }
  | {
      t: 'snap';
      p: string;
      v: number;
      users: string[];
      gameServers: GameServerInfo[];
      instances: InstanceMeta[];
    }
  | { t: 'fwd'; p: string; message: ForwardedInstanceMessage }
  | { t: 'snapreq'; p: string }
  | { t: 'bye'; p: string }
  | { t: 'deliver'; p: string; users: string[]; json: string }
  | { t: 'event'; p: string; event: ClusterEvent };

interface Peer {
  /** The number of the last presence change applied. */
  v: number;
  users: Set<string>;
  gameServers: Map<string, GameServerInfo>;
  instances: Map<string, InstanceMeta>;
  /** ms of the last message heard from it */
  seen: number;
  /** A snapshot was asked for and has not come yet. */
  asked: boolean;
}

export interface ClusterLinkOptions {
  url: string;
  /** Names the community: processes of one database share it (channels and keys start with it). */
  namespace: string;
  heartbeatMs: number;
  presenceExpiryMs: number;
  logger: Logger;
  /** Runs before a host event from another process is acted on (the store catches up with its commit). */
  beforeEvent?: () => Promise<void>;
}

export class RedisUnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    super(
      `cannot reach Redis at ${redactUrl(url)}: ${(cause as Error)?.message ?? String(cause)}. ` +
        'Start redis-server (Debian: apt-get install redis-server) or correct --redis.',
      { cause },
    );
    this.name = 'RedisUnreachableError';
  }
}

export class ClusterLink {
  readonly processId = randomBytes(9).toString('base64url');
  readonly #peers = new Map<string, Peer>();
  /** user id -> the other processes holding a socket of theirs */
  readonly #where = new Map<string, Set<string>>();
  readonly #eventListeners: Array<(event: ClusterEvent) => void> = [];
  readonly #offlineListeners: Array<(userId: string, told: boolean) => void> = [];
  #forwarded: ((message: ForwardedInstanceMessage) => void) | null = null;
  /** game server id -> the process holding it */
  readonly #gameServerAt = new Map<string, string>();
  /** user id -> how many instances on other processes hold them */
  readonly #inRemoteInstances = new Map<string, number>();
  /** This process's own presence: users announced online, and the number of the last change. */
  readonly #mine = new Set<string>();
  readonly #myGameServers = new Map<string, GameServerInfo>();
  readonly #myInstances = new Map<string, InstanceMeta>();
  #version = 0;
  #local: LocalSockets | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #publishErrorLoggedAt = 0;

  private constructor(
    /** Publishes and runs commands (shared limits use it too). */
    readonly redis: Redis,
    private readonly sub: Redis,
    private readonly options: ClusterLinkOptions,
  ) {}

  /** Connects to Redis, joins the community and asks the others who they hold; rejects when Redis is unreachable. */
  static async open(options: ClusterLinkOptions): Promise<ClusterLink> {
    const make = () =>
      new Redis(options.url, {
        lazyConnect: true,
        // A publish while Redis is unreachable fails at once (logged) instead of queueing without bound.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        retryStrategy: (times) => Math.min(times * 200, 2000),
      });
    const redis = make();
    const sub = make();
    const link = new ClusterLink(redis, sub, options);
    for (const connection of [redis, sub]) {
      // ioredis reconnects by itself; an error only needs saying (once a minute, see #warn).
      connection.on('error', (error: Error) =>
        link.#warn(error, 'the Redis connection failed; reconnecting'),
      );
    }
    try {
      await Promise.all([redis.connect(), sub.connect()]);
      sub.on('message', (_channel: string, text: string) => link.#receive(text));
      await sub.subscribe(link.#broadcast, link.#own);
    } catch (error) {
      redis.disconnect();
      sub.disconnect();
      throw new RedisUnreachableError(options.url, error);
    }
    // After a reconnect the subscriptions come back by themselves; what was missed is asked for again.
    sub.on('ready', () => link.#publish(link.#broadcast, { t: 'hello', p: link.processId }));
    link.#publish(link.#broadcast, { t: 'hello', p: link.processId });
    link.#timer = setInterval(() => link.#beat(), options.heartbeatMs);
    link.#timer.unref();
    return link;
  }

  get #broadcast(): string {
    return `${this.options.namespace}:all`;
  }

  get #own(): string {
    return this.#channelOf(this.processId);
  }

  #channelOf(processId: string): string {
    return `${this.options.namespace}:p:${processId}`;
  }

  /** The key prefix for data this community keeps in Redis. */
  get keyPrefix(): string {
    return `${this.options.namespace}:`;
  }

  /** Connects the link to this process's sockets. */
  attach(local: LocalSockets): void {
    this.#local = local;
  }

  onEvent(listener: (event: ClusterEvent) => void): void {
    this.#eventListeners.push(listener);
  }

  /**
   * Called with each user no other process holds a socket of any more: `told` when their friends still need
   * telling (the process left or died; one that closed the user's last socket told them itself).
   */
  onRemoteOffline(listener: (userId: string, told: boolean) => void): void {
    this.#offlineListeners.push(listener);
  }

  /** Runs instance messages other processes forward to this one (it holds the game server). */
  onForwarded(handler: (message: ForwardedInstanceMessage) => void): void {
    this.#forwarded = handler;
  }

  announceGameServer(id: string, proof: string, address: string): void {
    const info = { id, proof, address };
    this.#myGameServers.set(id, info);
    this.#publish(this.#broadcast, { t: 'gs', p: this.processId, v: ++this.#version, gs: info });
  }

  announceGameServerGone(id: string): void {
    if (!this.#myGameServers.delete(id)) return;
    this.#publish(this.#broadcast, { t: 'gs-', p: this.processId, v: ++this.#version, id });
  }

  /** An instance of this process as it is now (created or changed). */
  announceInstance(instance: InstanceMeta): void {
    const copy = structuredClone(instance);
    this.#myInstances.set(copy.InstanceId, copy);
    this.#publish(this.#broadcast, { t: 'inst', p: this.processId, v: ++this.#version, instance: copy });
  }

  announceInstanceEnded(id: string): void {
    if (!this.#myInstances.delete(id)) return;
    this.#publish(this.#broadcast, { t: 'inst-', p: this.processId, v: ++this.#version, id });
  }

  /** The game server on another live process, or undefined. */
  remoteGameServer(id: string): RemoteGameServer | undefined {
    const processId = this.#gameServerAt.get(id);
    const info = processId ? this.#peers.get(processId)?.gameServers.get(id) : undefined;
    return processId && info ? { processId, proof: info.proof, address: info.address } : undefined;
  }

  /** Game servers on other live processes. */
  *remoteGameServers(): Generator<{ id: string; processId: string; address: string }> {
    for (const [processId, peer] of this.#peers) {
      for (const gs of peer.gameServers.values()) yield { id: gs.id, processId, address: gs.address };
    }
  }

  /** Instances on other live processes, as they last announced them. */
  *remoteInstances(): Generator<InstanceMeta> {
    for (const peer of this.#peers.values()) yield* peer.instances.values();
  }

  /** Whether `userId` is in an instance held by another process. */
  inRemoteInstance(userId: string): boolean {
    return this.#inRemoteInstances.has(userId);
  }

  /** Sends a user's instance message to the process holding the game server. */
  forward(processId: string, message: ForwardedInstanceMessage): void {
    this.#publish(this.#channelOf(processId), { t: 'fwd', p: this.processId, message });
  }

  /** This process now holds a socket of `userId` (its first). */
  announceOnline(userId: string): void {
    if (this.#mine.has(userId)) return;
    this.#mine.add(userId);
    this.#publish(this.#broadcast, { t: 'on', p: this.processId, v: ++this.#version, u: userId });
  }

  /** This process's last socket of `userId` closed. */
  announceOffline(userId: string): void {
    if (!this.#mine.delete(userId)) return;
    this.#publish(this.#broadcast, { t: 'off', p: this.processId, v: ++this.#version, u: userId });
  }

  /** Whether another live process holds a socket of `userId`. */
  heldElsewhere(userId: string): boolean {
    return this.#where.has(userId);
  }

  /**
   * Sends a message to the sockets other processes hold of these users: one publish per process, `json()` (the
   * message serialised) asked for only when some other process holds one of them.
   */
  deliver(userIds: Iterable<string>, json: () => string): void {
    let byProcess: Map<string, string[]> | null = null;
    for (const userId of userIds) {
      const processes = this.#where.get(userId);
      if (!processes) continue;
      byProcess ??= new Map();
      for (const processId of processes) {
        const list = byProcess.get(processId);
        if (list) list.push(userId);
        else byProcess.set(processId, [userId]);
      }
    }
    if (!byProcess) return;
    const text = json();
    for (const [processId, users] of byProcess) {
      this.#publish(this.#channelOf(processId), { t: 'deliver', p: this.processId, users, json: text });
    }
  }

  /** Tells every other process about a host event (each acts on its own sockets). */
  broadcastEvent(event: ClusterEvent): void {
    this.#publish(this.#broadcast, { t: 'event', p: this.processId, event });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    // The others drop this process's users now instead of after the expiry.
    try {
      if (this.redis.status === 'ready')
        await this.redis.publish(this.#broadcast, JSON.stringify({ t: 'bye', p: this.processId }));
    } catch {
      // Unreachable Redis: the others expire this process instead.
    }
    this.sub.disconnect();
    this.redis.disconnect();
  }

  #beat(): void {
    this.#publish(this.#broadcast, { t: 'hb', p: this.processId, v: this.#version });
    const deadline = Date.now() - this.options.presenceExpiryMs;
    for (const [processId, peer] of this.#peers) {
      if (peer.seen < deadline) {
        this.options.logger.warn(
          { process: processId, users: peer.users.size },
          'a host was not heard from: its users no longer count as online',
        );
        this.#dropPeer(processId);
      }
    }
  }

  #publish(channel: string, message: Message): void {
    if (this.#closed) return;
    this.redis
      .publish(channel, JSON.stringify(message))
      .catch((error: unknown) => this.#warn(error, 'a message to the other hosts was lost'));
  }

  #warn(error: unknown, text: string): void {
    if (this.#closed) return;
    const now = Date.now();
    if (now - this.#publishErrorLoggedAt < 60_000) return;
    this.#publishErrorLoggedAt = now;
    this.options.logger.warn({ err: error }, text);
  }

  #receive(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.p === this.processId || this.#closed) return;
    switch (message.t) {
      case 'hello':
        this.#peer(message.p);
        this.#publish(this.#channelOf(message.p), this.#snapshot());
        return;
      case 'snapreq':
        this.#publish(this.#channelOf(message.p), this.#snapshot());
        return;
      case 'snap':
        return this.#applySnapshot(message);
      case 'hb': {
        const peer = this.#peer(message.p);
        if (peer.v !== message.v) this.#askSnapshot(message.p, peer);
        return;
      }
      case 'on':
      case 'off': {
        const peer = this.#peer(message.p);
        if (message.v !== peer.v + 1) this.#askSnapshot(message.p, peer);
        peer.v = Math.max(peer.v, message.v);
        if (message.t === 'on') this.#addUser(message.p, peer, message.u);
        // Its own process told the user's friends already (through this link).
        else this.#removeUser(message.p, peer, message.u, false);
        return;
      }
      case 'gs':
      case 'gs-':
      case 'inst':
      case 'inst-': {
        const peer = this.#peer(message.p);
        if (message.v !== peer.v + 1) this.#askSnapshot(message.p, peer);
        peer.v = Math.max(peer.v, message.v);
        if (message.t === 'gs') this.#addGameServer(message.p, peer, message.gs);
        else if (message.t === 'gs-') this.#removeGameServer(peer, message.id);
        else if (message.t === 'inst') this.#setInstance(peer, message.instance);
        else this.#setInstance(peer, null, message.id);
        return;
      }
      case 'fwd':
        this.#forwarded?.(message.message);
        return;
      case 'bye':
        this.#dropPeer(message.p);
        return;
      case 'deliver':
        for (const userId of message.users) this.#local?.deliverLocal(userId, message.json);
        return;
      case 'event':
        void this.#actOn(message.event);
        return;
    }
  }

  async #actOn(event: ClusterEvent): Promise<void> {
    try {
      await this.options.beforeEvent?.();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'catching up with the database before a host event failed');
    }
    for (const listener of this.#eventListeners) listener(event);
  }

  #snapshot(): Message {
    return {
      t: 'snap',
      p: this.processId,
      v: this.#version,
      users: [...this.#mine],
      gameServers: [...this.#myGameServers.values()],
      instances: [...this.#myInstances.values()],
    };
  }

  #peer(processId: string): Peer {
    let peer = this.#peers.get(processId);
    if (!peer) {
      peer = {
        v: 0,
        users: new Set(),
        gameServers: new Map(),
        instances: new Map(),
        seen: Date.now(),
        asked: false,
      };
      this.#peers.set(processId, peer);
      this.#askSnapshot(processId, peer);
    }
    peer.seen = Date.now();
    return peer;
  }

  #askSnapshot(processId: string, peer: Peer): void {
    if (peer.asked) return;
    peer.asked = true;
    this.#publish(this.#channelOf(processId), { t: 'snapreq', p: this.processId });
  }

  #applySnapshot(snap: Extract<Message, { t: 'snap' }>): void {
    const processId = snap.p;
    const peer = this.#peer(processId);
    peer.asked = false;
    peer.v = snap.v;
    const now = new Set(snap.users);
    for (const userId of peer.users) if (!now.has(userId)) this.#removeUser(processId, peer, userId, true);
    for (const userId of now) this.#addUser(processId, peer, userId);
    const servers = new Set(snap.gameServers.map((gs) => gs.id));
    for (const id of [...peer.gameServers.keys()]) if (!servers.has(id)) this.#removeGameServer(peer, id);
    for (const gs of snap.gameServers) this.#addGameServer(processId, peer, gs);
    const instances = new Set(snap.instances.map((i) => i.InstanceId));
    for (const id of [...peer.instances.keys()]) if (!instances.has(id)) this.#setInstance(peer, null, id);
    for (const instance of snap.instances) this.#setInstance(peer, instance);
  }

  #addGameServer(processId: string, peer: Peer, gs: GameServerInfo): void {
    peer.gameServers.set(gs.id, gs);
    this.#gameServerAt.set(gs.id, processId);
  }

  #removeGameServer(peer: Peer, id: string): void {
    if (peer.gameServers.delete(id)) this.#gameServerAt.delete(id);
  }

  /** Replaces a peer's instance (null: it ended), keeping the index of who is in a remote instance. */
  #setInstance(peer: Peer, instance: InstanceMeta | null, endedId?: string): void {
    const id = instance?.InstanceId ?? endedId!;
    const before = peer.instances.get(id);
    for (const userId of before?.ConnectedUsers ?? []) {
      const left = (this.#inRemoteInstances.get(userId) ?? 1) - 1;
      if (left > 0) this.#inRemoteInstances.set(userId, left);
      else this.#inRemoteInstances.delete(userId);
    }
    if (!instance) {
      peer.instances.delete(id);
      return;
    }
    peer.instances.set(id, instance);
    for (const userId of instance.ConnectedUsers)
      this.#inRemoteInstances.set(userId, (this.#inRemoteInstances.get(userId) ?? 0) + 1);
  }

  #addUser(processId: string, peer: Peer, userId: string): void {
    peer.users.add(userId);
    let processes = this.#where.get(userId);
    if (!processes) this.#where.set(userId, (processes = new Set()));
    processes.add(processId);
  }

  /** `tell`: the user's friends on this process hear they went offline (their own process could not say so). */
  #removeUser(processId: string, peer: Peer, userId: string, tell: boolean): void {
    if (!peer.users.delete(userId)) return;
    const processes = this.#where.get(userId);
    processes?.delete(processId);
    if (processes?.size === 0) {
      this.#where.delete(userId);
      if (!this.#local?.holdsLocally(userId))
        for (const listener of this.#offlineListeners) listener(userId, tell);
    }
  }

  #dropPeer(processId: string): void {
    const peer = this.#peers.get(processId);
    if (!peer) return;
    for (const id of [...peer.instances.keys()]) this.#setInstance(peer, null, id);
    for (const id of [...peer.gameServers.keys()]) this.#removeGameServer(peer, id);
    this.#peers.delete(processId);
    for (const userId of [...peer.users]) this.#removeUser(processId, peer, userId, true);
  }
}
