import { InstancePublicity, type SafeInstance } from '../../protocol/instances.js';
import { everyInstance } from './forwarding.js';
import { peopleFor, safe, welcome } from './rules.js';
import type { InstancesShared } from './state.js';

/** Whether `userId` is in a live instance, on this process or another. */
export function isInWorld(up: InstancesShared, userId: string): boolean {
  return up.tables.membership.has(userId) || (up.deps.cluster?.inRemoteInstance(userId) ?? false);
}

/** Whether `gameServerId` holds an instance of `worldId` (from its claim on, ready or not). */
export function hostsWorld(up: InstancesShared, gameServerId: string, worldId: string): boolean {
  const { cluster } = up.deps;
  for (const instanceId of up.tables.byGameServer.get(gameServerId) ?? []) {
    if (up.tables.instances.get(instanceId)?.WorldId === worldId) return true;
  }
  if (cluster && cluster.holderOf(gameServerId) !== undefined) {
    for (const instance of cluster.remoteInstances())
      if (instance.GameServerId === gameServerId && instance.WorldId === worldId) return true;
  }
  return false;
}

/** Whether `userId` is in a live instance of `worldId`. */
export function inInstanceOfWorld(up: InstancesShared, userId: string, worldId: string): boolean {
  const { cluster } = up.deps;
  for (const instanceId of up.tables.membership.get(userId) ?? []) {
    if (up.tables.instances.get(instanceId)?.WorldId === worldId) return true;
  }
  if (cluster?.inRemoteInstance(userId)) {
    for (const instance of cluster.remoteInstances())
      if (instance.WorldId === worldId && instance.ConnectedUsers.includes(userId)) return true;
  }
  return false;
}

/** Whether `userId` and `otherUserId` are both in one live instance. */
export function shareInstance(up: InstancesShared, userId: string, otherUserId: string): boolean {
  const { cluster } = up.deps;
  const mine = up.tables.membership.get(userId);
  const theirs = up.tables.membership.get(otherUserId);
  if (mine && theirs) for (const instanceId of mine) if (theirs.has(instanceId)) return true;
  if (cluster?.inRemoteInstance(userId) && cluster.inRemoteInstance(otherUserId)) {
    for (const instance of cluster.remoteInstances()) {
      if (instance.ConnectedUsers.includes(userId) && instance.ConnectedUsers.includes(otherUserId))
        return true;
    }
  }
  return false;
}

/** POST instances: the instances this user may join. */
export async function safeInstancesFor(up: InstancesShared, userId: string): Promise<SafeInstance[]> {
  const readied = [...everyInstance(up)].filter((i) => i.Readied);
  const people = await peopleFor(up, readied, []);
  return readied.filter((i) => welcome(i, userId, people) === null).map(safe);
}

/** GET instances/:worldid: the world's Anyone instances. */
export function publicInstancesOf(up: InstancesShared, worldId: string): SafeInstance[] {
  return [...everyInstance(up)]
    .filter((i) => i.Readied && i.WorldId === worldId && i.InstancePublicity === InstancePublicity.Anyone)
    .map(safe);
}
