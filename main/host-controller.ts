import type { ConfigOverrides } from '../server/config.js';
import { createServer, type HostOptions, type HostServer } from '../server/host.js';
import type { HostClients, HostSettings, HostState } from '../server/protocol/host-bridge.js';

export type StartServer = (overrides: ConfigOverrides, options?: HostOptions) => Promise<HostServer>;

export interface HostControllerOptions {
  settings: HostSettings;
  /** Persists settings; called before a restart so a crash never loses what the user chose. */
  saveSettings(settings: HostSettings): Promise<void>;
  /** Everything but host/port/dataDir (e.g. uiDir, password hashing cost). */
  serverConfig?: Omit<ConfigOverrides, 'host' | 'port' | 'dataDir'>;
  serverOptions?: HostOptions;
  startServer?: StartServer;
  onStateChanged?(state: HostState): void;
}

export interface HostController {
  state(): HostState;
  /** The running server, or null while stopped. */
  server(): HostServer | null;
  /** The error of the last failed start, as thrown; null once a start succeeds. */
  lastFailure(): unknown;
  start(): Promise<HostState>;
  stop(): Promise<HostState>;
  /** Saves settings and restarts the host if it was running (HostBridge.updateSettings). */
  updateSettings(patch: Partial<HostSettings>): Promise<HostState>;
  /** Stops the host for good (app quit); later calls are refused. */
  close(): Promise<void>;
}

/** Turns a start failure into words a host owner can act on. */
export function describeStartError(error: unknown, settings: HostSettings): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return `port ${settings.port} is in use (another program or another copy of the host has it)`;
    case 'EACCES':
      return `not allowed to listen on ${settings.host}:${settings.port} (ports below 1024 need admin rights)`;
    case 'EADDRNOTAVAIL':
      return `${settings.host} is not an address of this machine`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve the host name ${settings.host}`;
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

/** True when another port would fix the failure (busy or privileged port). */
export function isPortProblem(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EADDRINUSE' || code === 'EACCES';
}

/** Who is connected to a running host: open sockets and the verified users, by name. */
export function clientsOf(server: HostServer | null): HostClients {
  if (!server) return { connections: 0, users: [] };
  const users = [...server.hub.connectedUserIds()].map((userId) => ({
    userId,
    username: server.users.get(userId)?.Username ?? userId,
    sockets: server.hub.socketsOf(userId).size,
  }));
  users.sort((a, b) => a.username.localeCompare(b.username));
  return { connections: server.socket.connections, users };
}

/** Owns the embedded server's lifecycle: one start/stop/restart at a time, with the state the UI shows. */
export function createHostController(options: HostControllerOptions): HostController {
  const startServer = options.startServer ?? createServer;
  let settings: HostSettings = { ...options.settings };
  let server: HostServer | null = null;
  let lastError: string | null = null;
  let lastFailure: unknown = null;
  let closed = false;
  // Operations run one after another so a double click on "start" or a restart racing a stop cannot leave two
  // servers fighting over the data folder lock.
  let queue: Promise<unknown> = Promise.resolve();

  const state = (): HostState => ({
    running: server !== null,
    url: server?.url ?? null,
    lanUrls: server ? [...server.lanUrls] : [],
    settings: { ...settings },
    setupSecret: server?.setupSecret ?? null,
    error: lastError,
    clients: clientsOf(server),
  });

  const changed = (): HostState => {
    const current = state();
    options.onStateChanged?.(current);
    return current;
  };

  const serialize = <T>(operation: () => Promise<T>): Promise<T> => {
    const next = queue.then(operation, operation);
    queue = next.catch(() => undefined);
    return next;
  };

  async function doStart(): Promise<HostState> {
    if (closed) throw new Error('the host is shutting down');
    if (server) return state();
    try {
      server = await startServer(
        { ...options.serverConfig, host: settings.host, port: settings.port, dataDir: settings.dataDir },
        options.serverOptions,
      );
      lastError = null;
      lastFailure = null;
    } catch (error) {
      server = null;
      lastFailure = error;
      lastError = describeStartError(error, settings);
    }
    return changed();
  }

  async function doStop(): Promise<HostState> {
    const running = server;
    if (!running) return state();
    server = null;
    await running.close();
    return changed();
  }

  return {
    state,
    server: () => server,
    lastFailure: () => lastFailure,
    start: () => serialize(doStart),
    stop: () => serialize(doStop),
    updateSettings: (patch) =>
      serialize(async () => {
        if (closed) throw new Error('the host is shutting down');
        const next = { ...settings, ...patch };
        await options.saveSettings(next);
        settings = next;
        if (!server) return changed();
        await doStop();
        return doStart();
      }),
    close: () =>
      serialize(async () => {
        closed = true;
        const running = server;
        server = null;
        await running?.close();
      }),
  };
}
