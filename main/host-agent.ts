// What the desktop shell needs from a running host, computed next to it (in the host process): who is connected,
// the invite and friend requests of the signed-in desktop user, whether uploads are arriving. No electron here:
// this runs in the utility process (and in plain Node in tests).
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { HostServer } from '../server/host.js';
import type { HostClients } from '../server/protocol/host-bridge.js';
import { ServerMessage } from '../server/protocol/socket.js';
import type { HostNotice } from './host-messages.js';

/** A chunked upload whose folder changed this recently counts as still arriving. */
export const ACTIVE_CHUNK_SET_MS = 2 * 60 * 1000;

/** Who is connected to a running host: open sockets and the verified users, by name. */
export function clientsOf(server: HostServer | null): HostClients {
  if (!server) return { connections: 0, users: [] };
  const users = [...server.hub.connectedUserIds()].map((userId) => ({
    userId,
    username: server.hub.usernameOf(userId) ?? userId,
    sockets: server.hub.socketsOf(userId).size,
  }));
  users.sort((a, b) => a.username.localeCompare(b.username));
  return { connections: server.socket.connections, users };
}

/**
 * Uploads the host is receiving now: files streaming into tmp/ (emptied at every start, so whatever is there is
 * live) and chunked uploads touched in the last two minutes. The updater waits while this is above zero.
 */
export async function uploadsInProgress(dataDir: string, now = Date.now()): Promise<number> {
  const names = async (dir: string): Promise<string[]> => readdir(dir).catch(() => []);
  let count = (await names(join(dataDir, 'tmp'))).length;
  for (const name of await names(join(dataDir, 'chunks'))) {
    const info = await stat(join(dataDir, 'chunks', name)).catch(() => null);
    if (info && now - info.mtimeMs < ACTIVE_CHUNK_SET_MS) count++;
  }
  return count;
}

export interface HostAgent {
  clients(): HostClients;
  /** Watches this user's invite and friend requests (null: nobody). False when the token does not verify. */
  setDesktopUser(user: { userId: string; tokenContent: string } | null): Promise<boolean>;
  uploadsInProgress(): Promise<number>;
  dismissInvite(userId: string, requestId: string): Promise<void>;
  dispose(): void;
}

/** A user record as the host commits it. */
type User = NonNullable<Awaited<ReturnType<HostServer['users']['get']>>>;

const GOT_INVITE_REQUEST_PREFIX = `{"message":"${ServerMessage.gotInviteRequest}"`;

interface GotInviteRequest {
  result: { fromUserId: string; requestId: string; fromUsername: string };
}

/**
 * Attaches to a running server's hub and events. Invite requests are seen where the hub hands them to the
 * target's sockets (so only requests the host really delivered become notifications); friend requests by
 * comparing the desktop user's pending requests whenever their social graph changes.
 */
export function attachHostAgent(server: HostServer, notice: (notice: HostNotice) => void): HostAgent {
  let watched: string | null = null;
  let pendingFriends = new Set<string>();
  let desktopUserCalls = 0;

  const hub = server.hub;
  const deliver = hub.sendJson;
  // The hub is the one place every message to a user's sockets passes; wrapping this instance's method keeps the
  // server untouched. test/main/host-agent.test.ts sends a real invite request to prove it still passes here.
  hub.sendJson = function sendJson(this: typeof hub, userId: string, json: string): void {
    deliver.call(this, userId, json);
    if (userId !== watched || !json.startsWith(GOT_INVITE_REQUEST_PREFIX)) return;
    try {
      const { result } = JSON.parse(json) as GotInviteRequest;
      notice({
        kind: 'invite-request',
        userId,
        requestId: result.requestId,
        fromUserId: result.fromUserId,
        fromUsername: result.fromUsername,
      });
    } catch {
      // A message we cannot read is still delivered to the sockets; only the notification is lost.
    }
  };

  // The two users as a social action committed them: a new entry in the watched user's friend requests is news.
  const onSocialAction = ({ actor, target }: { actor: User; target: User }): void => {
    const userId = watched;
    const [me, other] = target.Id === userId ? [target, actor] : actor.Id === userId ? [actor, target] : [];
    if (!me || !other || userId === null) return;
    const now = new Set(me.FriendRequests);
    for (const fromUserId of now) {
      if (pendingFriends.has(fromUserId) || fromUserId !== other.Id) continue;
      notice({ kind: 'friend-request', userId, fromUserId, fromUsername: other.Username });
    }
    pendingFriends = now;
  };
  server.events.on('socialAction', onSocialAction);

  return {
    clients: () => clientsOf(server),
    async setDesktopUser(user) {
      // The newest call wins, whichever lookup answers first.
      const call = ++desktopUserCalls;
      const found = user ? await server.accounts.authenticate(user.userId, user.tokenContent) : null;
      if (call !== desktopUserCalls) return user === null || found !== null;
      watched = found?.Id ?? null;
      pendingFriends = new Set(found?.FriendRequests ?? []);
      return user === null || found !== null;
    },
    uploadsInProgress: () => uploadsInProgress(server.config.dataDir),
    async dismissInvite(userId, requestId) {
      await server.invites.update(userId, requestId, 'dismissed');
    },
    dispose() {
      server.events.off('socialAction', onSocialAction);
      hub.sendJson = deliver;
    },
  };
}
