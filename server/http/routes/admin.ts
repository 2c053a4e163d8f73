import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import {
  AuthRequest,
  CreateInviteCodeRequest,
  HostSettingsRequest,
  RevokeInviteCodeRequest,
} from '../../protocol/schemas.js';
import type { HostCore } from '../../host-core.js';
import { parse, reply } from '../envelope.js';

/** Host administration for the owner and admins: invite codes and run-time host settings. */
export function adminRoutes(router: Router, core: HostCore): void {
  const { accounts, inviteCodes } = core;
  const requireAdmin = (userid: string, tokenContent: string) =>
    accounts.requireRank(userid, tokenContent, Rank.Admin, {
      code: ErrorCode.FORBIDDEN,
      message: 'Invalid permissions! This is for admins and the owner.',
    });

  router.post('/inviteCodes', async (ctx) => {
    const input = parse(AuthRequest, ctx.request.body);
    await requireAdmin(input.userid, input.tokenContent);
    reply(ctx, 'Got invite codes', { InviteCodes: await inviteCodes.list() });
  });

  router.post('/createInviteCode', async (ctx) => {
    const input = parse(CreateInviteCodeRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    const { code, record } = await inviteCodes.create(
      {
        label: input.label ?? '',
        singleUse: input.singleUse ?? true,
        ...(input.maxUses !== undefined ? { maxUses: input.maxUses } : {}),
        expiresInSeconds: input.expiresInSeconds ?? 0,
      },
      me.Id,
    );
    // The code is shown this once; the host keeps its hash.
    reply(ctx, 'Created invite code', { code, InviteCode: record });
  });

  router.post('/revokeInviteCode', async (ctx) => {
    const input = parse(RevokeInviteCodeRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    await inviteCodes.revoke(input.codeId, me.Id);
    reply(ctx, 'Revoked invite code');
  });

  router.post('/hostSettings', async (ctx) => {
    const input = parse(HostSettingsRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    if (input.requireInviteCode !== undefined) {
      await inviteCodes.setRequired(input.requireInviteCode, me.Id);
    }
    reply(ctx, 'Got host settings', { requireInviteCode: await core.requireInviteCode() });
  });
}
