import type { Logger } from 'pino';
import type { HostConfig } from './config.js';
import type { CommunityDto } from './protocol/host-info.js';
import type { AccountsService } from './services/accounts.js';
import type { AssetAccess } from './services/asset-access.js';
import type { AssetTokens } from './services/asset-tokens.js';
import type { AuditLog } from './services/audit-log.js';
import type { BuildsService } from './services/builds.js';
import type { Clock, HostEvents, Ids } from './services/context.js';
import type { GameServerTokens } from './services/game-servers.js';
import type { InstancesService } from './services/instances.js';
import type { InviteCodes } from './services/invite-codes.js';
import type { InvitesService } from './services/invites.js';
import type { ModerationService } from './services/moderation.js';
import type { PasswordHasher } from './services/passwords.js';
import type { PopularityService } from './services/popularity.js';
import type { SearchService } from './services/search.js';
import type { SetupService } from './services/setup.js';
import type { SocialService } from './services/social.js';
import type { UploadsService } from './services/uploads.js';
import type { WebhooksService } from './services/webhooks.js';
import type { ContentJobs } from './services/content-jobs.js';
import type { UserNotes } from './services/user-notes.js';
import type { SocketHub } from './socket/hub.js';
import type { HostStore } from './store/seam.js';
import type { UsersRepo } from './store/users.js';

/**
 * What the HTTP routes are handed: every service of one host. Types only, so server/http can
 * import it without importing host.ts (which builds the HTTP app: that would be an import circle).
 */
export interface HostCore {
  config: HostConfig;
  log: Logger;
  store: HostStore;
  users: UsersRepo;
  accounts: AccountsService;
  social: SocialService;
  setup: SetupService;
  invites: InvitesService;
  moderation: ModerationService;
  uploads: UploadsService;
  instances: InstancesService;
  gameServerTokens: GameServerTokens;
  search: SearchService;
  popularity: PopularityService;
  assetTokens: AssetTokens;
  /** Who may read the whole meta of an OwnerOnly avatar or world. */
  assetAccess: AssetAccess;
  inviteCodes: InviteCodes;
  /** Client builds, as plain files under `<dataDir>/builds/` (SPEC section 8). */
  builds: BuildsService;
  /** Whether sign-up needs an invite code now: the owner's setting, else the configuration. */
  requireInviteCode(): Promise<boolean>;
  ids: Ids;
  clock: Clock;
  hub: SocketHub;
  events: HostEvents;
  /** Closes the data folder (log and store). */
  close(): Promise<void>;
  /** Set once the HTTP server listens; used for the host's own URLs. */
  setPort(port: number): void;
  port(): number;
  /** The addresses other machines on the LAN can use (none when bound to this machine only). */
  lanUrls(): string[];
  /** The `host:port`s that count as this host in image URLs. */
  localHosts(): string[];
  passwords: PasswordHasher;
  /** The outgoing webhook: its settings (URL masked) and the test message (issue 28). */
  webhooks: WebhooksService;
  /** "Remove all content of this user" jobs (issue 28). */
  contentJobs: ContentJobs;
  /** Private notes moderators keep on users (issue 28). */
  userNotes: UserNotes;
  /** Every staff action in one log, with filters, exports and ban import (issue 28). */
  audit: AuditLog;
  /** Where the community lives (embedded folder, or database and Redis, each checked now), for the Host screen. */
  community(): Promise<CommunityDto>;
}
