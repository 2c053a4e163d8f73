import type Router from '@koa/router';
import type { HostConfig } from '../../config.js';
import { reply } from '../envelope.js';
import { AppError } from '../../errors.js';
import { ErrorCode } from '../../protocol/errors.js';

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
  router.get('/authForBuilds', (ctx) => reply(ctx, 'Got Information', { authForBuilds: false }));
  // The real server hands out game-client builds; a LAN host has none to give, and says so.
  const noBuilds = () => {
    throw new AppError(
      ErrorCode.NOT_FOUND,
      'This host serves no client builds. Get the Hypernex client from its official source.',
    );
  };
  router.get('/getVersions/:name', noBuilds);
  router.get('/getBuild/:name/:version', noBuilds);
  router.get('/getBuild/:name/:version/:artifact', noBuilds);
  router.get('/gameEngine', (ctx) =>
    reply(ctx, 'Got Information', { GameEngine: 'Unity', GameEngineVersion: '2022.3.5f1' }),
  );
}
