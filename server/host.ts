import { createServer as createHttpServer, type Server } from 'node:http';
import { guardConnections } from './http/connection-guard.js';
import { clientAddresses } from './socket/forwarded-address.js';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import pino, { type Logger } from 'pino';
import { ConfigError, resolveConfig, type ConfigOverrides, type HostConfig } from './config.js';
import type { ClusterLink } from './cluster/link.js';
import { randomBytes } from 'node:crypto';
import { createHttpApp } from './http/app.js';
import { createAccountsService, type AccountsService } from './services/accounts.js';
import {
  HostEvents,
  randomIds,
  systemClock,
  type Clock,
  type Ids,
  type ServiceDeps,
} from './services/context.js';
import { createPasswordHasher } from './services/passwords.js';
import { memoryLimits } from './services/limits.js';
import { createSetupService, type SetupService } from './services/setup.js';
import {
  createInvitesService,
  LEGACY_INVITE_INBOXES,
  upgradeLegacyInboxes,
  type InvitesService,
} from './services/invites.js';
import { FileInviteHistory } from './store/file-invite-history.js';
import type { InviteHistory } from './store/invite-history.js';
import type { PgStore } from './store/pg-store.js';
import type { Cooldowns } from './services/limits.js';
import { createSocialService, type SocialService } from './services/social.js';
import { attachSocket, type SocketServer } from './socket/attach.js';
import { SocketHub } from './socket/hub.js';
import type { HostCore } from './host-core.js';
import { attachSocialPush } from './socket/social-push.js';
import {
  createGameServerTokens,
  GAME_SERVER_TOKENS,
  type GameServerTokens,
} from './services/game-servers.js';
import { createInstancesService, type InstanceCluster, type InstancesService } from './services/instances.js';
import { createAssetTokens } from './services/asset-tokens.js';
import { createAssetAccess, type AssetAccess } from './services/asset-access.js';
import { createAvatarSharing } from './services/avatar-sharing.js';
import { createBuildsService } from './services/builds.js';
import { createInviteCodes, INVITE_CODES } from './services/invite-codes.js';
import { createPopularityService, POPULARITY, type PopularityService } from './services/popularity.js';
import { createSearchService, type SearchService } from './services/search.js';
import {
  AVATARS,
  CHUNK_OWNERS,
  CHUNK_SETS,
  createUploadsService,
  FILES,
  WORLDS,
  type UploadsService,
} from './services/uploads.js';
import { Store } from './store/store.js';
import type { HostStore } from './store/seam.js';
import { useAsFilesFolder } from './store/data-folder.js';
import { redactUrl } from '../shared/redact-url.js';
import { communityStatus } from './services/community-status.js';
import type { LogFileSystem } from './store/wal.js';
import {
  createModerationService,
  logKeyOf,
  MODERATION_LOG,
  MODERATION_LOG_FILE,
  type LogKey,
  type ModerationLogEntry,
  type ModerationService,
} from './services/moderation.js';
import { USERS, UsersRepo } from './store/users.js';
import { createWebhookOutbox, WEBHOOK_OUTBOX } from './services/webhook-outbox.js';
import { createWebhooks } from './services/webhooks.js';
import { createAuditLog, type AuditLogEntry } from './services/audit-log.js';
import { SETTINGS } from './store/settings.js';
import { attachAccountPush } from './socket/account-push.js';
import { attachContentJobPush } from './socket/content-job-push.js';
import { CONTENT_JOBS, createContentJobs, type ContentJobOptions } from './services/content-jobs.js';
import { createUserNotes, USER_NOTES } from './services/user-notes.js';

export type { HostCore } from './host-core.js';

export interface HostServer {
  readonly config: HostConfig;
  /** e.g. http://127.0.0.1:5180 */
  readonly url: string;
  readonly port: number;
  /** Addresses LAN clients can use, e.g. http://192.168.1.20:5180 (empty when bound to loopback only). */
  readonly lanUrls: string[];
  /** The first-run setup secret while no owner exists; null afterwards. Show it only on the host machine. */
  readonly setupSecret: string | null;
  readonly store: HostStore;
  readonly users: UsersRepo;
  readonly accounts: AccountsService;
  readonly social: SocialService;
  readonly setup: SetupService;
  readonly invites: InvitesService;
  readonly moderation: ModerationService;
  readonly uploads: UploadsService;
  readonly instances: InstancesService;
  readonly gameServerTokens: GameServerTokens;
  readonly search: SearchService;
  readonly popularity: PopularityService;
  readonly hub: SocketHub;
  readonly socket: SocketServer;
  /** The port socket clients are told to use (the HTTP port unless a separate one is configured). */
  readonly socketPort: number;
  readonly events: HostEvents;
  readonly log: Logger;
  /** Every service, for embedders and tests. */
  readonly core: HostCore;
  close(): Promise<void>;
}

export interface HostOptions {
  clock?: Clock;
  ids?: Ids;
  logger?: Logger;
  /** The write-ahead log's files (tests inject disk failures here). */
  logFileSystem?: LogFileSystem;
  /** Per-key cooldowns every host process shares (default: this process's memory). */
  cooldowns?: Cooldowns;
  /** The "remove all content" jobs (tests slow them down to stop a host half-way through one). */
  contentJobs?: ContentJobOptions;
}

export const COLLECTIONS = [
  USERS,
  LEGACY_INVITE_INBOXES,
  FILES,
  AVATARS,
  WORLDS,
  GAME_SERVER_TOKENS,
  INVITE_CODES,
  POPULARITY,
  SETTINGS,
  CHUNK_SETS,
  CHUNK_OWNERS,
  CONTENT_JOBS,
  USER_NOTES,
  WEBHOOK_OUTBOX,
];

/** Opens the data folder and builds the services, without any network (the CLI's admin commands use this). */
export async function openHost(
  overrides: ConfigOverrides = {},
  options: HostOptions = {},
): Promise<HostCore> {
  const config = resolveConfig(overrides);
  const log =
    options.logger ?? pino({ level: process.env.HYPERNEX_LOG_LEVEL ?? config.logLevel, base: undefined });
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  if (config.redis !== null && config.database === null) {
    throw new ConfigError(
      '--redis needs --database: hosts that share Redis must share one PostgreSQL database',
    );
  }
  const store = await openHostStore(config, log, clock, options);
  let history: InviteHistory | null = null;
  let cluster: ClusterLink | null = null;
  try {
    const users = new UsersRepo(store);
    const events = new HostEvents();
    const hub = new SocketHub();
    if (config.redis !== null) {
      cluster = await openCluster(config, store, log, events);
      hub.join(cluster);
    }
    enforceRemoteUserChanges(store, hub, events);
    const passwords = createPasswordHasher(config.passwordHash);
    const addresses = hostAddresses(config);
    const { cachedLanUrls, localHosts } = addresses;
    const limits = await openLimits(cluster, clock, log);
    const base = { config, store, users, clock, ids, presence: hub, events, passwords, limits };
    // Issue 28: moderation actions and sign-ups queue their webhook message in their own commits.
    const deps = { ...base, webhookOutbox: createWebhookOutbox(base) };
    const inviteCodes = createInviteCodes(deps);
    const requireInviteCode = (): Promise<boolean> => inviteCodes.required();
    const accounts = createAccountsService({ ...deps, localHosts, inviteCodes, requireInviteCode });
    const social = createSocialService(deps);
    const stopSocialPush = attachSocialPush({
      events,
      notifier: hub,
      publicView: (u) => accounts.publicView(u),
    });
    const setup = createSetupService({ ...deps, accounts });
    history = await openInviteHistory(config, store, log);
    const invites: InvitesService = createInvitesService({
      ...deps,
      notifier: hub,
      cooldowns: options.cooldowns ?? limits.cooldowns,
      history,
      onBackgroundError: (error, task) =>
        log.error({ err: error, task }, 'a background task of invites failed'),
    });
    await upgradeLegacyInboxes(store, history);
    const uploads = createUploadsService({
      ...deps,
      log,
      localHosts,
      maxFileBytes: config.uploads.maxFileBytes,
      chunkSetTtlSeconds: config.uploads.chunkSetTtlSeconds,
    });
    await uploads.init();
    const gameServerTokens = createGameServerTokens(deps);
    const popularity = createPopularityService({
      ...deps,
      publicAssets: async (kind, ids) =>
        (await (kind === 'avatar' ? uploads.avatars(ids) : uploads.worlds(ids))).filter(uploads.isPublic),
      onBackgroundError: (error, task) =>
        log.error({ err: error, task }, 'a background task of popularity failed'),
    });
    forgetRemovedAssets(store, popularity, log);
    const search = createSearchService({
      ...deps,
      uploads,
      accounts,
      hideBannedUsersContent: config.hideBannedUsersContent,
    });
    const assetTokens = createAssetTokens({ ...deps, uploads });
    const builds = createBuildsService({
      dataDir: config.dataDir,
      fsync: config.fsync,
      clock,
      maxFileBytes: config.uploads.maxFileBytes,
    });
    await builds.init();
    const { instances, assetAccess } = openInstances({
      deps,
      log,
      hub,
      cluster,
      popularity,
      uploads,
      invites,
      assetTokens,
    });
    const { moderation, ...tools } = openModeration({ deps, log, hub, uploads, options });
    // Issue 28: every staff action in one audit log (the moderation log's store log).
    const audit = createAuditLog({ ...deps, log: store.log<AuditLogEntry, LogKey>(MODERATION_LOG) });
    // Issue 28: moderation actions and sign-ups, queued in their commits, to the owner's webhook in the background.
    const webhooks = createWebhooks({ ...deps, log, localHosts });
    await setup.init();
    return {
      config,
      log,
      store,
      users,
      accounts,
      social,
      setup,
      invites,
      moderation,
      uploads,
      instances,
      gameServerTokens,
      search,
      popularity,
      assetTokens,
      assetAccess,
      inviteCodes,
      builds,
      requireInviteCode,
      ids,
      clock,
      hub,
      events,
      lanUrls: cachedLanUrls,
      localHosts,
      passwords,
      webhooks,
      ...tools.services,
      audit,
      community: communityOf(config, store, cluster),
      async close() {
        stopSocialPush();
        await tools.close(); // before the store: a job finishes the item in hand and gives up its lease
        // First: a message still being sent may read the settings from the store.
        await webhooks.close();
        await popularity
          .flush()
          .catch((error: unknown) => log.error({ err: error }, 'popularity flush failed at close'));
        await invites.close();
        await uploads.close();
        await cluster?.close();
        await store.close();
      },
      setPort: addresses.setPort,
      port: addresses.port,
    };
  } catch (error) {
    await history?.close();
    await cluster?.close();
    await store.close();
    throw error;
  }
}

/** The Host screen's community facts: the embedded folder, or the database and Redis, each checked when asked. */
function communityOf(config: HostConfig, store: HostStore, cluster: ClusterLink | null) {
  const pg = config.database === null ? null : (store as PgStore);
  const database = pg && {
    url: config.database!,
    ping: () => pg.query('SELECT 1'),
    hostCount: () => pg.hostCount(),
  };
  const redis = cluster && { url: config.redis!, ping: () => cluster.redis.ping() };
  return () => communityStatus(database, redis);
}

/**
 * The moderation service and, issue 28, the "remove all content" jobs, private notes on users, the push of the jobs' progress to moderators,
 * and the push of rank, badge, warn and ban changes to the user's own open windows.
 */
function openModeration(parts: {
  deps: ServiceDeps;
  log: Logger;
  hub: SocketHub;
  uploads: UploadsService;
  options: HostOptions;
}) {
  const { deps, log, hub, uploads, options } = parts;
  const { store, users, clock } = deps;
  const moderation = createModerationService({
    ...deps,
    log: store.log<ModerationLogEntry, LogKey>(MODERATION_LOG),
    content: uploads,
  });
  const contentJobs = createContentJobs({
    store,
    users,
    clock,
    log,
    moderation,
    uploads,
    shared: deps.config.database !== null,
    options: options.contentJobs,
  });
  const userNotes = createUserNotes(deps);
  const stopJobPush = attachContentJobPush({
    store,
    collection: CONTENT_JOBS,
    users,
    hub,
    log,
    readJob: (id) => contentJobs.byId(id),
  });
  const stopAccountPush = attachAccountPush({
    events: deps.events,
    store,
    collection: USERS,
    users,
    hub,
    log,
  });
  return {
    moderation,
    services: { contentJobs, userNotes },
    async close(): Promise<void> {
      stopAccountPush();
      stopJobPush();
      await contentJobs.close();
    },
  };
}

/**
 * A removed avatar or world (by its owner or a moderator, through any host) is not ranked again: its popularity
 * counts go with each host's next save, those it had not saved yet included.
 */
function forgetRemovedAssets(store: HostStore, popularity: PopularityService, log: Logger): void {
  for (const collection of [AVATARS, WORLDS]) {
    store.watch(collection, (id) => {
      if (id === null) return;
      store
        .collection(collection)
        .has(id)
        .then((kept) => kept || popularity.forget(id))
        .catch((error: unknown) =>
          log.warn({ err: error, id }, 'could not tell whether an asset was removed'),
        );
    });
  }
}

/**
 * A change another host made to a user of this host's sockets (a ban, a sign-out, a warning) is enforced here
 * whatever told us of it: the database's own announcement, as well as the cluster's message.
 */
function enforceRemoteUserChanges(store: HostStore, hub: SocketHub, events: HostEvents): void {
  store.watch(USERS, (userId, remote) => {
    if (!remote) return;
    const affected = userId === null ? [...hub.connectedUserIds()] : hub.holdsLocally(userId) ? [userId] : [];
    for (const id of affected) events.emit('tokensRevoked', { userId: id, remote: true });
  });
}

/** The addresses this host answers on: its port (known once listening), its LAN URLs, the hosts it calls its own. */
function hostAddresses(config: HostConfig) {
  let port = config.port;
  // networkInterfaces() costs ~60 µs; addresses rarely change, so it is asked at most every 30 s.
  let lanCache = { at: 0, port: -1, urls: [] as string[] };
  const cachedLanUrls = (): string[] => {
    const now = Date.now();
    if (lanCache.port !== port || now - lanCache.at > 30_000)
      lanCache = { at: now, port, urls: lanUrls(config.host, port) };
    return lanCache.urls;
  };
  const localHosts = (): string[] => {
    const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `${config.host}:${port}`];
    if (config.publicUrl) {
      try {
        hosts.push(new URL(config.publicUrl).host);
      } catch {
        // An unparsable publicUrl only means no extra local host.
      }
    }
    for (const url of cachedLanUrls()) hosts.push(new URL(url).host);
    return hosts;
  };
  return {
    cachedLanUrls,
    localHosts,
    setPort: (value: number) => {
      port = value;
    },
    port: () => port,
  };
}

/**
 * Hosts sharing a database share their limits through Redis, so another host behind the proxy is no way round;
 * while Redis fails or hangs, each host limits in its own memory (a line in the log each way).
 */
async function openLimits(cluster: ClusterLink | null, clock: Clock, log: Logger) {
  if (!cluster) return memoryLimits(clock);
  const { redisLimits } = await import('./cluster/redis-limits.js');
  return redisLimits(cluster.redis, `${cluster.keyPrefix}limits:`, clock, { logger: log });
}

/** The instances service, wired to the sockets, the other hosts and what it records. */
function openInstances(parts: {
  deps: ServiceDeps;
  log: Logger;
  hub: SocketHub;
  cluster: ClusterLink | null;
  popularity: PopularityService;
  uploads: UploadsService;
  invites: InvitesService;
  assetTokens: ReturnType<typeof createAssetTokens>;
}) {
  const { deps, log, hub, cluster, popularity, uploads, invites, assetTokens } = parts;
  const { config, clock } = deps;
  let assetAccess: AssetAccess | null = null;
  const instances = createInstancesService({
    ...deps,
    onInstanceOpened: (worldId) => popularity.use('world', worldId),
    onAssetTokenDelivered: (userId, worldId, token) => {
      assetAccess
        ?.delivered(worldId, userId, token)
        .catch((error: unknown) =>
          log.error({ err: error, worldId }, 'recording a delivered asset token failed'),
        );
    },
    notifier: hub,
    gameServers: hub,
    world: uploads.world,
    invites,
    requestTimeoutMs: config.instances.requestTimeoutMs,
    onBackgroundError: (error, what) => log.error({ err: error }, `${what} failed; the host goes on`),
    ...(cluster && { cluster: instanceCluster(cluster) }),
  });
  hub.inWorld = instances.isInWorld;
  cluster?.onForwarded(({ op, userId, args }) => {
    instances
      .runForwarded(op, userId, args, (id) => hub.isConnected(id))
      .catch((error: unknown) =>
        log.error({ err: error, op, userId }, 'a forwarded instance message failed'),
      );
  });
  assetAccess = createAssetAccess({ clock, assetTokens, presence: hub, instances });
  return { instances, assetAccess };
}

/** The instances service's view of the other hosts (server/services/instances.ts). */
function instanceCluster(link: ClusterLink): InstanceCluster {
  return {
    holderOf: (gameServerId) => link.remoteGameServer(gameServerId)?.processId,
    anyHolder: () => {
      for (const gs of link.remoteGameServers()) return gs.processId;
      return undefined;
    },
    // Confirmed: a message Redis did not hand over in time gets its failure answer (services/instances.ts).
    forward: (processId, op, userId, args) => link.forwardConfirmed(processId, { op, userId, args }),
    remoteInstances: () => link.remoteInstances(),
    inRemoteInstance: (userId) => link.inRemoteInstance(userId),
    changed: (instance) => link.announceInstance(instance),
    ended: (instanceId) => link.announceInstanceEnded(instanceId),
  };
}

/** Settings id of the record naming the community in Redis (made by the first host that opens the database). */
const COMMUNITY = 'community';

/**
 * Joins the other hosts on this database through Redis: their users count as connected here, messages reach
 * sockets held by any of them, and sign-outs and revoked game-server tokens act on every host.
 */
async function openCluster(
  config: HostConfig,
  store: HostStore,
  log: Logger,
  events: HostEvents,
): Promise<ClusterLink> {
  // The community's name in Redis comes from the database, so hosts of different communities sharing one Redis
  // never hear each other, whatever URL each was given.
  const community = await store.tx(async (t) => {
    const repo = t.repo<{ id: string }>(SETTINGS);
    const found = await repo.get(COMMUNITY);
    return (found ?? repo.put(COMMUNITY, { id: randomBytes(9).toString('base64url') })).id;
  });
  // Loaded only here: a host on its own never loads the Redis client.
  const { ClusterLink } = await import('./cluster/link.js');
  const link = await ClusterLink.open({
    url: config.redis!,
    namespace: `hx:${community}`,
    heartbeatMs: config.cluster.heartbeatMs,
    presenceExpiryMs: config.cluster.presenceExpiryMs,
    commandTimeoutMs: config.cluster.commandTimeoutMs,
    connectTimeoutMs: config.cluster.connectTimeoutMs,
    logger: log,
    // Another host's sign-out is acted on once this host's copy has its commit (else the token would still pass).
    beforeEvent: () => store.refresh(),
  });
  events.on('tokensRevoked', ({ userId, remote }) => {
    if (!remote) link.broadcastEvent({ name: 'tokensRevoked', userId });
  });
  events.on('gameServerTokenRevoked', ({ tokenId, remote }) => {
    if (!remote) link.broadcastEvent({ name: 'gameServerTokenRevoked', tokenId });
  });
  link.onEvent((event) => {
    if (event.name === 'tokensRevoked') events.emit('tokensRevoked', { userId: event.userId, remote: true });
    else events.emit('gameServerTokenRevoked', { tokenId: event.tokenId, remote: true });
  });
  log.info(
    { redis: redactUrl(config.redis!), process: link.processId },
    'joined the other hosts through Redis',
  );
  return link;
}

const STORE_SPEC = {
  collections: COLLECTIONS,
  logs: [{ name: MODERATION_LOG, file: MODERATION_LOG_FILE, keyOf: logKeyOf }],
};

/**
 * The invite-request history: a compacted file in the data folder on the embedded store, a table every host shares
 * on PostgreSQL (into which a history the folder still holds moves once).
 */
async function openInviteHistory(config: HostConfig, store: HostStore, log: Logger): Promise<InviteHistory> {
  const bound = config.socket.inviteRequestHistory;
  if (config.database === null) {
    return FileInviteHistory.open(config.dataDir, {
      bound,
      fsync: config.fsync,
      onCompactionError: (error, file) =>
        log.error({ err: error, file }, 'compacting the invite history failed; the next request tries again'),
    });
  }
  const { PgInviteHistory } = await import('./store/pg-invite-history.js');
  const history = new PgInviteHistory(store as PgStore, bound);
  const imported = await history.importFolder(config.dataDir);
  if (imported > 0)
    log.info({ requests: imported }, 'moved the data folder’s invite-request history into the database');
  return history;
}

/**
 * The host's records: in the data folder (the embedded store, which locks it), or with `database` in PostgreSQL,
 * the data folder then holding only uploaded files that several hosts may share (no lock).
 */
export async function openHostStore(
  config: HostConfig,
  log: Logger,
  clock: Clock,
  options: HostOptions = {},
): Promise<HostStore> {
  if (config.database === null) {
    return Store.open(config.dataDir, STORE_SPEC, {
      fsync: config.fsync,
      clock: () => clock.now(),
      logger: log,
      fs: options.logFileSystem,
    });
  }
  // Loaded only here: hosts on the embedded store never load the PostgreSQL client.
  const { PgStore } = await import('./store/pg-store.js');
  await useAsFilesFolder(config.dataDir, { database: redactUrl(config.database) });
  return PgStore.open(config.database, STORE_SPEC, { logger: log, ...config.postgres });
}

/** Opens the data folder, starts the HTTP API (and UI) and returns once it accepts connections. */
export async function createServer(
  overrides: ConfigOverrides = {},
  options: HostOptions = {},
): Promise<HostServer> {
  const core = await openHost(overrides, options);
  const { config, log, store, users, accounts, social, setup, invites, moderation, uploads, hub, events } =
    core;
  const { instances, gameServerTokens, search, popularity } = core;
  let http: Server | null = null;
  let socketHttp: Server | null = null;
  let socketPort = config.socket.port ?? config.port;
  try {
    // Behind a proxy (nginx), whose address every connection would otherwise share.
    const addresses = clientAddresses(config.trustedProxies);
    const app = createHttpApp({ ...core, core, socketPort: () => socketPort, addresses });
    // Requests without Host get the envelope too (Node would answer a bare 400), and so does what its parser refuses.
    const server = createHttpServer({ requireHostHeader: false }, app.listener);
    server.on('clientError', app.clientError);
    server.on('checkExpectation', app.listener); // an unknown Expect is served as usual, not a bare 417
    http = server;
    server.keepAliveTimeout = 65_000;
    guardConnections(server, config.limits, log, addresses);
    await listen(server, config.port, config.host);
    const port = (server.address() as AddressInfo).port;
    core.setPort(port);
    const socket = attachSocket(server, {
      config,
      log,
      accounts,
      invites,
      instances,
      gameServerTokens,
      users,
      hub,
      events,
      ids: core.ids,
      clock: core.clock,
      avatarSharing: createAvatarSharing({ ...core, presence: hub }),
      originAllowed: app.origins.allows,
      refuseUpgrade: app.refuseUpgrade,
      addresses,
    });
    socketPort = port;
    if (config.socket.port !== null) {
      // Some clients want the socket on its own port: a bare server that only upgrades.
      const only = createHttpServer((_req, res) => {
        res
          .writeHead(426, { 'content-type': 'text/plain' })
          .end('This port only accepts WebSocket upgrades.');
      });
      socketHttp = only;
      guardConnections(only, config.limits, log, addresses);
      only.on('upgrade', (req, sock, head) => socket.handleUpgrade(req, sock, head));
      await listen(only, config.socket.port, config.host);
      socketPort = (only.address() as AddressInfo).port;
    }
    const socketServer = socketHttp;
    // Unfinished "remove all content" jobs go on (after a restart, or abandoned by another host).
    core.contentJobs.startRunning();
    // Webhook messages left queued (by an earlier run, a command, or a host that died) and each one queued later.
    core.webhooks.startSending();
    const sweeper = setInterval(
      () =>
        void core.uploads
          .sweepChunkSets()
          .catch((error: unknown) => log.error({ err: error }, 'chunk sweep failed')),
      Math.min(config.uploads.chunkSetTtlSeconds * 1000, 10 * 60 * 1000),
    );
    sweeper.unref();
    const popularityFlush = setInterval(
      () =>
        void popularity
          .flush()
          .catch((error: unknown) => log.error({ err: error }, 'popularity flush failed')),
      5000,
    );
    popularityFlush.unref();
    const displayHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${port}`;
    log.info({ url, dataDir: config.dataDir }, 'host started');

    let closing: Promise<void> | null = null;
    return {
      config,
      url,
      port,
      lanUrls: lanUrls(config.host, port),
      get setupSecret() {
        return setup.secret;
      },
      store,
      users,
      accounts,
      social,
      setup,
      invites,
      moderation,
      uploads,
      instances,
      gameServerTokens,
      search,
      popularity,
      hub,
      socket,
      socketPort,
      events,
      log,
      core,
      close() {
        closing ??= (async () => {
          clearInterval(sweeper);
          clearInterval(popularityFlush);
          await socket.close();
          for (const s of socketServer ? [server, socketServer] : [server]) {
            await new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            });
          }
          await core.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    http?.close();
    socketHttp?.close();
    await core.close();
    throw error;
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The http:// addresses other machines can reach, when bound to all interfaces or a LAN address. */
export function lanUrls(host: string, port: number): string[] {
  const all = host === '0.0.0.0' || host === '::';
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const net of list ?? []) {
      if (net.internal || net.family !== 'IPv4') continue;
      if (all || net.address === host) out.push(`http://${net.address}:${port}`);
    }
  }
  return out;
}

/**
 * The last net under work nobody awaited: a rejection that still escapes every handler is logged and the host
 * goes on serving (Node would otherwise end the process). Every known background promise has its own handler; this
 * one catching something is a bug to fix, so it logs at error level with the reason.
 */
export function keepServingAfterRejections(log: { error(object: object, message: string): void }): void {
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason }, 'a failure escaped every handler (a bug); the host goes on serving');
  });
}
