#!/usr/bin/env node
// Socket bench: seeds a throwaway data folder, runs the real CLI server in its own process and measures
//   1. requestinvite throughput and latency among 1,000 verified users who are all friends, with a window of 100
//      requests in flight, against a bare `ws` relay (this file run with --relay, also its own process) driven by
//      the same client in the same run, in interleaved rounds (the median round is reported);
//   2. memory per idle verified socket and the time to verify 10,000 sockets, on a fresh server process.
// Client load runs in worker threads. It reports, it does not assert: exit 0 when the run was clean (targets met
// or not), 1 on any error (failed, lost or unexpected messages, sockets dropped, server crash), 130 on Ctrl-C.
//
//   node bench/socket.js [--seconds 10] [--repeat 3] [--json] [--phases relay,server,idle] [--help for more]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json. Linux only (reads /proc).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { WebSocket, WebSocketServer } from 'ws';
import {
  BenchError,
  RM_OPTIONS,
  raiseFdScript,
  progress,
  fdLimits,
  processCpu,
  machineCpu,
  ask,
  splitEvenly,
  quantile,
  mergeSorted,
  removeStateDir,
  terminateWorkers,
  seededUser,
  loadServerForSeeding,
  followChild,
  untilReady,
  LISTENING,
  putUsers,
} from './lib.js';

const SCRIPT = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');

/** The password every seeded user has (it also meets the server's strength rules). */
const PASSWORD = 'Bench-Passw0rd!';
const SEED_BATCH = 500;
/** Opening and verifying one socket may take this long before it counts as failed. */
const CONNECT_TIMEOUT_MS = 60_000;
/** After a run stops sending, deliveries still missing after this long count as lost. */
const DRAIN_TIMEOUT_MS = 10_000;
/** ... and durable acks (sentinviterequest) still missing after this long count as lost. */
const ACK_TIMEOUT_MS = 30_000;
/** After connecting, the clients wait until no message arrived for this long (the friendstatus storm is over). */
const QUIET_MS = 500;
/** Sockets opened at once by each load worker while connecting the friends. */
const LOAD_CONNECT_CONCURRENCY = 100;
/** File descriptors needed besides the sockets (files, pipes, workers). */
const FD_MARGIN = 512;
/** Environment flag of a bench process re-executed with a raised descriptor limit (it must not loop). */
const FD_RAISED_ENV = 'HYPERNEX_SOCKET_BENCH_FD_RAISED';

/**
 * Memory probe loaded into the server process (`--import`, with `--expose-gc`): on SIGUSR2 it runs a full GC
 * and writes process.memoryUsage() to $HYPERNEX_BENCH_PROBE. Nothing else in the server changes.
 */
const PROBE_SOURCE =
  "import{writeFileSync}from'node:fs';process.on('SIGUSR2',()=>{globalThis.gc?.();globalThis.gc?.();" +
  'writeFileSync(process.env.HYPERNEX_BENCH_PROBE,JSON.stringify(process.memoryUsage()))});';

const PHASES = ['relay', 'server', 'idle'];

const HELP = `Usage: node bench/socket.js [options]

Seeds a temporary data folder, starts the server (bin/hypernex-companion.js serve) and a bare ws relay in their
own processes, loads them over loopback from worker threads and prints the figures next to the targets. Exit 0
when the run was clean (targets met or not), 1 on errors, 130 on Ctrl-C. Needs the compiled server
(npx tsc -p tsconfig.build.json). Linux only.

Phases:
  relay    requestinvite-shaped messages through a bare ws relay (the limit to compare with)
  server   requestinvite through the server: ${'>'}= 0.5 of the relay's rate, p99 send->gotinviterequest < 15 ms
  idle     idle verified sockets on a fresh server: memory per socket < 20 KiB, time to verify them all

Options:
  --seconds N              measured length of each throughput run (default 10)
  --warmup N               seconds of unreported load before each throughput run (default 1; 0 skips it)
  --friends N              users who are all friends of one another, one socket each (default 1000)
  --window N               requests in flight (sent, gotinviterequest not yet received) (default 100)
  --workers N              load worker threads for the throughput runs (default 1). With N > 1 each worker
                           owns 1/N of the users and sends only among them (window split evenly)
  --idle N                 idle sockets (one user each) for the memory phase (default 10000)
  --idle-workers N         worker threads opening the idle sockets (default 2)
  --connect-concurrency N  idle sockets being opened and verified at once, over all idle workers (default 256)
  --phases LIST            comma-separated subset of ${PHASES.join(',')} (default: all)
  --repeat N               rounds of relay then server, interleaved (this machine's speed drifts by minutes);
                           the figures are the median round by rate ratio, every round's rates are listed
                           (default 3)
  --json                   print the results as JSON on stdout (no progress on stderr)
  --server-cpu-prof DIR    run the servers with --cpu-prof and write their profiles to DIR
  --no-heap-probe          do not load the memory probe (--expose-gc + SIGUSR2 hook) into the idle server
  -h, --help               this help
`;

const TARGETS = { ratio: 0.5, p99Ms: 15, kibPerSocket: 20 };

const wallNow = () => performance.timeOrigin + performance.now();
/** CLOCK_MONOTONIC in microseconds: the clock of V8 CPU profiles, so a window can be cut out of the server's. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

// ---------------------------------------------------------------------------------------------------------------
// Bare relay (its own process: node bench/socket.js --relay). A socket names itself with ?id=...; any text
// message {"to": id, ...} is forwarded unchanged to that socket. No checks, no state besides the id map.
// ---------------------------------------------------------------------------------------------------------------

function runRelay() {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    perMessageDeflate: false,
    clientTracking: false,
    maxPayload: 64 * 1024,
  });
  const sockets = new Map();
  wss.on('connection', (ws, req) => {
    const id = new URL(req.url ?? '/', 'http://relay').searchParams.get('id') ?? '';
    sockets.set(id, ws);
    ws.on('message', (data) => {
      let to;
      try {
        to = JSON.parse(data.toString('utf8')).to;
      } catch {
        return;
      }
      sockets.get(to)?.send(data, { binary: false });
    });
    ws.on('close', () => {
      if (sockets.get(id) === ws) sockets.delete(id);
    });
    ws.on('error', () => undefined);
    ws.send('{"message":"authenticated","result":{}}');
  });
  wss.on('listening', () => process.stdout.write(`relay listening on ${wss.address().port}\n`));
  const stop = () => process.exit(0);
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // The bench holds our stdin: when it goes away (even killed), so do we.
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}

// ---------------------------------------------------------------------------------------------------------------
// Load worker (throughput runs). Owns users [first, first + count) of the friends, one socket each, and sends
// requests from a random owned user to a random other owned user, keeping `window` in flight. A request is in
// flight from its send until the target's socket gets the gotinviterequest (or the sender a refusal); at most
// one request per (sender, target) pair is in flight, so a delivery is matched by its pair.
// ---------------------------------------------------------------------------------------------------------------

function loadWorker() {
  const { url, mode, users, first, count, window } = workerData;
  const N = users.length;
  const indexOf = new Map(users.map((u, i) => [u.id, i]));
  const sockets = new Array(N).fill(null);
  const relay = mode === 'relay';
  // Payload pieces built once: the client must stay cheap next to the server it loads.
  const prefix = users.map((u) =>
    relay
      ? `{"to":"`
      : `{"userId":${JSON.stringify(u.id)},"message":"RequestInvite","args":{"targetUserId":"`,
  );
  const payload = relay
    ? (s, t) =>
        `${prefix[s]}${users[t].id}","message":"gotinviterequest","result":{"fromUserId":"${users[s].id}"}}`
    : (s, t) => `${prefix[s]}${users[t].id}"}}`;
  const errors = { count: 0, samples: [] };
  const problem = (message) => {
    errors.count++;
    if (errors.samples.length < 5 && !errors.samples.includes(message)) errors.samples.push(message);
  };
  let closing = false;
  let lastMessageAt = performance.now();
  let friendStatusCount = 0;
  const pendingAuth = new Map();
  let run = null;

  function onMessage(r, data) {
    lastMessageAt = performance.now();
    const text = data.toString('utf8');
    // The connect-time presence storm (each arrival tells every connected friend): counted, not parsed.
    if (text.startsWith('{"message":"friendstatus"')) {
      friendStatusCount++;
      return;
    }
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      problem('unparsable message from the server');
      return;
    }
    switch (msg.message) {
      case 'gotinviterequest': {
        const from = indexOf.get(msg.result?.fromUserId);
        const key = from * N + r;
        const sentAt = run?.inFlight.get(key);
        if (sentAt === undefined) {
          problem('a gotinviterequest nobody was waiting for');
          return;
        }
        const at = performance.now();
        run.inFlight.delete(key);
        run.latencies.push(at - sentAt);
        run.delivered++;
        if (at <= run.deadline) run.deliveredInWindow++;
        pump();
        return;
      }
      case 'sentinviterequest':
      case 'failedtorequestinvite': {
        const target = indexOf.get(msg.result?.targetUserId);
        const key = r * N + target;
        const queue = run?.acks.get(key);
        const sentAt = queue?.shift();
        if (sentAt === undefined) {
          problem(`a ${msg.message} for no request in flight`);
          return;
        }
        if (queue.length === 0) run.acks.delete(key);
        run.ackOutstanding--;
        if (msg.message === 'sentinviterequest') {
          run.ackLatencies.push(performance.now() - sentAt);
        } else {
          const reason = String(msg.result?.reason);
          run.refused[reason] = (run.refused[reason] ?? 0) + 1;
          problem(`failedtorequestinvite ${reason}`);
          if (run.inFlight.get(key) === sentAt) run.inFlight.delete(key);
        }
        pump();
        return;
      }
      case 'authenticated': {
        const pending = pendingAuth.get(r);
        if (pending) {
          pendingAuth.delete(r);
          pending.resolve();
        }
        return;
      }
      default:
        problem(`unexpected ${msg.message}: ${JSON.stringify(msg.result).slice(0, 200)}`);
    }
  }

  function open(i) {
    return new Promise((resolveOpen, reject) => {
      const user = users[i];
      const target = relay ? `${url}?id=${encodeURIComponent(user.id)}` : url;
      const ws = new WebSocket(target, { perMessageDeflate: false, handshakeTimeout: CONNECT_TIMEOUT_MS });
      sockets[i] = ws;
      const timer = setTimeout(() => fail(new Error('not verified in time')), CONNECT_TIMEOUT_MS);
      const fail = (error) => {
        if (!pendingAuth.has(i)) return;
        pendingAuth.delete(i);
        clearTimeout(timer);
        reject(error);
      };
      pendingAuth.set(i, {
        resolve: () => {
          clearTimeout(timer);
          resolveOpen();
        },
      });
      ws.on('open', () => {
        if (!relay) {
          ws.send(JSON.stringify({ userId: user.id, tokenContent: user.token, message: 'auth', args: {} }));
        }
      });
      ws.on('message', (data) => onMessage(i, data));
      ws.on('error', (error) => fail(error));
      ws.on('close', (code) => {
        fail(new Error(`closed before verifying (code ${code})`));
        if (!closing) problem(`a socket was closed by the server (code ${code})`);
      });
    });
  }

  async function connectAll() {
    const started = performance.now();
    let next = first;
    const slots = Array.from({ length: Math.min(LOAD_CONNECT_CONCURRENCY, count) }, async () => {
      while (next < first + count) await open(next++);
    });
    await Promise.all(slots);
    return performance.now() - started;
  }

  function pump() {
    const r = run;
    if (!r) return;
    while (r.sending && r.inFlight.size < window) {
      if (performance.now() >= r.deadline) {
        r.sending = false;
        break;
      }
      let s;
      let t;
      let key;
      let tries = 0;
      do {
        s = first + Math.floor(Math.random() * count);
        t = first + Math.floor(Math.random() * (count - 1));
        if (t >= s) t++;
        key = s * N + t;
      } while (r.inFlight.has(key) && ++tries < 100);
      if (r.inFlight.has(key)) break; // only when the window is close to the number of pairs
      const at = performance.now();
      r.inFlight.set(key, at);
      if (!relay) {
        const queue = r.acks.get(key);
        if (queue) queue.push(at);
        else r.acks.set(key, [at]);
        r.ackOutstanding++;
      }
      sockets[s].send(payload(s, t));
      r.sent++;
    }
    if (!r.sending && r.inFlight.size === 0 && r.ackOutstanding === 0) finish();
  }

  function finish() {
    const r = run;
    if (!r || r.finished) return;
    r.finished = true;
    clearTimeout(r.deadlineTimer);
    clearTimeout(r.drainTimer);
    clearTimeout(r.ackTimer);
    run = null;
    const latencies = Float64Array.from(r.latencies);
    const ackLatencies = Float64Array.from(r.ackLatencies);
    r.port.postMessage(
      {
        type: 'result',
        durationMs: r.deadline - r.started,
        sent: r.sent,
        delivered: r.delivered,
        deliveredInWindow: r.deliveredInWindow,
        lost: r.inFlight.size,
        acksMissing: r.ackOutstanding,
        refused: r.refused,
        latencies,
        ackLatencies,
        elu: r.eluAtDeadline ?? performance.eventLoopUtilization(r.elu).utilization,
        errors: errors.count - r.errorsBefore,
        errorSamples: errors.samples.slice(),
      },
      [latencies.buffer, ackLatencies.buffer],
    );
  }

  function startRun(durationMs) {
    const started = performance.now();
    run = {
      port: parentPort,
      started,
      deadline: started + durationMs,
      sending: true,
      finished: false,
      inFlight: new Map(),
      acks: new Map(),
      ackOutstanding: 0,
      sent: 0,
      delivered: 0,
      deliveredInWindow: 0,
      latencies: [],
      ackLatencies: [],
      refused: {},
      elu: performance.eventLoopUtilization(),
      errorsBefore: errors.count,
    };
    const r = run;
    // Stop sending at the deadline even if nothing comes back; then give the stragglers a bounded time.
    r.deadlineTimer = setTimeout(() => {
      r.eluAtDeadline = performance.eventLoopUtilization(r.elu).utilization;
      r.sending = false;
      if (r.inFlight.size === 0 && r.ackOutstanding === 0) finish();
    }, durationMs);
    r.drainTimer = setTimeout(() => {
      if (r.inFlight.size > 0) finish();
    }, durationMs + DRAIN_TIMEOUT_MS);
    r.ackTimer = setTimeout(finish, durationMs + ACK_TIMEOUT_MS);
    pump();
  }

  parentPort.on('message', async (message) => {
    try {
      if (message.type === 'connect') {
        const ms = await connectAll();
        parentPort.postMessage({ type: 'connected', ms });
      } else if (message.type === 'quiet') {
        const started = performance.now();
        while (performance.now() - lastMessageAt < QUIET_MS && performance.now() - started < 120_000) {
          await sleep(50);
        }
        parentPort.postMessage({ type: 'quiet', ms: performance.now() - started, friendStatusCount });
      } else if (message.type === 'run') {
        startRun(message.durationMs);
      } else if (message.type === 'close') {
        closing = true;
        for (const ws of sockets) ws?.terminate();
        parentPort.postMessage({ type: 'closed', errors: errors.count, errorSamples: errors.samples });
      }
    } catch (error) {
      parentPort.postMessage({ type: 'error', message: `load worker: ${error.message}` });
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Idle worker (memory phase): opens and verifies its share of the idle users' sockets, `concurrency` at a time,
// then keeps them open and quiet (the ws client answers the server's pings by itself).
// ---------------------------------------------------------------------------------------------------------------

function idleWorker() {
  const { url, users } = workerData;
  const sockets = [];
  let closing = false;
  let droppedAfterVerify = 0;
  const failures = { count: 0, samples: [] };
  const failed = (message) => {
    failures.count++;
    if (failures.samples.length < 5 && !failures.samples.includes(message)) failures.samples.push(message);
  };

  function open(user, latencies) {
    return new Promise((resolveOpen) => {
      const started = performance.now();
      let verified = false;
      let settled = false;
      const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: CONNECT_TIMEOUT_MS });
      sockets.push(ws);
      const done = (problemText) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (problemText) failed(problemText);
        resolveOpen();
      };
      const timer = setTimeout(() => done('not verified in time'), CONNECT_TIMEOUT_MS);
      ws.on('open', () =>
        ws.send(JSON.stringify({ userId: user.id, tokenContent: user.token, message: 'auth', args: {} })),
      );
      ws.on('message', (data) => {
        const text = data.toString('utf8');
        if (!verified && text.startsWith('{"message":"authenticated"')) {
          verified = true;
          latencies.push(performance.now() - started);
          done(null);
        } else if (!verified) {
          done(`unexpected answer to auth: ${text.slice(0, 200)}`);
        }
      });
      ws.on('error', (error) => done(`socket error: ${error.message}`));
      ws.on('close', (code) => {
        if (!verified) done(`closed before verifying (code ${code})`);
        else if (!closing) droppedAfterVerify++;
      });
    });
  }

  parentPort.on('message', async (message) => {
    if (message.type === 'ready') {
      parentPort.postMessage({ type: 'ready' });
    } else if (message.type === 'go') {
      const latencies = [];
      const startedAt = wallNow();
      let next = 0;
      const slots = Array.from({ length: Math.min(message.concurrency, users.length) }, async () => {
        while (next < users.length) await open(users[next++], latencies);
      });
      await Promise.all(slots);
      const finishedAt = wallNow();
      const out = Float64Array.from(latencies);
      parentPort.postMessage(
        {
          type: 'verified',
          startedAt,
          finishedAt,
          verified: latencies.length,
          latencies: out,
          failures: failures.count,
          failureSamples: failures.samples,
        },
        [out.buffer],
      );
    } else if (message.type === 'check') {
      parentPort.postMessage({ type: 'checked', dropped: droppedAfterVerify });
    } else if (message.type === 'close') {
      closing = true;
      for (const ws of sockets) ws.terminate();
      parentPort.postMessage({ type: 'closed' });
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Coordinator (main thread)
// ---------------------------------------------------------------------------------------------------------------

const state = { tempDir: null, server: null, relay: null, workers: [], cleaning: null, stopping: false };

async function cleanup() {
  state.cleaning ??= (async () => {
    await terminateWorkers(state);
    if (state.server) await stopChild(state.server).catch(() => undefined);
    if (state.relay) await stopChild(state.relay).catch(() => undefined);
    // On failure state.tempDir stays set, so the exit handler tries once more.
    await removeStateDir(state, 'tempDir').catch(() => undefined);
  })();
  return state.cleaning;
}

function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        seconds: { type: 'string', default: '10' },
        warmup: { type: 'string', default: '1' },
        friends: { type: 'string', default: '1000' },
        window: { type: 'string', default: '100' },
        workers: { type: 'string', default: '1' },
        idle: { type: 'string', default: '10000' },
        'idle-workers': { type: 'string', default: '2' },
        'connect-concurrency': { type: 'string', default: '256' },
        phases: { type: 'string', default: PHASES.join(',') },
        repeat: { type: 'string', default: '3' },
        json: { type: 'boolean', default: false },
        'server-cpu-prof': { type: 'string' },
        'no-heap-probe': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }).values;
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
    friends: Math.floor(number('friends', 2)),
    window: Math.floor(number('window', 1)),
    workers: Math.floor(number('workers', 1)),
    idle: Math.floor(number('idle', 1)),
    idleWorkers: Math.floor(number('idle-workers', 1)),
    connectConcurrency: Math.floor(number('connect-concurrency', 1)),
    phases: values.phases.split(',').map((name) => name.trim()),
    repeat: Math.floor(number('repeat', 1)),
    json: values.json,
    cpuProfDir: values['server-cpu-prof'] ? resolve(values['server-cpu-prof']) : null,
    heapProbe: !values['no-heap-probe'],
  };
  for (const name of options.phases) {
    if (!PHASES.includes(name)) throw new BenchError(`--phases takes a list of ${PHASES.join(', ')}`);
  }
  if (options.workers > options.window) throw new BenchError('--workers must not exceed --window');
  if (options.friends / options.workers < 2)
    throw new BenchError('each load worker needs at least 2 friends');
  if (options.idleWorkers > options.idle) throw new BenchError('--idle-workers must not exceed --idle');
  return options;
}

/** Descriptors the bench process needs: its client sockets (both phases are never open at once) plus margin. */
function fdsNeeded(options) {
  const clients = Math.max(
    options.phases.includes('idle') ? options.idle : 0,
    options.phases.some((p) => p !== 'idle') ? options.friends : 0,
  );
  return clients + FD_MARGIN;
}

/**
 * When this process may not open enough descriptors, runs the bench again through a shell that raises the limit
 * (Node cannot raise its own) and returns its exit code; returns null when no re-run is needed.
 */
async function reexecWithMoreFds(options) {
  const need = fdsNeeded(options);
  if (fdLimits().soft >= need || process.env[FD_RAISED_ENV]) return null;
  const want = Math.max(65_536, need);
  const child = spawn(
    'bash',
    ['-c', raiseFdScript(want), 'bash', process.execPath, SCRIPT, ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, [FD_RAISED_ENV]: '1' } },
  );
  // Ctrl-C reaches the child too (same process group) and it cleans up; a SIGTERM to us is passed on.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  const [code, signal] = await new Promise((resolveExit) =>
    child.once('exit', (c, s) => resolveExit([c, s])),
  );
  return code ?? (signal === 'SIGINT' ? 130 : 1);
}

/**
 * Seeds `friendCount` users who all have each other in Friends, and `idleCount` users without friends (the idle
 * phase's; their arrivals then tell nobody). As bench/accounts.js: one argon2id hash shared by all, tokens stored
 * as their SHA-256, fsync off while seeding and one `sync` at the end.
 */
async function seed(dataDir, friendCount, idleCount) {
  const { openHost, randomIds, enums, argon2, seedApi } = await loadServerForSeeding(DIST);
  const started = performance.now();
  const host = await openHost({ dataDir, logLevel: 'silent', fsync: false });
  const friends = [];
  const idle = [];
  try {
    const params = host.config.passwordHash;
    const hashed = await argon2.hash(PASSWORD, {
      algorithm: 2, // Argon2id, as server/services/passwords.ts
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: 1,
    });
    const now = Math.floor(Date.now() / 1000);
    const friendIds = Array.from({ length: friendCount }, () => randomIds.id('user'));
    const total = friendCount + idleCount;
    for (let start = 0; start < total; start += SEED_BATCH) {
      const changes = [];
      for (let i = start; i < Math.min(total, start + SEED_BATCH); i++) {
        const isFriend = i < friendCount;
        const id = isFriend ? friendIds[i] : randomIds.id('user');
        const username = `${isFriend ? 'friend' : 'idle'}${isFriend ? i : i - friendCount}`;
        const token = randomIds.secret();
        const friendList = isFriend ? friendIds.filter((other) => other !== id) : [];
        changes.push(
          seededUser(seedApi, {
            id,
            username,
            hashed,
            token,
            now,
            lifetimeSeconds: host.config.tokenLifetimeSeconds,
            rank: enums.Rank.Registered,
            friends: friendList,
          }),
        );
        (isFriend ? friends : idle).push({ id, token });
      }
      await putUsers(host, changes);
    }
  } finally {
    // Seeded records reach their files now, as on a host that has been running a while: the server must not
    // start the measured run replaying the seed's log.
    await host.store.checkpoint();
    await host.close();
  }
  execFileSync('sync');
  return { friends, idle, seedMs: performance.now() - started };
}

async function readProcStatus(pid) {
  const text = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssKiB: kb('VmRSS'), hwmKiB: kb('VmHWM') };
}

/** Starts a sampling of server, bench and machine CPU; the returned function ends it. */
async function cpuWindow(pid) {
  const machineBefore = await machineCpu();
  const before = await processCpu(pid);
  const clientBefore = process.cpuUsage();
  return async () => {
    const after = await processCpu(pid);
    const machineAfter = await machineCpu();
    const client = process.cpuUsage(clientBefore);
    const wall = (after.at - before.at) / 1000;
    const serverSeconds = after.processSeconds - before.processSeconds;
    const clientSeconds = (client.user + client.system) / 1e6;
    const machineWall = (machineAfter.total - machineBefore.total) / os.cpus().length;
    const other = machineAfter.busy - machineBefore.busy - serverSeconds - clientSeconds;
    return {
      serverCpuPercent: (100 * serverSeconds) / wall,
      serverMainThreadCpuPercent: (100 * (after.mainSeconds - before.mainSeconds)) / wall,
      serverMainSeconds: after.mainSeconds - before.mainSeconds,
      clientCpuPercent: (100 * clientSeconds) / wall,
      // CPU used by processes other than the server and this bench (other benchmarks, builds), and steal.
      otherCpuPercent: machineWall > 0 ? Math.max(0, (100 * other) / machineWall) : NaN,
      stealPercent: machineWall > 0 ? (100 * (machineAfter.steal - machineBefore.steal)) / machineWall : NaN,
    };
  };
}

/** Spawns `node args` through a shell that raises the open-file limit; exec keeps the child's pid node's. */
function spawnNode(nodeArgs, env, needFds) {
  return spawn(
    'bash',
    ['-c', raiseFdScript(Math.max(65_536, needFds)), 'bash', process.execPath, ...nodeArgs],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
}

async function startServer(ctx, { probe }) {
  const nodeArgs = [];
  if (ctx.options.cpuProfDir) {
    await mkdir(ctx.options.cpuProfDir, { recursive: true });
    nodeArgs.push('--cpu-prof', '--cpu-prof-dir', ctx.options.cpuProfDir);
  }
  if (probe) {
    nodeArgs.push('--expose-gc', '--import', `data:text/javascript,${encodeURIComponent(PROBE_SOURCE)}`);
  }
  nodeArgs.push(
    CLI,
    'serve',
    '--data-dir',
    ctx.dataDir,
    '--config',
    ctx.configPath,
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--no-ui',
    '--log-level',
    'error',
  );
  const child = spawnNode(nodeArgs, { HYPERNEX_BENCH_PROBE: ctx.probePath }, fdsNeeded(ctx.options));
  const proc = followChild(state, child, 'server');
  state.server = proc;
  await untilReady(proc, LISTENING);
  proc.url = new URL(proc.match[1]);
  proc.wsUrl = `ws://${proc.url.host}/`;
  proc.fdLimit = fdLimits(child.pid).soft;
  return proc;
}

async function startRelay(ctx) {
  const child = spawnNode([SCRIPT, '--relay'], {}, fdsNeeded(ctx.options));
  const proc = followChild(state, child, 'relay');
  state.relay = proc;
  await untilReady(proc, /relay listening on (\d+)\r?\n/);
  proc.wsUrl = `ws://127.0.0.1:${proc.match[1]}/`;
  return proc;
}

async function stopChild(proc) {
  proc.stopping = true;
  const { child } = proc;
  const gone = child.exitCode !== null || child.signalCode !== null;
  const exited = gone
    ? Promise.resolve({ code: child.exitCode, signal: child.signalCode })
    : (proc.exited ??
      new Promise((resolveExit) => child.once('exit', (code, signal) => resolveExit({ code, signal }))));
  if (!gone) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  if (state.server === proc) state.server = null;
  if (state.relay === proc) state.relay = null;
  return exited;
}

/** Full GC in the server, then its process.memoryUsage() (null without the probe). */
async function probeMemory(ctx, server) {
  if (!server.probe) return null;
  await unlink(ctx.probePath).catch(() => undefined);
  server.child.kill('SIGUSR2');
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    await sleep(50);
    try {
      return JSON.parse(await readFile(ctx.probePath, 'utf8'));
    } catch {
      // not written (completely) yet
    }
  }
  throw new BenchError('the server did not answer the memory probe within 10 s');
}

/** One timed run on every load worker, merged. */
async function loadRun(workers, durationMs) {
  const results = await Promise.all(workers.map((worker) => ask(worker, { type: 'run', durationMs })));
  const latencies = mergeSorted(results.map((r) => r.latencies));
  const acks = mergeSorted(results.map((r) => r.ackLatencies));
  const sum = (key) => results.reduce((total, r) => total + r[key], 0);
  const refused = {};
  for (const r of results) {
    for (const [reason, n] of Object.entries(r.refused)) refused[reason] = (refused[reason] ?? 0) + n;
  }
  const delivered = sum('deliveredInWindow');
  return {
    seconds: durationMs / 1000,
    sent: sum('sent'),
    delivered: sum('delivered'),
    deliveredInWindow: delivered,
    perSecond: delivered / (durationMs / 1000),
    lost: sum('lost'),
    acksMissing: sum('acksMissing'),
    refused,
    errors: sum('errors'),
    errorSamples: [...new Set(results.flatMap((r) => r.errorSamples))].slice(0, 5),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.length ? latencies[latencies.length - 1] : NaN,
    ackP50Ms: quantile(acks, 0.5),
    ackP99Ms: quantile(acks, 0.99),
    acks: acks.length,
    clientEventLoopUtilization: Math.max(...results.map((r) => r.elu)),
  };
}

/** Phase 1 (relay or server): connect the friends, settle, warm up, then one measured run. */
async function throughputPhase(ctx, kind, fatal) {
  const { options, friends } = ctx;
  const target = kind === 'relay' ? await startRelay(ctx) : await startServer(ctx, { probe: false });
  const shares = splitEvenly(friends.length, options.workers);
  const windows = splitEvenly(options.window, options.workers);
  const workers = shares.map(
    (count, index) =>
      new Worker(SCRIPT, {
        workerData: {
          role: 'load',
          url: target.wsUrl,
          mode: kind,
          users: friends,
          first: shares.slice(0, index).reduce((sum, n) => sum + n, 0),
          count,
          window: windows[index],
        },
      }),
  );
  state.workers.push(...workers);
  const race = (promise) => Promise.race([promise, fatal]);
  progress(options, `  connecting ${friends.length} sockets to the ${kind} ...`);
  const connect = await race(Promise.all(workers.map((w) => ask(w, { type: 'connect' }))));
  const quiet = await race(Promise.all(workers.map((w) => ask(w, { type: 'quiet' }))));
  const friendStatus = quiet.reduce((sum, q) => sum + q.friendStatusCount, 0);
  let warmup = null;
  if (options.warmup > 0) {
    progress(options, `  warm-up ${options.warmup} s ...`);
    warmup = await race(loadRun(workers, options.warmup * 1000));
  }
  progress(options, `  measuring ${options.seconds} s, window ${options.window} ...`);
  // CPU and profile cover the sending window only, not the drain after it (durable acks can lag seconds).
  const endCpu = await cpuWindow(target.pid);
  const windowUs = [monotonicUs()];
  const [run, cpu] = await race(
    Promise.all([
      loadRun(workers, options.seconds * 1000),
      sleep(options.seconds * 1000).then(() => {
        windowUs.push(monotonicUs());
        return endCpu();
      }),
    ]),
  );
  const memory = await readProcStatus(target.pid);
  const closeReplies = await Promise.all(workers.map((w) => ask(w, { type: 'close' })));
  const exit = await stopChild(target);
  await terminateWorkers(state);
  // The workers' error counts cover their whole life (connect, settle, runs); lost messages come on top.
  const lost = run.lost + (warmup?.lost ?? 0);
  const acksMissing = run.acksMissing + (warmup?.acksMissing ?? 0);
  const errors = closeReplies.reduce((sum, r) => sum + r.errors, 0) + lost + acksMissing;
  const samples = [...new Set(closeReplies.flatMap((r) => r.errorSamples))];
  if (lost) samples.push(`${lost} requests never delivered`);
  if (acksMissing) samples.push(`${acksMissing} sentinviterequest acks missing`);
  return {
    kind,
    startupMs: target.startupMs,
    connectMs: Math.max(...connect.map((c) => c.ms)),
    settleMs: Math.max(...quiet.map((q) => q.ms)),
    friendStatusMessages: friendStatus,
    warmup,
    run,
    ...cpu,
    rssMiB: memory.rssKiB / 1024,
    errors,
    errorSamples: samples.slice(0, 8),
    exit,
    stderr: target.stderr,
    pid: target.pid,
    profile: kind === 'server' ? await summarizeProfile(options.cpuProfDir, target.pid, windowUs) : null,
  };
}

/** Phase 2: idle sockets on a fresh server; memory per socket and time to verify them all. */
async function idlePhase(ctx, fatal) {
  const { options, idle } = ctx;
  const server = await startServer(ctx, { probe: options.heapProbe });
  server.probe = options.heapProbe;
  if (server.fdLimit < idle.length + FD_MARGIN) {
    throw new BenchError(
      `the server may open only ${server.fdLimit} files, too few for ${idle.length} sockets: raise the hard ` +
        `limit (ulimit -Hn) or lower --idle`,
    );
  }
  const race = (promise) => Promise.race([promise, fatal]);
  const shares = splitEvenly(idle.length, options.idleWorkers);
  const concurrency = splitEvenly(options.connectConcurrency, options.idleWorkers);
  const workers = shares.map((count, index) => {
    const first = shares.slice(0, index).reduce((sum, n) => sum + n, 0);
    return new Worker(SCRIPT, {
      workerData: { role: 'idle', url: server.wsUrl, users: idle.slice(first, first + count) },
    });
  });
  state.workers.push(...workers);
  await race(Promise.all(workers.map((w) => ask(w, { type: 'ready' }))));
  await sleep(1000); // let startup garbage and timers settle
  const before = { status: await readProcStatus(server.pid), probe: await probeMemory(ctx, server) };
  before.statusAfterGc = await readProcStatus(server.pid);
  progress(options, `  opening and verifying ${idle.length} sockets ...`);
  const endCpu = await cpuWindow(server.pid);
  const windowUs = [monotonicUs()];
  const verified = await race(
    Promise.all(workers.map((w, i) => ask(w, { type: 'go', concurrency: Math.max(1, concurrency[i] ?? 1) }))),
  );
  windowUs.push(monotonicUs());
  const cpu = await endCpu();
  await sleep(2000); // idle: only the server's heartbeat runs now
  const after = { status: await readProcStatus(server.pid), probe: await probeMemory(ctx, server) };
  after.statusAfterGc = await readProcStatus(server.pid);
  const checks = await race(Promise.all(workers.map((w) => ask(w, { type: 'check' }))));
  await Promise.all(workers.map((w) => ask(w, { type: 'close' })));
  const exit = await stopChild(server);
  await terminateWorkers(state);

  const count = verified.reduce((sum, v) => sum + v.verified, 0);
  const failures = verified.reduce((sum, v) => sum + v.failures, 0);
  const dropped = checks.reduce((sum, c) => sum + c.dropped, 0);
  const latencies = mergeSorted(verified.map((v) => v.latencies));
  const startedAt = Math.min(...verified.map((v) => v.startedAt));
  const finishedAt = Math.max(...verified.map((v) => v.finishedAt));
  const perSocket = (bytesBefore, bytesAfter) => (count ? (bytesAfter - bytesBefore) / 1024 / count : NaN);
  const samples = [...new Set(verified.flatMap((v) => v.failureSamples))];
  if (dropped) samples.push(`${dropped} verified sockets were closed by the server while idle`);
  return {
    sockets: idle.length,
    verified: count,
    failures,
    dropped,
    errors: failures + dropped,
    errorSamples: samples.slice(0, 8),
    verifySeconds: (finishedAt - startedAt) / 1000,
    verifyP50Ms: quantile(latencies, 0.5),
    verifyP99Ms: quantile(latencies, 0.99),
    connectConcurrency: options.connectConcurrency,
    ...cpu,
    memory: {
      before,
      after,
      rssKiBPerSocket: perSocket(before.status.rssKiB * 1024, after.status.rssKiB * 1024),
      rssAfterGcKiBPerSocket: before.probe
        ? perSocket(before.statusAfterGc.rssKiB * 1024, after.statusAfterGc.rssKiB * 1024)
        : NaN,
      heapKiBPerSocket: before.probe ? perSocket(before.probe.heapUsed, after.probe.heapUsed) : NaN,
      externalKiBPerSocket: before.probe
        ? perSocket(
            before.probe.external + before.probe.arrayBuffers,
            after.probe.external + after.probe.arrayBuffers,
          )
        : NaN,
    },
    fdLimit: server.fdLimit,
    startupMs: server.startupMs,
    exit,
    stderr: server.stderr,
    pid: server.pid,
    profile: await summarizeProfile(options.cpuProfDir, server.pid, windowUs),
  };
}

/**
 * Where the server spent its time during the measured window, from its --cpu-prof file (written when it exits):
 * self time per function and per area. Null without --server-cpu-prof.
 */
async function summarizeProfile(dir, pid, [fromUs, toUs]) {
  if (!dir) return null;
  const name = (await readdir(dir)).find((f) => f.includes(`.${pid}.`) && f.endsWith('.cpuprofile'));
  if (!name) return { file: null, error: `no profile for pid ${pid} in ${dir}` };
  const profile = JSON.parse(await readFile(join(dir, name), 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  let at = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at > toUs) continue;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + delta);
    total += delta;
  }
  const byFunction = new Map();
  const inclusive = new Map();
  const byArea = new Map();
  const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
  const label = (id) => {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    const file = url.startsWith('file://') ? fileURLToPath(url).slice(ROOT.length) : url;
    return `${functionName || '(anonymous)'}${file ? ` ${file}:${lineNumber + 1}` : ''}`;
  };
  const parents = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n.id);
  for (const [id, us] of selfUs) {
    const { functionName, url } = nodes.get(id).callFrame;
    const file = url.startsWith('file://') ? fileURLToPath(url).slice(ROOT.length) : url;
    add(byFunction, label(id), us);
    // Total time: this sample counts once for every distinct function on its stack.
    const seen = new Set();
    for (let at = id; at !== undefined; at = parents.get(at)) {
      const name = label(at);
      if (name === '(root)' || seen.has(name)) continue;
      seen.add(name);
      add(inclusive, name, us);
    }
    let area = 'node internals';
    if (functionName === '(idle)') area = 'idle';
    else if (functionName === '(garbage collector)') area = 'garbage collector';
    else if (!url) area = 'native (writev, fs, JSON, ...)';
    else if (file.startsWith('dist/server/')) area = `server: ${file.slice('dist/server/'.length)}`;
    else if (file.startsWith('dist/bundle/')) area = 'server and its libraries (bundled)';
    else if (file.startsWith('node_modules/')) area = file.split('/').slice(0, 2).join('/');
    add(byArea, area, us);
  }
  const top = (map, n) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([what, us]) => ({ what, ms: us / 1000, percent: total ? (100 * us) / total : NaN }));
  return {
    file: join(dir, name),
    windowUs: [fromUs, toUs],
    sampledMs: total / 1000,
    functions: top(byFunction, 15),
    totals: top(inclusive, 25),
    areas: top(byArea, 12),
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
  kib: (n) => (Number.isFinite(n) ? `${n.toFixed(1)} KiB` : 'n/a'),
  mib: (n) => (Number.isFinite(n) ? `${n.toFixed(1)} MiB` : 'n/a'),
  pct: (n) => (Number.isFinite(n) ? `${Math.round(n)}%` : 'n/a'),
};

function mainMicrosPerMessage(phase) {
  return phase.run.deliveredInWindow ? (1e6 * phase.serverMainSeconds) / phase.run.deliveredInWindow : NaN;
}

function buildTargets(r) {
  const rows = [];
  const row = (name, value, shown, op, limit, target, valid) =>
    rows.push({
      name,
      value,
      op,
      limit,
      pass: Number.isFinite(value) && (op === '<' ? value < limit : value >= limit),
      valid,
      shown,
      target,
    });
  const relay = r.phases.relay;
  const server = r.phases.server;
  if (server && relay) {
    row(
      'server / relay rate',
      r.ratio,
      r.ratio.toFixed(2),
      '>=',
      TARGETS.ratio,
      `>= ${TARGETS.ratio}`,
      !server.errors && !relay.errors,
    );
  }
  if (server) {
    row(
      'server p99 latency',
      server.run.p99Ms,
      `${fmt.ms(server.run.p99Ms)} ms`,
      '<',
      TARGETS.p99Ms,
      `< ${TARGETS.p99Ms} ms`,
      !server.errors,
    );
  }
  const idle = r.phases.idle;
  if (idle) {
    // After a full GC on both sides when the probe is loaded: the plain RSS delta also counts (or, once startup
    // garbage is collected, subtracts) whatever the heap happened to hold, and can even come out negative.
    const kib = Number.isFinite(idle.memory.rssAfterGcKiBPerSocket)
      ? idle.memory.rssAfterGcKiBPerSocket
      : idle.memory.rssKiBPerSocket;
    row(
      'idle: memory per socket',
      kib,
      fmt.kib(kib),
      '<',
      TARGETS.kibPerSocket,
      `< ${TARGETS.kibPerSocket} KiB`,
      !idle.errors,
    );
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
  const c = r.config;
  lines.push('');
  lines.push(
    `Hypernex Companion socket bench: ${fmt.int(c.friends)} friends, window ${c.window}, ${c.seconds} s per ` +
      `run (+${c.warmupSeconds} s warm-up), ${c.workers} load worker(s); ${fmt.int(c.idle)} idle sockets from ` +
      `${c.idleWorkers} worker(s), ${c.connectConcurrency} opening at once`,
  );
  lines.push(`${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}, data folder in ${r.env.tmpdir}`);
  lines.push(`seeded ${fmt.int(c.friends + (r.phases.idle ? c.idle : 0))} users in ${fmt.ms(r.seed.ms)} ms`);
  lines.push('');
  const widths = [30, 20, 14, 7];
  lines.push(pad(['figure', 'result', 'target', ''], widths));
  lines.push(
    pad(
      widths.map((w) => '-'.repeat(w)),
      widths,
    ),
  );
  const info = (name, shown) => lines.push(pad([name, shown, '', ''], widths));
  const verdict = (name) => {
    const t = r.targets.find((x) => x.name === name);
    if (t)
      lines.push(pad([t.name, t.shown, t.target, !t.valid ? 'INVALID' : t.pass ? 'ok' : 'MISS'], widths));
  };
  const { relay, server, idle } = r.phases;
  if (server) info('server: delivered', `${fmt.int(server.run.perSecond)} msg/s`);
  if (relay) info('bare relay: delivered', `${fmt.int(relay.run.perSecond)} msg/s`);
  verdict('server / relay rate');
  if (server && relay) {
    info(
      'CPU/msg: relay / server',
      `${Number.isFinite(r.cpuRatio) ? r.cpuRatio.toFixed(2) : 'n/a'} (${fmt.int(mainMicrosPerMessage(relay))} / ` +
        `${fmt.int(mainMicrosPerMessage(server))} us)`,
    );
  }
  if (server) {
    info('server p50 latency', `${fmt.ms(server.run.p50Ms)} ms`);
    verdict('server p99 latency');
    info('server max latency', `${fmt.ms(server.run.maxMs)} ms`);
    info(
      'server durable ack p50 / p99',
      `${fmt.ms(server.run.ackP50Ms)} / ${fmt.ms(server.run.ackP99Ms)} ms`,
    );
  }
  if (relay) {
    info('relay p50 / p99 latency', `${fmt.ms(relay.run.p50Ms)} / ${fmt.ms(relay.run.p99Ms)} ms`);
  }
  for (const p of [server, relay]) {
    if (!p) continue;
    const storm = p.friendStatusMessages ? ` (${fmt.int(p.friendStatusMessages)} friendstatus)` : '';
    info(`${p.kind}: connect ${fmt.int(c.friends)} friends`, `${fmt.ms(p.connectMs / 1000)} s${storm}`);
  }
  if (r.rounds.length > 1) {
    const each = r.rounds.map((x) =>
      x.ratio !== null
        ? `${fmt.int(x.serverPerSecond)}/${fmt.int(x.relayPerSecond)} = ${x.ratio.toFixed(2)}, p99 ${fmt.ms(x.serverP99Ms)} ms`
        : `${fmt.int(x.serverPerSecond ?? x.relayPerSecond)} msg/s`,
    );
    lines.push(`rounds (server/relay msg/s; the median round by ratio is reported): ${each.join('; ')}`);
  }
  if (idle) {
    verdict('idle: memory per socket');
    info('idle: RSS/socket, no GC', fmt.kib(idle.memory.rssKiBPerSocket));
    info('idle: JS heap per socket', fmt.kib(idle.memory.heapKiBPerSocket));
    info('idle: buffers per socket', fmt.kib(idle.memory.externalKiBPerSocket));
    info(`idle: verify ${fmt.int(idle.sockets)} sockets`, `${idle.verifySeconds.toFixed(2)} s (no target)`);
    info('idle: verify p50 / p99', `${fmt.ms(idle.verifyP50Ms)} / ${fmt.ms(idle.verifyP99Ms)} ms`);
    info(
      'idle: server RSS before/after',
      `${fmt.mib(idle.memory.before.status.rssKiB / 1024)} / ${fmt.mib(idle.memory.after.status.rssKiB / 1024)}`,
    );
  }
  lines.push('');
  const pw = [8, 10, 8, 12, 16, 10, 10, 9, 6];
  lines.push(
    pad(
      [
        'phase',
        'count',
        'errors',
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
  let noisy = false;
  for (const [name, p] of Object.entries(r.phases)) {
    if (p.otherCpuPercent > 10 || p.stealPercent > 10) noisy = true;
    const count = p.run ? p.run.deliveredInWindow : p.verified;
    const perItem = count
      ? `${Math.round((1e6 * p.serverMainSeconds) / count)}us/${p.run ? 'msg' : 'sock'}`
      : '';
    lines.push(
      pad(
        [
          name,
          fmt.int(count),
          fmt.int(p.errors),
          fmt.pct(p.serverCpuPercent),
          `${fmt.pct(p.serverMainThreadCpuPercent)} ${perItem}`,
          fmt.pct(p.clientCpuPercent),
          p.run ? p.run.clientEventLoopUtilization.toFixed(2) : '',
          fmt.pct(p.otherCpuPercent),
          fmt.pct(p.stealPercent),
        ],
        pw,
      ),
    );
  }
  lines.push(
    'count: messages delivered in the measured window (idle: sockets verified). CPU/msg relay / server: event-loop',
    'CPU per delivered message, relay over server: the rate ratio if both were CPU-bound (robust on a busy machine).',
    'CPU in % of one core over the measured sending window (idle: while verifying). server: the relay process in',
    'the relay phase; server main: its event-loop thread, per delivered message (idle: per verified socket);',
    'client ELU near 1.00: the load generator is the bottleneck;',
    'other CPU: processes other than the server and this bench (e.g. other benchmarks); steal: hypervisor.',
  );
  if (noisy) {
    lines.push(
      'WARNING: the machine was busy with other work (other CPU or steal above 10%) during a phase: these ' +
        'figures understate the server. Run again on a quiet machine.',
    );
  }
  if (idle) {
    lines.push(
      'memory per socket: server VmRSS delta / sockets (KiB = 1024 B), each side after a full GC by a probe',
      '(--expose-gc, SIGUSR2) loaded into the idle server, which also gives heap/buffers ("no GC": the plain delta,',
      'used with --no-heap-probe); kernel socket buffers are not in RSS.',
    );
  }
  if (r.errors.total > 0) {
    lines.push('');
    lines.push(`ERRORS: ${r.errors.total}; these figures are not valid. Samples:`);
    for (const sample of r.errors.samples) lines.push(`  ${sample}`);
  }
  for (const [name, p] of Object.entries(r.phases)) {
    if (p.stderr) {
      lines.push('');
      lines.push(`${name} phase stderr:`);
      lines.push(p.stderr.trimEnd());
    }
  }
  for (const [name, p] of Object.entries(r.phases)) {
    if (!p.profile) continue;
    lines.push('');
    if (!p.profile.file) {
      lines.push(`${name} phase profile: ${p.profile.error}`);
      continue;
    }
    lines.push(`${name} phase: server CPU profile over the measured window (${p.profile.file})`);
    lines.push('  self time by area:');
    for (const a of p.profile.areas) lines.push(`    ${a.percent.toFixed(1).padStart(5)}%  ${a.what}`);
    lines.push('  self time by function:');
    for (const f of p.profile.functions) lines.push(`    ${f.percent.toFixed(1).padStart(5)}%  ${f.what}`);
    lines.push('  total time (self and callees) by function:');
    for (const f of p.profile.totals) lines.push(`    ${f.percent.toFixed(1).padStart(5)}%  ${f.what}`);
  }
  lines.push('');
  process.stdout.write(lines.join('\n'));
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
  const options = parseOptions();
  if (!existsSync('/proc/self/status')) throw new BenchError('this bench reads /proc: it runs on Linux only');
  const reexec = await reexecWithMoreFds(options);
  if (reexec !== null) return reexec;
  if (fdLimits().soft < fdsNeeded(options)) {
    throw new BenchError(
      `this process may open only ${fdLimits().soft} files, too few for the client sockets: raise the hard ` +
        `limit (ulimit -Hn) or lower --idle / --friends`,
    );
  }
  const onSignal = (signal) => {
    state.stopping = true;
    process.stderr.write(
      `\n${signal}: stopping the server, relay and workers and removing the data folder\n`,
    );
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Last resort if something throws past the handlers: never leave a child or a data folder behind.
  process.once('exit', () => {
    if (state.server) state.server.child.kill('SIGKILL');
    if (state.relay) state.relay.child.kill('SIGKILL');
    if (state.tempDir) rmSync(state.tempDir, RM_OPTIONS);
  });
  const fatal = new Promise((_, reject) => process.on('benchFatal', reject));
  fatal.catch(() => undefined);

  if (!existsSync(join(DIST, 'host.js')) || !existsSync(join(DIST, 'cli.js'))) {
    throw new BenchError('dist/server is missing: build it first with `npx tsc -p tsconfig.build.json`');
  }
  state.tempDir = await mkdtemp(join(os.tmpdir(), 'hypernex-socket-bench-'));
  const ctx = {
    options,
    dataDir: join(state.tempDir, 'data'),
    configPath: join(state.tempDir, 'config.json'),
    probePath: join(state.tempDir, 'probe.json'),
  };
  // Cooldown 0 and a per-socket rate limit far above the load, so the server refuses and drops nothing.
  await writeFile(
    ctx.configPath,
    JSON.stringify({
      socket: { inviteRequestCooldownSeconds: 0, messagesPerSecond: 10_000_000, messageBurst: 10_000_000 },
      fsync: true,
    }),
  );
  const wantFriends = options.phases.some((p) => p !== 'idle') ? options.friends : 0;
  const wantIdle = options.phases.includes('idle') ? options.idle : 0;
  progress(options, `seeding ${wantFriends} friends and ${wantIdle} idle users in ${ctx.dataDir} ...`);
  const seeded = await seed(ctx.dataDir, wantFriends, wantIdle);
  ctx.friends = seeded.friends;
  ctx.idle = seeded.idle;

  // Rounds of relay then server, so both see the machine at about the same speed; the median round is reported.
  const rounds = [];
  const throughputPhases = ['relay', 'server'].filter((name) => options.phases.includes(name));
  for (let round = 1; throughputPhases.length > 0 && round <= options.repeat; round++) {
    const of = options.repeat > 1 ? ` [round ${round}/${options.repeat}]` : '';
    const r = {};
    if (throughputPhases.includes('relay')) {
      progress(options, `1a) bare ws relay${of}`);
      r.relay = await throughputPhase(ctx, 'relay', fatal);
    }
    if (throughputPhases.includes('server')) {
      // Each round's server starts with no invite history, as the first did.
      await rm(join(ctx.dataDir, 'invite-requests.jsonl'), { force: true });
      progress(options, `1b) server requestinvite${of}`);
      r.server = await throughputPhase(ctx, 'server', fatal);
    }
    rounds.push(r);
  }
  const score = (r) =>
    r.relay && r.server
      ? r.server.run.perSecond / r.relay.run.perSecond
      : (r.relay ?? r.server).run.perSecond;
  const median = [...rounds].sort((a, b) => score(a) - score(b))[Math.floor((rounds.length - 1) / 2)];
  const phases = { ...median };
  if (options.phases.includes('idle')) {
    progress(options, `2) ${options.idle} idle sockets on a fresh server`);
    phases.idle = await idlePhase(ctx, fatal);
  }
  await removeStateDir(state, 'tempDir');

  const samples = [];
  let total = 0;
  let exitProblem = false;
  // Every round counts for errors, not only the one reported.
  const measured = [
    ...rounds.flatMap((r) => Object.entries(r)),
    ...(phases.idle ? [['idle', phases.idle]] : []),
  ];
  for (const [name, p] of measured) {
    total += p.errors;
    for (const sample of p.errorSamples) samples.push(`${name}: ${sample}`);
    if (name !== 'relay' && p.exit.code !== 0) {
      exitProblem = true;
      samples.push(`${name}: the server exited with code ${p.exit.code} (signal ${p.exit.signal})`);
    }
  }
  const result = {
    config: {
      friends: options.friends,
      window: options.window,
      seconds: options.seconds,
      warmupSeconds: options.warmup,
      workers: options.workers,
      idle: options.idle,
      idleWorkers: options.idleWorkers,
      connectConcurrency: options.connectConcurrency,
      phases: options.phases,
      repeat: options.repeat,
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      tmpdir: os.tmpdir(),
      loadAverage: os.loadavg(),
    },
    seed: { ms: seeded.seedMs },
    phases,
    ratio: phases.server && phases.relay ? phases.server.run.perSecond / phases.relay.run.perSecond : NaN,
    // Event-loop CPU per delivered message, relay over server: what the rate ratio would be if both were
    // CPU-bound on one core. Much less sensitive to a busy machine than the rates themselves.
    cpuRatio:
      phases.server && phases.relay
        ? mainMicrosPerMessage(phases.relay) / mainMicrosPerMessage(phases.server)
        : NaN,
    rounds: rounds.map((r) => ({
      relayPerSecond: r.relay?.run.perSecond ?? null,
      serverPerSecond: r.server?.run.perSecond ?? null,
      ratio: r.relay && r.server ? r.server.run.perSecond / r.relay.run.perSecond : null,
      serverP99Ms: r.server?.run.p99Ms ?? null,
    })),
    errors: { total: total + (exitProblem ? 1 : 0), samples },
    cpuProfDir: options.cpuProfDir,
  };
  result.targets = buildTargets(result);
  result.valid = result.errors.total === 0;
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else printTable(result);
  return result.valid ? 0 : 1;
}

if (!isMainThread) {
  if (workerData.role === 'load') loadWorker();
  else idleWorker();
} else if (process.argv.includes('--relay')) {
  runRelay();
} else {
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
}
