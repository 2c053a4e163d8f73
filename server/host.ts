import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import pino, { type Logger } from 'pino';
import { resolveConfig, type ConfigOverrides, type HostConfig } from './config.js';
import { createHttpApp } from './http/app.js';
import { createAccountsService, type AccountsService } from './services/accounts.js';
import {
  HostEvents,
  nobodyConnected,
  randomIds,
  systemClock,
  type Clock,
  type Ids,
  type Presence,
} from './services/context.js';
import { createPasswordHasher } from './services/passwords.js';
import { createSetupService, type SetupService } from './services/setup.js';
import { createSocialService, type SocialService } from './services/social.js';
import { Store } from './store/store.js';
import { USERS, UsersRepo } from './store/users.js';

export interface HostServer {
  readonly config: HostConfig;
  /** e.g. http://127.0.0.1:5180 */
  readonly url: string;
  readonly port: number;
  /** Addresses LAN clients can use, e.g. http://192.168.1.20:5180 (empty when bound to loopback only). */
  readonly lanUrls: string[];
  /** The first-run setup secret while no owner exists; null afterwards. Show it only on the host machine. */
  readonly setupSecret: string | null;
  readonly store: Store;
  readonly users: UsersRepo;
  readonly accounts: AccountsService;
  readonly social: SocialService;
  readonly setup: SetupService;
  readonly events: HostEvents;
  readonly log: Logger;
  close(): Promise<void>;
}

export interface HostOptions {
  clock?: Clock;
  ids?: Ids;
  logger?: Logger;
}

export const COLLECTIONS = [USERS];

export interface HostCore {
  config: HostConfig;
  log: Logger;
  store: Store;
  users: UsersRepo;
  accounts: AccountsService;
  social: SocialService;
  setup: SetupService;
  events: HostEvents;
  /** Set once the HTTP server listens; used for the host's own URLs. */
  setPort(port: number): void;
  port(): number;
}

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
  const store = await Store.open(config.dataDir, COLLECTIONS, {
    fsync: config.fsync,
    clock: () => clock.now(),
  });
  try {
    const users = new UsersRepo(store);
    const events = new HostEvents();
    const presence: Presence = nobodyConnected;
    const passwords = createPasswordHasher(config.passwordHash);
    let port = config.port;
    const localHosts = (): string[] => {
      const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `${config.host}:${port}`];
      if (config.publicUrl) {
        try {
          hosts.push(new URL(config.publicUrl).host);
        } catch {
          // An unparsable publicUrl only means no extra local host.
        }
      }
      for (const url of lanUrls(config.host, port)) hosts.push(new URL(url).host);
      return hosts;
    };
    const deps = { config, store, users, clock, ids, presence, events, passwords };
    const accounts = createAccountsService({ ...deps, localHosts });
    const social = createSocialService(deps);
    const setup = createSetupService({ ...deps, accounts });
    await setup.init();
    return {
      config,
      log,
      store,
      users,
      accounts,
      social,
      setup,
      events,
      setPort: (value) => {
        port = value;
      },
      port: () => port,
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

/** Opens the data folder, starts the HTTP API (and UI) and returns once it accepts connections. */
export async function createServer(
  overrides: ConfigOverrides = {},
  options: HostOptions = {},
): Promise<HostServer> {
  const core = await openHost(overrides, options);
  const { config, log, store, users, accounts, social, setup, events } = core;
  let http: Server | null = null;
  try {
    const app = createHttpApp({ config, log, accounts, social, setup, users, socketPort: core.port });
    const server = createHttpServer(app.callback());
    http = server;
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const port = (server.address() as AddressInfo).port;
    core.setPort(port);
    const displayHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${port}`;
    log.info({ url, dataDir: config.dataDir, users: users.size }, 'host started');

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
      events,
      log,
      close() {
        closing ??= (async () => {
          await new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          });
          await store.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    http?.close();
    await store.close();
    throw error;
  }
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
