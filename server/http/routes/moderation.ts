import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import { ModerationLogRequest, ModerationLookupRequest, ModerationRequest } from '../../protocol/schemas.js';
import type { AccountsService } from '../../services/accounts.js';
import type { ModerationService } from '../../services/moderation.js';
import { parse, reply } from '../envelope.js';

export function moderationRoutes(
  router: Router,
  deps: { accounts: AccountsService; moderation: ModerationService },
): void {
  const { accounts, moderation } = deps;
  const requireModerator = (userid: string, tokenContent: string) =>
    accounts.requireRank(userid, tokenContent, Rank.Moderator, {
      code: ErrorCode.NOT_A_MODERATOR,
      message: 'Invalid permissions! This needs rank Moderator or higher.',
      tokenMessage: 'Invalid Token!',
    });

  router.post('/moderation', async (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    const input = parse(ModerationRequest, body);
    const caller = await accounts.requireUser(input.userid, input.tokenContent, 'Invalid Token!');
    const { action, state, entry } = await moderation.act(caller, input.action, input.targetUserId, body);
    reply(ctx, moderation.successMessage(action), { ModerationState: state, LogEntry: entry });
  });

  router.post('/moderationLog', async (ctx) => {
    const input = parse(ModerationLogRequest, ctx.request.body);
    await requireModerator(input.userid, input.tokenContent);
    const page = input.page ?? 0;
    const itemsPerPage = input.itemsPerPage ?? 50;
    const { entries, total } = await moderation.query({
      targetUserId: input.targetUserId,
      moderatorId: input.moderatorId,
      action: input.action,
      page,
      itemsPerPage,
    });
    reply(ctx, 'Got moderation log', {
      Entries: entries,
      Total: total,
      Page: page,
      ItemsPerPage: itemsPerPage,
    });
  });

  router.post('/moderationLookup', async (ctx) => {
    const input = parse(ModerationLookupRequest, ctx.request.body);
    await requireModerator(input.userid, input.tokenContent);
    reply(ctx, 'Got users', { Users: await moderation.lookup(input.query) });
  });
}
