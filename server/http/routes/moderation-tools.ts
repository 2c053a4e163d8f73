import type Router from '@koa/router';
import type { HostCore } from '../../host-core.js';
import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import {
  AddUserNoteRequest,
  ContentJobStartRequest,
  ContentJobsRequest,
  RemoveUserNoteRequest,
  UserContentRequest,
  UserNotesRequest,
} from '../../protocol/moderation-tools.js';
import { parse, reply } from '../envelope.js';

/**
 * Our additions for moderators (issue 28): a user's content, the "remove all content" job, private notes. Each
 * needs rank Moderator or higher; the services apply the rank rules on the target.
 */
export function moderationToolRoutes(
  router: Router,
  core: Pick<HostCore, 'accounts' | 'users' | 'uploads' | 'contentJobs' | 'userNotes' | 'moderation'>,
): void {
  const { accounts, contentJobs, userNotes } = core;
  const requireModerator = (userid: string, tokenContent: string) =>
    accounts.requireRank(userid, tokenContent, Rank.Moderator, {
      code: ErrorCode.NOT_A_MODERATOR,
      message: 'Invalid permissions! This needs rank Moderator or higher.',
      tokenMessage: 'Invalid Token!',
    });

  router.post('/moderationContent', async (ctx) => {
    const input = parse(UserContentRequest, ctx.request.body);
    const caller = await requireModerator(input.userid, input.tokenContent);
    const content = await contentJobs.contentOf(caller, input.targetUserId);
    reply(ctx, 'Got content', { ...content, Job: await contentJobs.get(input.targetUserId) });
  });

  router.post('/startContentRemoval', async (ctx) => {
    const input = parse(ContentJobStartRequest, ctx.request.body);
    const caller = await requireModerator(input.userid, input.tokenContent);
    reply(ctx, 'Started removing content', { Job: await contentJobs.start(caller, input.targetUserId) });
  });

  router.post('/contentRemovalJob', async (ctx) => {
    const input = parse(ContentJobsRequest, ctx.request.body);
    await requireModerator(input.userid, input.tokenContent);
    reply(ctx, 'Got job', { Job: input.targetUserId ? await contentJobs.get(input.targetUserId) : null });
  });

  router.post('/userNotes', async (ctx) => {
    const input = parse(UserNotesRequest, ctx.request.body);
    const caller = await requireModerator(input.userid, input.tokenContent);
    reply(ctx, 'Got notes', { Notes: await userNotes.list(caller, input.targetUserId) });
  });

  router.post('/addUserNote', async (ctx) => {
    const input = parse(AddUserNoteRequest, ctx.request.body);
    const caller = await requireModerator(input.userid, input.tokenContent);
    reply(ctx, 'Added note', { Note: await userNotes.add(caller, input.targetUserId, input.text) });
  });

  router.post('/removeUserNote', async (ctx) => {
    const input = parse(RemoveUserNoteRequest, ctx.request.body);
    const caller = await requireModerator(input.userid, input.tokenContent);
    await userNotes.remove(caller, input.noteId);
    reply(ctx, 'Removed note', {});
  });
}
