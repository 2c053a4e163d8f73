import { randomBytes } from 'node:crypto';
import { Publicity, Status } from '../protocol/enums.js';
import {
  InstancePublicity,
  InstanceRefusal,
  toProtocol,
  toPublicity,
  type InstanceMeta,
  type InstanceProtocol,
  type SafeInstance,
} from '../protocol/instances.js';
import type { WorldMetaDto } from '../protocol/uploads.js';
import type { StoredUser } from '../store/users.js';
import type { GameServerNotifier, Notifier, ServiceDeps } from './context.js';
import type { InvitesService } from './invites.js';

interface PendingRequest {
  temporaryId: string;
  userId: string;
  worldId: string;
  publicity: InstancePublicity;
  protocol: InstanceProtocol;
  timer: NodeJS.Timeout;
}

type Args = Record<string, unknown>;
/** A user's instance messages that run where the game server is. */
type ForwardedOp = 'join' | 'leave' | 'requestNew' | 'sendInvite';
/** Users by id, read once for the checks of one request. */
type People = ReadonlyMap<string, StoredUser>;

/**
 * The other host processes of a community (issue 15): an instance lives in the process its game server is
 * connected to; the others read what it announces and forward their users' instance messages to it.
 */
export interface InstanceCluster {
  /** The process holding game server `id`, when another one does. */
  holderOf(gameServerId: string): string | undefined;
  /** Another process holding at least one game server (asked when this one holds none). */
  anyHolder(): string | undefined;
  /**
   * Hands a user's instance message to `processId`; rejects when it could not within the cluster's command
   * timeout (Redis down or hung, or that process gone).
   */
  forward(processId: string, op: ForwardedOp, userId: string, args: Args): Promise<void>;
  /** Instances held by other processes, as last announced (read only). */
  remoteInstances(): Iterable<InstanceMeta>;
  inRemoteInstance(userId: string): boolean;
  /** Tells the others an instance of this process as it is now, or that it ended. */
  changed(instance: InstanceMeta): void;
  ended(instanceId: string): void;
}

const str = (value: unknown): string | null =>
  typeof value === 'string' && value.length > 0 && value.length <= 300 ? value : null;

/** A secret for one user in one instance, handed to the game server and the user (reference 8.4). */
const tempToken = (): string => randomBytes(24).toString('base64url');

/**
 * Live instances on game servers (reference 8.4 to 8.6). Kept in memory: instances live only as long as their
 * game-server socket. Every lookup is by id (maps), so the cost of a join does not grow with the sockets.
 */
export function createInstancesService(
  deps: Pick<ServiceDeps, 'users' | 'ids' | 'config'> & {
    notifier: Notifier;
    gameServers: GameServerNotifier;
    world: (id: string) => Promise<WorldMetaDto | undefined>;
    invites: InvitesService;
    requestTimeoutMs: number;
    /** Called when an instance of a world opens (popularity counts it). */
    onInstanceOpened?: (worldId: string) => void;
    /** Called when an invite hands `userId` an asset token for `worldId` (server/services/asset-access.ts). */
    onAssetTokenDelivered?: (userId: string, worldId: string, assetToken: string) => void;
    /** Where work nobody waits for reports its failure (what was being done), so the host goes on serving. */
    onBackgroundError?: (error: unknown, what: string) => void;
    /** Hosts sharing a database: the other processes' instances. */
    cluster?: InstanceCluster;
  },
) {
  const { users, ids, notifier, gameServers, cluster } = deps;
  const pending = new Map<string, PendingRequest>();
  const instances = new Map<string, InstanceMeta>();
  const byGameServer = new Map<string, Set<string>>();
  /** user id -> instances whose ConnectedUsers hold them */
  const membership = new Map<string, Set<string>>();

  function addMember(instance: InstanceMeta, userId: string): void {
    if (!instance.ConnectedUsers.includes(userId)) instance.ConnectedUsers.push(userId);
    let set = membership.get(userId);
    if (!set) membership.set(userId, (set = new Set()));
    set.add(instance.InstanceId);
  }

  function removeMember(instance: InstanceMeta, userId: string): boolean {
    const index = instance.ConnectedUsers.indexOf(userId);
    if (index < 0) return false;
    instance.ConnectedUsers.splice(index, 1);
    const set = membership.get(userId);
    set?.delete(instance.InstanceId);
    if (set && set.size === 0) membership.delete(userId);
    return true;
  }

  /** While a message another process forwarded runs: it runs here whatever this process knows (no bouncing). */
  let runningForwarded = false;

  /** Every live instance: this process's, then those other processes announced. */
  function* everyInstance(): Generator<InstanceMeta> {
    yield* instances.values();
    if (cluster) for (const instance of cluster.remoteInstances()) yield instance;
  }

  /**
   * Where a user's instance message about `gameServerId` runs: another process, when it holds that server (true:
   * handed to it; the user is told when that failed).
   */
  function forwarded(op: ForwardedOp, userId: string, args: Args): boolean {
    if (!cluster || runningForwarded) return false;
    const gameServerId = str(args.gameServerId);
    let holder =
      gameServerId && !gameServers.hasGameServer(gameServerId) ? cluster.holderOf(gameServerId) : undefined;
    // A new instance on no server in particular: offered to this process's servers, or another's when it has none.
    if (op === 'requestNew' && !gameServerId && gameServers.gameServerIds().length === 0)
      holder = cluster.anyHolder();
    if (holder === undefined) return false;
    cluster.forward(holder, op, userId, args).catch(() => notForwarded(op, userId, args));
    return true;
  }

  /** Tells the user `op` did not reach the game server's process, as `op` answers a refusal (the link logged why). */
  function notForwarded(op: ForwardedOp, userId: string, args: Args): void {
    const reason = InstanceRefusal.GAME_SERVER_UNREACHABLE;
    switch (op) {
      case 'join':
      case 'leave':
        notifier.send(userId, op === 'join' ? 'failedtojoininstance' : 'failedtoleaveinstance', {
          gameServerId: str(args.gameServerId) ?? '',
          instanceId: str(args.instanceId) ?? '',
          reason,
        });
        return;
      case 'requestNew':
        notifier.send(userId, 'failedtocreatetemporaryinstance', { reason });
        return;
      case 'sendInvite':
        notifier.send(userId, 'failedtosendinvite', {
          targetUserId: str(args.targetUserId) ?? '',
          instanceId: str(args.toInstanceId ?? args.instanceId) ?? '',
          reason,
        });
        return;
    }
  }

  function broadcastUpdate(instance: InstanceMeta): void {
    cluster?.changed(instance);
    const result = { instanceMeta: instance };
    gameServers.sendToGameServer(instance.GameServerId, 'updatedinstance', result);
    for (const userId of instance.ConnectedUsers) notifier.send(userId, 'updatedinstance', result);
  }

  function isFriendOf(owner: StoredUser | undefined, userId: string): boolean {
    return owner?.Friends.includes(userId) ?? false;
  }

  /** The users whose friend lists decide who may join or invite to these instances, and `extra` ones. */
  async function peopleFor(list: readonly InstanceMeta[], extra: readonly string[]): Promise<People> {
    const ids = new Set(extra);
    for (const instance of list) {
      ids.add(instance.InstanceCreatorId);
      for (const id of instance.ConnectedUsers) ids.add(id);
    }
    return new Map((await users.getMany([...ids])).map((user) => [user.Id, user]));
  }

  /** Who may join (reference 8.6); `people` holds the creator and those connected (peopleFor). */
  function welcome(instance: InstanceMeta, userId: string, people: People): InstanceRefusal | null {
    if (instance.InstanceCreatorId === userId || instance.Moderators.includes(userId)) return null;
    if (instance.BannedUsers.includes(userId)) return InstanceRefusal.BANNED_FROM_INSTANCE;
    switch (instance.InstancePublicity) {
      case InstancePublicity.ClosedRequest:
      case InstancePublicity.ModeratorRequest:
      case InstancePublicity.OpenRequest:
        return instance.InvitedUsers.includes(userId) ? null : InstanceRefusal.NOT_WELCOME;
      case InstancePublicity.Friends:
        return isFriendOf(people.get(instance.InstanceCreatorId), userId) ||
          instance.InvitedUsers.includes(userId)
          ? null
          : InstanceRefusal.NOT_WELCOME;
      case InstancePublicity.Acquaintances:
        return instance.ConnectedUsers.some((id) => isFriendOf(people.get(id), userId)) ||
          instance.InvitedUsers.includes(userId)
          ? null
          : InstanceRefusal.NOT_WELCOME;
      default:
        return null;
    }
  }

  /** Who may invite whom (reference canUserInvite, without its index-0 bug). */
  function mayInvite(instance: InstanceMeta, targetId: string, senderId: string, people: People): boolean {
    if (instance.InstanceCreatorId === senderId) return true;
    switch (instance.InstancePublicity) {
      case InstancePublicity.ClosedRequest:
        return false;
      case InstancePublicity.ModeratorRequest:
        return instance.Moderators.includes(senderId);
      case InstancePublicity.OpenRequest:
        return instance.ConnectedUsers.includes(senderId);
      case InstancePublicity.Friends:
        return isFriendOf(people.get(instance.InstanceCreatorId), targetId);
      case InstancePublicity.Acquaintances:
        return isFriendOf(people.get(senderId), targetId);
      default:
        return true;
    }
  }

  function destroy(instance: InstanceMeta, notifyGameServer: boolean): void {
    instances.delete(instance.InstanceId);
    cluster?.ended(instance.InstanceId);
    byGameServer.get(instance.GameServerId)?.delete(instance.InstanceId);
    for (const userId of [...instance.ConnectedUsers]) {
      removeMember(instance, userId);
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

  function ownedInstance(gameServerId: string, args: Args): InstanceMeta | null {
    const instanceId = str(args.instanceId);
    const instance = instanceId ? instances.get(instanceId) : undefined;
    return instance && instance.GameServerId === gameServerId ? instance : null;
  }

  function safe(instance: InstanceMeta): SafeInstance {
    return {
      GameServerId: instance.GameServerId,
      InstanceId: instance.InstanceId,
      InstanceCreatorId: instance.InstanceCreatorId,
      InstancePublicity: instance.InstancePublicity,
      InstanceProtocol: instance.InstanceProtocol,
      ConnectedUsers: [...instance.ConnectedUsers],
      WorldId: instance.WorldId,
    };
  }

  const service = {
    /** Runs a user's instance message another process forwarded to this one (it holds the game server). */
    runForwarded(
      op: ForwardedOp,
      userId: string,
      args: Args,
      targetConnected: (userId: string) => boolean,
    ): Promise<void> {
      runningForwarded = true;
      // `forwarded` is asked synchronously at the start of each op, while the flag is set.
      let done: Promise<void> | void;
      try {
        done =
          op === 'sendInvite' ? service.sendInvite(userId, args, targetConnected) : service[op](userId, args);
      } finally {
        runningForwarded = false;
      }
      return Promise.resolve(done);
    },

    isInWorld(userId: string): boolean {
      return membership.has(userId) || (cluster?.inRemoteInstance(userId) ?? false);
    },

    instance: (instanceId: string) => instances.get(instanceId),

    /** Whether `gameServerId` holds an instance of `worldId` (from its claim on, ready or not). */
    hostsWorld(gameServerId: string, worldId: string): boolean {
      for (const instanceId of byGameServer.get(gameServerId) ?? []) {
        if (instances.get(instanceId)?.WorldId === worldId) return true;
      }
      if (cluster && cluster.holderOf(gameServerId) !== undefined) {
        for (const instance of cluster.remoteInstances())
          if (instance.GameServerId === gameServerId && instance.WorldId === worldId) return true;
      }
      return false;
    },

    /** Whether `userId` is in a live instance of `worldId`. */
    inInstanceOfWorld(userId: string, worldId: string): boolean {
      for (const instanceId of membership.get(userId) ?? []) {
        if (instances.get(instanceId)?.WorldId === worldId) return true;
      }
      if (cluster?.inRemoteInstance(userId)) {
        for (const instance of cluster.remoteInstances())
          if (instance.WorldId === worldId && instance.ConnectedUsers.includes(userId)) return true;
      }
      return false;
    },

    /** Whether `userId` and `otherUserId` are both in one live instance. */
    shareInstance(userId: string, otherUserId: string): boolean {
      const mine = membership.get(userId);
      const theirs = membership.get(otherUserId);
      if (mine && theirs) for (const instanceId of mine) if (theirs.has(instanceId)) return true;
      if (cluster?.inRemoteInstance(userId) && cluster.inRemoteInstance(otherUserId)) {
        for (const instance of cluster.remoteInstances()) {
          if (instance.ConnectedUsers.includes(userId) && instance.ConnectedUsers.includes(otherUserId))
            return true;
        }
      }
      return false;
    },

    async requestNew(userId: string, args: Args): Promise<void> {
      if (forwarded('requestNew', userId, args)) return;
      const fail = (reason: InstanceRefusal) =>
        notifier.send(userId, 'failedtocreatetemporaryinstance', { reason });
      const worldId = str(args.worldId);
      const world = worldId ? await deps.world(worldId) : undefined;
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
        }, deps.requestTimeoutMs),
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
    },

    claim(gameServerId: string, args: Args): void {
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
      addMember(instance, request.userId);
      deps.onInstanceOpened?.(instance.WorldId);
      const token = tempToken();
      gameServers.sendToGameServer(gameServerId, 'selectedgameserver', { instanceMeta: instance });
      gameServers.sendToGameServer(gameServerId, 'tempusertoken', {
        tempUserToken: token,
        userId: request.userId,
        instanceId: instance.InstanceId,
      });
      for (const other of gameServers.gameServerIds()) {
        if (other !== gameServerId)
          gameServers.sendToGameServer(other, 'notselectedgameserver', { temporaryId });
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
    },

    ready(gameServerId: string, args: Args): void {
      const instance = ownedInstance(gameServerId, args);
      if (!instance) return;
      instance.Readied = true;
      broadcastUpdate(instance);
    },

    remove(gameServerId: string, args: Args): void {
      const instance = ownedInstance(gameServerId, args);
      if (instance) destroy(instance, true);
    },

    /** addmoderator, removemoderator, kickuser, banuser, unbanuser from the instance's game server. */
    moderate(gameServerId: string, name: string, args: Args): void {
      const instance = ownedInstance(gameServerId, args);
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
          if (removeMember(instance, userId))
            notifier.send(userId, 'leftinstance', { gameServerId, instanceId: instance.InstanceId });
          gameServers.sendToGameServer(gameServerId, 'kickeduser', reply);
          break;
        case 'banuser':
          if (!instance.BannedUsers.includes(userId)) instance.BannedUsers.push(userId);
          if (removeMember(instance, userId))
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
      broadcastUpdate(instance);
    },

    async join(userId: string, args: Args): Promise<void> {
      if (forwarded('join', userId, args)) return;
      const gameServerId = str(args.gameServerId);
      const instanceId = str(args.instanceId);
      const asked = instanceId ? instances.get(instanceId) : undefined;
      const people = await peopleFor(asked ? [asked] : [], []);
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
      addMember(instance, userId);
      const token = tempToken();
      broadcastUpdate(instance);
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
    },

    leave(userId: string, args: Args): void {
      if (forwarded('leave', userId, args)) return;
      const gameServerId = str(args.gameServerId);
      const instanceId = str(args.instanceId);
      const instance = instanceId ? instances.get(instanceId) : undefined;
      if (!instance || !gameServerId || instance.GameServerId !== gameServerId) {
        notifier.send(userId, 'failedtoleaveinstance', {
          gameServerId: gameServerId ?? '',
          instanceId: instanceId ?? '',
          reason: InstanceRefusal.UNKNOWN_INSTANCE,
        });
        return;
      }
      if (!removeMember(instance, userId)) {
        notifier.send(userId, 'failedtoleaveinstance', {
          gameServerId,
          instanceId,
          reason: InstanceRefusal.NOT_IN_INSTANCE,
        });
        return;
      }
      gameServers.sendToGameServer(gameServerId, 'kickeduser', { instanceId, userId });
      broadcastUpdate(instance);
      notifier.send(userId, 'leftinstance', { gameServerId, instanceId });
    },

    /** sendinvite with the 1.4.1 rules; answering an invite request marks it answered. */
    async sendInvite(
      senderId: string,
      args: Args,
      targetConnected: (userId: string) => boolean,
    ): Promise<void> {
      if (forwarded('sendInvite', senderId, args)) return;
      const targetUserId = str(args.targetUserId);
      const gameServerId = str(args.gameServerId);
      const instanceId = str(args.toInstanceId ?? args.instanceId);
      const asked = instanceId ? instances.get(instanceId) : undefined;
      const people = await peopleFor(asked ? [asked] : [], [
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
      if (assetToken) deps.onAssetTokenDelivered?.(target.Id, instance.WorldId, assetToken);
      notifier.send(senderId, 'sentinvite', { targetUserId: target.Id, instanceId });
      // The sender answered the target's request for an invite, if there was one.
      deps.invites
        .markAnswered(senderId, target.Id)
        .catch((error: unknown) => deps.onBackgroundError?.(error, 'marking an invite request answered'));
    },

    /** The user's last socket closed: leave every instance (the real server kept creators in; we do not). */
    userGone(userId: string): void {
      const set = membership.get(userId);
      if (!set) return;
      for (const instanceId of [...set]) {
        const instance = instances.get(instanceId);
        if (!instance || !removeMember(instance, userId)) continue;
        gameServers.sendToGameServer(instance.GameServerId, 'kickeduser', { instanceId, userId });
        broadcastUpdate(instance);
      }
    },

    /** A game server's socket closed: its instances end. */
    gameServerGone(gameServerId: string): void {
      for (const instanceId of [...(byGameServer.get(gameServerId) ?? [])]) {
        const instance = instances.get(instanceId);
        if (instance) destroy(instance, false);
      }
      byGameServer.delete(gameServerId);
    },

    /** POST instances: the instances this user may join. */
    async safeInstancesFor(userId: string): Promise<SafeInstance[]> {
      const readied = [...everyInstance()].filter((i) => i.Readied);
      const people = await peopleFor(readied, []);
      return readied.filter((i) => welcome(i, userId, people) === null).map(safe);
    },

    /** GET instances/:worldid: the world's Anyone instances. */
    publicInstancesOf(worldId: string): SafeInstance[] {
      return [...everyInstance()]
        .filter((i) => i.Readied && i.WorldId === worldId && i.InstancePublicity === InstancePublicity.Anyone)
        .map(safe);
    },

    get count(): number {
      return instances.size;
    },
  };
  return service;
}

export type InstancesService = ReturnType<typeof createInstancesService>;
