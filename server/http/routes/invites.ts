import type Router from '@koa/router';
import { ListInviteRequestsRequest, UpdateInviteRequestRequest } from '../../protocol/schemas.js';
import type { AccountsService } from '../../services/accounts.js';
import type { InvitesService } from '../../services/invites.js';
import { parse, reply } from '../envelope.js';

/** The invite-request history over HTTP (our addition; the socket delivers the live events). */
export function inviteRoutes(
  router: Router,
  deps: { accounts: AccountsService; invites: InvitesService },
): void {
  router.post('/inviteRequests', async (ctx) => {
    const input = parse(ListInviteRequestsRequest, ctx.request.body);
    const user = await deps.accounts.requireUser(input.userid, input.tokenContent);
    reply(ctx, 'Got invite requests', {
      InviteRequests: await deps.invites.list(user.Id, input.state ? { state: input.state } : undefined),
    });
  });

  router.post('/updateInviteRequest', async (ctx) => {
    const input = parse(UpdateInviteRequestRequest, ctx.request.body);
    const user = await deps.accounts.requireUser(input.userid, input.tokenContent);
    reply(ctx, 'Updated invite request', {
      InviteRequest: await deps.invites.update(user.Id, input.requestId, input.state),
    });
  });
}
