// The host in this very process, for tests and embedders: the same StartHost the desktop app gets from
// host-process.ts, without a process of its own. It loads the whole server, so the Electron main process never
// imports it (test/main/import-graph.test.ts).
import { createServer, type HostOptions, type HostServer } from '../server/host.js';
import { attachHostAgent } from './host-agent.js';
import type { StartHost } from './host-controller.js';

/** A StartHost running each host in this process; it never exits on its own. */
export function inProcessHost(
  serverOptions: HostOptions = {},
  onStarted?: (server: HostServer) => void,
): StartHost {
  return async (config, hooks) => {
    const server = await createServer(config, serverOptions);
    onStarted?.(server);
    const agent = attachHostAgent(server, hooks.notice);
    return {
      url: server.url,
      lanUrls: server.lanUrls,
      dataDir: server.config.dataDir,
      setupSecret: () => server.setupSecret,
      clients: agent.clients,
      setDesktopUser: (user) => {
        // A user that does not verify simply gets no notifications.
        agent.setDesktopUser(user).catch(() => undefined);
      },
      uploadsInProgress: agent.uploadsInProgress,
      dismissInvite: agent.dismissInvite,
      ping: async () => 'pong',
      async close() {
        agent.dispose();
        await server.close();
      },
    };
  };
}
