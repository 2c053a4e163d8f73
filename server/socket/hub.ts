import type { ClusterLink, LocalSockets } from '../cluster/link.js';
import type { Notifier, Presence } from '../services/context.js';
import { hashMatches, sha256 } from '../services/secrets.js';

/** What the hub needs of a socket: a way to send text and to close. */
export interface HubSocket {
  send(text: string): void;
}

interface GameServerEntry {
  socket: HubSocket;
  /** SHA-256 (hex) of the token this server was handed in `sendauth`: what it proves itself with over HTTP. */
  proof: string;
  address: string;
}

/** A socket's remote address as both HTTP and ws report it (an IPv4 peer of a dual-stack listener is `::ffff:a.b.c.d`). */
export function normalAddress(address: string | undefined): string {
  if (!address) return '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/**
 * Which verified sockets each user holds. A user is connected while at least one is open (desktop window, game
 * client, browser), and every event for the user goes to all of them. Lookups are O(1) in the number of sockets.
 */
export class SocketHub implements Presence, Notifier, LocalSockets {
  /** Hosts sharing a database: users with sockets on other processes, reached through Redis. */
  #link: ClusterLink | null = null;
  readonly #remoteOffline: Array<(userId: string, told: boolean) => void> = [];
  readonly #names = new Map<string, string>();
  readonly #byUser = new Map<string, Set<HubSocket>>();
  readonly #gameServers = new Map<string, GameServerEntry>();
  /** remote address -> user id -> verified sockets of that user from there */
  readonly #usersAt = new Map<string, Map<string, number>>();
  readonly #addressOf = new Map<HubSocket, string>();
  /** Set by the instances service: whether a user is in a live instance. */
  inWorld: (userId: string) => boolean = () => false;

  /**
   * Joins the other processes of the community: a user connected to any of them counts as connected here, and
   * every message for a user also reaches their sockets there.
   */
  join(link: ClusterLink): void {
    this.#link = link;
    link.attach(this);
    for (const [id, entry] of this.#gameServers) link.announceGameServer(id, entry.proof, entry.address);
    link.onRemoteOffline((userId, told) => {
      for (const listener of this.#remoteOffline) listener(userId, told);
    });
    for (const userId of this.#byUser.keys()) link.announceOnline(userId);
  }

  /**
   * Calls `listener` with each user no other process holds a socket of any more (and this one holds none):
   * `told` when their friends still need telling (the process left or died without saying so).
   */
  onRemoteOffline(listener: (userId: string, told: boolean) => void): void {
    this.#remoteOffline.push(listener);
  }

  /** Returns true when this is the user's first open socket (on this process). `address` is where the socket comes from. */
  add(userId: string, socket: HubSocket, address = '', username = ''): boolean {
    if (username) this.#names.set(userId, username);
    if (address) {
      this.#addressOf.set(socket, address);
      let users = this.#usersAt.get(address);
      if (!users) this.#usersAt.set(address, (users = new Map()));
      users.set(userId, (users.get(userId) ?? 0) + 1);
    }
    let set = this.#byUser.get(userId);
    const first = set === undefined;
    if (!set) {
      set = new Set();
      this.#byUser.set(userId, set);
    }
    set.add(socket);
    if (first) this.#link?.announceOnline(userId);
    return first;
  }

  /** Returns true when that was the user's last open socket. */
  remove(userId: string, socket: HubSocket): boolean {
    const set = this.#byUser.get(userId);
    if (!set || !set.delete(socket)) return false;
    const address = this.#addressOf.get(socket);
    if (address !== undefined) {
      this.#addressOf.delete(socket);
      const users = this.#usersAt.get(address);
      const left = (users?.get(userId) ?? 1) - 1;
      if (left > 0) users?.set(userId, left);
      else users?.delete(userId);
      if (users?.size === 0) this.#usersAt.delete(address);
    }
    if (set.size === 0) {
      this.#byUser.delete(userId);
      this.#names.delete(userId);
      this.#link?.announceOffline(userId);
      return true;
    }
    return false;
  }

  socketsOf(userId: string): ReadonlySet<HubSocket> {
    return this.#byUser.get(userId) ?? new Set();
  }

  /** Whether the user has a socket on this process or on another live one. */
  isConnected(userId: string): boolean {
    return this.#byUser.has(userId) || (this.#link?.heldElsewhere(userId) ?? false);
  }

  holdsLocally(userId: string): boolean {
    return this.#byUser.has(userId);
  }

  isInWorld(userId: string): boolean {
    return this.inWorld(userId);
  }

  /** The name of a user with a verified socket on this process, as it was when the socket verified. */
  usernameOf(userId: string): string | undefined {
    return this.#names.get(userId);
  }

  /** The ids of users with at least one verified socket on this process. */
  connectedUserIds(): IterableIterator<string> {
    return this.#byUser.keys();
  }

  /** The users with a verified socket from `address` (a machine on the LAN, as the socket and HTTP see it). */
  usersAt(address: string): Iterable<string> {
    return this.#usersAt.get(address)?.keys() ?? [];
  }

  /** The game servers connected from `address` (to any process). */
  gameServersAt(address: string): string[] {
    const out: string[] = [];
    for (const [id, entry] of this.#gameServers) if (entry.address === address) out.push(id);
    if (this.#link)
      for (const gs of this.#link.remoteGameServers()) if (gs.address === address) out.push(gs.id);
    return out;
  }

  /** `proofToken` is what the server was told in `sendauth`; only its hash is kept. */
  addGameServer(gameServerId: string, socket: HubSocket, proofToken: string, address = ''): void {
    const proof = sha256(proofToken).toString('hex');
    this.#gameServers.set(gameServerId, { socket, proof, address });
    this.#link?.announceGameServer(gameServerId, proof, address);
  }

  /**
   * True when `gameServerId` is connected (to any process) and `token` is the one it was handed in `sendauth`
   * (constant time).
   */
  gameServerProves(gameServerId: string, token: string): boolean {
    const proof =
      this.#gameServers.get(gameServerId)?.proof ?? this.#link?.remoteGameServer(gameServerId)?.proof;
    return proof !== undefined && token.length > 0 && hashMatches(proof, sha256(token));
  }

  removeGameServer(gameServerId: string): void {
    if (this.#gameServers.delete(gameServerId)) this.#link?.announceGameServerGone(gameServerId);
  }

  hasGameServer(gameServerId: string): boolean {
    return this.#gameServers.has(gameServerId);
  }

  /** The game servers connected to this process (those an instance request here is offered to). */
  gameServerIds(): string[] {
    return [...this.#gameServers.keys()];
  }

  /** Every game server of the community: this process's and the other processes'. */
  allGameServerIds(): string[] {
    const ids = this.gameServerIds();
    if (this.#link) for (const gs of this.#link.remoteGameServers()) ids.push(gs.id);
    return ids;
  }

  sendToGameServer(gameServerId: string, message: string, result: Record<string, unknown>): void {
    this.#gameServers.get(gameServerId)?.socket.send(JSON.stringify({ message, result }));
  }

  /**
   * Sends one message to many users, serialising it once; `localOnly` leaves out sockets on other processes (a
   * message each process sends for itself).
   */
  sendToMany(
    userIds: Iterable<string>,
    message: string,
    result: Record<string, unknown>,
    localOnly = false,
  ): void {
    let text: string | null = null;
    const json = (): string => (text ??= JSON.stringify({ message, result }));
    const link = localOnly ? null : this.#link;
    const list = link ? [...userIds] : userIds;
    for (const userId of list) {
      const set = this.#byUser.get(userId);
      if (!set) continue;
      const frame = json();
      for (const socket of set) socket.send(frame);
    }
    link?.deliver(list, json);
  }

  send(userId: string, message: string, result: Record<string, unknown>): void {
    if (this.isConnected(userId)) this.sendJson(userId, JSON.stringify({ message, result }));
  }

  /** Sends to every socket of the user, on this process and (through the link) on the others. */
  sendJson(userId: string, json: string): void {
    this.deliverLocal(userId, json);
    this.#link?.deliver([userId], () => json);
  }

  /**
   * As sendJson, for a message whose sender must learn whether it arrived. Returns null when that is settled at
   * once: the user has a socket here (those on other processes get it as from sendJson), or no process holds one.
   * Otherwise (the user's sockets are all on other processes) a promise that rejects with a ClusterSendError when
   * Redis did not hand the message to those processes within `cluster.commandTimeoutMs`.
   */
  sendJsonConfirmed(userId: string, json: string): Promise<void> | null {
    const link = this.#link;
    if (link === null || this.#byUser.has(userId) || !link.heldElsewhere(userId)) {
      this.sendJson(userId, json);
      return null;
    }
    return link.deliverConfirmed([userId], () => json);
  }

  deliverLocal(userId: string, json: string): void {
    const set = this.#byUser.get(userId);
    if (!set) return;
    for (const socket of set) socket.send(json);
  }
}
