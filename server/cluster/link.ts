import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { InstanceMeta } from '../protocol/instances.js';
import { redactUrl } from '../../shared/redact-url.js';
import { withTimeout } from '../../shared/with-timeout.js';
import { DeliveryBatches, type Delivery } from './delivery-batch.js';

/**
 * What several host processes sharing one database tell each other through Redis (issue 15). Each process has a
 * random id and two Redis connections: one publishes (and runs commands), one listens on the community's
 * broadcast channel and on the process's own channel.
 *
 * - Presence: a process announces each user whose first socket it holds (`on`) and whose last socket closed
 *   (`off`), numbered per process, and a heartbeat carrying its latest number. A process that sees a gap (a missed
 *   message, a restart of Redis) asks for a snapshot. One not heard from for `presenceExpiryMs` is taken for dead:
 *   its users stop counting as online, but only while this process hears its own heartbeats come back (see
 *   #beat): a process cut off from Redis hears nobody and must not take everybody for dead. A new process, and
 *   every process whose connections to Redis come back, announces its snapshot and asks everyone for theirs.
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
 * is durable in the database; clients read it when they reconnect). Nothing acknowledged depends on it: every
 * command has a timeout (`commandTimeoutMs`), and a caller that must know whether a message for another process
 * went out uses `deliverConfirmed` / `forwardConfirmed`, which reject with a ClusterSendError within it. Those
 * messages carry a deadline in Redis's clock (see PUBLISH_BEFORE): one whose sender was told it failed is not
 * delivered late when a hung Redis resumes.
 */

/**
 * Publishes ARGV[2] on channel ARGV[1] unless Redis's clock (ms) is past ARGV[3]; -1 when it is. A hung Redis
 * (stopped, swapping) still holds the commands sent to it meanwhile and runs them when it resumes, long after
 * their senders timed out and told a user the message failed: those are dropped here instead of arriving late.
 */
const PUBLISH_BEFORE = `
local now = redis.call('TIME')
if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(ARGV[3]) then return -1 end
return redis.call('PUBLISH', ARGV[1], ARGV[2])`;

/** PUBLISH_BEFORE as an ioredis command (defineCommand: EVALSHA, loading the script when Redis lacks it). */
interface LinkCommands {
  hypernexPublishBefore(channel: string, text: string, deadline: number): Promise<number>;
}

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
  /** Several deliveries to this process from one turn of the sender (see delivery-batch.ts). */
  | { t: 'deliverMany'; p: string; items: Delivery[] }
  | { t: 'event'; p: string; event: ClusterEvent };

interface Peer {
  /** The number of the last presence change applied. */
  v: number;
  users: Set<string>;
  gameServers: Map<string, GameServerInfo>;
  instances: Map<string, InstanceMeta>;
  /** ms of the last message heard from it */
  seen: number;
  /** ms when a snapshot was asked for that has not come yet; 0 when none is awaited. */
  askedAt: number;
}

export interface ClusterLinkOptions {
  url: string;
  /** Names the community: processes of one database share it (channels and keys start with it). */
  namespace: string;
  heartbeatMs: number;
  presenceExpiryMs: number;
  /** Longest wait for Redis to answer one command; a publish not answered by then is reported as not sent. */
  commandTimeoutMs: number;
  /** Longest wait for a connection to Redis to open. */
  connectTimeoutMs: number;
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

/** A message for another process did not go out: Redis failed, did not answer in time, or nobody listened. */
export class ClusterSendError extends Error {
  constructor(reason: string, cause?: unknown) {
    super(`a message for another host was not sent through Redis: ${reason}`, { cause });
    this.name = 'ClusterSendError';
  }
}

/** For promises whose failure was already logged where it happened. */
const ignore = (): void => undefined;

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
  /** Deliveries to other processes, sent together per process and turn. */
  readonly #deliveries = new DeliveryBatches((processId, items) => {
    const [only] = items;
    const message: Message =
      items.length === 1 && only
        ? { t: 'deliver', p: this.processId, users: only.users, json: only.json }
        : { t: 'deliverMany', p: this.processId, items };
    return this.#send(this.#channelOf(processId), message, true);
  });
  /** The subscriber is subscribed to this process's channels (from 'ready' and SUBSCRIBE until 'close'). */
  #listening = false;
  /** ms of the last echo of this process's own heartbeat. */
  #selfHeardAt = 0;
  /** Since when this process's heartbeats have come back without a long gap; null while they do not. */
  #hearingSince: number | null = null;
  /** ms when this process last stopped hearing itself (0: never). */
  #deafSince = 0;
  /** Redis's clock minus this process's (ms), from a quick TIME; null until one answered quickly. */
  #redisClockOffset: number | null = null;
  /** ms of the last announcement of this process's snapshot (with a request for everyone else's). */
  #resyncedAt = 0;

  private constructor(
    /** Publishes and runs commands (shared limits use it too). */
    readonly redis: Redis & LinkCommands,
    /** Listens on the community's broadcast channel and this process's own (subscriber mode: no other command). */
    readonly subscriber: Redis,
    private readonly options: ClusterLinkOptions,
  ) {}

  /**
   * The longest gap between two echoes of this process's heartbeat that still counts as hearing without a break
   * (two heartbeats and a command timeout); a longer silence means it heard nobody meanwhile.
   */
  get #hearingGapMs(): number {
    return 2 * this.options.heartbeatMs + this.options.commandTimeoutMs;
  }

  /** Connects to Redis, joins the community and asks the others who they hold; rejects when Redis is unreachable. */
  static async open(options: ClusterLinkOptions): Promise<ClusterLink> {
    const make = () =>
      new Redis(options.url, {
        lazyConnect: true,
        // A publish while Redis is unreachable fails at once (logged) instead of queueing without bound.
        enableOfflineQueue: false,
        // A command Redis took but had not answered when the connection dropped is not sent again on reconnect:
        // its caller was already told it failed (a late invite or join is worse than none).
        autoResendUnfulfilledCommands: false,
        // The subscriber subscribes again itself on 'ready' (#subscriberReady), where a failure is handled.
        autoResubscribe: false,
        maxRetriesPerRequest: 1,
        commandTimeout: options.commandTimeoutMs,
        connectTimeout: options.connectTimeoutMs,
        retryStrategy: (times) => Math.min(times * 200, 2000),
      });
    const redis = make();
    redis.defineCommand('hypernexPublishBefore', { numberOfKeys: 0, lua: PUBLISH_BEFORE });
    const sub = make();
    const link = new ClusterLink(redis as Redis & LinkCommands, sub, options);
    for (const connection of [redis, sub]) {
      // ioredis reconnects by itself; an error only needs saying (once a minute, see #warn).
      connection.on('error', (error: Error) =>
        link.#warn(error, 'the Redis connection failed; reconnecting'),
      );
    }
    sub.on('message', (_channel: string, text: string) => link.#receive(text));
    try {
      // The ready check and SUBSCRIBE have the command timeout; the bound covers the whole opening too.
      await withTimeout(
        (async () => {
          await Promise.all([redis.connect(), sub.connect()]);
          await sub.subscribe(link.#broadcast, link.#own);
        })(),
        options.connectTimeoutMs + 2 * options.commandTimeoutMs,
      );
    } catch (error) {
      redis.disconnect();
      sub.disconnect();
      throw new RedisUnreachableError(options.url, error);
    }
    link.#listening = true;
    sub.on('ready', () => link.#subscriberReady());
    sub.on('close', () => link.#subscriberClosed());
    redis.on('ready', () => link.#publisherReady());
    link.#readRedisClock();
    link.#resync();
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

  /** Sends a user's instance message to the process holding the game server (a failure is only logged). */
  forward(processId: string, message: ForwardedInstanceMessage): void {
    this.forwardConfirmed(processId, message).catch(ignore);
  }

  /**
   * As `forward`; resolves once Redis handed the message to that process, rejects with a ClusterSendError within
   * `commandTimeoutMs` when it did not (Redis down or hung, or that process not listening).
   */
  forwardConfirmed(processId: string, message: ForwardedInstanceMessage): Promise<void> {
    return this.#send(this.#channelOf(processId), { t: 'fwd', p: this.processId, message }, true);
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
   * message serialised) asked for only when some other process holds one of them. A failure is only logged.
   */
  deliver(userIds: Iterable<string>, json: () => string): void {
    this.deliverConfirmed(userIds, json).catch(ignore);
  }

  /**
   * As `deliver`; resolves once Redis handed the message to every process holding one of the users (at once when
   * none does), rejects with a ClusterSendError within `commandTimeoutMs` when it did not (Redis down or hung, or
   * such a process not listening). The sockets of this process are not its business.
   */
  deliverConfirmed(userIds: Iterable<string>, json: () => string): Promise<void> {
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
    if (!byProcess) return Promise.resolve();
    const text = json();
    const sent: Array<Promise<void>> = [];
    for (const [processId, users] of byProcess)
      sent.push(this.#deliveries.add(processId, { users, json: text }));
    return Promise.all(sent).then(ignore);
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
    this.subscriber.disconnect();
    this.redis.disconnect();
  }

  /**
   * Says this process is alive, and takes for dead the processes not heard from for `presenceExpiryMs`.
   *
   * The rule for taking a process for dead: silence proves something only while this process could have heard.
   * When Redis is down or hung, or this process's subscriber is reconnecting, it hears nobody, and concluding that
   * every other process died would drop all their users (and tell all their friends) for nothing. So each process
   * checks the channel with its own heartbeat, which Redis echoes back to it on the broadcast channel. Let S be
   * the last time its own heartbeat came back (the last moment the channel is known to have worked). A peer is
   * dropped only when (1) it had not been heard from for `presenceExpiryMs` at S, and (2) this process heard its
   * own heartbeats without a gap longer than #hearingGapMs from `presenceExpiryMs` before S until now. Measuring
   * the silence up to S rather than up to now means a channel that just broke, before any gap shows, cannot make
   * a live peer look silent. While (2) fails nobody is dropped; once hearing comes back its clock starts from zero,
   * so every peer gets a full `presenceExpiryMs` of working channel (and the snapshot it is asked for) before it
   * can be taken for dead.
   */
  #beat(): void {
    this.#publish(this.#broadcast, { t: 'hb', p: this.processId, v: this.#version });
    this.#readRedisClock();
    const heardAt = this.#selfHeardAt;
    if (this.#hearingSince !== null && Date.now() - heardAt > this.#hearingGapMs) this.#loseHearing(heardAt);
    if (this.#hearingSince === null || heardAt - this.#hearingSince < this.options.presenceExpiryMs) return;
    const deadline = heardAt - this.options.presenceExpiryMs;
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

  /** This process's heartbeat came back through Redis: it hears (and, after a silence, catches up). */
  #heardSelf(): void {
    const now = Date.now();
    const before = this.#selfHeardAt;
    this.#selfHeardAt = now;
    if (this.#hearingSince !== null) {
      if (now - before <= this.#hearingGapMs) return;
      // A silence the heartbeat timer had not noticed yet (a stalled event loop, a short hang of Redis).
      this.#loseHearing(before);
    }
    this.#hearingSince = now;
    if (this.#deafSince === 0) return;
    this.options.logger.info('hearing the other hosts through Redis again: presence is being rebuilt');
    // A hung Redis that resumed reconnects nothing, so no 'ready' announced this process again.
    if (this.#resyncedAt < this.#deafSince) this.#resync();
  }

  /** This process stopped hearing itself (`since`: when it last did, or now). */
  #loseHearing(since = Date.now()): void {
    const wasHearing = this.#hearingSince !== null;
    this.#hearingSince = null;
    this.#deafSince = since;
    if (wasHearing && !this.#closed)
      this.options.logger.warn(
        'cannot hear the other hosts through Redis: nobody is taken for dead until this host hears again',
      );
  }

  /** The subscriber (re)connected: it subscribes again, then this process catches up. */
  #subscriberReady(): void {
    if (this.#closed) return;
    this.#forgetAsked();
    this.subscriber.subscribe(this.#broadcast, this.#own).then(
      () => {
        this.#listening = true;
        this.#resync();
      },
      (error: unknown) => {
        this.#warn(error, 'subscribing again after a reconnect failed; reconnecting');
        if (this.subscriber.status === 'ready') this.subscriber.disconnect(true);
      },
    );
  }

  #subscriberClosed(): void {
    this.#listening = false;
    this.#loseHearing();
  }

  #publisherReady(): void {
    if (this.#closed) return;
    this.#forgetAsked();
    this.#resync();
  }

  /** A snapshot asked for on a connection that since dropped will not come: the next gap asks again at once. */
  #forgetAsked(): void {
    for (const peer of this.#peers.values()) peer.askedAt = 0;
  }

  /**
   * Once both connections work: announces this process's snapshot to everyone and says hello (each process
   * answers with its own), so presence is whole again after anything was missed.
   */
  #resync(): void {
    if (this.#closed || !this.#listening || this.redis.status !== 'ready') return;
    this.#resyncedAt = Date.now();
    this.#publish(this.#broadcast, { t: 'hello', p: this.processId });
    this.#publish(this.#broadcast, this.#snapshot());
  }

  /**
   * Learns how far Redis's clock is from this process's, for the deadlines of #send. Only an answer within a
   * quarter of the command timeout counts: the offset is then right within half the round trip. A failure needs
   * no word (the heartbeat's publish reports it); the last offset stays.
   */
  #readRedisClock(): void {
    if (this.#closed || this.redis.status !== 'ready') return;
    const asked = Date.now();
    this.redis.time().then(([seconds, micros]) => {
      const answered = Date.now();
      if (answered - asked > this.options.commandTimeoutMs / 4) return;
      const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      if (Number.isFinite(redisNow)) this.#redisClockOffset = redisNow - (asked + answered) / 2;
    }, ignore);
  }

  /** Publishes and forgets: a failure is logged by #send. */
  #publish(channel: string, message: Message): void {
    this.#send(channel, message, false).catch(ignore);
  }

  /**
   * Publishes; resolves once Redis took the message (with `mustReach`, once it handed it to a listener: a process's
   * own channel), else rejects with a ClusterSendError within the command timeout. A failure is logged here.
   *
   * A `mustReach` message is published only if Redis runs it by half the command timeout (in Redis's clock, see
   * #readRedisClock): its answer then has the other half to come back, so a message this process reports as
   * failed was not delivered, unless Redis hangs between publishing it and answering.
   */
  #send(channel: string, message: Message, mustReach: boolean): Promise<void> {
    if (this.#closed) return Promise.reject(new ClusterSendError('this host left the others (closing)'));
    const text = JSON.stringify(message);
    const offset = this.#redisClockOffset;
    const published =
      mustReach && offset !== null
        ? this.redis.hypernexPublishBefore(
            channel,
            text,
            Math.floor(Date.now() + offset + this.options.commandTimeoutMs / 2),
          )
        : this.redis.publish(channel, text);
    const sent = published.then(
      (listeners) => {
        if (listeners === -1)
          throw new ClusterSendError(
            `Redis took it later than ${this.options.commandTimeoutMs / 2} ms (it hung): dropped`,
          );
        if (mustReach && listeners === 0)
          throw new ClusterSendError('no host process listens for it (it stopped, or lost Redis)');
      },
      (error: unknown) => {
        const text = error instanceof Error ? error.message : String(error);
        const reason =
          text === 'Command timed out'
            ? `Redis did not answer within ${this.options.commandTimeoutMs} ms`
            : this.redis.status !== 'ready' || /isn't writeable|Connection is closed/.test(text)
              ? `the connection to Redis is down (${text})`
              : `Redis failed (${text})`;
        throw new ClusterSendError(reason, error);
      },
    );
    sent.catch((error: unknown) => this.#warn(error, 'a message to the other hosts was lost'));
    return sent;
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
    // Anything but an object (`null` included) is no message of a host.
    if (this.#closed || typeof message !== 'object' || message === null) return;
    if (message.p === this.processId) {
      if (message.t === 'hb') this.#heardSelf();
      return;
    }
    try {
      this.#apply(message);
    } catch (error) {
      // Thrown inside ioredis's 'message' event it would end the process.
      this.options.logger.error({ err: error, message: message.t }, 'a message from another host failed');
    }
  }

  #apply(message: Message): void {
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
      case 'deliverMany':
        for (const item of message.items)
          for (const userId of item.users) this.#local?.deliverLocal(userId, item.json);
        return;
      case 'event':
        this.#actOn(message.event).catch((error: unknown) =>
          this.options.logger.error(
            { err: error, event: message.event.name },
            'acting on a host event failed',
          ),
        );
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
        askedAt: 0,
      };
      this.#peers.set(processId, peer);
      this.#askSnapshot(processId, peer);
    }
    peer.seen = Date.now();
    return peer;
  }

  /** Asks `processId` for its snapshot, unless one was asked for lately (an answer lost is asked for again). */
  #askSnapshot(processId: string, peer: Peer): void {
    const now = Date.now();
    if (peer.askedAt !== 0 && now - peer.askedAt < this.#hearingGapMs) return;
    peer.askedAt = now;
    this.#publish(this.#channelOf(processId), { t: 'snapreq', p: this.processId });
  }

  #applySnapshot(snap: Extract<Message, { t: 'snap' }>): void {
    const processId = snap.p;
    const peer = this.#peer(processId);
    peer.askedAt = 0;
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
