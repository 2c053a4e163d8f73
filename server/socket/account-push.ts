import type { Logger } from 'pino';
import type { AccountChangedResult } from '../protocol/moderation-tools.js';
import { ServerMessage } from '../protocol/socket.js';
import type { HostEvents, ModerationRecorded } from '../services/context.js';
import type { HostStore } from '../store/seam.js';
import type { StoredUser, UsersRepo } from '../store/users.js';
import type { SocketHub } from './hub.js';

/** The moderation actions that change what the target's own windows show (screens, badges, state). */
const ACCOUNT_ACTIONS = new Set([
  'setrank',
  'addbadge',
  'removebadge',
  'warnuser',
  'unwarnuser',
  'banuser',
  'unbanuser',
]);

export function accountChangedResult(user: StoredUser): AccountChangedResult {
  return {
    userId: user.Id,
    Rank: user.Rank,
    Badges: [...user.Badges],
    BanStatus: { ...user.BanStatus },
    BanCount: user.BanCount,
    WarnStatus: { ...user.WarnStatus },
    WarnCount: user.WarnCount,
  };
}

/**
 * Issue 28: a user whose rank, badges, warning or ban changed hears it at once on every open socket
 * (`accountchanged`, our addition), so the Moderation and Host screens appear or go without a reload. Each host
 * tells its own sockets: of the actions it commits (moderationRecorded), and of a user record another host changed
 * (the store's watch), since that host cannot reach sockets held here. Returns what stops it.
 */
export function attachAccountPush(deps: {
  events: HostEvents;
  store: HostStore;
  /** The users collection's name. */
  collection: string;
  users: UsersRepo;
  hub: SocketHub;
  log: Logger;
}): () => void {
  const { events, store, users, hub, log } = deps;
  let stopped = false;
  const push = (userId: string, why: string): void => {
    if (stopped || !hub.holdsLocally(userId)) return;
    users
      .get(userId)
      .then((user) => {
        if (user && !stopped)
          hub.sendToMany([userId], ServerMessage.accountChanged, { ...accountChangedResult(user) }, true);
      })
      .catch((error: unknown) =>
        log.error({ err: error, userId }, `pushing an account change (${why}) failed`),
      );
  };
  const onRecorded = ({ entry }: { entry: ModerationRecorded }): void => {
    if (ACCOUNT_ACTIONS.has(entry.action)) push(entry.targetUserId, entry.action);
  };
  events.on('moderationRecorded', onRecorded);
  store.watch(deps.collection, (userId, remote) => {
    if (!remote) return;
    // Changes may have been missed: everyone held here gets their current view again (idempotent).
    const affected = userId === null ? [...hub.connectedUserIds()] : [userId];
    for (const id of affected) push(id, 'another host');
  });
  return () => {
    stopped = true;
    events.off('moderationRecorded', onRecorded);
  };
}
