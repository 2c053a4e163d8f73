import type { Notifier, Presence } from '../services/context.js';

/** What the hub needs of a socket: a way to send text and to close. */
export interface HubSocket {
  send(text: string): void;
}

/**
 * Which verified sockets each user holds. A user is connected while at least one is open (desktop window, game
 * client, browser), and every event for the user goes to all of them. Lookups are O(1) in the number of sockets.
 */
export class SocketHub implements Presence, Notifier {
  readonly #byUser = new Map<string, Set<HubSocket>>();
  readonly #gameServers = new Map<string, HubSocket>();
  /** Set from the configuration: game servers may connect without a token. */
  allowAnyGameServer = false;
  /** Set by the instances service: whether a user is in a live instance. */
  inWorld: (userId: string) => boolean = () => false;

  /** Returns true when this is the user's first open socket. */
  add(userId: string, socket: HubSocket): boolean {
    let set = this.#byUser.get(userId);
    const first = set === undefined;
    if (!set) {
      set = new Set();
      this.#byUser.set(userId, set);
    }
    set.add(socket);
    return first;
  }

  /** Returns true when that was the user's last open socket. */
  remove(userId: string, socket: HubSocket): boolean {
    const set = this.#byUser.get(userId);
    if (!set || !set.delete(socket)) return false;
    if (set.size === 0) {
      this.#byUser.delete(userId);
      return true;
    }
    return false;
  }

  socketsOf(userId: string): ReadonlySet<HubSocket> {
    return this.#byUser.get(userId) ?? new Set();
  }

  isConnected(userId: string): boolean {
    return this.#byUser.has(userId);
  }

  isInWorld(userId: string): boolean {
    return this.inWorld(userId);
  }

  /** The ids of users with at least one verified socket. */
  connectedUserIds(): IterableIterator<string> {
    return this.#byUser.keys();
  }

  addGameServer(gameServerId: string, socket: HubSocket): void {
    this.#gameServers.set(gameServerId, socket);
  }

  removeGameServer(gameServerId: string): void {
    this.#gameServers.delete(gameServerId);
  }

  gameServerAcceptsAny(): boolean {
    return this.allowAnyGameServer;
  }

  hasGameServer(gameServerId: string): boolean {
    return this.#gameServers.has(gameServerId);
  }

  gameServerIds(): string[] {
    return [...this.#gameServers.keys()];
  }

  sendToGameServer(gameServerId: string, message: string, result: Record<string, unknown>): void {
    this.#gameServers.get(gameServerId)?.send(JSON.stringify({ message, result }));
  }

  /** Sends one message to many users, serialising it once. */
  sendToMany(userIds: Iterable<string>, message: string, result: Record<string, unknown>): void {
    let text: string | null = null;
    for (const userId of userIds) {
      const set = this.#byUser.get(userId);
      if (!set) continue;
      text ??= JSON.stringify({ message, result });
      for (const socket of set) socket.send(text);
    }
  }

  send(userId: string, message: string, result: Record<string, unknown>): void {
    if (this.#byUser.has(userId)) this.sendJson(userId, JSON.stringify({ message, result }));
  }

  sendJson(userId: string, json: string): void {
    const set = this.#byUser.get(userId);
    if (!set) return;
    for (const socket of set) socket.send(json);
  }
}
