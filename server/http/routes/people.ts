import type Router from '@koa/router';
import {
  ChangeOwnPasswordRequest,
  GetUsersRequest,
  ResetUserPasswordRequest,
  SentInviteRequestsRequest,
  type GetUsersResult,
} from '../../protocol/people.js';
import type { HostCore } from '../../host-core.js';
import { createPasswordAdmin } from '../../services/password-admin.js';
import { parse, reply } from '../envelope.js';

/** Issue 18's additions for people: batch public views, sent invite requests, password help. */
export function peopleRoutes(router: Router, core: HostCore): void {
  const { accounts, invites } = core;
  // Users are read through accounts; an admin's reset is logged with the host's clock and ids.
  const passwordAdmin = createPasswordAdmin({
    accounts,
    users: { get: (userId) => accounts.findUser(userId) },
    staff: { clock: core.clock, ids: core.ids },
  });

  router.post('/getUsers', async (ctx) => {
    const { userids } = parse(GetUsersRequest, ctx.request.body);
    const result: GetUsersResult = { Users: [], NotFound: [] };
    const found = new Map((await accounts.findUsers([...new Set(userids)])).map((user) => [user.Id, user]));
    for (const id of new Set(userids)) {
      const user = found.get(id);
      if (user) result.Users.push(accounts.publicView(user));
      else result.NotFound.push(id);
    }
    reply(ctx, 'Got users', { ...result });
  });

  router.post('/sentInviteRequests', async (ctx) => {
    const input = parse(SentInviteRequestsRequest, ctx.request.body);
    const user = await accounts.requireUser(input.userid, input.tokenContent);
    reply(ctx, 'Got sent invite requests', { InviteRequests: await invites.sent(user.Id) });
  });

  router.post('/changePassword', async (ctx) => {
    const input = parse(ChangeOwnPasswordRequest, ctx.request.body);
    const user = await accounts.requireUser(input.userid, input.tokenContent, 'Failed to change password!');
    await passwordAdmin.changeOwn(user, input, input.newPassword);
    reply(ctx, 'Changed password! Every session was signed out.');
  });

  router.post('/resetUserPassword', async (ctx) => {
    const input = parse(ResetUserPasswordRequest, ctx.request.body);
    const actor = await accounts.requireUser(input.userid, input.tokenContent, 'Failed to reset password!');
    const target = await passwordAdmin.resetFor(actor, input.targetUserId, input.newPassword);
    reply(ctx, `Reset the password of ${target.Username}. Their sessions were signed out.`);
  });
}
