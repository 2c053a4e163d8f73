import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { BuildPlatform, Rank } from '../../protocol/enums.js';
import {
  HostStatusRequest,
  isLoopbackHost,
  OPEN_TO_LAN_HINT,
  type HostStatusDto,
  type UploadRulesDto,
} from '../../protocol/host-info.js';
import {
  DESCRIPTION_MAX,
  EXTENSION_TYPES,
  ICONS_MAX,
  NAME_MAX,
  TAG_MAX,
  TAGS_MAX,
} from '../../protocol/uploads.js';
import type { HostCore } from '../../host-core.js';
import { parse, reply } from '../envelope.js';

/** Public upload rules, and the Host screen's status for admins in any window (issue 18). */
export function hostInfoRoutes(router: Router, core: HostCore): void {
  const { config, accounts, hub } = core;

  router.get('/uploadRules', async (ctx) => {
    const rules: UploadRulesDto = {
      allowedImageDomains: [...config.allowedDomains],
      localHosts: core.localHosts(),
      maxFileBytes: config.uploads.maxFileBytes,
      extensions: { ...EXTENSION_TYPES },
      nameMax: NAME_MAX,
      descriptionMax: DESCRIPTION_MAX,
      tagsMax: TAGS_MAX,
      tagMax: TAG_MAX,
      iconsMax: ICONS_MAX,
      buildPlatforms: [BuildPlatform.Windows, BuildPlatform.Android],
    };
    reply(ctx, 'Got upload rules', { ...rules });
  });

  router.post('/hostStatus', async (ctx) => {
    const input = parse(HostStatusRequest, ctx.request.body);
    await accounts.requireRank(input.userid, input.tokenContent, Rank.Admin, {
      code: ErrorCode.FORBIDDEN,
      message: 'Invalid permissions! This is for admins and the owner.',
    });
    const localOnly = isLoopbackHost(config.host);
    const connectedUsers: HostStatusDto['connectedUsers'] = [];
    for (const user of await accounts.findUsers([...hub.connectedUserIds()])) {
      const id = user.Id;
      connectedUsers.push({ Id: id, Username: user.Username, sockets: hub.socketsOf(id).size });
    }
    connectedUsers.sort((a, b) => a.Username.localeCompare(b.Username));
    const status: HostStatusDto = {
      bindHost: config.host,
      port: core.port(),
      localOnly,
      openToLan: localOnly ? OPEN_TO_LAN_HINT : null,
      lanUrls: core.lanUrls(),
      connectedUsers,
      requireInviteCode: await core.requireInviteCode(),
      community: await core.community(),
    };
    reply(ctx, 'Got host status', { ...status });
  });
}
