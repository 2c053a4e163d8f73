import type { SafeInstance } from '../protocol/instances.js';
import { claim, gameServerGone, moderate, ready, remove } from './instances/game-server-ops.js';
import { runForwarded } from './instances/forwarding.js';
import {
  hostsWorld,
  inInstanceOfWorld,
  isInWorld,
  publicInstancesOf,
  safeInstancesFor,
  shareInstance,
} from './instances/lookups.js';
import {
  emptyTables,
  type Args,
  type ForwardedOp,
  type InstancesDeps,
  type InstancesShared,
} from './instances/state.js';
import { join, leave, requestNew, sendInvite, userGone } from './instances/user-ops.js';

export type { InstanceCluster } from './instances/state.js';

/**
 * Live instances on game servers (reference 8.4 to 8.6). Kept in memory: instances live only as long as their
 * game-server socket. Every lookup is by id (maps), so the cost of a join does not grow with the sockets. Wires
 * the parts in server/services/instances/ (users' messages, game servers' messages, lookups, forwarding to the
 * process holding a game server) to one shared state object.
 */
export function createInstancesService(deps: InstancesDeps) {
  const up: InstancesShared = { deps, tables: emptyTables(), forwarding: { running: false } };
  const service = {
    /** Runs a user's instance message another process forwarded to this one (it holds the game server). */
    runForwarded(
      op: ForwardedOp,
      userId: string,
      args: Args,
      targetConnected: (userId: string) => boolean,
    ): Promise<void> {
      return runForwarded(up, () =>
        op === 'sendInvite' ? service.sendInvite(userId, args, targetConnected) : service[op](userId, args),
      );
    },
    isInWorld: (userId: string): boolean => isInWorld(up, userId),
    instance: (instanceId: string) => up.tables.instances.get(instanceId),
    /** Whether `gameServerId` holds an instance of `worldId` (from its claim on, ready or not). */
    hostsWorld: (gameServerId: string, worldId: string): boolean => hostsWorld(up, gameServerId, worldId),
    /** Whether `userId` is in a live instance of `worldId`. */
    inInstanceOfWorld: (userId: string, worldId: string): boolean => inInstanceOfWorld(up, userId, worldId),
    /** Whether `userId` and `otherUserId` are both in one live instance. */
    shareInstance: (userId: string, otherUserId: string): boolean => shareInstance(up, userId, otherUserId),
    requestNew: (userId: string, args: Args): Promise<void> => requestNew(up, userId, args),
    claim: (gameServerId: string, args: Args): void => claim(up, gameServerId, args),
    ready: (gameServerId: string, args: Args): void => ready(up, gameServerId, args),
    remove: (gameServerId: string, args: Args): void => remove(up, gameServerId, args),
    /** addmoderator, removemoderator, kickuser, banuser, unbanuser from the instance's game server. */
    moderate: (gameServerId: string, name: string, args: Args): void =>
      moderate(up, gameServerId, name, args),
    join: (userId: string, args: Args): Promise<void> => join(up, userId, args),
    leave: (userId: string, args: Args): void => leave(up, userId, args),
    /** sendinvite with the 1.4.1 rules; answering an invite request marks it answered. */
    sendInvite: (senderId: string, args: Args, targetConnected: (userId: string) => boolean): Promise<void> =>
      sendInvite(up, senderId, args, targetConnected),
    /** The user's last socket closed: leave every instance (the real server kept creators in; we do not). */
    userGone: (userId: string): void => userGone(up, userId),
    /** A game server's socket closed: its instances end. */
    gameServerGone: (gameServerId: string): void => gameServerGone(up, gameServerId),
    /** POST instances: the instances this user may join. */
    safeInstancesFor: (userId: string): Promise<SafeInstance[]> => safeInstancesFor(up, userId),
    /** GET instances/:worldid: the world's Anyone instances. */
    publicInstancesOf: (worldId: string): SafeInstance[] => publicInstancesOf(up, worldId),
    get count(): number {
      return up.tables.instances.size;
    },
  };
  return service;
}

export type InstancesService = ReturnType<typeof createInstancesService>;
