#!/usr/bin/env node
// Accounts load bench: seeds a throwaway data folder with many users, runs the real CLI server in its own process
// and drives getUser / updateBio / login over loopback from worker threads, then prints the figures next to the
// targets. It reports, it does not assert: exit 0 when the run was clean (targets met or not), 1 on any error or
// failed request (a run with failures gives no valid figure).
//
//   node bench/accounts.js [--seconds 10] [--json] [--phases getUser,updateBio,loginStorm] [--help for more]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import {
  BenchError,
  RM_OPTIONS,
  progress,
  readProcStatus,
  processCpu as serverCpu,
  machineCpu,
  machineShares,
  splitEvenly,
  quantile,
  newStat,
  recordFailure,
  RawConnection,
  stopServer,
  removeStateDir,
  seededUser,
  loadServerForSeeding,
  serveArgs,
  spawnServer,
  putUsers,
} from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');

/** The password every seeded user has (it also meets the server's strength rules). */
const PASSWORD = 'Bench-Passw0rd!';
const SEED_BATCH = 500;
/** A request still unanswered after this long counts as failed and its connection is dropped. */
const REQUEST_TIMEOUT_MS = 30_000;
const LOGIN_CLIENTS = 16;
/** Other CPU or steal above this (in % of one core) during a phase marks the run as taken on a busy machine. */
const BUSY_PERCENT = 10;

const PHASES = ['getUser', 'updateBio', 'loginStorm'];

const HELP = `Usage: node bench/accounts.js [options]

Seeds a temporary data folder, starts the server (bin/hypernex-companion.js serve) in its own process, loads it
over loopback and prints the figures next to the targets. Exit 0 when the run was clean (targets met or not),
1 on errors or failed requests, 130 on Ctrl-C. Needs the compiled server (npx tsc -p tsconfig.build.json).

Options:
  --seconds N              length of each phase (default 10)
  --warmup N               seconds of unreported getUser load first (default 1; 0 skips it)
  --users N                users to seed (default 10000)
  --clients N              concurrent clients, one keep-alive connection each (default 64)
  --phases LIST            comma-separated subset of ${PHASES.join(',')} (default: all)
  --workers N              load-generator worker threads (default 1; see "client ELU" in the report)
  --transport KIND         raw (default: minimal HTTP/1.1 client on node:net, the lightest), http (node:http
                           keep-alive Agent) or fetch (undici)
  --json                   print the results as JSON on stdout (no progress on stderr)
  --server-cpu-prof DIR    run the server with --cpu-prof and write its profile to DIR
  --database URL           run the server on PostgreSQL (serve --database): the bench seeds a schema of its own
                           in that database (its role must be allowed to create one) and drops it at the end
  -h, --help               this help
`;

const TARGETS = {
  startupMs: 1000,
  getUserRps: 5000,
  getUserP99Ms: 20,
  updateBioRps: 1000,
  updateBioP99Ms: 250,
  stormGetUserP99Ms: 50,
};

// ---------------------------------------------------------------------------------------------------------------
// Load generator (worker threads). One request in flight per client (closed loop); each client keeps one
// keep-alive connection.
// ---------------------------------------------------------------------------------------------------------------

function makeTransport(kind, host, port, connections) {
  const base = `http://${host}:${port}`;
  if (kind === 'raw') {
    const pool = Array.from({ length: connections }, () => new RawConnection(host, port));
    const watchdog = setInterval(() => {
      const now = performance.now();
      for (const conn of pool) {
        if (conn.busySince && now - conn.busySince > REQUEST_TIMEOUT_MS) conn.abort('request timed out');
      }
    }, 1000);
    watchdog.unref();
    return {
      send: (client, path, body) => pool[client].request(path, body),
      close() {
        clearInterval(watchdog);
        for (const conn of pool) conn.close();
      },
    };
  }
  if (kind === 'http') {
    const agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
    return {
      send: (_client, path, body) =>
        new Promise((resolvePromise, reject) => {
          const req = http.request(
            {
              agent,
              host,
              port,
              method: 'POST',
              path,
              headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
            },
            (res) => {
              res.setEncoding('utf8');
              let text = '';
              res.on('data', (chunk) => (text += chunk));
              res.on('end', () => resolvePromise({ status: res.statusCode, text }));
              res.on('error', reject);
            },
          );
          req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('request timed out')));
          req.on('error', reject);
          req.end(body);
        }),
      close: () => agent.destroy(),
    };
  }
  if (kind === 'fetch') {
    return {
      async send(_client, path, body) {
        const res = await fetch(base + path, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        return { status: res.status, text: await res.text() };
      },
      close() {},
    };
  }
  throw new Error(`unknown transport ${kind}`);
}

/**
 * What each kind of client sends, and how its answer is checked (null: fine, else the problem).
 * Each client draws its users from its own disjoint share (every `clients`-th user from its global index), so no
 * two requests in flight ever touch the same user and updateBio's echo of the new StatusText can be checked
 * strictly (the server answers with the Bio as it is after the write).
 */
function makeOperations(users, password, globalClient, clients) {
  let bioCounter = 0;
  const share = Math.max(1, Math.floor(users.length / clients));
  const offset = globalClient % users.length;
  const pick = () => users[(offset + clients * Math.floor(Math.random() * share)) % users.length];
  return {
    getUser() {
      const user = pick();
      return {
        path: '/api/v1/getUser',
        body: `{"userid":${JSON.stringify(user.id)},"tokenContent":${JSON.stringify(user.token)}}`,
        check: (res) => (res.result?.UserData?.Id === user.id ? null : 'getUser answered another user'),
      };
    },
    updateBio() {
      const user = pick();
      const text = `bench ${globalClient} ${bioCounter++}`;
      return {
        path: '/api/v1/updateBio',
        body: JSON.stringify({ userid: user.id, tokenContent: user.token, bio: { StatusText: text } }),
        check: (res) =>
          res.result?.Bio?.StatusText === text ? null : 'updateBio did not echo the new StatusText',
      };
    },
    login() {
      const user = pick();
      return {
        path: '/api/v1/login',
        body: JSON.stringify({ username: user.username, password, app: 'bench' }),
        check: (res) =>
          res.result?.LoginResult === 4 && typeof res.result?.token?.content === 'string'
            ? null
            : `login gave LoginResult ${res.result?.LoginResult}`,
      };
    },
  };
}

async function clientLoop(transport, client, operation, deadline, stat) {
  while (performance.now() < deadline) {
    const op = operation();
    const started = performance.now();
    let res;
    try {
      res = await transport.send(client, op.path, op.body);
    } catch (error) {
      recordFailure(stat, `transport: ${error.message}`);
      await sleep(20); // a dead server must not turn the loop into a busy spin
      continue;
    }
    const ms = performance.now() - started;
    let problem = null;
    try {
      const parsed = JSON.parse(res.text);
      if (res.status !== 200) problem = `HTTP ${res.status}`;
      else if (parsed.success !== true)
        problem = `success:false ${parsed.message} ${JSON.stringify(parsed.result)}`;
      else problem = op.check(parsed);
    } catch {
      problem = `unparsable answer (HTTP ${res.status})`;
    }
    if (problem) {
      recordFailure(stat, problem);
    } else {
      stat.count++;
      stat.latencies.push(ms);
    }
  }
}

function startWorker() {
  const { host, port, transport: kind, connections, firstClient, clients, users, password } = workerData;
  const transport = makeTransport(kind, host, port, connections);
  const ops = Array.from({ length: connections }, (_, i) =>
    makeOperations(users, password, firstClient + i, clients),
  );
  parentPort.on('message', async (message) => {
    if (message.type === 'stop') {
      transport.close();
      parentPort.close();
      return;
    }
    // message.type === 'run': { durationMs, mix: { getUser, updateBio, login } } (clients of each kind)
    const stats = { getUser: newStat(), updateBio: newStat(), login: newStat() };
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const deadline = started + message.durationMs;
    const loops = [];
    let client = 0;
    for (const kind of ['getUser', 'updateBio', 'login']) {
      for (let i = 0; i < (message.mix[kind] ?? 0); i++) {
        loops.push(clientLoop(transport, client, ops[client][kind], deadline, stats[kind]));
        client++;
      }
    }
    await Promise.all(loops);
    const elapsedMs = performance.now() - started;
    const out = { elapsedMs, elu: performance.eventLoopUtilization(elu).utilization, stats: {} };
    const transfer = [];
    for (const [kind, stat] of Object.entries(stats)) {
      const latencies = Float64Array.from(stat.latencies);
      transfer.push(latencies.buffer);
      out.stats[kind] = { count: stat.count, failures: stat.failures, samples: stat.samples, latencies };
    }
    parentPort.postMessage(out, transfer);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Coordinator (main thread)
// ---------------------------------------------------------------------------------------------------------------

const state = { dataDir: null, server: null, workers: [], cleaning: null, stopping: false, schema: null };

/** A throwaway schema in the --database database: its URL (connections placed in it). */
async function benchSchema(url) {
  const { default: pg } = await import('pg');
  const name = `hx_bench_${Date.now().toString(36)}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${name}`);
  } finally {
    await client.end();
  }
  state.schema = { url, name };
  const placed = new URL(url);
  placed.searchParams.set('options', `-c search_path=${name}`);
  return placed.toString();
}

async function dropBenchSchema() {
  const schema = state.schema;
  if (!schema) return;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: schema.url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA ${schema.name} CASCADE`);
    state.schema = null;
  } finally {
    await client.end();
  }
}

async function cleanup() {
  state.cleaning ??= (async () => {
    await Promise.all(state.workers.map((worker) => worker.terminate().catch(() => undefined)));
    state.workers = [];
    if (state.server) await stopServer(state, state.server).catch(() => undefined);
    // On failure state.dataDir stays set, so the exit handler tries once more.
    await removeStateDir(state, 'dataDir').catch(() => undefined);
    await dropBenchSchema().catch(() => undefined);
  })();
  return state.cleaning;
}

function parseArgsStrict() {
  return parseArgs({
    options: {
      seconds: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '1' },
      users: { type: 'string', default: '10000' },
      clients: { type: 'string', default: '64' },
      workers: { type: 'string', default: '1' },
      transport: { type: 'string', default: 'raw' },
      json: { type: 'boolean', default: false },
      phases: { type: 'string', default: 'getUser,updateBio,loginStorm' },
      'server-cpu-prof': { type: 'string' },
      database: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
}

function parseOptions() {
  let values;
  try {
    values = parseArgsStrict();
  } catch (error) {
    throw new BenchError(`${error.message} (see --help)`);
  }
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const number = (name, min) => {
    const value = Number(values[name]);
    if (!Number.isFinite(value) || value < min) throw new BenchError(`--${name} must be a number >= ${min}`);
    return value;
  };
  const options = {
    seconds: number('seconds', 0.1),
    warmup: number('warmup', 0),
    users: Math.floor(number('users', 1)),
    clients: Math.floor(number('clients', LOGIN_CLIENTS + 1)),
    workers: Math.floor(number('workers', 1)),
    transport: values.transport,
    json: values.json,
    cpuProfDir: values['server-cpu-prof'] ? resolve(values['server-cpu-prof']) : null,
    database: values.database ?? null,
    phases: values.phases.split(',').map((name) => name.trim()),
  };
  for (const name of options.phases) {
    if (!PHASES.includes(name)) throw new BenchError(`--phases takes a list of ${PHASES.join(', ')}`);
  }
  if (!['raw', 'http', 'fetch'].includes(options.transport))
    throw new BenchError('--transport must be raw, http or fetch');
  if (options.workers > options.clients) throw new BenchError('--workers must not exceed --clients');
  return options;
}

async function seed(dataDir, count, database) {
  const { openHost, randomIds, enums, argon2, seedApi } = await loadServerForSeeding(DIST);
  const { Rank } = enums;
  const started = performance.now();
  // fsync off while seeding (one `sync` at the end instead): only the bench's setup gets faster, the server
  // under test runs with its default (fsync on).
  const host = await openHost({ dataDir, database, logLevel: 'silent', fsync: false });
  const users = [];
  let hashMs;
  try {
    const params = host.config.passwordHash;
    const hashStarted = performance.now();
    const hashed = await argon2.hash(PASSWORD, {
      algorithm: 2, // Argon2id, as server/services/passwords.ts
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: 1,
    });
    hashMs = performance.now() - hashStarted;
    const now = Math.floor(Date.now() / 1000);
    for (let start = 0; start < count; start += SEED_BATCH) {
      const changes = [];
      for (let i = start; i < Math.min(count, start + SEED_BATCH); i++) {
        const id = randomIds.id('user');
        const username = `bench${i}`;
        const token = randomIds.secret();
        const user = seededUser(seedApi, {
          id,
          username,
          hashed,
          token,
          now,
          lifetimeSeconds: host.config.tokenLifetimeSeconds,
          rank: Rank.Registered,
        });
        changes.push(user);
        users.push({ id, username, token });
      }
      await putUsers(host, changes);
    }
  } finally {
    // Seeded records reach their files now, as on a host that has been running a while: the server must not
    // start the measured run replaying the seed's log.
    await host.store.checkpoint();
    await host.store.close();
  }
  // Flush the seeded files now, so their writeback does not compete with the measured fsyncs of updateBio.
  execFileSync('sync');
  return { users, seedMs: performance.now() - started, hashMs };
}

async function startServer(dataDir, cpuProfDir, database) {
  const extra = database ? ['--database', database] : [];
  return spawnServer(state, { args: await serveArgs(CLI, dataDir, { cpuProfDir, extra }) });
}

async function startWorkers(options, server, users) {
  const per = splitEvenly(options.clients, options.workers);
  const workers = per.map(
    (connections, index) =>
      new Worker(new URL(import.meta.url), {
        workerData: {
          host: server.url.hostname,
          port: Number(server.url.port),
          transport: options.transport,
          connections,
          firstClient: per.slice(0, index).reduce((sum, n) => sum + n, 0),
          clients: options.clients,
          users,
          password: PASSWORD,
        },
      }),
  );
  state.workers = workers;
  for (const worker of workers) {
    worker.on('error', (error) => process.emit('benchFatal', error));
  }
  return workers;
}

/** Runs one timed phase on every worker; `mix` gives the total clients of each kind. */
async function runPhase(workers, pid, durationMs, mix) {
  const shares = Object.fromEntries(
    Object.entries(mix).map(([kind, n]) => [kind, splitEvenly(n, workers.length)]),
  );
  const machineBefore = await machineCpu();
  const cpuBefore = await serverCpu(pid);
  const clientCpuBefore = process.cpuUsage();
  const results = await Promise.all(
    workers.map(
      (worker, index) =>
        new Promise((resolveRun, reject) => {
          const onMessage = (message) => {
            worker.off('exit', onExit);
            resolveRun(message);
          };
          const onExit = (code) => reject(new BenchError(`a load worker exited (code ${code})`));
          worker.once('message', onMessage);
          worker.once('exit', onExit);
          const workerMix = Object.fromEntries(
            Object.entries(shares).map(([kind, split]) => [kind, split[index]]),
          );
          worker.postMessage({ type: 'run', durationMs, mix: workerMix });
        }),
    ),
  );
  const cpuAfter = await serverCpu(pid);
  const machineAfter = await machineCpu();
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const elapsedMs = Math.max(...results.map((r) => r.elapsedMs));
  const wallSeconds = (cpuAfter.at - cpuBefore.at) / 1000;
  const kinds = {};
  for (const kind of Object.keys(mix)) {
    if (!mix[kind]) continue;
    const parts = results.map((r) => r.stats[kind]);
    const count = parts.reduce((sum, p) => sum + p.count, 0);
    const latencies = new Float64Array(count);
    let offset = 0;
    for (const p of parts) {
      latencies.set(p.latencies, offset);
      offset += p.latencies.length;
    }
    latencies.sort();
    kinds[kind] = {
      clients: mix[kind],
      requests: count,
      failures: parts.reduce((sum, p) => sum + p.failures, 0),
      failureSamples: [...new Set(parts.flatMap((p) => p.samples))].slice(0, 5),
      perSecond: count / (elapsedMs / 1000),
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      maxMs: latencies.length ? latencies[latencies.length - 1] : NaN,
    };
  }
  const totalRequests = Object.values(kinds).reduce((sum, k) => sum + k.requests, 0);
  return {
    seconds: elapsedMs / 1000,
    kinds,
    serverCpuPercent: (100 * (cpuAfter.processSeconds - cpuBefore.processSeconds)) / wallSeconds,
    serverMainThreadCpuPercent: (100 * (cpuAfter.mainSeconds - cpuBefore.mainSeconds)) / wallSeconds,
    clientCpuPercent: (100 * (clientCpu.user + clientCpu.system)) / 1e6 / wallSeconds,
    clientCpuMicrosPerRequest: totalRequests ? (clientCpu.user + clientCpu.system) / totalRequests : NaN,
    // Event-loop CPU per request: the server's cost, much less sensitive to a busy machine than throughput.
    serverMainMicrosPerRequest: totalRequests
      ? (1e6 * (cpuAfter.mainSeconds - cpuBefore.mainSeconds)) / totalRequests
      : NaN,
    workerEventLoopUtilization: Math.max(...results.map((r) => r.elu)),
    ...machineShares(
      machineBefore,
      machineAfter,
      cpuAfter.processSeconds - cpuBefore.processSeconds,
      clientCpu,
    ),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------

const fmt = {
  int: (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a'),
  ms: (n) =>
    Number.isFinite(n)
      ? n < 10
        ? n.toFixed(2)
        : n < 100
          ? n.toFixed(1)
          : Math.round(n).toLocaleString('en-US')
      : 'n/a',
  mib: (n) => (Number.isFinite(n) ? `${n.toFixed(1)} MiB` : 'n/a'),
  pct: (n) => (Number.isFinite(n) ? `${Math.round(n)}%` : 'n/a'),
};

/**
 * The figures with a target; a phase that was not run (--phases) leaves its rows out. A row passes when
 * `value op limit` holds; it is not valid when its phase had failed requests.
 */
function buildTargets(r) {
  const rows = [];
  const row = (name, value, unit, op, limit, valid = true) => {
    const shown = unit === 'ms' ? fmt.ms(value) : fmt.int(value);
    rows.push({
      name,
      value,
      unit,
      op,
      limit,
      pass: op === '<' ? value < limit : value >= limit,
      valid,
      shown: `${shown} ${unit}`,
      target: `${op} ${fmt.int(limit)} ${unit}`,
    });
  };
  row('startup', r.startup.ms, 'ms', '<', TARGETS.startupMs);
  const a = r.phases.getUser?.kinds.getUser;
  if (a) {
    row('getUser throughput', a.perSecond, 'req/s', '>=', TARGETS.getUserRps, !a.failures);
    row('getUser p99', a.p99Ms, 'ms', '<', TARGETS.getUserP99Ms, !a.failures);
  }
  const b = r.phases.updateBio?.kinds.updateBio;
  if (b) {
    row('updateBio throughput', b.perSecond, 'req/s', '>=', TARGETS.updateBioRps, !b.failures);
    row('updateBio p99', b.p99Ms, 'ms', '<', TARGETS.updateBioP99Ms, !b.failures);
  }
  const c = r.phases.loginStorm?.kinds;
  if (c) {
    const ok = !c.getUser.failures && !c.login.failures;
    row('storm: getUser p99', c.getUser.p99Ms, 'ms', '<', TARGETS.stormGetUserP99Ms, ok);
  }
  return rows;
}

function printTable(r) {
  const lines = [];
  const pad = (cells, widths) =>
    cells
      .map((cell, i) => String(cell).padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  lines.push('');
  lines.push(
    `Hypernex Companion accounts bench: ${fmt.int(r.config.users)} users, ${r.config.clients} clients, ` +
      `${r.config.seconds} s per phase, transport ${r.config.transport}, ${r.config.workers} load worker(s), ` +
      `${r.config.store} store`,
  );
  lines.push(`${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}, data folder in ${r.env.tmpdir}`);
  lines.push(
    `seeded in ${(r.seed.ms / 1000).toFixed(2)} s (one argon2id hash: ${fmt.int(r.seed.hashMs)} ms)`,
  );
  lines.push('');
  const widths = [26, 18, 16, 7];
  lines.push(pad(['figure', 'result', 'target', ''], widths));
  lines.push(pad(['-'.repeat(26), '-'.repeat(18), '-'.repeat(16), '-'.repeat(7)], widths));
  const info = (name, shown) => lines.push(pad([name, shown, '', ''], widths));
  const verdict = (name) => {
    const t = r.targets.find((x) => x.name === name);
    if (t)
      lines.push(pad([t.name, t.shown, t.target, !t.valid ? 'INVALID' : t.pass ? 'ok' : 'MISS'], widths));
  };
  verdict('startup');
  const a = r.phases.getUser?.kinds.getUser;
  if (a) {
    verdict('getUser throughput');
    verdict('getUser p99');
    info('getUser p50', `${fmt.ms(a.p50Ms)} ms`);
  }
  const b = r.phases.updateBio?.kinds.updateBio;
  if (b) {
    verdict('updateBio throughput');
    verdict('updateBio p99');
    info('updateBio p50', `${fmt.ms(b.p50Ms)} ms`);
  }
  const c = r.phases.loginStorm?.kinds;
  if (c) {
    verdict('storm: getUser p99');
    info('storm: getUser p50', `${fmt.ms(c.getUser.p50Ms)} ms`);
    info('storm: getUser rate', `${fmt.int(c.getUser.perSecond)} req/s`);
    info('storm: logins', `${c.login.perSecond.toFixed(1)} /s`);
    info('storm: login p50 / p99', `${fmt.ms(c.login.p50Ms)} / ${fmt.ms(c.login.p99Ms)} ms`);
  }
  lines.push(
    pad(['server RSS after startup', fmt.mib(r.memory.afterStartup.rssMiB), '(no target)', ''], widths),
  );
  lines.push(pad(['server RSS after load', fmt.mib(r.memory.afterLoad.rssMiB), '(no target)', ''], widths));
  lines.push(pad(['server peak RSS', fmt.mib(r.memory.afterLoad.hwmMiB), '(no target)', ''], widths));
  lines.push('');
  const pw = [12, 9, 8, 10, 15, 15, 10, 9, 6];
  lines.push(
    pad(
      [
        'phase',
        'requests',
        'failed',
        'server CPU',
        'server main',
        'client CPU',
        'client ELU',
        'other CPU',
        'steal',
      ],
      pw,
    ),
  );
  for (const [name, phase] of Object.entries(r.phases)) {
    const kinds = Object.values(phase.kinds);
    lines.push(
      pad(
        [
          name,
          fmt.int(kinds.reduce((sum, k) => sum + k.requests, 0)),
          fmt.int(kinds.reduce((sum, k) => sum + k.failures, 0)),
          fmt.pct(phase.serverCpuPercent),
          `${fmt.pct(phase.serverMainThreadCpuPercent)} ${Math.round(phase.serverMainMicrosPerRequest)}us/rq`,
          `${fmt.pct(phase.clientCpuPercent)} ${Math.round(phase.clientCpuMicrosPerRequest)}us/rq`,
          phase.workerEventLoopUtilization.toFixed(2),
          fmt.pct(phase.otherCpuPercent),
          fmt.pct(phase.stealPercent),
        ],
        pw,
      ),
    );
  }
  lines.push(
    'CPU in % of one core. server CPU: whole process (with libuv/GC threads); server main: its event-loop thread;',
    'client ELU near 1.00: the load generator is the bottleneck; other CPU: processes other than server and bench',
    '(with kernel threads working for them, ~5% in updateBio); steal: time the hypervisor gave to other guests.',
  );
  if (r.busyMachine) {
    lines.push(
      `WARNING: the machine was busy with other work (other CPU or steal above ${BUSY_PERCENT}%) during a phase: these figures ` +
        `understate the server. Run again on a quiet machine.`,
    );
  }
  if (r.failures.total > 0) {
    lines.push('');
    lines.push(`FAILED REQUESTS: ${r.failures.total}; these figures are not valid. Samples:`);
    for (const sample of r.failures.samples) lines.push(`  ${sample}`);
  }
  if (r.server.stderr) {
    lines.push('');
    lines.push('server stderr:');
    lines.push(r.server.stderr.trimEnd());
  }
  if (r.server.cpuProfDir) lines.push(`server CPU profile written to ${r.server.cpuProfDir}`);
  lines.push('');
  process.stdout.write(lines.join('\n'));
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
  const options = parseOptions();
  const onSignal = (signal) => {
    state.stopping = true;
    process.stderr.write(`\n${signal}: stopping the server and removing the data folder\n`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Last resort if something throws past the handlers: never leave a server or a data folder behind.
  process.once('exit', () => {
    if (state.server) state.server.child.kill('SIGKILL');
    if (state.dataDir) rmSync(state.dataDir, RM_OPTIONS);
  });
  const fatal = new Promise((_, reject) => process.on('benchFatal', reject));
  fatal.catch(() => undefined);

  if (!existsSync(join(DIST, 'host.js')) || !existsSync(join(DIST, 'cli.js'))) {
    throw new BenchError('dist/server is missing: build it first with `npx tsc -p tsconfig.build.json`');
  }
  state.dataDir = await mkdtemp(join(os.tmpdir(), 'hypernex-bench-'));
  progress(options, `seeding ${options.users} users in ${state.dataDir} ...`);
  const database = options.database ? await benchSchema(options.database) : null;
  const seeded = await seed(state.dataDir, options.users, database);

  progress(options, 'starting the server ...');
  const server = await startServer(state.dataDir, options.cpuProfDir, database);
  const pid = server.child.pid;
  const afterStartup = await readProcStatus(pid);

  const workers = await startWorkers(options, server, seeded.users);
  const durationMs = options.seconds * 1000;
  const storm = Math.min(LOGIN_CLIENTS, options.clients - 1);
  const phases = {};
  const run = (mix, ms) => Promise.race([runPhase(workers, pid, ms, mix), fatal]);
  if (options.warmup > 0) {
    progress(options, `warm-up: ${options.warmup} s of getUser ...`);
    phases.warmup = await run({ getUser: options.clients }, options.warmup * 1000);
  }
  if (options.phases.includes('getUser')) {
    progress(options, `a) getUser, ${options.clients} clients, ${options.seconds} s ...`);
    phases.getUser = await run({ getUser: options.clients }, durationMs);
  }
  if (options.phases.includes('updateBio')) {
    progress(options, `b) updateBio, ${options.clients} clients, ${options.seconds} s ...`);
    phases.updateBio = await run({ updateBio: options.clients }, durationMs);
  }
  if (options.phases.includes('loginStorm')) {
    progress(
      options,
      `c) login storm: ${storm} login + ${options.clients - storm} getUser clients, ${options.seconds} s ...`,
    );
    phases.loginStorm = await run({ getUser: options.clients - storm, login: storm }, durationMs);
  }
  const afterLoad = await readProcStatus(pid);

  for (const worker of workers) worker.postMessage({ type: 'stop' });
  await Promise.all(workers.map((worker) => worker.terminate()));
  state.workers = [];
  const exit = await stopServer(state, server);
  await removeStateDir(state, 'dataDir');
  await dropBenchSchema();

  const warmup = phases.warmup;
  delete phases.warmup;
  const failureSamples = [];
  let failureTotal = 0;
  for (const [name, phase] of Object.entries({ warmup, ...phases })) {
    if (!phase) continue;
    for (const [kind, k] of Object.entries(phase.kinds)) {
      failureTotal += k.failures;
      for (const sample of k.failureSamples) failureSamples.push(`${name}/${kind}: ${sample}`);
    }
  }
  const result = {
    config: {
      users: options.users,
      clients: options.clients,
      seconds: options.seconds,
      warmupSeconds: options.warmup,
      transport: options.transport,
      workers: options.workers,
      store: options.database ? 'PostgreSQL' : 'embedded',
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      tmpdir: os.tmpdir(),
    },
    seed: { ms: seeded.seedMs, hashMs: seeded.hashMs },
    startup: { ms: server.startupMs },
    memory: { afterStartup, afterLoad },
    phases,
    failures: {
      total: failureTotal,
      warmup: warmup ? Object.values(warmup.kinds)[0].failures : 0,
      samples: failureSamples,
    },
    server: {
      exitCode: exit.code,
      exitSignal: exit.signal,
      stderr: server.stderr,
      cpuProfDir: options.cpuProfDir,
    },
  };
  result.targets = buildTargets(result);
  result.valid = failureTotal === 0 && exit.code === 0;
  // Other work on the machine during a phase: the figures then understate the server (see machineShares).
  result.busyMachine = Object.values(phases).some(
    (phase) => phase.otherCpuPercent > BUSY_PERCENT || phase.stealPercent > BUSY_PERCENT,
  );
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else printTable(result);
  if (exit.code !== 0)
    process.stderr.write(`the server exited with code ${exit.code} (signal ${exit.signal})\n`);
  return result.valid ? 0 : 1;
}

if (isMainThread) {
  main()
    .then(async (code) => {
      await cleanup();
      process.exitCode = code;
    })
    .catch(async (error) => {
      // After Ctrl-C, errors of the interrupted work (e.g. the server stopping by the same signal) are expected.
      if (state.stopping) return;
      process.stderr.write(`bench failed: ${error instanceof BenchError ? error.message : error.stack}\n`);
      await cleanup();
      process.exitCode = 1;
    });
} else {
  startWorker();
}
