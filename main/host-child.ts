// Entry of the host process. In the desktop app main starts it with Electron's utilityProcess.fork (messages over
// process.parentPort); tests start it with child_process.fork (messages over Node's IPC channel). Either way it
// runs the same server the CLI runs (createServer), with its own event loop, so startup, checkpoints and big JSON
// parses never stall the window. It imports no electron: a utility process is Node with a message port.
import pino from 'pino';
import { createServer, keepServingAfterRejections, type HostServer } from '../server/host.js';
import { attachHostAgent, type HostAgent } from './host-agent.js';
import type { FromHost, HostQuery, ToHost } from './host-messages.js';

interface ParentChannel {
  post(message: FromHost): void;
  onMessage(listener: (message: ToHost) => void): void;
}

interface ElectronParentPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (event: { data: unknown }) => void): void;
}

function parentChannel(): ParentChannel {
  const port = (process as NodeJS.Process & { parentPort?: ElectronParentPort }).parentPort;
  if (port) {
    return {
      post: (message) => port.postMessage(message),
      onMessage: (listener) => port.on('message', (event) => listener(event.data as ToHost)),
    };
  }
  if (!process.send)
    throw new Error('the host process must be started by the desktop app (no parent channel)');
  return {
    post: (message) => process.send?.(message),
    onMessage: (listener) => process.on('message', (message) => listener(message as ToHost)),
  };
}

const CLIENTS_POLL_MS = 1000;

function main(): void {
  const parent = parentChannel();
  // Logs go to stdout as JSON lines; the supervisor appends them to the log file.
  const log = pino({ level: process.env.HYPERNEX_LOG_LEVEL ?? 'info', base: { proc: 'host' } });
  keepServingAfterRejections(log);
  let server: HostServer | null = null;
  let agent: HostAgent | null = null;
  let desktopUser: { userId: string; tokenContent: string } | null = null;
  let pushedClients = '';
  let stopping: Promise<void> | null = null;

  const pushClients = (): void => {
    if (!server || !agent) return;
    const clients = agent.clients();
    const key = JSON.stringify(clients) + (server.setupSecret ?? '');
    if (key === pushedClients) return;
    pushedClients = key;
    parent.post({ type: 'clients', clients, setupSecret: server.setupSecret });
  };
  const poll = setInterval(pushClients, CLIENTS_POLL_MS);

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      clearInterval(poll);
      agent?.dispose();
      try {
        // Closing the server checkpoints the store and releases the data folder lock.
        await server?.close();
      } catch (error) {
        log.error({ err: error }, 'the host did not close cleanly');
      }
      server = null;
      parent.post({ type: 'stopped' });
      log.flush();
      // Give the port a moment to carry `stopped` out before the process goes.
      setTimeout(() => process.exit(0), 50);
    })();
    return stopping;
  };

  const watchDesktopUser = (user: { userId: string; tokenContent: string } | null): void => {
    agent?.setDesktopUser(user).then(
      (verified) => {
        if (!verified)
          log.warn({ userId: user?.userId }, 'desktop user did not verify; no notifications for them');
      },
      (error: unknown) => log.error({ err: error, userId: user?.userId }, 'checking the desktop user failed'),
    );
  };

  const stopLogged = (): void => {
    stop().catch((error: unknown) => log.error({ err: error }, 'stopping the host failed'));
  };

  const answer = async (id: number, query: HostQuery): Promise<void> => {
    try {
      let value: unknown = null;
      if (query.what === 'uploads-in-progress') value = (await agent?.uploadsInProgress()) ?? 0;
      else if (query.what === 'dismiss-invite') {
        if (!agent) throw new Error('the host is not running');
        await agent.dismissInvite(query.userId, query.requestId);
      } else if (query.what === 'ping') value = 'pong';
      parent.post({ type: 'answer', id, ok: true, value });
    } catch (error) {
      parent.post({ type: 'answer', id, ok: false, message: (error as Error).message ?? String(error) });
    }
  };

  parent.onMessage((message) => {
    switch (message.type) {
      case 'start':
        if (server || stopping) return;
        createServer(message.config, { logger: log }).then(
          (started) => {
            server = started;
            agent = attachHostAgent(started, (notice) => parent.post({ type: 'notice', notice }));
            if (desktopUser) watchDesktopUser(desktopUser);
            parent.post({
              type: 'started',
              url: started.url,
              lanUrls: [...started.lanUrls],
              setupSecret: started.setupSecret,
              dataDir: started.config.dataDir,
            });
            pushClients();
          },
          (error: unknown) => {
            const code = (error as NodeJS.ErrnoException | null)?.code;
            parent.post({
              type: 'start-failed',
              message: error instanceof Error ? error.message : String(error),
              code: typeof code === 'string' ? code : null,
            });
            log.flush();
            setTimeout(() => process.exit(1), 50);
          },
        );
        return;
      case 'stop':
        stopLogged();
        return;
      case 'desktop-user':
        desktopUser = message.user;
        watchDesktopUser(desktopUser);
        return;
      case 'query':
        // answer() reports its own failure to main; anything else is logged.
        answer(message.id, message.query).catch((error: unknown) =>
          log.error({ err: error }, 'answering main failed'),
        );
        return;
    }
  });

  // A terminal's Ctrl+C or a service manager stops the host as cleanly as main's `stop`.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, stopLogged);
  // A forked child whose parent died has nobody to serve for: close cleanly rather than linger with the lock.
  process.on('disconnect', stopLogged);
}

main();
