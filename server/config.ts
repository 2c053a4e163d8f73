import { z } from 'zod';
import { DEFAULT_PORT, defaultDataDir } from '../shared/host-defaults.js';

/** Every limit and setting of the host in one place, with safe defaults (DESIGN: limits as options). */
export interface HostConfig {
  /**
   * Folder holding the database and uploaded files; one process owns it at a time. With `database`, it holds
   * only uploaded files and several hosts may share it.
   */
  dataDir: string;
  /** A PostgreSQL URL (postgres://USER@HOST:PORT/DB): records live there instead of the data folder. */
  database: string | null;
  /**
   * A Redis URL (redis://HOST:PORT/N) shared by every host on `database`: socket events reach users connected to
   * another host, presence, sign-outs and limits hold across hosts. Needs `database`.
   */
  redis: string | null;
  /** Limits of the PostgreSQL store (`database`). */
  postgres: {
    /** Connections each host keeps to PostgreSQL (a transaction holds one while it runs). */
    poolSize: number;
    /** Longest wait for a connection (a new one, or a free one of the pool); past it the request is refused. */
    connectTimeoutMs: number;
    /** Longest a statement may run (PostgreSQL's statement_timeout, and the client's own wait for an answer). */
    statementTimeoutMs: number;
    /** Longest a statement waits for a row lock another transaction holds (PostgreSQL's lock_timeout). */
    lockTimeoutMs: number;
    /**
     * After a commit whose answer was lost (the connection broke), how long the host keeps trying to learn
     * whether it happened before it answers the client.
     */
    settleTimeoutMs: number;
    /**
     * Longest a statement of the migrations a start runs may take or wait for a lock: an index built over a big
     * table, another host's migrations, the commits under way.
     */
    migrationTimeoutMs: number;
    /**
     * While other hosts listen, how long a commit that changes records waits before it is acknowledged; each host
     * answers reads from its cache while it has heard everything committed up to this long ago (0: every read asks
     * PostgreSQL). At most 1000.
     */
    cacheLeaseMs: number;
    /**
     * Keys of one index (users by name, public avatars by name...) a host keeps in memory for searches; an index
     * with more is searched with queries. 0: every search is a query.
     */
    searchCacheKeys: number;
  };
  cluster: {
    /** How often a host tells the others it is alive (and who is connected to it). */
    heartbeatMs: number;
    /** A host not heard from for this long is taken for dead: its users no longer count as online. */
    presenceExpiryMs: number;
    /**
     * Longest wait for Redis to answer one command (a publish, a shared limit); past it the command fails, shared
     * limits fall back to this host's memory and a message for another host is reported as not sent.
     */
    commandTimeoutMs: number;
    /** Longest wait for a connection to Redis to open (at start and at each reconnect). */
    connectTimeoutMs: number;
  };
  /** Address to bind. 127.0.0.1 keeps the host private; 0.0.0.0 shares it on the LAN. */
  host: string;
  /** HTTP (and socket) port; 0 picks a free one. */
  port: number;
  /** The address LAN clients use, e.g. http://192.168.1.20:5180; decides which image URLs count as "local". */
  publicUrl: string | null;
  /** Lifetime of a login token in seconds (30 days, as 1.4.0). */
  tokenLifetimeSeconds: number;
  /** At most this many live tokens per user; the oldest is dropped first. */
  maxTokensPerUser: number;
  requireInviteCode: boolean;
  globalInviteCodes: string[];
  allowAnyGameServer: boolean;
  /** Tokens game servers may authenticate with, besides those created in the host's UI. */
  gameServerTokens: string[];
  instances: {
    /** A requestnewinstance no game server claims within this time fails with TIMED_OUT. */
    requestTimeoutMs: number;
  };
  /** Leave the avatars and worlds of banned users out of search results. */
  hideBannedUsersContent: boolean;
  /** Image hosts allowed in avatar/world/profile URLs besides the host itself (reference 5.6). */
  allowedDomains: string[];
  /**
   * Web origins (e.g. https://dashboard.example.com) whose pages may call the API and open sockets, besides this
   * host's own addresses (always allowed); "*" allows any page. Requests without an Origin (native clients) are
   * not concerned.
   */
  allowedOrigins: string[];
  /**
   * Addresses (or ranges such as 10.0.0.0/8) of the HTTP/WebSocket proxies in front of this host (nginx). A request
   * or socket from one of them counts as coming from the right-most X-Forwarded-For address that is not itself a
   * trusted proxy; from any other peer that header is ignored.
   */
  trustedProxies: string[];
  /** fsync each write before acknowledging it. Turning it off only helps throwaway test folders. */
  fsync: boolean;
  /** Folder with the built UI to serve at `/`; null serves no UI. */
  uiDir: string | null;
  logLevel: 'silent' | 'error' | 'warn' | 'info' | 'debug';
  passwordHash: {
    /** argon2id memory in KiB (OWASP: 19 MiB). */
    memoryCost: number;
    timeCost: number;
    /** Hashes running at once; the rest wait, so logins never starve the event loop or the fs threads. */
    concurrency: number;
  };
  uploads: {
    /** Largest upload in bytes, multipart or assembled from chunks (default 1000 MB, as the real server). */
    maxFileBytes: number;
    /** Largest decoded file sent as base64 in a JSON upload body. */
    jsonUploadBytes: number;
    /** Largest text field (e.g. avatarMeta) in a multipart upload. */
    fieldBytes: number;
    /** A chunk set untouched for this long is deleted. */
    chunkSetTtlSeconds: number;
    /**
     * A host putting a complete chunk set together renews its claim this often (a third of it); a claim not renewed
     * for this long belongs to a host that died, and the set's last chunk sent again is put together anew.
     */
    assemblyLeaseSeconds: number;
    /** Unfinished chunk sets one user may hold at once; starting another is refused. */
    chunkSetsPerUser: number;
    /** Bytes one user may hold in unfinished chunk sets (never less than one maxFileBytes file). */
    chunkBytesPerUser: number;
    /**
     * Bytes of a file part stored before valid credentials were seen. Real clients send `userid` and
     * `tokenContent` before the file, which then streams straight to disk; a file that comes first is refused
     * once it grows past this, so nobody without an account can fill the disk.
     */
    unverifiedFileBytes: number;
    /**
     * Upload requests from one address that are still arriving without valid credentials; more are refused
     * (RATE_LIMITED). A request stops counting once its credentials are checked.
     */
    unverifiedPerAddress: number;
    /**
     * Such requests from all addresses together; when full, a new one drops the one that has waited longest,
     * so anonymous uploads can never lock signed-in users out.
     */
    unverifiedTotal: number;
    /** An upload body that sends nothing for this long is dropped (TIMED_OUT) and its partial file removed. */
    idleTimeoutSeconds: number;
  };
  socket: {
    /** A separate port for socket clients that need one; null serves the socket on the HTTP port. */
    port: number | null;
    /** Ping interval; a socket that did not answer the previous ping is terminated (10 s, as the real server). */
    heartbeatMs: number;
    /** Largest incoming message in bytes; a larger one closes the socket (ws code 1009). */
    maxMessageBytes: number;
    /**
     * Bytes sent to a socket and not yet taken by its client (ws's bufferedAmount) beyond which the socket is
     * dropped: a client that stops reading must not grow the host's memory.
     */
    maxBufferedBytes: number;
    /** Sustained messages per second per socket, and the burst allowed above it. */
    messagesPerSecond: number;
    messageBurst: number;
    /** A socket that has not verified a user within this time is closed. */
    verifyTimeoutMs: number;
    /** Minimum time between two invite requests from one user to the same target. */
    inviteRequestCooldownSeconds: number;
    /** After this an unanswered invite request counts as expired. */
    inviteRequestTtlSeconds: number;
    /** Invite requests kept per user (newest first). */
    inviteRequestHistory: number;
  };
  /** The outgoing webhook (set on the Host screen): how hard the host tries to deliver each message. */
  webhooks: {
    /** Tries per message, the first included; then it is given up with a line in the log. */
    maxAttempts: number;
    /** Wait before the second try; doubled for each one after it (less a random part), up to retryMaxMs. */
    retryBaseMs: number;
    retryMaxMs: number;
    /** Longest wait an HTTP 429's retry_after may ask for; a longer one gives the message up. */
    retryAfterMaxMs: number;
    /** Longest one POST may take (connecting, sending and the answer). */
    timeoutMs: number;
    /** Messages waiting to be sent; when full the oldest is dropped with a line in the log. */
    queueSize: number;
    /** At close, how long a message being sent gets to finish; it stays queued for the next sender otherwise. */
    closeGraceMs: number;
    /**
     * How long the sender's claim on the queue lasts without renewal: with several hosts on one database, one sends
     * at a time, and another takes over once the sender's claim lapses (it died). Less than twice timeoutMs counts as that.
     */
    senderLeaseMs: number;
  };
  limits: {
    /** Largest JSON or urlencoded body, in bytes. */
    jsonBodyBytes: number;
    /** Wrong passwords for one username from one address before logins from there pause. */
    loginFailures: number;
    /** The window, in seconds, over which those failures count (and the pause lasts). */
    loginFailureWindowSeconds: number;
    /** Open connections (HTTP requests and sockets) one address may hold; more are closed as they arrive. */
    connectionsPerAddress: number;
    /** Open connections in all; more are refused. */
    connections: number;
    /** A request body (any route) that sends nothing for this long has its connection closed. */
    bodyIdleSeconds: number;
    /**
     * For this long after a password sign-in (with its 2FA code when 2FA is on) its token alone confirms
     * remove2fa, a signed-in resetPassword and changePassword: how every official client calls them.
     */
    recentSignInSeconds: number;
  };
}

// The desktop shell's settings start on these too: they live in shared/, which it loads without the server.
export { DEFAULT_PORT, defaultDataDir };

export function defaultConfig(): HostConfig {
  return {
    dataDir: defaultDataDir(),
    database: null,
    redis: null,
    postgres: {
      poolSize: 10,
      connectTimeoutMs: 3000,
      statementTimeoutMs: 5000,
      lockTimeoutMs: 2000,
      settleTimeoutMs: 30_000,
      migrationTimeoutMs: 600_000,
      cacheLeaseMs: 50,
      searchCacheKeys: 50_000,
    },
    cluster: { heartbeatMs: 2000, presenceExpiryMs: 10_000, commandTimeoutMs: 1000, connectTimeoutMs: 2000 },
    host: '127.0.0.1',
    port: DEFAULT_PORT,
    publicUrl: null,
    tokenLifetimeSeconds: 30 * 24 * 60 * 60,
    maxTokensPerUser: 50,
    requireInviteCode: false,
    globalInviteCodes: [],
    allowAnyGameServer: false,
    gameServerTokens: [],
    instances: { requestTimeoutMs: 5000 },
    allowedDomains: ['i.imgur.com'],
    allowedOrigins: [],
    trustedProxies: [],
    hideBannedUsersContent: true,
    fsync: true,
    uiDir: null,
    logLevel: 'info',
    passwordHash: { memoryCost: 19_456, timeCost: 2, concurrency: 1 },
    uploads: {
      maxFileBytes: 1000 * 1_000_000,
      jsonUploadBytes: 16 * 1024 * 1024,
      fieldBytes: 1024 * 1024,
      chunkSetTtlSeconds: 24 * 60 * 60,
      assemblyLeaseSeconds: 60,
      chunkSetsPerUser: 8,
      chunkBytesPerUser: 2 * 1000 * 1_000_000,
      unverifiedFileBytes: 1024 * 1024,
      unverifiedPerAddress: 16,
      unverifiedTotal: 64,
      idleTimeoutSeconds: 60,
    },
    socket: {
      port: null,
      heartbeatMs: 10_000,
      maxMessageBytes: 64 * 1024,
      maxBufferedBytes: 1024 * 1024,
      messagesPerSecond: 20,
      messageBurst: 60,
      verifyTimeoutMs: 60_000,
      inviteRequestCooldownSeconds: 30,
      inviteRequestTtlSeconds: 15 * 60,
      inviteRequestHistory: 200,
    },
    webhooks: {
      maxAttempts: 5,
      retryBaseMs: 2000,
      retryMaxMs: 60_000,
      retryAfterMaxMs: 300_000,
      timeoutMs: 10_000,
      queueSize: 100,
      closeGraceMs: 2000,
      senderLeaseMs: 30_000,
    },
    limits: {
      jsonBodyBytes: 256 * 1024,
      loginFailures: 10,
      loginFailureWindowSeconds: 600,
      connectionsPerAddress: 256,
      connections: 8192,
      bodyIdleSeconds: 60,
      recentSignInSeconds: 600,
    },
  };
}

export type ConfigOverrides = Partial<
  Omit<
    HostConfig,
    'passwordHash' | 'limits' | 'socket' | 'uploads' | 'instances' | 'cluster' | 'postgres' | 'webhooks'
  >
> & {
  webhooks?: Partial<HostConfig['webhooks']>;
  cluster?: Partial<HostConfig['cluster']>;
  postgres?: Partial<HostConfig['postgres']>;
  instances?: Partial<HostConfig['instances']>;
  uploads?: Partial<HostConfig['uploads']>;
  passwordHash?: Partial<HostConfig['passwordHash']>;
  limits?: Partial<HostConfig['limits']>;
  socket?: Partial<HostConfig['socket']>;
};

/** A configuration (a --config file, createServer's overrides) names a key this host does not know, or gives a
 * value of the wrong type; the message names the key. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const numberValue = z.number();
const portValue = z.number().int().min(0).max(65535);
const strings = z.array(z.string());

/** Every key of HostConfig and the type of its value; a section's keys are each optional, nothing else allowed. */
const CONFIG_SHAPE = {
  dataDir: z.string(),
  database: z.string().nullable(),
  redis: z.string().nullable(),
  postgres: z
    .strictObject({
      poolSize: z.number().int().min(1).max(1000),
      connectTimeoutMs: numberValue,
      statementTimeoutMs: numberValue,
      lockTimeoutMs: numberValue,
      settleTimeoutMs: numberValue,
      migrationTimeoutMs: numberValue,
      cacheLeaseMs: z.number().int().min(0).max(1000),
      searchCacheKeys: z.number().int().min(0).max(10_000_000),
    })
    .partial(),
  cluster: z
    .strictObject({
      heartbeatMs: numberValue,
      presenceExpiryMs: numberValue,
      commandTimeoutMs: numberValue,
      connectTimeoutMs: numberValue,
    })
    .partial(),
  host: z.string(),
  port: portValue,
  publicUrl: z.string().nullable(),
  tokenLifetimeSeconds: numberValue,
  maxTokensPerUser: numberValue,
  requireInviteCode: z.boolean(),
  globalInviteCodes: strings,
  allowAnyGameServer: z.boolean(),
  gameServerTokens: strings,
  instances: z.strictObject({ requestTimeoutMs: numberValue }).partial(),
  hideBannedUsersContent: z.boolean(),
  allowedDomains: strings,
  allowedOrigins: strings,
  trustedProxies: z.array(
    z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()], {
      error: 'not an IP address or a range such as 10.0.0.0/8',
    }),
  ),
  fsync: z.boolean(),
  uiDir: z.string().nullable(),
  logLevel: z.enum(['silent', 'error', 'warn', 'info', 'debug']),
  passwordHash: z
    .strictObject({ memoryCost: numberValue, timeCost: numberValue, concurrency: numberValue })
    .partial(),
  uploads: z
    .strictObject({
      maxFileBytes: numberValue,
      jsonUploadBytes: numberValue,
      fieldBytes: numberValue,
      chunkSetTtlSeconds: numberValue,
      assemblyLeaseSeconds: numberValue,
      chunkSetsPerUser: numberValue,
      chunkBytesPerUser: numberValue,
      unverifiedFileBytes: numberValue,
      unverifiedPerAddress: numberValue,
      unverifiedTotal: numberValue,
      idleTimeoutSeconds: numberValue,
    })
    .partial(),
  socket: z
    .strictObject({
      port: portValue.nullable(),
      heartbeatMs: numberValue,
      maxMessageBytes: numberValue,
      maxBufferedBytes: numberValue,
      messagesPerSecond: numberValue,
      messageBurst: numberValue,
      verifyTimeoutMs: numberValue,
      inviteRequestCooldownSeconds: numberValue,
      inviteRequestTtlSeconds: numberValue,
      inviteRequestHistory: numberValue,
    })
    .partial(),
  webhooks: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(100),
      retryBaseMs: numberValue,
      retryMaxMs: numberValue,
      retryAfterMaxMs: numberValue,
      timeoutMs: numberValue,
      queueSize: z.number().int().min(1),
      closeGraceMs: numberValue,
      senderLeaseMs: numberValue,
    })
    .partial(),
  limits: z
    .strictObject({
      jsonBodyBytes: numberValue,
      loginFailures: numberValue,
      loginFailureWindowSeconds: numberValue,
      connectionsPerAddress: numberValue,
      connections: numberValue,
      bodyIdleSeconds: numberValue,
      recentSignInSeconds: z.number().min(0),
    })
    .partial(),
} satisfies Record<keyof HostConfig, z.ZodType>;

const ConfigOverridesSchema = z.strictObject(CONFIG_SHAPE).partial();

/**
 * `input` as configuration overrides, or a ConfigError naming each unknown key and each value of the wrong type
 * (`source` says where they came from, e.g. the --config file).
 */
export function parseConfigOverrides(input: unknown, source = 'configuration'): ConfigOverrides {
  const parsed = ConfigOverridesSchema.safeParse(input);
  if (parsed.success) return parsed.data satisfies ConfigOverrides;
  const problems = parsed.error.issues.flatMap((issue) => {
    const at = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => `unknown key "${[...at, key].join('.')}"`);
    }
    const what = issue.message.replace(/^Invalid input: /, '');
    return [at.length > 0 ? `"${at.join('.')}": ${what}` : `must be a JSON object (${what})`];
  });
  return configError(source, problems);
}

function configError(source: string, problems: string[]): never {
  throw new ConfigError(`${source}: ${problems.join('; ')}`);
}

/** The defaults under `overrides`, which are checked first (unknown keys and wrong types are refused). */
export function resolveConfig(overrides: ConfigOverrides = {}): HostConfig {
  parseConfigOverrides(overrides);
  const base = defaultConfig();
  return {
    ...base,
    ...overrides,
    passwordHash: { ...base.passwordHash, ...overrides.passwordHash },
    limits: { ...base.limits, ...overrides.limits },
    socket: { ...base.socket, ...overrides.socket },
    uploads: { ...base.uploads, ...overrides.uploads },
    instances: { ...base.instances, ...overrides.instances },
    cluster: { ...base.cluster, ...overrides.cluster },
    postgres: { ...base.postgres, ...overrides.postgres },
    webhooks: { ...base.webhooks, ...overrides.webhooks },
  };
}
