import type Router from '@koa/router';
import type { HostConfig } from '../../config.js';
import { reply } from '../envelope.js';

/** The informational GETs real clients call at start (reference 1.5). */
export function infoRoutes(
  router: Router,
  deps: { config: HostConfig; socketPort: () => number; core: { requireInviteCode(): Promise<boolean> } },
): void {
  const { config } = deps;
  router.get('/isInviteCodeRequired', async (ctx) =>
    reply(ctx, 'Got Information', { inviteCodeRequired: await deps.core.requireInviteCode() }),
  );
  router.get('/allowAnyGameServer', (ctx) =>
    reply(ctx, 'Got Information', { allowAnyGameServer: config.allowAnyGameServer }),
  );
  // Behind a proxy (publicUrl names it) clients reach the socket where they reach the API: its port and scheme.
  const publicSocket = ((): { IsWSS: boolean; Port: number } | null => {
    if (config.publicUrl === null || config.socket.port !== null) return null;
    try {
      const url = new URL(config.publicUrl);
      const secure = url.protocol === 'https:';
      return { IsWSS: secure, Port: url.port ? Number(url.port) : secure ? 443 : 80 };
    } catch {
      return null;
    }
  })();
  router.get('/getSocketInfo', (ctx) =>
    reply(ctx, 'Got Information', publicSocket ?? { IsWSS: false, Port: deps.socketPort() }),
  );
  // authForBuilds, getVersions and getBuild: routes/builds.ts.
  router.get('/gameEngine', (ctx) =>
    reply(ctx, 'Got Information', { GameEngine: 'Unity', GameEngineVersion: '2022.3.5f1' }),
  );
}
