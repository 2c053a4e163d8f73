import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { ManageAssetTokenRequest } from '../../protocol/schemas.js';
import { AppError } from '../../errors.js';
import type { HostCore } from '../../host-core.js';
import { TAG_MAX, TAGS_MAX } from '../../protocol/uploads.js';
import { POPULARITY_WINDOWS } from '../../services/popularity.js';
import { parse, reply } from '../envelope.js';

export const ITEMS_PER_PAGE_MAX = 100;
export const SEARCH_TEXT_MAX = 100;

/** itemsPerPage and page from the path: whole numbers in range, or a refusal that says which. */
function paging(params: Record<string, string>): { itemsPerPage: number; page: number } {
  const fields: Record<string, string> = {};
  const items = params.itemsPerPage ?? '';
  const page = params.page ?? '';
  if (!/^\d{1,6}$/.test(items) || Number(items) < 1 || Number(items) > ITEMS_PER_PAGE_MAX) {
    fields.itemsPerPage = `must be a whole number from 1 to ${ITEMS_PER_PAGE_MAX}`;
  }
  if (!/^\d{1,6}$/.test(page)) fields.page = 'must be a whole number from 0';
  if (Object.keys(fields).length > 0)
    throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', fields);
  return { itemsPerPage: Number(items), page: Number(page) };
}

function text(params: Record<string, string>, name: string): string {
  const value = (params[name] ?? '').trim();
  if (value.length === 0 || value.length > SEARCH_TEXT_MAX) {
    throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
      [name]: `must be 1 to ${SEARCH_TEXT_MAX} characters`,
    });
  }
  return value;
}

/** Search, tags, popularity and asset tokens (issue 8). */
export function discoveryRoutes(router: Router, core: HostCore): void {
  const { search, popularity, assetTokens, accounts } = core;
  /** Popularity answers as bytes, by page, with the ranking text they were made from. */
  const envelopes = new Map<string, { text: string; bytes: Buffer }>();

  router.get('/search/user/:username/:itemsPerPage/:page', async (ctx) => {
    const params = ctx.params;
    const { itemsPerPage, page } = paging(params);
    reply(ctx, 'Got search results', {
      Candidates: await search.users(text(params, 'username'), itemsPerPage, page),
    });
  });
  for (const kind of ['avatar', 'world'] as const) {
    router.get(`/search/${kind}/:name/:itemsPerPage/:page`, async (ctx) => {
      const params = ctx.params;
      const { itemsPerPage, page } = paging(params);
      reply(ctx, 'Got search results', {
        Candidates: await search.byName(kind, text(params, 'name'), itemsPerPage, page),
      });
    });
    router.get(`/tag/${kind}/:tag/:itemsPerPage/:page`, async (ctx) => {
      const params = ctx.params;
      const { itemsPerPage, page } = paging(params);
      reply(ctx, 'Got search results', {
        Candidates: await search.byTag(kind, text(params, 'tag'), itemsPerPage, page),
      });
    });
    router.get(`/popularity/${kind}/:type/:itemsPerPage/:page`, async (ctx) => {
      const params = ctx.params;
      const type = params.type ?? '';
      if (!/^[0-4]$/.test(type)) {
        throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
          type: `must be 0 to 4 (${POPULARITY_WINDOWS.join(', ')})`,
        });
      }
      const { itemsPerPage, page } = paging(params);
      // The page's JSON is made once per ranking (popularity is read far more than it changes); so are the
      // envelope's bytes around it, kept while the service hands back the same text.
      const text = await popularity.topJson(kind, Number(type), itemsPerPage, page);
      const key = `${kind}:${type}:${itemsPerPage}:${page}`;
      let cached = envelopes.get(key);
      if (cached?.text !== text) {
        const bytes = Buffer.from(
          `{"success":true,"message":"Got popularity","result":{"Popularity":${text}}}`,
          'utf8',
        );
        if (!cached && envelopes.size >= 2000) envelopes.clear();
        cached = { text, bytes };
        envelopes.set(key, cached);
      }
      ctx.status = 200;
      ctx.type = 'application/json';
      ctx.body = cached.bytes;
    });
  }

  // The tag-filtered ranking HypernexSharp e01b12d sends (the official server does not serve it): comma-separated
  // tags, an asset counts when it has any of them. The kind (avatar or world) and the window (0..4) are taken in
  // either order.
  router.get('/popularity/:type/:kind/:tags/:itemsPerPage/:page', async (ctx) => {
    const params = ctx.params;
    const pair = [params.type ?? '', params.kind ?? ''];
    const kind = pair.find((value) => value === 'avatar' || value === 'world');
    const type = pair.find((value) => /^[0-4]$/.test(value));
    if (kind === undefined || type === undefined) {
      throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
        ...(kind === undefined && { kind: 'must be avatar or world' }),
        ...(type === undefined && { type: `must be 0 to 4 (${POPULARITY_WINDOWS.join(', ')})` }),
      });
    }
    const tags = (params.tags ?? '')
      .split(',')
      .map((tag) => tag.trim())
      .filter((tag) => tag.length > 0);
    if (tags.length === 0 || tags.length > TAGS_MAX || tags.some((tag) => tag.length > TAG_MAX)) {
      throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
        tags: `must be 1 to ${TAGS_MAX} comma-separated tags of at most ${TAG_MAX} characters`,
      });
    }
    const { itemsPerPage, page } = paging(params);
    reply(ctx, 'Got popularity', {
      Popularity: await popularity.topTagged(kind, Number(type), tags, itemsPerPage, page),
    });
  });

  router.post('/manageAssetToken', async (ctx) => {
    const input = parse(ManageAssetTokenRequest, ctx.request.body);
    // The real server never answers a string action; we refuse it clearly.
    if (input.action !== 0 && input.action !== 1) {
      throw new AppError(
        ErrorCode.INVALID_PARAMETERS,
        'Invalid parameters! action must be the number 0 (add) or 1 (remove).',
        {
          action: 'must be the number 0 or 1',
        },
      );
    }
    const me = await accounts.requireUser(input.userid, input.tokenContent);
    if (input.action === 0) {
      reply(ctx, 'Added Token!', { token: await assetTokens.add(me, input.assetId) });
      return;
    }
    if (!input.assetToken) {
      throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
        assetToken: 'is required to remove a token',
      });
    }
    await assetTokens.remove(me, input.assetId, input.assetToken);
    reply(ctx, 'Removed Token!');
  });
}
