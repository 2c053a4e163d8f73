import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { ErrorCode } from '../../protocol/errors.js';
import { Publicity, UploadType } from '../../protocol/enums.js';
import {
  AuthRequest,
  RemoveAvatarRequest,
  RemoveFileRequest,
  RemoveWorldRequest,
} from '../../protocol/schemas.js';
import type { AvatarMetaDto, WorldMetaDto } from '../../protocol/uploads.js';
import { AppError } from '../../errors.js';
import type { AccountsService } from '../../services/accounts.js';
import type { MetaAsker } from '../../services/asset-access.js';
import { createContentRemoval } from '../../services/content-removal.js';
import type { ModerationService } from '../../services/moderation.js';
import type { StoredFile, UploadsService } from '../../services/uploads.js';
import type { StoredUser } from '../../store/users.js';
import { parse, reply } from '../envelope.js';
import type { HostCore } from '../../host-core.js';
import type { ClientAddresses } from '../../socket/forwarded-address.js';

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.mp4': 'video/mp4',
  '.js': 'text/plain; charset=utf-8',
  '.lua': 'text/plain; charset=utf-8',
};

/**
 * The public part of an avatar or world meta, for those who may not use an OwnerOnly one: what it is and whose,
 * without its builds (their file ids, and a world's server scripts). `Builds` stays an empty list, as clients
 * read it as one.
 */
function withoutBuilds<T extends AvatarMetaDto | WorldMetaDto>(meta: T): T {
  return { ...meta, Builds: [] };
}

/** Strips anything that is not ours to show, whatever was stored (the real server leaks asset Tokens). */
function publicAvatar(meta: AvatarMetaDto): AvatarMetaDto {
  const {
    Id,
    OwnerId,
    Publicity: publicity,
    Name,
    Description,
    Tags,
    ImageURL,
    Builds,
    DateCreated,
    DateUpdated,
  } = meta;
  return {
    Id,
    OwnerId,
    Publicity: publicity,
    Name,
    Description,
    Tags,
    ImageURL,
    Builds,
    DateCreated,
    DateUpdated,
  };
}
function publicWorld(meta: WorldMetaDto): WorldMetaDto {
  const {
    Id,
    OwnerId,
    Publicity: publicity,
    Name,
    Description,
    Tags,
    ThumbnailURL,
    IconURLs,
    Builds,
    DateCreated,
    DateUpdated,
  } = meta;
  return {
    Id,
    OwnerId,
    Publicity: publicity,
    Name,
    Description,
    Tags,
    ThumbnailURL,
    IconURLs,
    Builds,
    DateCreated,
    DateUpdated,
  };
}

/** Byte range of a `Range: bytes=a-b` header, null for none, 'invalid' when it cannot be served. */
export function rangeOf(header: string, size: number): { start: number; end: number } | null | 'invalid' {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return 'invalid';
  let start: number;
  let end: number;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'invalid';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start >= size || start > end) return 'invalid';
  return { start, end };
}

type FileRouteDeps = {
  accounts: AccountsService;
  uploads: UploadsService;
  moderation: ModerationService;
  core: Pick<HostCore, 'popularity' | 'assetTokens' | 'assetAccess' | 'hub' | 'instances'>;
  addresses: ClientAddresses;
};

/** Downloads, file and asset metas, removals and a creator's own content. */
export function fileRoutes(router: Router, deps: FileRouteDeps): void {
  downloadRoutes(router, deps);
  metaRoutes(router, deps);
  removalRoutes(router, deps);
  myContentRoutes(router, deps);
}

/** The caller, when a request carries credentials in headers (for OwnerOnly downloads); never from the URL. */
async function caller(accounts: AccountsService, ctx: Context): Promise<StoredUser | null> {
  const userId = ctx.get('x-hypernex-userid');
  const token = ctx.get('x-hypernex-token');
  if (!userId || !token) return null;
  return accounts.authenticate(userId, token);
}

async function sendFile(
  uploads: UploadsService,
  ctx: Context,
  record: StoredFile,
  cache: 'public' | 'private',
): Promise<void> {
  const path = uploads.pathOf(record);
  const info = await stat(path).catch(() => null);
  if (!info) throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to get file!');
  const ext = record.FileName.slice(record.FileName.lastIndexOf('.')).toLowerCase();
  ctx.set('Content-Disposition', `attachment; filename="${record.FileName}"`);
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('ETag', `"${record.Hash}"`);
  ctx.set('Cache-Control', `${cache}, max-age=0, must-revalidate`);
  ctx.type = CONTENT_TYPES[ext] ?? 'application/octet-stream';
  if (ctx.get('if-none-match') === `"${record.Hash}"`) {
    ctx.status = 304;
    return;
  }
  const range = rangeOf(ctx.get('range'), info.size);
  if (range === 'invalid') {
    ctx.status = 416;
    ctx.set('Content-Range', `bytes */${info.size}`);
    ctx.type = 'application/json';
    ctx.body = {
      success: false,
      message: 'Requested range not satisfiable',
      result: { error: { code: ErrorCode.RANGE_NOT_SATISFIABLE } },
    };
    return;
  }
  if (range) {
    ctx.status = 206;
    ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${info.size}`);
    ctx.length = range.end - range.start + 1;
    ctx.body = createReadStream(path, { start: range.start, end: range.end });
    return;
  }
  ctx.status = 200;
  ctx.length = info.size;
  ctx.body = createReadStream(path);
}

/** GET /file/... in its three forms (headers, an asset token, a game server's proof) and GET /filemeta. */
function downloadRoutes(router: Router, deps: FileRouteDeps): void {
  const { accounts, uploads } = deps;
  const { popularity, assetTokens, hub, instances } = deps.core;
  const send = (ctx: Context, record: StoredFile, cache: 'public' | 'private') =>
    sendFile(uploads, ctx, record, cache);

  router.get('/file/:userid/:fileid', async (ctx) => {
    const record = await uploads.fileRecord(ctx.params.userid!, ctx.params.fileid!);
    if (!record) throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to get file!');
    const me = await caller(accounts, ctx);
    const isOwner = me?.Id === record.UserId;
    switch (record.UploadType) {
      case UploadType.Media:
        return send(ctx, record, 'public');
      case UploadType.ServerScript:
        if (isOwner) return send(ctx, record, 'private');
        throw new AppError(ErrorCode.FORBIDDEN, 'Incorrect Endpoint for Getting File');
      case UploadType.Avatar:
      case UploadType.World: {
        const build = await uploads.buildOf(record.FileId);
        const asset = build
          ? await (build.kind === 'avatar' ? uploads.avatar(build.id) : uploads.world(build.id))
          : undefined;
        if (!asset) {
          // A build file no avatar or world uses any more: only its owner may fetch it.
          if (isOwner) return send(ctx, record, 'private');
          throw new AppError(
            ErrorCode.CONTENT_NOT_FOUND,
            record.UploadType === UploadType.Avatar
              ? 'AvatarMeta does not exist!'
              : 'WorldMeta does not exist!',
          );
        }
        if (asset.Publicity === Publicity.Anyone) {
          // A download of a public build counts as a use (issue 8); a 304 or a range request does too.
          popularity.use(build!.kind, asset.Id);
          return send(ctx, record, 'public');
        }
        if (isOwner) return send(ctx, record, 'private');
        throw new AppError(
          ErrorCode.FORBIDDEN,
          record.UploadType === UploadType.Avatar ? 'Failed to Authenticate FileToken' : 'Missing FileToken',
        );
      }
      default:
        throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to get file!');
    }
  });

  /** OwnerOnly builds with an asset token (manageAssetToken); server scripts for a connected game server. */
  router.get('/file/:userid/:fileid/:filetoken', async (ctx) => {
    const record = await uploads.fileRecord(ctx.params.userid!, ctx.params.fileid!);
    if (!record) throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to get file!');
    const token = ctx.params.filetoken!;
    if (record.UploadType === UploadType.ServerScript) {
      // The real server took a connected game server's id as proof here, but GET gameServers lists those ids to
      // anyone: game servers read scripts with their id and token (below), as HypernexSharp's GetServerScript does.
      throw new AppError(ErrorCode.FORBIDDEN, 'Failed to Authenticate FileToken');
    }
    const build = await uploads.buildOf(record.FileId);
    if (record.UploadType === UploadType.Media) return send(ctx, record, 'public');
    if (build && (await assetTokens.allows(build.id, token))) return send(ctx, record, 'private');
    throw new AppError(ErrorCode.FORBIDDEN, 'Failed to Authenticate FileToken');
  });

  /**
   * Server scripts, for the game server that hosts a world using them: it proves who it is with its id and the
   * token it was handed in `sendauth` (the real server checked only the id, which GET gameServers lists).
   */
  router.get('/file/:userid/:fileid/:gameServerId/:gameServerToken', async (ctx) => {
    const record = await uploads.fileRecord(ctx.params.userid!, ctx.params.fileid!);
    if (!record) throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to get file!');
    const gameServerId = ctx.params.gameServerId!;
    const ok =
      record.UploadType === UploadType.ServerScript &&
      hub.gameServerProves(gameServerId, ctx.params.gameServerToken!) &&
      (await uploads.worldsUsingScript(record.FileId)).some((worldId) =>
        instances.hostsWorld(gameServerId, worldId),
      );
    if (!ok) throw new AppError(ErrorCode.FORBIDDEN, 'Failed to Authenticate FileToken');
    return send(ctx, record, 'private');
  });

  router.get('/filemeta/:userid/:fileid', async (ctx) => {
    const record = await uploads.fileRecord(ctx.params.userid!, ctx.params.fileid!);
    if (!record) throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to get FileMeta!');
    reply(ctx, 'Got FileMeta!', { FileMeta: uploads.uploadData(record) });
  });
}

/**
 * GET /meta/avatar and /meta/world, with or without an asset token. An OwnerOnly meta is whole for its owner and
 * whoever may use it (server/services/asset-access.ts); others get the public part.
 */
function metaRoutes(router: Router, deps: FileRouteDeps): void {
  const { accounts, uploads } = deps;
  const { assetAccess } = deps.core;

  /** Who asks for a meta: headers, an asset token in the path, and the machine the request comes from. */
  async function askerOf(ctx: Context): Promise<MetaAsker> {
    return {
      caller: await caller(accounts, ctx),
      assetToken: ctx.params.assetToken,
      address: deps.addresses.of(ctx.req),
    };
  }

  const avatarMeta = async (ctx: Context): Promise<void> => {
    const meta = await uploads.avatar(ctx.params.id!);
    if (!meta) throw new AppError(ErrorCode.CONTENT_NOT_FOUND, 'Failed to get avatar meta!');
    const shown = publicAvatar(meta);
    reply(ctx, 'Got avatar meta', {
      Meta: assetAccess.mayUse('avatar', meta, await askerOf(ctx)) ? shown : withoutBuilds(shown),
    });
  };
  const worldMeta = async (ctx: Context): Promise<void> => {
    const meta = await uploads.world(ctx.params.id!);
    if (!meta) throw new AppError(ErrorCode.CONTENT_NOT_FOUND, 'Failed to get world meta!');
    const shown = publicWorld(meta);
    reply(ctx, 'Got world meta', {
      Meta: assetAccess.mayUse('world', meta, await askerOf(ctx)) ? shown : withoutBuilds(shown),
    });
  };
  router.get('/meta/avatar/:id', avatarMeta);
  router.get('/meta/avatar/:id/:assetToken', avatarMeta);
  router.get('/meta/world/:id', worldMeta);
  router.get('/meta/world/:id/:assetToken', worldMeta);
}

/** POST /remove/avatar, /remove/world and /remove/file (server/services/content-removal.ts). */
function removalRoutes(router: Router, deps: FileRouteDeps): void {
  const { accounts, uploads } = deps;
  const removal = createContentRemoval({ uploads, moderation: deps.moderation });

  router.post('/remove/avatar', async (ctx) => {
    const input = parse(RemoveAvatarRequest, ctx.request.body);
    const me = await accounts.requireUser(input.userid, input.tokenContent);
    await removal.removeAsset(me, 'avatar', input.avatarid);
    reply(ctx, 'Removed avatar!');
  });

  router.post('/remove/world', async (ctx) => {
    const input = parse(RemoveWorldRequest, ctx.request.body);
    const me = await accounts.requireUser(input.userid, input.tokenContent);
    await removal.removeAsset(me, 'world', input.worldid);
    reply(ctx, 'Removed world!');
  });

  router.post('/remove/file', async (ctx) => {
    const input = parse(RemoveFileRequest, ctx.request.body);
    const me = await accounts.requireUser(input.userid, input.tokenContent);
    await removal.removeFile(me, input.fileid);
    reply(ctx, 'Deleted file!');
  });
}

/** Your uploads, avatars and worlds with their per-platform builds (our addition, for creators' UIs). */
function myContentRoutes(router: Router, deps: FileRouteDeps): void {
  const { accounts, uploads } = deps;
  router.post('/getMyContent', async (ctx) => {
    const input = parse(AuthRequest, ctx.request.body);
    const me = await accounts.requireUser(input.userid, input.tokenContent);
    reply(ctx, 'Got content', {
      Uploads: (await uploads.filesOf(me.Id)).map((f) => ({
        ...uploads.uploadData(f),
        OriginalName: f.OriginalName,
        DateUploaded: f.DateUploaded,
      })),
      Avatars: (await uploads.avatars(me.Avatars)).map(publicAvatar),
      Worlds: (await uploads.worlds(me.Worlds)).map(publicWorld),
    });
  });
}
