import type Router from '@koa/router';
import type { HostConfig } from '../../config.js';
import { reply } from '../envelope.js';

/** The informational GETs real clients call at start (reference 1.5). */
export function infoRoutes(
  router: Router,
  deps: { config: HostConfig; socketPort: () => number; core: { requireInviteCode(): boolean } },
): void {
  const { config } = deps;
  router.get('/isInviteCodeRequired', (ctx) =>
    reply(ctx, 'Got Information', { inviteCodeRequired: deps.core.requireInviteCode() }),
  );
  router.get('/allowAnyGameServer', (ctx) =>
    reply(ctx, 'Got Information', { allowAnyGameServer: config.allowAnyGameServer }),
  );
  router.get('/getSocketInfo', (ctx) =>
    reply(ctx, 'Got Information', { IsWSS: false, Port: deps.socketPort() }),
  );
  // authForBuilds, getVersions and getBuild: routes/builds.ts.
  router.get('/gameEngine', (ctx) =>
    reply(ctx, 'Got Information', { GameEngine: 'Unity', GameEngineVersion: '2022.3.5f1' }),
  );
}
