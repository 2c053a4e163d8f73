import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { HostConfig } from '../config.js';
import type { AccountsService } from '../services/accounts.js';
import type { AvatarSharing } from '../services/avatar-sharing.js';
import type { HostEvents } from '../services/context.js';
import type { GameServerTokens } from '../services/game-servers.js';
import type { InstancesService } from '../services/instances.js';
import type { InvitesService } from '../services/invites.js';
import type { UsersRepo } from '../store/users.js';
import type { Connection, SocketLimits } from './connection.js';
import type { ClientAddresses } from './forwarded-address.js';
import type { SocketHub } from './hub.js';

/** Answers waiting for the history write that makes their invite request durable. */
export interface InviteAnswers {
  answerWhenSaved(conn: Connection, saved: Promise<void>, text: string, targetUserId: string): void;
}

export interface SocketDeps {
  config: HostConfig;
  log: Logger;
  accounts: AccountsService;
  invites: InvitesService;
  instances: InstancesService;
  gameServerTokens: GameServerTokens;
  users: UsersRepo;
  hub: SocketHub;
  events: HostEvents;
  ids: { id(prefix: 'gameserver'): string; secret(): string };
  clock: { now(): number };
  /** shareavatartoken (reference 8.4); without it the message is ignored. */
  avatarSharing?: AvatarSharing;
  /** Whether a page of this Origin may open a socket (requests without one always may). */
  originAllowed?: (origin: string) => boolean;
  /** Answers a refused upgrade on the raw socket (the API's envelope), then ends it. */
  refuseUpgrade?: (socket: Duplex) => void;
  /** Where each upgrade comes from (through trusted proxies): the address presence and asset access go by. */
  addresses: ClientAddresses;
}

/** What the parts of one socket server share: its dependencies and the state of its sockets. */
export interface SocketContext {
  deps: SocketDeps;
  limits: SocketLimits;
  /** Every open connection, verified or not. */
  connections: Set<Connection>;
  inviteAnswers: InviteAnswers;
}

/** Logs the failure of work nobody waits for (pushes after a change), with what it was. */
export function background(
  ctx: SocketContext,
  work: Promise<unknown>,
  what: string,
  userId: string | null,
): void {
  work.catch((error: unknown) => ctx.deps.log.error({ err: error, userId }, `${what} failed`));
}
