import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import coBody from 'co-body';
import koaCors from '@koa/cors';
import Router from '@koa/router';
import Koa from 'koa';
import send from 'koa-send';
import type { HostCore } from '../host-core.js';
import { AppError } from '../errors.js';
import { ErrorCode } from '../protocol/errors.js';
import { ClientErrors, refuseOnSocket } from './client-errors.js';
import { armBodyIdleTimer } from './connection-guard.js';
import { envelopeFunnel, isApiPath } from './envelope.js';
import { ApiRouter } from './api-router.js';
import { createOriginPolicy, type OriginPolicy } from './origins.js';
import { buildOpenApi, renderApiPage } from './openapi.js';
import { uploadGuard } from './upload-guard.js';
import type { ClientAddresses } from '../socket/forwarded-address.js';
import { accountRoutes } from './routes/accounts.js';
import { infoRoutes } from './routes/info.js';
import { inviteRoutes } from './routes/invites.js';
import { moderationRoutes } from './routes/moderation.js';
import { fileRoutes } from './routes/files.js';
import { uploadRoutes } from './routes/uploads.js';
import { instanceRoutes } from './routes/instances.js';
import { discoveryRoutes } from './routes/discovery.js';
import { adminRoutes } from './routes/admin.js';
import { setupRoutes } from './routes/setup.js';
import { buildRoutes } from './routes/builds.js';
import { peopleRoutes } from './routes/people.js';
import { hostInfoRoutes } from './routes/host-info.js';
import { webhookRoutes } from './routes/webhooks.js';
import { auditRoutes } from './routes/audit.js';
import { moderationToolRoutes } from './routes/moderation-tools.js';

/** Every service of the host, each route taking what it needs, plus where the socket listens. */
export type HttpDeps = HostCore & {
  /** The whole core again, for routes that take it as one object. */
  core: HostCore;
  socketPort: () => number;
  /** Where each request comes from (through trusted proxies). */
  addresses: ClientAddresses;
};

/** Version of our API document (the wire protocol itself is Hypernex 1.4). */
export const API_VERSION = '1.4.1-companion.1';

/** UI pages may talk to this host only (HTTP and socket) and load no outside script. */
const UI_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob: http: https:; " +
  "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/**
 * UI pages send no Referer anywhere: the app reads none, and addresses of this host (and the screen a user is on)
 * have no business reaching the image hosts its pages load from.
 */
const UI_REFERRER_POLICY = 'no-referrer';

/** Said to a page of another origin; the host's owner can allow it. */
const ORIGIN_REFUSED =
  "This host does not accept requests from this web page's origin. Its owner can allow the origin with " +
  '--allowed-origin (allowedOrigins in the configuration).';

/** X-Request-Id values we echo; anything else gets a fresh id. */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** `POST /api/v1/upload` as the router matches it: the JSON upload, with its own body cap. */
const UPLOAD_JSON_PATH = /^\/api\/v1\/upload\/?$/i;

export type HttpApp = Koa & {
  apiRouter: Router;
  /** The request listener for node:http: every request goes through the one Koa middleware chain. */
  listener: (req: IncomingMessage, res: ServerResponse) => void;
  /** The http server's `clientError` listener: what Node's parser refuses is answered as an envelope too. */
  clientError: (error: Error & { code?: string }, socket: Duplex) => void;
  origins: OriginPolicy;
  /** Answers a socket upgrade refused for its origin, as an envelope. */
  refuseUpgrade: (socket: Duplex) => void;
};

export function createHttpApp(httpDeps: HttpDeps): HttpApp {
  const app = new Koa();
  const origins = createOriginPolicy({
    configured: httpDeps.config.allowedOrigins,
    host: httpDeps.config.host,
    publicUrl: httpDeps.config.publicUrl,
    port: httpDeps.port,
    lanUrls: httpDeps.lanUrls,
  });
  const deps = httpDeps;
  app.silent = true;

  // The headers every answer carries, and CORS, in one step. As the real server's cors() (no credentials,
  // preflight answered 204) for the origins allowed; `*` for requests that name none (native clients). A page of
  // another origin gets no CORS headers...
  const cors = koaCors({
    origin: (ctx) => {
      const origin = ctx.get('Origin');
      return origin === '' ? '*' : origins.allows(origin) ? origin : '';
    },
    allowMethods: 'GET,HEAD,PUT,PATCH,POST,DELETE',
    // Nothing thrown reaches it: the envelope funnel below answers every failure.
    keepHeadersOnError: false,
  });
  app.use((ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const reqId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.reqId = reqId;
    const res = ctx.res;
    res.setHeader('X-Request-Id', reqId);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Building the log record costs on every request; skip it unless debug logging is on.
    if (!deps.log.isLevelEnabled('debug')) return cors(ctx, next);
    const started = performance.now();
    return cors(ctx, next).finally(() => {
      deps.log.debug(
        {
          reqId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(performance.now() - started),
        },
        'request',
      );
    });
  });
  app.use(envelopeFunnel(deps.log));
  // ... and the API refuses it outright: a form post or a "simple" fetch would otherwise act before the browser
  // hides the answer from the page. Then the upload guard, before the body parsers (a JSON upload's body counts
  // against the anonymous-upload limits too), then the body parsers.
  const guardUploads = uploadGuard(deps.config.uploads, deps.addresses);
  const parseSmall = bodyReader(deps.config.limits.jsonBodyBytes, true);
  // A JSON upload carries its file as base64: it gets its own, larger cap.
  const parseUpload = bodyReader(Math.ceil(deps.config.uploads.jsonUploadBytes * 1.4) + 64 * 1024, false);
  const parseBody = (ctx: Koa.Context, next: Koa.Next): Promise<unknown> => {
    // Only POST, PUT and PATCH carry a body we read (downloads, search... are GET): no parser work for the others.
    if (!isApiPath(ctx.path) || !BODY_METHODS.has(ctx.method)) return next();
    return (UPLOAD_JSON_PATH.test(ctx.path) ? parseUpload : parseSmall)(ctx, next);
  };
  app.use((ctx, next) => {
    const origin = ctx.get('Origin');
    if (origin !== '' && isApiPath(ctx.path) && !origins.allows(origin)) {
      throw new AppError(ErrorCode.ORIGIN_NOT_ALLOWED, ORIGIN_REFUSED);
    }
    return guardUploads(ctx, () => parseBody(ctx, next));
  });

  const api = new ApiRouter({ prefix: '/api/v1' });
  accountRoutes(api, deps);
  setupRoutes(api, deps);
  infoRoutes(api, deps);
  inviteRoutes(api, deps);
  moderationRoutes(api, deps);
  uploadRoutes(api, deps);
  fileRoutes(api, deps);
  instanceRoutes(api, deps);
  discoveryRoutes(api, deps.core);
  adminRoutes(api, deps.core);
  buildRoutes(api, deps);
  peopleRoutes(api, deps.core);
  hostInfoRoutes(api, deps.core);
  webhookRoutes(api, deps.core);
  moderationToolRoutes(api, deps.core);
  auditRoutes(api, deps.core);
  // The document describes every route registered above; built on first ask, off the startup path.
  let docs: { document: Record<string, unknown>; page: string } | null = null;
  const apiDocs = (): { document: Record<string, unknown>; page: string } => {
    if (!docs) {
      const document = buildOpenApi(api, '/api/v1', API_VERSION);
      docs = { document, page: renderApiPage(document) };
    }
    return docs;
  };
  const docsRouter = new Router({ prefix: '/api/v1' });
  docsRouter.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = apiDocs().document;
  });
  docsRouter.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    ctx.set('Referrer-Policy', UI_REFERRER_POLICY);
    ctx.body = apiDocs().page;
  });
  app.use(api.routes());
  app.use(docsRouter.routes());

  if (deps.config.uiDir) app.use(serveUi(deps.config.uiDir));
  const koa = app.callback();
  const clientErrors = new ClientErrors(deps.log);
  const bodyIdleMs = deps.config.limits.bodyIdleSeconds * 1000;
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    clientErrors.track(req, res);
    armBodyIdleTimer(req, bodyIdleMs);
    const url = req.url;
    // "//api/v1/x" (a client's base address with a trailing slash) is "/api/v1/x".
    if (url !== undefined && url.startsWith('//')) req.url = url.replace(/^\/+/, '/');
    // Koa answers its own errors (the envelope funnel); one escaping it still ends only this response.
    koa(req, res).catch(() => res.destroy());
  };
  const clientError = clientErrors.listener;
  const refuseUpgrade = (socket: Duplex): void =>
    refuseOnSocket(socket, ErrorCode.ORIGIN_NOT_ALLOWED, ORIGIN_REFUSED);
  return Object.assign(app, { apiRouter: api, listener, clientError, origins, refuseUpgrade });
}

declare module 'koa' {
  interface Request {
    /** The request's body as read by the body reader below (`{}` when there is none to read). */
    body?: unknown;
  }
}

/** Methods whose request body is read. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** JSON bodies by type (besides plain `application/json`), as the common body parsers take them. */
const JSON_TYPES = ['application/json', 'application/*+json', 'application/csp-report'];

/**
 * Reads a request's body into `ctx.request.body` with co-body (its byte limit, strict JSON: an object or an array,
 * prototype-poisoning keys refused): JSON, and URL-encoded forms when `form`; any other type reads as `{}` and is
 * left for the route (multipart uploads). Failures (too large, not JSON, cut off) reach the envelope funnel.
 */
function bodyReader(limit: number, form: boolean): Koa.Middleware {
  return async (ctx, next) => {
    const req = ctx.req;
    if (req.closed) {
      // The client is gone: nothing to read or answer.
      ctx.status = 499;
      return;
    }
    // What clients send is plain `application/json`: known without parsing the type.
    if (req.headers['content-type'] === 'application/json' || ctx.is(JSON_TYPES)) {
      ctx.request.body = await coBody.json(req, { limit, strict: true });
    } else if (form && ctx.is('urlencoded')) {
      ctx.request.body = await coBody.form(req, { limit });
    } else ctx.request.body = {};
    return next();
  };
}

/** The built renderer at `/`, with index.html for any other page path (client-side routes). */
function serveUi(root: string): Koa.Middleware {
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || isApiPath(ctx.path)) return next();
    ctx.set('Referrer-Policy', UI_REFERRER_POLICY);
    const path = ctx.path === '/' ? '/index.html' : ctx.path;
    let served: string | undefined;
    try {
      served = await send(ctx, path, { root, hidden: false, index: 'index.html' });
    } catch {
      served = undefined;
    }
    if (!served) {
      if (!(await exists(join(root, 'index.html')))) return next();
      served = await send(ctx, '/index.html', { root });
    }
    // koa-send serves the precompressed .br/.gz twin when the browser accepts it (scripts/compress-ui.js).
    ctx.vary('Accept-Encoding');
    served = served.replace(/\.(br|gz)$/, '');
    if (served.endsWith('.html')) {
      ctx.set('Content-Security-Policy', UI_CSP);
      ctx.set('Cache-Control', 'no-cache');
    } else if (served.includes(`${join(root, 'assets')}`)) {
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    }
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
