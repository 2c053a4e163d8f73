import { InstanceRefusal, type InstanceMeta } from '../../protocol/instances.js';
import {
  addMember,
  broadcastUpdate,
  removeMember,
  str,
  tempToken,
  type Args,
  type InstancesShared,
} from './state.js';

/** The instance `args.instanceId` when it lives on `gameServerId`, else null. */
function ownedInstance(up: InstancesShared, gameServerId: string, args: Args): InstanceMeta | null {
  const instanceId = str(args.instanceId);
  const instance = instanceId ? up.tables.instances.get(instanceId) : undefined;
  return instance && instance.GameServerId === gameServerId ? instance : null;
}

/** Ends an instance: its users leave it; its game server is told when the end did not come from it. */
function destroy(up: InstancesShared, instance: InstanceMeta, notifyGameServer: boolean): void {
  const { cluster, notifier, gameServers } = up.deps;
  up.tables.instances.delete(instance.InstanceId);
  cluster?.ended(instance.InstanceId);
  up.tables.byGameServer.get(instance.GameServerId)?.delete(instance.InstanceId);
  for (const userId of [...instance.ConnectedUsers]) {
    removeMember(up.tables, instance, userId);
    notifier.send(userId, 'leftinstance', {
      gameServerId: instance.GameServerId,
      instanceId: instance.InstanceId,
    });
  }
  if (notifyGameServer)
    gameServers.sendToGameServer(instance.GameServerId, 'removedinstance', {
      instanceId: instance.InstanceId,
    });
}

/** claiminstancerequest: the first game server to claim a pending request opens the instance. */
export function claim(up: InstancesShared, gameServerId: string, args: Args): void {
  const { gameServers, notifier, ids, cluster } = up.deps;
  const { pending, instances, byGameServer } = up.tables;
  const temporaryId = str(args.TemporaryId ?? args.temporaryId);
  const request = temporaryId ? pending.get(temporaryId) : undefined;
  if (!temporaryId || !request) {
    gameServers.sendToGameServer(gameServerId, 'failedtoclaiminstancerequest', {
      TemporaryId: temporaryId ?? '',
      reason: InstanceRefusal.UNKNOWN_INSTANCE,
    });
    return;
  }
  pending.delete(temporaryId);
  clearTimeout(request.timer);
  const instance: InstanceMeta = {
    Readied: false,
    Uri: typeof args.Uri === 'string' ? args.Uri.slice(0, 500) : '',
    GameServerId: gameServerId,
    TemporaryId: temporaryId,
    InstanceId: ids.id('instance'),
    WorldId: request.worldId,
    InstancePublicity: request.publicity,
    InstanceProtocol: request.protocol,
    InstanceCreatorId: request.userId,
    InvitedUsers: [],
    BannedUsers: [],
    ConnectedUsers: [],
    Moderators: [request.userId],
  };
  instances.set(instance.InstanceId, instance);
  cluster?.changed(instance);
  let set = byGameServer.get(gameServerId);
  if (!set) byGameServer.set(gameServerId, (set = new Set()));
  set.add(instance.InstanceId);
  addMember(up.tables, instance, request.userId);
  up.deps.onInstanceOpened?.(instance.WorldId);
  const token = tempToken();
  gameServers.sendToGameServer(gameServerId, 'selectedgameserver', { instanceMeta: instance });
  gameServers.sendToGameServer(gameServerId, 'tempusertoken', {
    tempUserToken: token,
    userId: request.userId,
    instanceId: instance.InstanceId,
  });
  for (const other of gameServers.gameServerIds()) {
    if (other !== gameServerId) gameServers.sendToGameServer(other, 'notselectedgameserver', { temporaryId });
  }
  notifier.send(request.userId, 'instanceopened', {
    gameServerId,
    instanceId: instance.InstanceId,
    InstanceProtocol: instance.InstanceProtocol,
    InstancePublicity: instance.InstancePublicity,
    Uri: instance.Uri,
    worldId: instance.WorldId,
    tempUserToken: token,
    Moderators: [...instance.Moderators],
    BannedUsers: [...instance.BannedUsers],
  });
}

/** instanceready: the instance takes users from now on. */
export function ready(up: InstancesShared, gameServerId: string, args: Args): void {
  const instance = ownedInstance(up, gameServerId, args);
  if (!instance) return;
  instance.Readied = true;
  broadcastUpdate(up, instance);
}

/** removeinstance: the game server ended the instance. */
export function remove(up: InstancesShared, gameServerId: string, args: Args): void {
  const instance = ownedInstance(up, gameServerId, args);
  if (instance) destroy(up, instance, true);
}

/** addmoderator, removemoderator, kickuser, banuser, unbanuser from the instance's game server. */
export function moderate(up: InstancesShared, gameServerId: string, name: string, args: Args): void {
  const { gameServers, notifier } = up.deps;
  const instance = ownedInstance(up, gameServerId, args);
  const userId = str(args.userId);
  if (!instance || !userId) return;
  const reply = { instanceId: instance.InstanceId, userId };
  switch (name) {
    case 'addmoderator':
      if (!instance.Moderators.includes(userId)) instance.Moderators.push(userId);
      gameServers.sendToGameServer(gameServerId, 'addedmoderator', reply);
      break;
    case 'removemoderator':
      instance.Moderators = instance.Moderators.filter((id) => id !== userId);
      gameServers.sendToGameServer(gameServerId, 'removedmoderator', reply);
      break;
    case 'kickuser':
      if (removeMember(up.tables, instance, userId))
        notifier.send(userId, 'leftinstance', { gameServerId, instanceId: instance.InstanceId });
      gameServers.sendToGameServer(gameServerId, 'kickeduser', reply);
      break;
    case 'banuser':
      if (!instance.BannedUsers.includes(userId)) instance.BannedUsers.push(userId);
      if (removeMember(up.tables, instance, userId))
        notifier.send(userId, 'leftinstance', { gameServerId, instanceId: instance.InstanceId });
      gameServers.sendToGameServer(gameServerId, 'banneduser', reply);
      break;
    case 'unbanuser':
      instance.BannedUsers = instance.BannedUsers.filter((id) => id !== userId);
      gameServers.sendToGameServer(gameServerId, 'unbanneduser', reply);
      break;
    default:
      return;
  }
  broadcastUpdate(up, instance);
}

/** A game server's socket closed: its instances end. */
export function gameServerGone(up: InstancesShared, gameServerId: string): void {
  const { instances, byGameServer } = up.tables;
  for (const instanceId of [...(byGameServer.get(gameServerId) ?? [])]) {
    const instance = instances.get(instanceId);
    if (instance) destroy(up, instance, false);
  }
  byGameServer.delete(gameServerId);
}
