import { createReadStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { randomBytes } from 'node:crypto';
import type Router from '@koa/router';
import multer from '@koa/multer';
import type { Context } from 'koa';
import type { HostConfig } from '../../config.js';
import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import {
  BUILD_FILES_MAX,
  BuildSettingsRequest,
  BuildTicketRequest,
  GetBuildRequest,
  PublishBuildFields,
  RemoveBuildRequest,
  type BuildListDto,
  type BuildVersionDto,
} from '../../protocol/builds.js';
import { AppError } from '../../errors.js';
import type { AccountsService } from '../../services/accounts.js';
import type { AuditLog } from '../../services/audit-log.js';
import type { BuildsService, Publication } from '../../services/builds.js';
import { parse, reply } from '../envelope.js';
import { uploadVerified } from '../upload-guard.js';
import { rangeOf } from './files.js';

/** A download link for the UI: short-lived, for one file, so a plain link can fetch (and resume) it. */
const TICKET_SECONDS = 10 * 60;
const TICKETS_MAX = 2000;

interface Ticket {
  name: string;
  version: string;
  artifact: number;
  expiresAt: number;
}

type BuildRouteDeps = {
  config: HostConfig;
  accounts: AccountsService;
  builds: BuildsService;
  clock: { now(): number };
  /** Publishing and removing are staff actions of the audit log (builds are folders, not a store commit). */
  core: { audit: Pick<AuditLog, 'record'> };
};

/** Refuses anyone below admin (publishing, settings, removal); the admin otherwise. */
type RequireAdmin = (userid: string, tokenContent: string) => ReturnType<AccountsService['requireRank']>;

/**
 * Client builds (SPEC section 8, wire reference 1.6): `getVersions`, `getBuild` and `authForBuilds` as the real
 * server answers them, plus what the real server has no endpoint for: listing every build, publishing (admins
 * and the owner, multipart) and removing, the token setting, and download links for the UI.
 */
export function buildRoutes(router: Router, deps: BuildRouteDeps): void {
  const { accounts, builds } = deps;
  const tickets = new Map<string, Ticket>();

  const requireAdmin: RequireAdmin = (userid, tokenContent) =>
    accounts.requireRank(userid, tokenContent, Rank.Admin, {
      code: ErrorCode.FORBIDDEN,
      message: 'Invalid permissions! Publishing client builds is for admins and the owner.',
    });

  router.get('/authForBuilds', async (ctx) =>
    reply(ctx, 'Got Information', { authForBuilds: await builds.authForBuilds() }),
  );

  router.get('/getVersions/:name', async (ctx) => {
    const name = ctx.params.name!;
    const versions = await builds.versions(name);
    // A name with no builds is not a failure: the dashboard throws on success:false.
    reply(ctx, 'Got versions!', { Name: name, Versions: versions.map((v) => v.Version) });
  });

  router.post('/getBuild/:name/:version', async (ctx) => {
    const body = parse(GetBuildRequest, ctx.request.body);
    await checkDownloader(deps, body);
    await sendArtifact(builds, ctx, ctx.params.name!, ctx.params.version!, body.buildArtifact);
  });

  /** The UI's download link: the ticket stands for the token when the host requires one. */
  router.get('/getBuild/:name/:version/:artifact', async (ctx) => {
    const { name, version, artifact } = ctx.params as { name: string; version: string; artifact: string };
    if (await builds.authForBuilds()) ticketOrThrow(deps, tickets, ctx, { name, version, artifact });
    await sendArtifact(builds, ctx, name, version, artifact);
  });

  router.post('/buildTicket/:name/:version', async (ctx) => issueTicket(deps, tickets, ctx));

  router.get('/builds', async (ctx) => {
    const list: BuildListDto = { authForBuilds: await builds.authForBuilds(), Builds: await builds.list() };
    reply(ctx, 'Got builds', list as unknown as Record<string, unknown>);
  });

  router.post('/builds/settings', async (ctx) => {
    const input = parse(BuildSettingsRequest, ctx.request.body);
    await requireAdmin(input.userid, input.tokenContent);
    if (input.authForBuilds !== undefined) await builds.setAuthForBuilds(input.authForBuilds);
    reply(ctx, 'Got build settings', { authForBuilds: await builds.authForBuilds() });
  });

  router.post('/builds/remove', async (ctx) => {
    const input = parse(RemoveBuildRequest, ctx.request.body);
    const me = await requireAdmin(input.userid, input.tokenContent);
    const removed = await builds.remove(input.name, input.version);
    await recordBuild(deps, me.Id, 'removebuild', removed);
    reply(ctx, 'Removed build!', { Build: removed });
  });

  publishRoute(router, deps, requireAdmin);
}

/** When the host requires it, getBuild's userid and tokenContent must be a live token (reference 1.6). */
async function checkDownloader(
  deps: BuildRouteDeps,
  body: { userid?: unknown; tokenContent?: unknown },
): Promise<void> {
  if (!(await deps.builds.authForBuilds())) return;
  if (typeof body.userid !== 'string' || typeof body.tokenContent !== 'string') {
    throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters!', {
      ...(typeof body.userid !== 'string' && { userid: 'is required: this host needs a token for builds' }),
      ...(typeof body.tokenContent !== 'string' && {
        tokenContent: 'is required: this host needs a token for builds',
      }),
    });
  }
  if (!(await deps.accounts.authenticate(body.userid, body.tokenContent)))
    throw new AppError(ErrorCode.INVALID_TOKEN, 'Invalid Token!');
}

async function sendArtifact(
  builds: BuildsService,
  ctx: Context,
  name: string,
  version: string,
  buildArtifact: unknown,
) {
  const found = await builds.artifact(name, version, buildArtifact);
  if (!found) throw new AppError(ErrorCode.BUILD_NOT_FOUND, 'Failed to deliver build!');
  const { path, file, size } = found;
  ctx.set('Content-Disposition', `attachment; filename="${file.FileName}"`);
  ctx.set('X-Filename', file.FileName);
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('ETag', `"${file.Hash}"`);
  ctx.set('Cache-Control', 'private, max-age=0, must-revalidate');
  // Let browsers on other origins (the web dashboard) read the file name.
  ctx.set('Access-Control-Expose-Headers', 'Content-Disposition, X-Filename, Content-Range, Content-Length');
  ctx.type = 'application/octet-stream';
  const range = rangeOf(ctx.get('range'), size);
  if (range === 'invalid') {
    ctx.status = 416;
    ctx.set('Content-Range', `bytes */${size}`);
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
    ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
    ctx.length = range.end - range.start + 1;
    ctx.body = createReadStream(path, { start: range.start, end: range.end });
    return;
  }
  ctx.status = 200;
  ctx.length = size;
  ctx.body = createReadStream(path);
}

/** Refuses a download link whose ticket is unknown, expired or for another file. */
function ticketOrThrow(
  deps: BuildRouteDeps,
  tickets: ReadonlyMap<string, Ticket>,
  ctx: Context,
  asked: { name: string; version: string; artifact: string },
): void {
  const given = typeof ctx.query.ticket === 'string' ? ctx.query.ticket : '';
  const ticket = tickets.get(given);
  const nowSeconds = deps.clock.now() / 1000;
  if (
    !ticket ||
    ticket.expiresAt <= nowSeconds ||
    ticket.name !== asked.name ||
    ticket.version !== asked.version ||
    String(ticket.artifact) !== asked.artifact
  ) {
    throw new AppError(
      ErrorCode.INVALID_TOKEN,
      'Invalid Token! This host needs a token for builds: ask for a download link with buildTicket.',
    );
  }
}

/** buildTicket: a download link for a signed-in user, valid TICKET_SECONDS for one file. */
async function issueTicket(deps: BuildRouteDeps, tickets: Map<string, Ticket>, ctx: Context): Promise<void> {
  const input = parse(BuildTicketRequest, ctx.request.body);
  await deps.accounts.requireUser(input.userid, input.tokenContent, 'Invalid Token!');
  const { name, version } = ctx.params as { name: string; version: string };
  const found = await deps.builds.artifact(name, version, input.buildArtifact ?? 0);
  if (!found) throw new AppError(ErrorCode.BUILD_NOT_FOUND, 'Failed to deliver build!');
  const nowSeconds = deps.clock.now() / 1000;
  for (const [key, t] of tickets) if (t.expiresAt <= nowSeconds) tickets.delete(key);
  if (tickets.size >= TICKETS_MAX) tickets.delete(tickets.keys().next().value as string);
  const ticket = randomBytes(32).toString('base64url');
  const expiresAt = Math.floor(nowSeconds) + TICKET_SECONDS;
  const artifact = found.file.Index;
  tickets.set(ticket, { name, version, artifact, expiresAt });
  const path = `getBuild/${encodeURIComponent(name)}/${encodeURIComponent(version)}/${artifact}`;
  reply(ctx, 'Got download link', {
    url: `/api/v1/${path}?ticket=${ticket}`,
    FileName: found.file.FileName,
    expiresAt,
  });
}

/**
 * builds/publish. Publishing: fields (credentials, name, version) first, then the file parts, as HypernexSharp
 * orders its uploads. The first file part checks everything, so a refused publication stores no byte.
 */
function publishRoute(router: Router, deps: BuildRouteDeps, requireAdmin: RequireAdmin): void {
  const publications = new WeakMap<IncomingMessage, Promise<Publication>>();
  const multipart = publishParser(deps, publications, requireAdmin);

  router.post('/builds/publish', async (ctx) => {
    if (!ctx.is('multipart')) {
      throw new AppError(
        ErrorCode.INVALID_PARAMETERS,
        'Invalid parameters! Publish builds as multipart: userid, tokenContent, name and version, then "file" parts.',
      );
    }
    try {
      await multipart(ctx, async () => undefined);
      const publication = publications.get(ctx.req);
      if (!publication) {
        // No file part: say what is wrong with the fields first, if anything.
        const input = parse(PublishBuildFields, ctx.request.body);
        await requireAdmin(input.userid, input.tokenContent);
        throw new AppError(ErrorCode.NO_FILE, 'Failed to publish build! Send at least one file.', {
          file: 'is required',
        });
      }
      const me = await requireAdmin(
        String((ctx.request.body as Record<string, unknown>).userid),
        String((ctx.request.body as Record<string, unknown>).tokenContent),
      );
      const published = await (await publication).commit(me.Id);
      await recordBuild(deps, me.Id, 'publishbuild', published);
      reply(ctx, 'Published build!', { Build: published });
    } finally {
      // Nothing is left of a publication that did not commit (abort after a commit does nothing).
      await publications
        .get(ctx.req)
        ?.then((p) => p.abort())
        .catch(() => undefined);
    }
  });
}

/** The multipart parser of a publication: its first file part begins it, each part is added as it streams. */
function publishParser(
  deps: BuildRouteDeps,
  publications: WeakMap<IncomingMessage, Promise<Publication>>,
  requireAdmin: RequireAdmin,
) {
  return multer({
    storage: {
      _handleFile(req, file, callback) {
        const incoming = file as unknown as { originalname: string; stream: NodeJS.ReadableStream };
        let publication = publications.get(req);
        if (!publication) {
          publication = (async () => {
            const fields = (req as IncomingMessage & { body?: Record<string, unknown> }).body ?? {};
            const input = parse(PublishBuildFields, fields);
            await requireAdmin(input.userid, input.tokenContent);
            uploadVerified(req);
            return deps.builds.begin(input.name, input.version);
          })();
          publications.set(req, publication);
        }
        publication
          .then((p) => p.addFile(incoming.originalname, incoming.stream))
          .then(
            (added) => callback(null, added as never),
            (error: Error) => {
              incoming.stream.resume();
              callback(error);
            },
          );
      },
      _removeFile(_req, _file, callback) {
        // The staging folder goes as a whole when the publication is aborted.
        callback(null as unknown as Error);
      },
    },
    limits: {
      fileSize: deps.config.uploads.maxFileBytes,
      files: BUILD_FILES_MAX,
      fields: 10,
      fieldSize: 4096,
      parts: BUILD_FILES_MAX + 10,
    },
  }).array('file', BUILD_FILES_MAX);
}

/** The audit-log entry of a build published or removed (after the change: a build is folders on disk). */
async function recordBuild(
  deps: BuildRouteDeps,
  actorId: string,
  action: 'publishbuild' | 'removebuild',
  build: BuildVersionDto,
): Promise<void> {
  const name = `${build.Name}@${build.Version}`;
  const fields = { name: build.Name, version: build.Version, files: build.Files.length };
  await deps.core.audit.record(actorId, action, { targetId: name, targetName: name }, fields);
}
