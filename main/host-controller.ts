// The host's lifecycle as the desktop shell sees it. Runs in the Electron main process: it knows hosts only through
// StartHost (a utility process in the app: host-process.ts; the server in this process for tests: in-process-host.ts),
// so nothing of the server is loaded here.
import type { ConfigOverrides } from '../server/config.js';
import type { HostClients, HostSettings, HostState } from '../server/protocol/host-bridge.js';
import type { HostNotice } from './host-messages.js';

/** A host that is serving, wherever it runs (its own process in the app, this process in some tests). */
export interface RunningHost {
  readonly url: string;
  readonly lanUrls: readonly string[];
  readonly dataDir: string;
  /** The host process's id, when it has its own. */
  readonly pid?: number | undefined;
  setupSecret(): string | null;
  clients(): HostClients;
  /** Whose invite and friend requests become notices (null: nobody). */
  setDesktopUser(user: DesktopUser | null): void;
  /** Uploads being received right now (the updater waits for none). */
  uploadsInProgress(): Promise<number>;
  dismissInvite(userId: string, requestId: string): Promise<void>;
  /** A round trip to the host (answers "pong"). */
  ping(): Promise<string>;
  /** Stops serving: sockets closed, store checkpointed, data folder released. */
  close(): Promise<void>;
}

export interface DesktopUser {
  userId: string;
  tokenContent: string;
}

/** What a running host reports on its own. */
export interface HostHooks {
  /** The host ended without being asked to (crash, killed); `how` says how. */
  exited(how: string): void;
  /** Connected clients or the setup secret changed. */
  changed(): void;
  notice(notice: HostNotice): void;
}

/** Starts a host on a configuration; rejects with the start error (its `code`, e.g. EADDRINUSE, kept). */
export type StartHost = (config: ConfigOverrides, hooks: HostHooks) => Promise<RunningHost>;

export interface HostControllerOptions {
  settings: HostSettings;
  /**
   * Why the saved settings could not be used (their file is unreadable, or has an unknown key or a wrong value):
   * while set, a start refuses with it instead of starting on settings the user did not choose. Saving settings
   * (updateSettings) clears it; so does a start after `reloadSettings` finds the file fixed.
   */
  settingsProblem?: Error | null;
  /** Reads the saved settings again; called before a start while `settingsProblem` is set. */
  reloadSettings?(): Promise<{ settings: HostSettings; problem: Error | null }>;
  /** Persists settings; called before a restart so a crash never loses what the user chose. */
  saveSettings(settings: HostSettings): Promise<void>;
  /** Everything but host/port/dataDir (e.g. uiDir, password hashing cost). */
  serverConfig?: Omit<ConfigOverrides, 'host' | 'port' | 'dataDir'>;
  /** How a host is started: the desktop app runs it in a utility process (host-process.ts). */
  startHost: StartHost;
  /** Waits before each restart after the host ended on its own; the last one repeats (default 1, 2, 5, 10, 30 s). */
  restartDelaysMs?: readonly number[];
  /** Consecutive failed restarts after which the controller stops trying and shows the error (default 8). */
  maxRestarts?: number;
  /** A host that served this long before ending starts the back-off over (default 60 s). */
  stableAfterMs?: number;
  onStateChanged?(state: HostState): void;
  onNotice?(notice: HostNotice): void;
}

export interface HostController {
  state(): HostState;
  /** The running host, or null while stopped. */
  host(): RunningHost | null;
  /** The error of the last failed start, as thrown; null once a start succeeds. */
  lastFailure(): unknown;
  start(): Promise<HostState>;
  stop(): Promise<HostState>;
  /** Saves settings and restarts the host if it was running (HostBridge.updateSettings). */
  updateSettings(patch: Partial<HostSettings>): Promise<HostState>;
  /** Whose requests become notifications; kept across restarts. */
  setDesktopUser(user: DesktopUser | null): void;
  desktopUserId(): string | null;
  /** Uploads being received (0 while stopped). */
  uploadsInProgress(): Promise<number>;
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

/** Runs operations one after another; each caller gets its own operation's result or failure. */
function serialQueue(): <T>(operation: () => Promise<T>) => Promise<T> {
  let queue: Promise<unknown> = Promise.resolve();
  return <T>(operation: () => Promise<T>): Promise<T> => {
    const next = queue.then(operation, operation);
    // Only keeps the queue going: `next`, failure included, goes back to the caller.
    queue = next.catch(() => undefined);
    return next;
  };
}

/** The supervisor's back-off: consecutive unplanned ends and failed restarts, and the pause before the next. */
function restartBackoff(delays: readonly number[], maxRestarts: number) {
  // The next pause is delays[count - 1], the last one repeating.
  let count = 0;
  let timer: NodeJS.Timeout | null = null;
  const cancel = (): void => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  return {
    cancel,
    /** The back-off starts over, no restart pending (a start the user asked for, a host that served long enough). */
    reset(): void {
      cancel();
      count = 0;
    },
    /** Runs `restart` after the next pause, or gives up; returns the words for the state's error. */
    schedule(why: string, restart: () => void): string {
      count++;
      if (count > maxRestarts)
        return `${why}; gave up after ${maxRestarts} restarts (start it again when fixed)`;
      const delay = delays[Math.min(count, delays.length) - 1] ?? 1000;
      cancel();
      timer = setTimeout(() => {
        timer = null;
        restart();
      }, delay);
      timer.unref();
      return `${why}; restarting in ${Math.round(delay / 100) / 10} s`;
    },
  };
}

/**
 * Owns the host's lifecycle: one start/stop/restart at a time, with the state the UI shows. A host that ends on
 * its own is started again after a growing pause (supervision); one the user stopped stays stopped.
 */
export function createHostController(options: HostControllerOptions): HostController {
  const { startHost } = options;
  const stableAfterMs = options.stableAfterMs ?? 60_000;
  let settings: HostSettings = { ...options.settings };
  let settingsProblem: Error | null = options.settingsProblem ?? null;
  let server: RunningHost | null = null;
  let startedAt = 0;
  let lastError: string | null = null;
  let lastFailure: unknown = null;
  let closed = false;
  let desktopUser: DesktopUser | null = null;
  const restarts = restartBackoff(
    options.restartDelaysMs ?? [1000, 2000, 5000, 10_000, 30_000],
    options.maxRestarts ?? 8,
  );
  // Operations run one after another so a double click on "start" or a restart racing a stop cannot leave two
  // hosts fighting over the data folder lock.
  const serialize = serialQueue();

  const state = (): HostState => ({
    running: server !== null,
    url: server?.url ?? null,
    lanUrls: server ? [...server.lanUrls] : [],
    settings: { ...settings },
    setupSecret: server?.setupSecret() ?? null,
    error: lastError,
    clients: server ? server.clients() : { connections: 0, users: [] },
  });

  const changed = (): HostState => {
    const current = state();
    options.onStateChanged?.(current);
    return current;
  };

  /** Schedules the next restart, or gives up; returns the words for the state's error. */
  const scheduleRestart = (why: string): string =>
    restarts.schedule(why, () => {
      serialize(async () => {
        if (closed || server) return;
        await doStart(true);
      }).catch((error: unknown) => {
        // A start's own failures are in its state already; anything else is shown as the host's error.
        lastError = error instanceof Error ? error.message : String(error);
        changed();
      });
    });

  async function doStart(automatic = false): Promise<HostState> {
    if (closed) throw new Error('the host is shutting down');
    if (server) return state();
    if (!automatic) restarts.reset();
    if (settingsProblem !== null && options.reloadSettings) {
      const reloaded = await options.reloadSettings();
      settingsProblem = reloaded.problem;
      if (settingsProblem === null) settings = { ...reloaded.settings };
    }
    if (settingsProblem !== null) {
      lastFailure = settingsProblem;
      lastError = settingsProblem.message;
      return changed();
    }
    // Hooks may fire before startHost resolves (the child reports clients as it starts): they only act on the
    // host once it is the current one.
    let running: RunningHost | null = null;
    const current = (): boolean => running !== null && server === running;
    try {
      running = await startHost(
        { ...options.serverConfig, host: settings.host, port: settings.port, dataDir: settings.dataDir },
        {
          exited: (how) => {
            if (!current()) return;
            server = null;
            if (Date.now() - startedAt >= stableAfterMs) restarts.reset();
            lastFailure = null;
            lastError = closed ? null : scheduleRestart(`the host stopped unexpectedly (${how})`);
            changed();
          },
          changed: () => {
            if (current()) changed();
          },
          notice: (notice) => options.onNotice?.(notice),
        },
      );
      server = running;
      startedAt = Date.now();
      if (desktopUser) running.setDesktopUser(desktopUser);
      lastError = null;
      lastFailure = null;
    } catch (error) {
      server = null;
      lastFailure = error;
      lastError = describeStartError(error, settings);
      if (automatic) lastError = scheduleRestart(lastError);
    }
    return changed();
  }

  async function doStop(): Promise<HostState> {
    restarts.cancel();
    const running = server;
    if (!running) {
      // A stop while a restart was pending: the user wants it stopped, not "restarting in...".
      if (lastError !== null && lastFailure === null) {
        lastError = null;
        return changed();
      }
      return state();
    }
    server = null;
    await running.close();
    return changed();
  }

  return {
    state,
    host: () => server,
    lastFailure: () => lastFailure,
    start: () => serialize(() => doStart()),
    stop: () => serialize(doStop),
    updateSettings: (patch) =>
      serialize(async () => {
        if (closed) throw new Error('the host is shutting down');
        const next = { ...settings, ...patch };
        await options.saveSettings(next);
        settings = next;
        settingsProblem = null;
        if (!server) return changed();
        await doStop();
        return doStart();
      }),
    setDesktopUser(user) {
      desktopUser = user;
      server?.setDesktopUser(user);
    },
    desktopUserId: () => desktopUser?.userId ?? null,
    uploadsInProgress: async () => (server ? server.uploadsInProgress() : 0),
    close: () =>
      serialize(async () => {
        closed = true;
        restarts.cancel();
        const running = server;
        server = null;
        await running?.close();
      }),
  };
}
