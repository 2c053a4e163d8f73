import { unlink } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type Router from '@koa/router';
import multer from '@koa/multer';
import type { Context, Next } from 'koa';
import type { HostConfig } from '../../config.js';
import { ErrorCode } from '../../protocol/errors.js';
import {
  JsonUploadRequest,
  UpdateAvatarRequest,
  UpdateWorldRequest,
  UploadPartStatusRequest,
} from '../../protocol/schemas.js';
import { AppError } from '../../errors.js';
import type { AccountsService } from '../../services/accounts.js';
import { streamToFile, type TempFile, type UploadsService } from '../../services/uploads.js';
import { parse, reply } from '../envelope.js';
import { uploadVerified } from '../upload-guard.js';
import { tempFileStorage, type Admission } from '../upload-storage.js';

interface UploadedPart {
  path: string;
  size: number;
  hash: string;
  originalname: string;
}

/** Room for the text fields and part headers around the file in a multipart body. */
const MULTIPART_OVERHEAD = 2 * 1024 * 1024;

type UploadRouteDeps = { config: HostConfig; accounts: AccountsService; uploads: UploadsService };

export function uploadRoutes(router: Router, deps: UploadRouteDeps): void {
  const { accounts, uploads } = deps;
  const checkSize = declaredSize(deps.config.uploads);
  const multipartUpload = multipart(deps, false);
  const multipartPart = multipart(deps, true);

  router.post(
    '/upload',
    checkSize,
    async (ctx, next) => {
      if (ctx.is('multipart')) return multipartUpload(ctx, next);
      return next();
    },
    async (ctx) => {
      if (!ctx.is('multipart')) return jsonUpload(deps, ctx);
      await withTemp(ctx, async (temp, originalName, fields) => {
        const user = await credentials(accounts, ctx.req, fields);
        const answer = await uploads.finish(user, temp, originalName, {
          avatarMeta: fields.avatarMeta,
          worldMeta: fields.worldMeta,
        });
        reply(ctx, answer.message, answer.result);
      });
    },
  );

  router.post('/uploadPart', checkSize, multipartPart, async (ctx) => {
    await withTemp(ctx, async (temp, _name, fields) => {
      const user = await credentials(accounts, ctx.req, fields);
      const answer = await uploads.chunk(user, temp, {
        chunkId: fields.chunkId,
        chunkNumber: fields.chunkNumber,
        amountOfChunks: fields.amountOfChunks,
        originalFileName: fields.originalFileName,
        avatarMeta: fields.avatarMeta,
        worldMeta: fields.worldMeta,
      });
      reply(ctx, answer.message, answer.result as Record<string, unknown>);
    });
  });

  router.post('/update/avatar', async (ctx) => {
    const input = parse(UpdateAvatarRequest, ctx.request.body);
    await update(deps, ctx, 'avatar', input, input.avatarmeta ?? input.avatarMeta);
  });
  router.post('/update/world', async (ctx) => {
    const input = parse(UpdateWorldRequest, ctx.request.body);
    await update(deps, ctx, 'world', input, input.worldmeta ?? input.worldMeta);
  });

  router.post('/uploadPartStatus', async (ctx) => {
    const input = parse(UploadPartStatusRequest, ctx.request.body);
    const user = await accounts.requireUser(input.userid, input.tokenContent);
    reply(ctx, 'Got chunk set', await uploads.chunkStatus(user, input.chunkId));
  });
}

/** The request's sender, once its credentials check out; it then no longer counts as anonymous. */
async function credentials(accounts: AccountsService, req: IncomingMessage, fields: Record<string, unknown>) {
  const userid = fields.userid;
  const tokenContent = fields.tokenContent;
  if (typeof userid !== 'string' || typeof tokenContent !== 'string') {
    throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
      ...(typeof userid !== 'string' && { userid: 'is required' }),
      ...(typeof tokenContent !== 'string' && { tokenContent: 'is required' }),
    });
  }
  const user = await accounts.requireUser(userid, tokenContent);
  uploadVerified(req);
  return user;
}

/** A file part that comes before the sender's credentials: only this much of it is kept until they arrive. */
function anonymousFile(limits: HostConfig['uploads']): Admission {
  return {
    bytes: limits.unverifiedFileBytes,
    error: () =>
      new AppError(
        ErrorCode.INVALID_PARAMETERS,
        `Invalid parameters! Send userid and tokenContent before the file: this host keeps at most ${limits.unverifiedFileBytes} bytes of a file before it knows who sends it.`,
        {
          userid: 'must come before a file this large',
          tokenContent: 'must come before a file this large',
        },
      ),
  };
}

/** The multipart parser of an upload (`part`: of a chunk), streaming its file part to a temp file. */
function multipart(deps: UploadRouteDeps, part: boolean) {
  const { accounts, uploads } = deps;
  const limits = deps.config.uploads;
  const anonymous = anonymousFile(limits);
  return multer({
    storage: tempFileStorage({
      tempPath: uploads.tempPath,
      async admit(req, fields, originalName): Promise<Admission> {
        const type = fields.originalFileName;
        const name = typeof type === 'string' ? type : originalName;
        // Credentials sent before the file (as real clients do) are checked before a byte is stored, and
        // the file then streams to disk whole; otherwise only a little of it is kept until they come.
        if (fields.userid === undefined || fields.tokenContent === undefined) {
          uploads.typeOrThrow(name);
          return anonymous;
        }
        const user = await credentials(accounts, req, fields);
        uploads.typeOrThrow(name);
        // A chunk that starts a set the user has no room for is refused before its bytes are stored.
        if (part && fields.chunkId !== undefined) await uploads.chunkRoomOrThrow(user, fields.chunkId);
        return null;
      },
    }),
    limits: {
      fileSize: limits.maxFileBytes,
      files: 1,
      fields: 20,
      fieldSize: limits.fieldBytes,
      parts: 24,
    },
  }).single('file');
}

/** Refuses a body whose declared length is already too big before reading it, then hangs up. */
function declaredSize(limits: HostConfig['uploads']) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const length = Number(ctx.get('content-length'));
    const max = ctx.is('multipart')
      ? limits.maxFileBytes + MULTIPART_OVERHEAD
      : limits.jsonUploadBytes * 1.4 + MULTIPART_OVERHEAD;
    if (Number.isFinite(length) && length > max) {
      ctx.set('Connection', 'close');
      throw new AppError(
        ErrorCode.FILE_TOO_LARGE,
        `Failed to upload file! It is larger than this host allows (${limits.maxFileBytes} bytes).`,
      );
    }
    await next();
  };
}

async function withTemp(
  ctx: Context,
  work: (temp: TempFile, originalName: string, fields: Record<string, unknown>) => Promise<void>,
) {
  const part = (ctx as Context & { file?: UploadedPart }).file;
  const fields = (ctx.request.body ?? {}) as Record<string, unknown>;
  if (!part) {
    throw new AppError(
      ErrorCode.NO_FILE,
      'Invalid parameters! No file: send it as a multipart part named "file".',
      { file: 'is required' },
    );
  }
  try {
    await work({ path: part.path, size: part.size, hash: part.hash }, part.originalname, fields);
  } finally {
    // Anything not moved into place is removed; a missing file means it was.
    await unlink(part.path).catch(() => undefined);
  }
}

/** upload with a JSON body: the file as base64, for small files. */
async function jsonUpload(deps: UploadRouteDeps, ctx: Context): Promise<void> {
  const { accounts, uploads } = deps;
  const limits = deps.config.uploads;
  const input = parse(JsonUploadRequest, ctx.request.body);
  const user = await accounts.requireUser(input.userid, input.tokenContent);
  uploadVerified(ctx.req);
  uploads.typeOrThrow(input.file.name);
  const bytes = Buffer.from(input.file.data, 'base64');
  if (bytes.length > limits.jsonUploadBytes) {
    throw new AppError(
      ErrorCode.FILE_TOO_LARGE,
      `Failed to upload file! JSON uploads are limited to ${limits.jsonUploadBytes} bytes; use multipart for larger files.`,
    );
  }
  const temp = await streamToFile(Readable.from([bytes]), uploads.tempPath());
  try {
    const answer = await uploads.finish(user, temp, input.file.name, input);
    return reply(ctx, answer.message, answer.result);
  } finally {
    // The temp file was moved into place or the upload failed (that failure is thrown); a missing file means
    // it was moved.
    await unlink(temp.path).catch(() => undefined);
  }
}

/**
 * update/avatar and update/world, the 1.5 generation: a file posted to the CDN's (this host's) upload above is
 * attached here; without a fileid the details alone change (wire reference 12.3).
 */
async function update(
  deps: UploadRouteDeps,
  ctx: Context,
  kind: 'avatar' | 'world',
  input: { userid: string; tokenContent: string; fileid?: string | undefined },
  rawMeta: unknown,
): Promise<void> {
  const user = await deps.accounts.requireUser(input.userid, input.tokenContent);
  const answer = await deps.uploads.update(user, kind, { fileId: input.fileid, rawMeta });
  reply(ctx, answer.message, answer.result);
}
