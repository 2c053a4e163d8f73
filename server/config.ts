import { homedir } from 'node:os';
import { join } from 'node:path';

/** Every limit and setting of the host in one place, with safe defaults (DESIGN: limits as options). */
export interface HostConfig {
  /**
   * Folder holding the database and uploaded files; one process owns it at a time. With `database`, it holds
   * only uploaded files and several hosts may share it.
   */
  dataDir: string;
  /** A PostgreSQL URL (postgres://USER@HOST:PORT/DB): records live there instead of the data folder. */
  database: string | null;
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
  /** fsync each write before acknowledging it. Turning it off only helps throwaway test folders. */
  fsync: boolean;
  /**
   * Answer the hottest read routes (getUser, search, popularity...) straight from node:http instead of through
   * the Koa stack, with identical answers (server/http/lean.ts). Off routes every request through Koa.
   */
  leanLane: boolean;
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
  };
  socket: {
    /** A separate port for socket clients that need one; null serves the socket on the HTTP port. */
    port: number | null;
    /** Ping interval; a socket that did not answer the previous ping is terminated (10 s, as the real server). */
    heartbeatMs: number;
    /** Largest incoming message in bytes; a larger one closes the socket (ws code 1009). */
    maxMessageBytes: number;
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
  limits: {
    /** Largest JSON or urlencoded body, in bytes. */
    jsonBodyBytes: number;
    /** Wrong passwords for one username from one address before logins from there pause. */
    loginFailures: number;
    /** The window, in seconds, over which those failures count (and the pause lasts). */
    loginFailureWindowSeconds: number;
  };
}

export function defaultDataDir(): string {
  if (process.platform === 'win32') {
    return join(process.env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'Hypernex Companion');
  }
  if (process.platform === 'darwin')
    return join(homedir(), 'Library', 'Application Support', 'Hypernex Companion');
  return join(process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'hypernex-companion');
}

export const DEFAULT_PORT = 5180;

export function defaultConfig(): HostConfig {
  return {
    dataDir: defaultDataDir(),
    database: null,
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
    hideBannedUsersContent: true,
    fsync: true,
    leanLane: true,
    uiDir: null,
    logLevel: 'info',
    passwordHash: { memoryCost: 19_456, timeCost: 2, concurrency: 1 },
    uploads: {
      maxFileBytes: 1000 * 1_000_000,
      jsonUploadBytes: 16 * 1024 * 1024,
      fieldBytes: 1024 * 1024,
      chunkSetTtlSeconds: 24 * 60 * 60,
    },
    socket: {
      port: null,
      heartbeatMs: 10_000,
      maxMessageBytes: 64 * 1024,
      messagesPerSecond: 20,
      messageBurst: 60,
      verifyTimeoutMs: 60_000,
      inviteRequestCooldownSeconds: 30,
      inviteRequestTtlSeconds: 15 * 60,
      inviteRequestHistory: 200,
    },
    limits: { jsonBodyBytes: 256 * 1024, loginFailures: 10, loginFailureWindowSeconds: 600 },
  };
}

export type ConfigOverrides = Partial<
  Omit<HostConfig, 'passwordHash' | 'limits' | 'socket' | 'uploads' | 'instances'>
> & {
  instances?: Partial<HostConfig['instances']>;
  uploads?: Partial<HostConfig['uploads']>;
  passwordHash?: Partial<HostConfig['passwordHash']>;
  limits?: Partial<HostConfig['limits']>;
  socket?: Partial<HostConfig['socket']>;
};

export function resolveConfig(overrides: ConfigOverrides = {}): HostConfig {
  const base = defaultConfig();
  return {
    ...base,
    ...overrides,
    passwordHash: { ...base.passwordHash, ...overrides.passwordHash },
    limits: { ...base.limits, ...overrides.limits },
    socket: { ...base.socket, ...overrides.socket },
    uploads: { ...base.uploads, ...overrides.uploads },
    instances: { ...base.instances, ...overrides.instances },
  };
}
