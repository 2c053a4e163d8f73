// HTTP: the load generator is autocannon (closed loop, one request in flight per keep-alive connection); `post`
// is one JSON request for setup steps.
import autocannon from 'autocannon';
import { BenchError } from './host.js';
import { problems, summary } from './stats.js';

/** What is wrong with an answer (null: nothing); `full`: parse it and run the request's check. */
function problemOf(op, status, body, headers, raw, full) {
  if (status !== 200) return `HTTP ${status}`;
  if (raw) return op.check?.(body, headers) ?? null;
  // A light check between full ones, so the load generator does not become the bottleneck.
  if (!full) return body.startsWith('{"success":true') ? null : `not a success: ${body.slice(0, 200)}`;
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 'an answer that is not JSON';
  }
  if (parsed.success !== true) return `success:false ${parsed.message} ${JSON.stringify(parsed.result)}`;
  return op.check?.(parsed) ?? null;
}

/**
 * Loads `url` with `connections` connections for `seconds`. `next()` makes each request: { path, body (an
 * object or text: a POST; none: a GET), check(parsed answer) -> a problem or null }; `raw: true` skips the JSON
 * envelope checks (check gets the body text and headers); `checkEvery` N checks every Nth answer in full, the
 * others for a success envelope only. Resolves with requests answered as expected, their rate and latencies,
 * and the failures (a failure gives no valid figure).
 */
export async function httpLoad(url, { connections, seconds, next, raw = false, checkEvery = 1 }) {
  const latencies = [];
  let answers = 0;
  const failed = problems();
  let ok = false;
  const instance = autocannon({
    url: url.href,
    connections,
    duration: seconds,
    timeout: 30,
    requests: [
      {
        setupRequest(request, context) {
          const op = (context.op = next());
          const body = typeof op.body === 'object' ? JSON.stringify(op.body) : op.body;
          const headers = body === undefined ? {} : { 'content-type': 'application/json' };
          return { ...request, method: body === undefined ? 'GET' : 'POST', path: op.path, headers, body };
        },
        onResponse(status, body, context, headers) {
          const problem = problemOf(context.op, status, body, headers, raw, ++answers % checkEvery === 0);
          if (problem) failed.add(`${context.op.path.split('/').slice(0, 4).join('/')}: ${problem}`);
          ok = !problem;
        },
      },
    ],
  });
  // 'response' comes right after onResponse for the same answer.
  instance.on('response', (_client, _status, _bytes, ms) => {
    if (ok) latencies.push(ms);
    ok = false;
  });
  const result = await instance;
  const lost = result.errors + result.timeouts;
  if (lost) failed.samples.push(`${lost} connection errors or timeouts`);
  failed.count += lost;
  const s = summary(latencies);
  return { ...s, perSecond: s.count / seconds, failures: failed.count, failureSamples: failed.samples };
}

/** A world's meta as the CCK sends it with an upload (a new world, Windows build). */
export const WORLD_META = { Id: '', Publicity: 0, Name: 'Bench', Description: '', BuildPlatform: 0 };
Object.assign(WORLD_META, { Tags: [], ThumbnailURL: '', IconURLs: [], ServerScripts: [] });

/** POSTs `body` as JSON to /api/v1/`path` and resolves with the envelope; throws unless success (or `expectFail`). */
export async function post(url, path, body, { expectFail = false } = {}) {
  const headers = { 'content-type': 'application/json' };
  const init = { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(60_000) };
  const res = await fetch(new URL(`/api/v1/${path}`, url), init);
  const answer = await res.json();
  if (answer.success !== true && !expectFail)
    throw new BenchError(`${path}: ${answer.message} ${JSON.stringify(answer.result)}`);
  return answer;
}
