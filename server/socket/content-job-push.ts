import type { Logger } from 'pino';
import { Rank } from '../protocol/enums.js';
import type { ContentJobDto } from '../protocol/moderation-tools.js';
import { ServerMessage } from '../protocol/socket.js';
import type { HostStore } from '../store/seam.js';
import type { UsersRepo } from '../store/users.js';
import type { SocketHub } from './hub.js';

/** Progress of one job is pushed at most this often (a fast job commits many items a second). */
const COALESCE_MS = 100;

/**
 * Issue 28: every moderator with a window open on this host sees a "remove all content" job move on live
 * (`contentjobprogress`, our addition). Each host follows the jobs' records through the store's watch, whichever
 * host runs the job, and tells its own moderators' sockets. Returns what stops it.
 */
export function attachContentJobPush(deps: {
  store: HostStore;
  collection: string;
  users: UsersRepo;
  hub: SocketHub;
  log: Logger;
  readJob(id: string): Promise<ContentJobDto | null>;
}): () => void {
  const { store, users, hub, log } = deps;
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  async function moderatorsHere(): Promise<string[]> {
    const ids = [...hub.connectedUserIds()];
    const found = await Promise.all(ids.map((id) => users.get(id)));
    return found.filter((u) => u !== undefined && u.Rank >= Rank.Moderator).map((u) => u!.Id);
  }

  async function flush(): Promise<void> {
    timer = null;
    const jobIds = [...pending];
    pending.clear();
    if (stopped || jobIds.length === 0) return;
    const moderators = await moderatorsHere();
    if (moderators.length === 0) return;
    for (const jobId of jobIds) {
      const job = await deps.readJob(jobId);
      if (job && !stopped) hub.sendToMany(moderators, ServerMessage.contentJobProgress, { job }, true);
    }
  }

  store.watch(deps.collection, (jobId) => {
    if (stopped || jobId === null) return;
    pending.add(jobId);
    timer ??= setTimeout(() => {
      flush().catch((error: unknown) => log.error({ err: error }, 'pushing content job progress failed'));
    }, COALESCE_MS);
  });
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
