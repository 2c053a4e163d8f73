import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Bourne from '@hapi/bourne';
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { AppError } from '../errors.js';
import { errorEnvelope, reply } from './envelope.js';

/**
 * The lean lane: the hottest read routes (getUser, search, popularity...) answered straight from node:http.
 *
 * Koa builds a context, request and response object and a promise chain per request, which on a 2-core machine
 * costs more than the whole getUser work. A route registered here is written once, as a synchronous handler of
 * plain input, and served two ways: by the Koa router as usual (it is in the API document, and Koa handles every
 * unusual request: form bodies, chunked or compressed bodies, odd charsets, HEAD, oversized bodies), and by this
 * lane for the common case (GET, or POST with a JSON body of known length under the limit), with the same headers,
 * the same envelope and the same error funnel. test/server/lean-lane.test.ts asks both ways and compares.
 */

export interface LeanInput {
  /** The parsed JSON body of a POST (an empty object when there is none). */
  body: unknown;
  query: Record<string, string | string[] | undefined>;
  /** Path parameters, decoded. */
  params: Record<string, string>;
}

/** An answer: a message and result for the envelope, or the whole envelope already serialised (text or bytes). */
export type LeanReply =
  { message: string; result?: Record<string, unknown> } | { json: string } | { bytes: Buffer };

/** Must answer synchronously: the lane writes the response as soon as it returns. */
export type LeanHandler = (input: LeanInput) => LeanReply;

type Method = 'GET' | 'POST';

interface LeanRoute {
  method: Method;
  /** Lower-cased literal segments, or null where the pattern has a parameter. */
  segments: (string | null)[];
  names: (string | null)[];
  handler: LeanHandler;
}

/** X-Request-Id values we echo; anything else gets a fresh id (the same rule as the Koa stack in app.ts). */
export const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The headers every API answer carries besides its type and length: CORS as the Koa stack gives it (app.ts), `*`
 * without an Origin (native clients, as the real server's cors()), the page's own origin when it is allowed.
 */
function commonHeaders(reqId: string, origin: string | undefined): string[] {
  return [
    'X-Request-Id',
    reqId,
    'X-Content-Type-Options',
    'nosniff',
    'Vary',
    'Origin',
    'Access-Control-Allow-Origin',
    origin ?? '*',
  ];
}

export class LeanLane {
  readonly #prefix: string;
  readonly #routes: LeanRoute[] = [];
  readonly #jsonLimit: number;
  readonly #log: Logger;
  readonly #enabled: boolean;
  readonly #originAllowed: (origin: string) => boolean;
  #answered = 0;

  constructor(options: {
    prefix: string;
    jsonLimit: number;
    log: Logger;
    enabled: boolean;
    /** Whether a page of this Origin may call the API; the others are left to Koa, which refuses them. */
    originAllowed: (origin: string) => boolean;
  }) {
    this.#prefix = options.prefix.toLowerCase();
    this.#jsonLimit = options.jsonLimit;
    this.#log = options.log;
    this.#enabled = options.enabled;
    this.#originAllowed = options.originAllowed;
  }

  /** Requests this lane answered itself (the rest went to Koa). */
  get answered(): number {
    return this.#answered;
  }

  /** Registers `handler` for `method path` on the Koa router and, when enabled, on this lane. */
  route(router: Router, method: 'get' | 'post', path: string, handler: LeanHandler): void {
    router[method](path, (ctx: Context) => {
      answerKoa(ctx, handler({ body: ctx.request.body ?? {}, query: ctx.query, params: ctx.params }));
    });
    const parts = path.split('/').slice(1);
    this.#routes.push({
      method: method === 'get' ? 'GET' : 'POST',
      segments: parts.map((part) => (part.startsWith(':') ? null : part.toLowerCase())),
      names: parts.map((part) => (part.startsWith(':') ? part.slice(1) : null)),
      handler,
    });
  }

  /**
   * Answers `req` when it is one of the lane's routes in its common form; false hands it to Koa untouched
   * (nothing has been read from it yet).
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.#enabled) return false;
    const method = req.method;
    if (method !== 'GET' && method !== 'POST') return false;
    const url = req.url ?? '';
    const mark = url.indexOf('?');
    const path = mark < 0 ? url : url.slice(0, mark);
    if (
      path.length <= this.#prefix.length ||
      path.slice(0, this.#prefix.length).toLowerCase() !== this.#prefix
    )
      return false;
    const found = this.#match(method, path.slice(this.#prefix.length));
    if (!found) return false;
    const headers = req.headers;
    const origin = headers.origin;
    if (origin !== undefined && !this.#originAllowed(origin)) return false;
    if (method === 'POST') {
      const length = Number(headers['content-length']);
      if (!isJson(headers['content-type']) || headers['transfer-encoding'] !== undefined) return false;
      if (headers['content-encoding'] !== undefined && headers['content-encoding'] !== 'identity')
        return false;
      if (!Number.isSafeInteger(length) || length < 0 || length > this.#jsonLimit) return false;
    }
    const incoming = headers['x-request-id'];
    const reqId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const query = mark < 0 ? {} : parseQuery(url.slice(mark + 1));
    this.#answered++;
    const started = performance.now();
    const answer = (body: unknown): void => {
      const input = body instanceof Error ? body : { body, query, params: found.params };
      const json = this.#run(found.route, input, reqId, path);
      const head = commonHeaders(reqId, origin);
      const length = typeof json === 'string' ? Buffer.byteLength(json) : json.length;
      head.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(length));
      res.writeHead(200, head);
      res.end(json);
      if (this.#log.isLevelEnabled('debug')) {
        const ms = Math.round(performance.now() - started);
        this.#log.debug({ reqId, method, path, status: 200, ms, lane: 'lean' }, 'request');
      }
    };
    if (method === 'GET') {
      // A GET's body, if any, is ignored as Koa ignores it; reading on lets keep-alive go on.
      req.resume();
      answer({});
      return true;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      answer(parseJsonBody(text));
    });
    // An aborted request has nobody to answer; node:http tears the socket down.
    req.on('error', () => undefined);
    return true;
  }

  #match(method: Method, rest: string): { route: LeanRoute; params: Record<string, string> } | null {
    const parts = rest.split('/');
    // "/getUser/" matches "/getUser", as with Koa's router (strict: false).
    if (parts.length > 2 && parts[parts.length - 1] === '') parts.pop();
    routes: for (const route of this.#routes) {
      if (route.method !== method || route.segments.length !== parts.length - 1) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < route.segments.length; i++) {
        const part = parts[i + 1]!;
        const literal = route.segments[i] ?? null;
        if (literal !== null) {
          if (part.length !== literal.length || part.toLowerCase() !== literal) continue routes;
          continue;
        }
        if (part.length === 0) continue routes;
        try {
          params[route.names[i]!] = decodeURIComponent(part);
        } catch {
          params[route.names[i]!] = part; // as Koa's router: a malformed escape stays as sent
        }
      }
      return { route, params };
    }
    return null;
  }

  /** Runs the handler and serialises its answer or its refusal, exactly as the Koa funnel would. */
  #run(route: LeanRoute, input: LeanInput | Error, reqId: string, path: string): string | Buffer {
    try {
      if (input instanceof Error) throw input;
      const answer = route.handler(input);
      if ('json' in answer) return answer.json;
      if ('bytes' in answer) return answer.bytes;
      return JSON.stringify(envelopeOf(answer));
    } catch (error) {
      return JSON.stringify(errorEnvelope(error, this.#log, reqId, path));
    }
  }
}

/** A query string as Koa 3 reads it (URLSearchParams; a repeated key gives an array). */
function parseQuery(text: string): Record<string, string | string[]> {
  const search = new URLSearchParams(text);
  const query: Record<string, string | string[]> = {};
  for (const key of search.keys()) {
    const values = search.getAll(key);
    Object.defineProperty(query, key, {
      value: values.length <= 1 ? values[0] : values,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return query;
}

function envelopeOf(answer: { message: string; result?: Record<string, unknown> }): object {
  return answer.result === undefined
    ? { success: true, message: answer.message }
    : { success: true, message: answer.message, result: answer.result };
}

function answerKoa(ctx: Context, answer: LeanReply): void {
  if ('json' in answer || 'bytes' in answer) {
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = 'json' in answer ? answer.json : answer.bytes;
    return;
  }
  reply(ctx, answer.message, answer.result);
}

/** application/json (or +json) in UTF-8, the only body the lane reads itself. */
function isJson(type: string | undefined): boolean {
  if (type === undefined) return false;
  const [media = '', ...parameters] = type.toLowerCase().split(';');
  const base = media.trim();
  if (base !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(base)) return false;
  return parameters.every((parameter) => {
    const [name = '', value = ''] = parameter.split('=').map((piece) => piece.trim());
    return name !== 'charset' || value.replace(/"/g, '') === 'utf-8' || value.replace(/"/g, '') === 'utf8';
  });
}

/** As the Koa body parser (co-body, strict): a leading BOM is dropped, an empty body is {}, and only text
 * starting with an object or array is JSON. */
function parseJsonBody(raw: string): unknown {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.length === 0) return {};
  if (!/^[ \t\n\r]*[[{]/.test(text)) return invalidJson();
  try {
    // Bourne refuses __proto__ keys, as the Koa body parser does.
    return Bourne.parse(text, { protoAction: 'error' }) as unknown;
  } catch {
    return invalidJson();
  }
}

function invalidJson(): AppError {
  return new AppError(ErrorCode.INVALID_JSON, 'Invalid parameters! The body is not valid JSON.');
}
