import { InstanceRefusal, type InstanceMeta } from '../../protocol/instances.js';
import { str, type Args, type ForwardedOp, type InstancesShared } from './state.js';

/** Every live instance: this process's, then those other processes announced. */
export function* everyInstance(up: InstancesShared): Generator<InstanceMeta> {
  yield* up.tables.instances.values();
  const { cluster } = up.deps;
  if (cluster) for (const instance of cluster.remoteInstances()) yield instance;
}

/**
 * Where a user's instance message about `gameServerId` runs: another process, when it holds that server (true:
 * handed to it; the user is told when that failed).
 */
export function forwarded(up: InstancesShared, op: ForwardedOp, userId: string, args: Args): boolean {
  const { cluster, gameServers } = up.deps;
  if (!cluster || up.forwarding.running) return false;
  const gameServerId = str(args.gameServerId);
  let holder =
    gameServerId && !gameServers.hasGameServer(gameServerId) ? cluster.holderOf(gameServerId) : undefined;
  // A new instance on no server in particular: offered to this process's servers, or another's when it has none.
  if (op === 'requestNew' && !gameServerId && gameServers.gameServerIds().length === 0)
    holder = cluster.anyHolder();
  if (holder === undefined) return false;
  cluster.forward(holder, op, userId, args).catch(() => notForwarded(up, op, userId, args));
  return true;
}

/** Tells the user `op` did not reach the game server's process, as `op` answers a refusal (the link logged why). */
function notForwarded(up: InstancesShared, op: ForwardedOp, userId: string, args: Args): void {
  const { notifier } = up.deps;
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

/**
 * Runs `run` (a user's instance message another process forwarded to this one, which holds the game server) with
 * forwarding off: `forwarded` is asked synchronously at the start of each op, while the flag is set.
 */
export function runForwarded(up: InstancesShared, run: () => Promise<void> | void): Promise<void> {
  up.forwarding.running = true;
  let done: Promise<void> | void;
  try {
    done = run();
  } finally {
    up.forwarding.running = false;
  }
  return Promise.resolve(done);
}
