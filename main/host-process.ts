// Main's side of the host process: spawn it, speak main/host-messages.ts with it, keep its logs, stop it cleanly.
// The desktop app spawns it with Electron's utilityProcess (main/utility-host.ts); tests with child_process.fork,
// through the same interface and the same messages.
import { fork } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { HostClients } from '../server/protocol/host-bridge.js';
import type { RunningHost, StartHost } from './host-controller.js';
import { parseFromHost, type FromHost, type HostQuery, type ToHost } from './host-messages.js';

/** The bundled host process entry (scripts/bundle-server.js), next to the CLI's bundle. */
export const HOST_CHILD_PATH = fileURLToPath(new URL('../bundle/host-child.js', import.meta.url));

/** A started host process as main sees it, whatever started it. */
export interface HostChildProcess {
  readonly pid: number | undefined;
  post(message: ToHost): void;
  onMessage(listener: (message: unknown) => void): void;
  /** Called once when the process is gone; `how` is an exit code or a signal name. */
  onExit(listener: (how: string) => void): void;
  /** Ends it at once (SIGKILL or TerminateProcess). */
  kill(): void;
  readonly stdout: NodeJS.ReadableStream | null;
  readonly stderr: NodeJS.ReadableStream | null;
}

export type SpawnHostProcess = () => HostChildProcess;

/** The host as a plain Node child (tests, and anywhere without Electron). */
export function forkNodeHost(
  entry: string = HOST_CHILD_PATH,
  env: NodeJS.ProcessEnv = process.env,
): SpawnHostProcess {
  return () => {
    const child = fork(entry, [], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env,
      serialization: 'advanced',
    });
    return {
      pid: child.pid,
      post: (message) => {
        if (child.connected) child.send(message);
      },
      onMessage: (listener) => child.on('message', listener),
      onExit: (listener) =>
        child.once('exit', (code, signal) => listener(signal ?? `exit code ${code ?? 'unknown'}`)),
      kill: () => child.kill('SIGKILL'),
      stdout: child.stdout,
      stderr: child.stderr,
    };
  };
}

/** Host logs past this size are moved to host.1.log (replacing the older one) when the process starts. */
export const MAX_LOG_BYTES = 10 * 1024 * 1024;

async function openLog(path: string): Promise<NodeJS.WritableStream> {
  await mkdir(dirname(path), { recursive: true });
  const size = await stat(path).then(
    (info) => info.size,
    () => 0,
  );
  // Rotating the log is a nicety: when it fails the log simply grows and rotation is tried at the next start.
  if (size > MAX_LOG_BYTES) await rename(path, path.replace(/(\.log)?$/, '.1.log')).catch(() => undefined);
  return createWriteStream(path, { flags: 'a' });
}

export interface ProcessHostOptions {
  spawn: SpawnHostProcess;
  /** Where the process's stdout and stderr (its pino log lines, and any crash trace) are appended. */
  logFile: string;
  log: Logger;
  /** A start that neither listens nor fails by then is killed (default 60 s: a big folder's replay takes time). */
  startTimeoutMs?: number;
  /** A stop that has not finished by then is killed (default 20 s). */
  stopTimeoutMs?: number;
}

class StartFailure extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'StartFailure';
  }
}

/** A StartHost that runs each host in its own process. */
export function processHostStarter(options: ProcessHostOptions): StartHost {
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 20_000;

  return async (config, hooks) => {
    const logStream = await openLog(options.logFile);
    const child = options.spawn();
    child.stdout?.pipe(logStream, { end: false });
    child.stderr?.pipe(logStream, { end: false });
    options.log.info({ pid: child.pid, logFile: options.logFile }, 'host process spawned');

    let alive = true;
    let stopping = false;
    let started = false;
    let clients: HostClients = { connections: 0, users: [] };
    let setupSecret: string | null = null;
    let nextQueryId = 1;
    const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
    const exitWaiters: (() => void)[] = [];
    let onStartMessage: ((message: FromHost | { type: 'exit'; how: string }) => void) | null = null;

    child.onMessage((raw) => {
      const message = parseFromHost(raw);
      if (!message) {
        options.log.warn({ message: raw }, 'ignored a message the host process should not send');
        return;
      }
      switch (message.type) {
        case 'started':
        case 'start-failed':
          onStartMessage?.(message);
          return;
        case 'clients':
          clients = message.clients;
          setupSecret = message.setupSecret;
          hooks.changed();
          return;
        case 'notice':
          hooks.notice(message.notice);
          return;
        case 'answer': {
          const waiter = pending.get(message.id);
          pending.delete(message.id);
          if (message.ok) waiter?.resolve(message.value);
          else waiter?.reject(new Error(message.message));
          return;
        }
        case 'stopped':
          return;
      }
    });

    child.onExit((how) => {
      alive = false;
      child.stdout?.unpipe(logStream);
      child.stderr?.unpipe(logStream);
      logStream.end();
      for (const waiter of pending.values()) waiter.reject(new Error(`the host process ended (${how})`));
      pending.clear();
      for (const waiter of exitWaiters.splice(0)) waiter();
      if (!started) onStartMessage?.({ type: 'exit', how });
      else if (!stopping) {
        options.log.error({ pid: child.pid, how }, 'host process ended unexpectedly');
        hooks.exited(how);
      } else options.log.info({ pid: child.pid, how }, 'host process stopped');
    });

    const exited = (): Promise<void> =>
      alive ? new Promise((resolve) => exitWaiters.push(resolve)) : Promise.resolve();

    const ask = (query: HostQuery): Promise<unknown> => {
      if (!alive) return Promise.reject(new Error('the host process is not running'));
      const id = nextQueryId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.post({ type: 'query', id, query });
      });
    };

    const first = await new Promise<FromHost | { type: 'exit'; how: string }>((resolve) => {
      const timer = setTimeout(
        () => resolve({ type: 'exit', how: `no answer within ${startTimeoutMs / 1000} s` }),
        startTimeoutMs,
      );
      onStartMessage = (message) => {
        clearTimeout(timer);
        onStartMessage = null;
        resolve(message);
      };
      child.post({ type: 'start', config });
    });
    if (first.type !== 'started') {
      if (alive) child.kill();
      await exited();
      if (first.type === 'start-failed') throw new StartFailure(first.message, first.code ?? undefined);
      throw new StartFailure(
        `the host process ended before it was serving (${'how' in first ? first.how : ''})`,
        undefined,
      );
    }
    started = true;
    setupSecret = first.setupSecret;

    let closing: Promise<void> | null = null;
    const host: RunningHost = {
      url: first.url,
      lanUrls: first.lanUrls,
      dataDir: first.dataDir,
      pid: child.pid,
      setupSecret: () => setupSecret,
      clients: () => clients,
      setDesktopUser: (user) => {
        if (alive) child.post({ type: 'desktop-user', user });
      },
      uploadsInProgress: async () => Number(await ask({ what: 'uploads-in-progress' })),
      dismissInvite: async (userId, requestId) => {
        await ask({ what: 'dismiss-invite', userId, requestId });
      },
      ping: async () => String(await ask({ what: 'ping' })),
      close() {
        closing ??= (async () => {
          if (!alive) return;
          stopping = true;
          const timer = setTimeout(() => {
            options.log.warn(
              { pid: child.pid },
              `host process did not stop within ${stopTimeoutMs / 1000} s; killed`,
            );
            child.kill();
          }, stopTimeoutMs);
          child.post({ type: 'stop' });
          await exited();
          clearTimeout(timer);
        })();
        return closing;
      },
    };
    return host;
  };
}
