import { randomBytes } from 'node:crypto';
import { Publicity, Status } from '../../protocol/enums.js';
import { InstanceRefusal, toProtocol, toPublicity } from '../../protocol/instances.js';
import { forwarded } from './forwarding.js';
import { mayInvite, peopleFor, welcome } from './rules.js';
import {
  addMember,
  broadcastUpdate,
  removeMember,
  str,
  tempToken,
  type Args,
  type InstancesShared,
  type PendingRequest,
} from './state.js';

/** requestnewinstance: offered to the game servers (or the one named); the first to claim it opens it. */
export async function requestNew(up: InstancesShared, userId: string, args: Args): Promise<void> {
  if (forwarded(up, 'requestNew', userId, args)) return;
  const { notifier, gameServers } = up.deps;
  const { pending } = up.tables;
  const fail = (reason: InstanceRefusal) =>
    notifier.send(userId, 'failedtocreatetemporaryinstance', { reason });
  const worldId = str(args.worldId);
  const world = worldId ? await up.deps.world(worldId) : undefined;
  if (!worldId || !world) return fail(InstanceRefusal.UNKNOWN_WORLD);
  if (world.OwnerId !== userId && world.Publicity !== Publicity.Anyone)
    return fail(InstanceRefusal.NOT_ALLOWED);
  const named = str(args.gameServerId);
  const targets = named ? (gameServers.hasGameServer(named) ? [named] : []) : gameServers.gameServerIds();
  if (targets.length === 0) return fail(InstanceRefusal.NO_GAME_SERVER);
  const temporaryId = randomBytes(18).toString('base64url');
  const request: PendingRequest = {
    temporaryId,
    userId,
    worldId,
    publicity: toPublicity(args.instancePublicity),
    protocol: toProtocol(args.instanceProtocol),
    // The real server meant to give up after 5 s but never did (reference 8.4); we do, configurably.
    timer: setTimeout(() => {
      if (pending.delete(temporaryId)) fail(InstanceRefusal.TIMED_OUT);
    }, up.deps.requestTimeoutMs),
  };
  request.timer.unref();
  pending.set(temporaryId, request);
  for (const gs of targets) {
    gameServers.sendToGameServer(gs, 'requestedinstancecreated', {
      temporaryId,
      instanceProtocol: request.protocol,
    });
  }
  notifier.send(userId, 'createdtemporaryinstance', { temporaryId });
}

/** joininstance: a user joins a ready instance they are welcome in, and gets their token for it. */
export async function join(up: InstancesShared, userId: string, args: Args): Promise<void> {
  if (forwarded(up, 'join', userId, args)) return;
  const { notifier, gameServers } = up.deps;
  const { instances } = up.tables;
  const gameServerId = str(args.gameServerId);
  const instanceId = str(args.instanceId);
  const asked = instanceId ? instances.get(instanceId) : undefined;
  const people = await peopleFor(up, asked ? [asked] : [], []);
  const fail = (reason: InstanceRefusal) =>
    notifier.send(userId, 'failedtojoininstance', {
      gameServerId: gameServerId ?? '',
      instanceId: instanceId ?? '',
      reason,
    });
  if (!gameServerId || !instanceId) return fail(InstanceRefusal.INVALID_ARGS);
  const instance = instances.get(instanceId);
  if (!instance || instance.GameServerId !== gameServerId || !gameServers.hasGameServer(gameServerId)) {
    return fail(InstanceRefusal.UNKNOWN_INSTANCE);
  }
  if (!instance.Readied) return fail(InstanceRefusal.NOT_READY);
  if (instance.ConnectedUsers.includes(userId)) return fail(InstanceRefusal.ALREADY_IN_INSTANCE);
  const refusal = welcome(instance, userId, people);
  if (refusal) return fail(refusal);
  addMember(up.tables, instance, userId);
  const token = tempToken();
  broadcastUpdate(up, instance);
  gameServers.sendToGameServer(gameServerId, 'tempusertoken', {
    tempUserToken: token,
    userId,
    instanceId,
  });
  notifier.send(userId, 'joinedinstance', {
    Uri: instance.Uri,
    InstanceProtocol: instance.InstanceProtocol,
    InstancePublicity: instance.InstancePublicity,
    gameServerId,
    instanceId,
    tempUserToken: token,
    worldId: instance.WorldId,
    instanceCreatorId: instance.InstanceCreatorId,
    Moderators: [...instance.Moderators],
    BannedUsers: [...instance.BannedUsers],
  });
}

/** leaveinstance: a user leaves; the game server is told to let them go. */
export function leave(up: InstancesShared, userId: string, args: Args): void {
  if (forwarded(up, 'leave', userId, args)) return;
  const { notifier, gameServers } = up.deps;
  const gameServerId = str(args.gameServerId);
  const instanceId = str(args.instanceId);
  const instance = instanceId ? up.tables.instances.get(instanceId) : undefined;
  if (!instance || !gameServerId || instance.GameServerId !== gameServerId) {
    notifier.send(userId, 'failedtoleaveinstance', {
      gameServerId: gameServerId ?? '',
      instanceId: instanceId ?? '',
      reason: InstanceRefusal.UNKNOWN_INSTANCE,
    });
    return;
  }
  if (!removeMember(up.tables, instance, userId)) {
    notifier.send(userId, 'failedtoleaveinstance', {
      gameServerId,
      instanceId,
      reason: InstanceRefusal.NOT_IN_INSTANCE,
    });
    return;
  }
  gameServers.sendToGameServer(gameServerId, 'kickeduser', { instanceId, userId });
  broadcastUpdate(up, instance);
  notifier.send(userId, 'leftinstance', { gameServerId, instanceId });
}

/** sendinvite with the 1.4.1 rules; answering an invite request marks it answered. */
export async function sendInvite(
  up: InstancesShared,
  senderId: string,
  args: Args,
  targetConnected: (userId: string) => boolean,
): Promise<void> {
  if (forwarded(up, 'sendInvite', senderId, args)) return;
  const { notifier, gameServers, cluster } = up.deps;
  const { instances } = up.tables;
  const targetUserId = str(args.targetUserId);
  const gameServerId = str(args.gameServerId);
  const instanceId = str(args.toInstanceId ?? args.instanceId);
  const asked = instanceId ? instances.get(instanceId) : undefined;
  const people = await peopleFor(up, asked ? [asked] : [], [
    senderId,
    ...(targetUserId ? [targetUserId] : []),
  ]);
  const fail = (reason: InstanceRefusal) =>
    notifier.send(senderId, 'failedtosendinvite', {
      targetUserId: targetUserId ?? '',
      instanceId: instanceId ?? '',
      reason,
    });
  if (!targetUserId || !gameServerId || !instanceId) return fail(InstanceRefusal.INVALID_ARGS);
  const target = people.get(targetUserId);
  if (!target) return fail(InstanceRefusal.UNKNOWN_USER);
  const instance = instances.get(instanceId);
  if (!instance || instance.GameServerId !== gameServerId || !gameServers.hasGameServer(gameServerId)) {
    return fail(InstanceRefusal.UNKNOWN_INSTANCE);
  }
  if (!instance.ConnectedUsers.includes(senderId)) return fail(InstanceRefusal.NOT_IN_INSTANCE);
  if (!target.Friends.includes(senderId)) return fail(InstanceRefusal.NOT_FRIENDS);
  if (!targetConnected(target.Id) || target.Bio.Status === Status.Offline)
    return fail(InstanceRefusal.OFFLINE);
  if (target.Bio.Status === Status.DoNotDisturb) return fail(InstanceRefusal.DO_NOT_DISTURB);
  if (!mayInvite(instance, target.Id, senderId, people)) return fail(InstanceRefusal.NOT_ALLOWED);
  if (!instance.InvitedUsers.includes(target.Id)) {
    instance.InvitedUsers.push(target.Id);
    cluster?.changed(instance);
  }
  const assetToken = typeof args.assetToken === 'string' ? args.assetToken.slice(0, 500) : '';
  notifier.send(target.Id, 'gotinvite', {
    fromUserId: senderId,
    toGameServerId: gameServerId,
    toInstanceId: instanceId,
    worldId: instance.WorldId,
    assetToken,
  });
  if (assetToken) up.deps.onAssetTokenDelivered?.(target.Id, instance.WorldId, assetToken);
  notifier.send(senderId, 'sentinvite', { targetUserId: target.Id, instanceId });
  // The sender answered the target's request for an invite, if there was one.
  up.deps.invites
    .markAnswered(senderId, target.Id)
    .catch((error: unknown) => up.deps.onBackgroundError?.(error, 'marking an invite request answered'));
}

/** The user's last socket closed: leave every instance (the real server kept creators in; we do not). */
export function userGone(up: InstancesShared, userId: string): void {
  const { instances, membership } = up.tables;
  const set = membership.get(userId);
  if (!set) return;
  for (const instanceId of [...set]) {
    const instance = instances.get(instanceId);
    if (!instance || !removeMember(up.tables, instance, userId)) continue;
    up.deps.gameServers.sendToGameServer(instance.GameServerId, 'kickeduser', { instanceId, userId });
    broadcastUpdate(up, instance);
  }
}
