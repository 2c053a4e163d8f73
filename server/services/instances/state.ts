import { randomBytes } from 'node:crypto';
import type { InstanceMeta, InstanceProtocol, InstancePublicity } from '../../protocol/instances.js';
import type { WorldMetaDto } from '../../protocol/uploads.js';
import type { StoredUser } from '../../store/users.js';
import type { GameServerNotifier, Notifier, ServiceDeps } from '../context.js';
import type { InvitesService } from '../invites.js';

export interface PendingRequest {
  temporaryId: string;
  userId: string;
  worldId: string;
  publicity: InstancePublicity;
  protocol: InstanceProtocol;
  timer: NodeJS.Timeout;
}

export type Args = Record<string, unknown>;
/** A user's instance messages that run where the game server is. */
export type ForwardedOp = 'join' | 'leave' | 'requestNew' | 'sendInvite';
/** Users by id, read once for the checks of one request. */
export type People = ReadonlyMap<string, StoredUser>;

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

export type InstancesDeps = Pick<ServiceDeps, 'users' | 'ids' | 'config'> & {
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
};

/** What this process holds of live instances and instance requests, every one by id. */
export interface InstanceTables {
  pending: Map<string, PendingRequest>;
  instances: Map<string, InstanceMeta>;
  byGameServer: Map<string, Set<string>>;
  /** user id -> instances whose ConnectedUsers hold them */
  membership: Map<string, Set<string>>;
}

/** What the parts of the instances service share: its dependencies and this process's tables. */
export interface InstancesShared {
  deps: InstancesDeps;
  tables: InstanceTables;
  /** While a message another process forwarded runs: it runs here whatever this process knows (no bouncing). */
  forwarding: { running: boolean };
}

export function emptyTables(): InstanceTables {
  return { pending: new Map(), instances: new Map(), byGameServer: new Map(), membership: new Map() };
}

export const str = (value: unknown): string | null =>
  typeof value === 'string' && value.length > 0 && value.length <= 300 ? value : null;

/** A secret for one user in one instance, handed to the game server and the user (reference 8.4). */
export const tempToken = (): string => randomBytes(24).toString('base64url');

export function addMember(tables: InstanceTables, instance: InstanceMeta, userId: string): void {
  if (!instance.ConnectedUsers.includes(userId)) instance.ConnectedUsers.push(userId);
  let set = tables.membership.get(userId);
  if (!set) tables.membership.set(userId, (set = new Set()));
  set.add(instance.InstanceId);
}

export function removeMember(tables: InstanceTables, instance: InstanceMeta, userId: string): boolean {
  const index = instance.ConnectedUsers.indexOf(userId);
  if (index < 0) return false;
  instance.ConnectedUsers.splice(index, 1);
  const set = tables.membership.get(userId);
  set?.delete(instance.InstanceId);
  if (set && set.size === 0) tables.membership.delete(userId);
  return true;
}

/** Tells the instance's game server, its users and the other processes the instance as it is now. */
export function broadcastUpdate(up: InstancesShared, instance: InstanceMeta): void {
  const { cluster, gameServers, notifier } = up.deps;
  cluster?.changed(instance);
  const result = { instanceMeta: instance };
  gameServers.sendToGameServer(instance.GameServerId, 'updatedinstance', result);
  for (const userId of instance.ConnectedUsers) notifier.send(userId, 'updatedinstance', result);
}
