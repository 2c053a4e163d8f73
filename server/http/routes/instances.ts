import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import {
  AuthRequest,
  AddGameServerTokenRequest,
  InstancesRequest,
  RevokeGameServerTokenRequest,
} from '../../protocol/schemas.js';
import type { HostConfig } from '../../config.js';
import type { AccountsService } from '../../services/accounts.js';
import type { GameServerTokens } from '../../services/game-servers.js';
import type { InstancesService } from '../../services/instances.js';
import type { SocketHub } from '../../socket/hub.js';
import { parse, reply } from '../envelope.js';

export function instanceRoutes(
  router: Router,
  deps: {
    config: HostConfig;
    accounts: AccountsService;
    instances: InstancesService;
    gameServerTokens: GameServerTokens;
    hub: SocketHub;
  },
): void {
  const { accounts, instances, gameServerTokens, hub } = deps;

  // The 1.5 library sends a worldid (its GetPrivateWorldInstances): only that world's instances; the 1.4 clients
  // send none and get every instance they may join.
  router.post('/instances', async (ctx) => {
    const input = parse(InstancesRequest, ctx.request.body);
    const me = await accounts.requireUser(input.userid, input.tokenContent);
    const all = await instances.safeInstancesFor(me.Id);
    const worldId = input.worldid;
    reply(ctx, 'Got instances', {
      SafeInstances: worldId === undefined ? all : all.filter((instance) => instance.WorldId === worldId),
    });
  });

  router.get('/instances/:worldid', async (ctx) => {
    reply(ctx, 'Got instances', { SafeInstances: instances.publicInstancesOf(ctx.params.worldid!) });
  });

  router.get('/gameServers', async (ctx) => {
    // Region is not known on a LAN host; the shape is kept for clients that read it.
    const region = { ContinentCode: '', City: '', State: '', Country: '', Latitude: 0, Longitude: 0 };
    reply(ctx, 'Got game servers', {
      GameServers: hub.allGameServerIds().map((GameServerId) => ({ GameServerId, Region: region })),
    });
  });

  // Whether a game server is connected (wire reference 12.5): with its token, when the id and the token it was
  // handed in sendauth match; with the id alone, only on a host that allows any game server. Reveals nothing
  // gameServers does not list already.
  router.get('/checkGameServer/:gameServerId', (ctx) => {
    const id = ctx.params.gameServerId!;
    reply(ctx, 'Got Information', {
      valid: deps.config.allowAnyGameServer && hub.allGameServerIds().includes(id),
    });
  });
  router.get('/checkGameServer/:gameServerId/:gameServerToken', (ctx) => {
    reply(ctx, 'Got Information', {
      valid: hub.gameServerProves(ctx.params.gameServerId!, ctx.params.gameServerToken!),
    });
  });

  const requireAdmin = (userid: string, tokenContent: string) =>
    accounts.requireRank(userid, tokenContent, Rank.Admin, {
      code: ErrorCode.FORBIDDEN,
      message: 'Invalid permissions! Game-server tokens are for admins and the owner.',
    });

  router.post('/gameServerTokens', async (ctx) => {
    const input = parse(AuthRequest, ctx.request.body);
    await requireAdmin(input.userid, input.tokenContent);
    reply(ctx, 'Got game-server tokens', { GameServerTokens: await gameServerTokens.list() });
  });

  router.post('/addGameServerToken', async (ctx) => {
    const input = parse(AddGameServerTokenRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    const { token, record } = await gameServerTokens.add(input.label, me.Id);
    // The token is shown this once; the host keeps only its hash.
    reply(ctx, 'Added game-server token', { token, GameServerToken: record });
  });

  router.post('/revokeGameServerToken', async (ctx) => {
    const input = parse(RevokeGameServerTokenRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    await gameServerTokens.revoke(input.tokenId, me.Id);
    reply(ctx, 'Revoked game-server token');
  });
}
