import type Router from '@koa/router';
import { SetupOwnerRequest } from '../../protocol/schemas.js';
import type { AccountsService } from '../../services/accounts.js';
import type { SetupService } from '../../services/setup.js';
import { parse, reply } from '../envelope.js';

export function setupRoutes(router: Router, deps: { setup: SetupService; accounts: AccountsService }): void {
  router.get('/setupStatus', async (ctx) => {
    reply(ctx, 'Got Information', { needsOwnerSetup: deps.setup.needsSetup() });
  });

  router.post('/setupOwner', async (ctx) => {
    const input = parse(SetupOwnerRequest, ctx.request.body);
    const { user, token } = await deps.setup.setupOwner(input);
    reply(ctx, `Created user ${user.Username}`, { UserData: deps.accounts.privateView(user, token.content) });
  });
}
