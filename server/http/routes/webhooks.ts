import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import { TestWebhookRequest, WebhookSettingsRequest } from '../../protocol/webhooks.js';
import type { HostCore } from '../../host-core.js';
import { parse, reply } from '../envelope.js';

/** The outgoing webhook's settings and its test (issue 28): the owner and admins, as the other host settings. */
export function webhookRoutes(router: Router, core: HostCore): void {
  const { accounts, webhooks } = core;
  const requireAdmin = (userid: string, tokenContent: string) =>
    accounts.requireRank(userid, tokenContent, Rank.Admin, {
      code: ErrorCode.FORBIDDEN,
      message: 'Invalid permissions! This is for admins and the owner.',
    });

  router.post('/webhookSettings', async (ctx) => {
    const { userid, tokenContent, ...patch } = parse(WebhookSettingsRequest, ctx.request.body);
    const me = await requireAdmin(userid, tokenContent);
    const changing = Object.values(patch).some((value) => value !== undefined);
    const Webhook = changing ? await webhooks.change(patch, me) : await webhooks.view();
    reply(ctx, changing ? 'Saved webhook settings' : 'Got webhook settings', { Webhook });
  });

  router.post('/testWebhook', async (ctx) => {
    const input = parse(TestWebhookRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    const Delivery = await webhooks.sendTest(me);
    reply(
      ctx,
      Delivery.ok ? 'Delivered the test message' : `The test message was not delivered: ${Delivery.detail}`,
      {
        Delivery,
        Webhook: await webhooks.view(),
      },
    );
  });
}
