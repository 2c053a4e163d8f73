import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { HostConfig } from '../config.js';
import type { ModerationAction } from '../protocol/schemas.js';
import type { HostStore, Tx } from '../store/seam.js';
import type { StoredUser, UsersRepo } from '../store/users.js';
import type { Clock } from './clock.js';
import type { PasswordHasher } from './passwords.js';
import type { SharedLimits } from './limits.js';

// The clock is a module of its own so the limits (limits.ts, login-throttle.ts), which this file's ServiceDeps names,
// take it without importing this file back.
export { systemClock, unixSeconds, type Clock } from './clock.js';

export interface Ids {
  /** `prefix_` + lowercase UUID v4, e.g. `user_3f0c…`. */
  id(
    prefix:
      | 'user'
      | 'avatar'
      | 'world'
      | 'file'
      | 'instance'
      | 'gameserver'
      | 'invreq'
      | 'modlog'
      | 'gstoken'
      | 'invcode'
      | 'usernote'
      | 'webhook',
  ): string;
  /** A secret of at least 256 bits from the CSPRNG, URL-safe. */
  secret(): string;
}

export const randomIds: Ids = {
  id: (prefix) => `${prefix}_${randomUUID()}`,
  secret: () => randomBytes(48).toString('base64url'),
};

/** What the socket layer knows about a user's live connections; the accounts service only reads it. */
export interface Presence {
  isConnected(userId: string): boolean;
  isInWorld(userId: string): boolean;
}

export const nobodyConnected: Presence = { isConnected: () => false, isInWorld: () => false };

/** Pushes a server message to every open socket of a user; the socket layer implements it. */
export interface Notifier {
  send(userId: string, message: string, result: Record<string, unknown>): void;
  /** Sends a message already serialised as `{"message":...,"result":...}`. */
  sendJson(userId: string, json: string): void;
}

/** Reaches game-server sockets; the socket layer implements it. */
export interface GameServerNotifier {
  sendToGameServer(gameServerId: string, message: string, result: Record<string, unknown>): void;
  hasGameServer(gameServerId: string): boolean;
  gameServerIds(): string[];
}

export interface HostEventMap {
  /** A user's tokens were revoked or refused from now on (logout of all, ban, warn, password change). */
  tokensRevoked: [{ userId: string; /** announced by another host (server/cluster) */ remote?: boolean }];
  /** A user's Bio changed (status, text...): the user as that change committed them. */
  bioUpdated: [{ userId: string; user: StoredUser }];
  /** The social graph between two users changed. */
  socialChanged: [{ userIds: string[] }];
  /** One social action committed: `actorId` did `action` to `targetId` (server/socket/social-push.ts tells both). */
  socialAction: [{ action: string; actor: StoredUser; target: StoredUser }];
  /** A game-server token was revoked: servers that used it must go. */
  gameServerTokenRevoked: [{ tokenId: string; remote?: boolean }];
  /** Another host changed a game-server token (null: any may have changed): servers here check theirs. */
  gameServerTokensChanged: [{ tokenId: string | null }];
  /**
   * A moderation action this host committed (its log entry; server/services/moderation.ts). Only the host that ran
   * the action emits it (server/socket/account-push.ts tells the user's own sockets on this host).
   */
  moderationRecorded: [{ entry: ModerationRecorded }];
}

/**
 * What listeners read of a moderation log entry. Its full type lives in moderation.ts, which imports this file (an
 * import back would be a circle).
 */
export interface ModerationRecorded {
  id: string;
  /** Unix seconds. */
  time: number;
  action: ModerationAction;
  moderatorId: string;
  moderatorName: string;
  targetUserId: string;
  targetName: string;
  fields: Record<string, unknown>;
  before: { Rank: number };
  after: { Rank: number };
}

export class HostEvents extends EventEmitter<HostEventMap> {}

export interface ServiceDeps {
  config: HostConfig;
  store: HostStore;
  users: UsersRepo;
  clock: Clock;
  ids: Ids;
  presence: Presence;
  events: HostEvents;
  passwords: PasswordHasher;
  /** Cooldowns and failure throttles every host process of the community shares (in memory for one). */
  limits: SharedLimits;
  /** Queues a webhook message in the commit of the action it tells (webhook-outbox.ts). */
  webhookOutbox: WebhookOutbox;
}

/** Queues webhook messages in the commit of the action they tell (server/services/webhook-outbox.ts). */
export interface WebhookOutbox {
  /** The message of moderation action `entry`, in its commit `t`. */
  moderation(t: Tx, entry: ModerationRecorded): Promise<void>;
  /** The message of account `user`, in the commit `t` that creates it. */
  signup(t: Tx, user: StoredUser): Promise<void>;
}
