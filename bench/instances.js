#!/usr/bin/env node
// Instances bench: seeds a throwaway data folder, runs the real CLI server in its own process, connects 20 game
// servers (which claim and ready 400 instances of one world) and 2,000 user sockets that loop
//   JoinInstance -> joinedinstance -> LeaveInstance -> leftinstance
// at a fixed offered rate, then prints join latency (send -> joinedinstance), joins per second and server CPU per
// join next to the targets. To show that the cost of a join does not grow with the number of sockets, the same
// offered rate runs with 200 users, with 2,000 users and with 2,000 users plus 10,000 idle verified sockets, with
// the same number of users per instance in each. A last closed-loop run (every user loops without pause) gives
// the most joins per second. Client load runs in worker threads. It reports, it does not assert: exit 0 when
// the run was clean (targets met or not), 1 on any error (refused joins, missing answers, dropped sockets, a
// server crash), 130 on Ctrl-C.
//
//   node bench/instances.js [--seconds 10] [--json] [--phases small,main,idle,saturation] [--help for more]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json. Linux only (reads /proc).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';
import {
  BenchError,
  RM_OPTIONS,
  raiseFdScript,
  progress,
  fdLimits,
  readProcStatus,
  CLK_TCK,
  machineCpu,
  ask,
  splitEvenly,
  quantile,
  mergeSorted,
  stopServer,
  removeStateDir,
  terminateWorkers,
  seededUser,
  loadServerForSeeding,
  serveArgs,
  spawnServer,
  putUsers,
} from './lib.js';

const SCRIPT = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');

/** The password every seeded user has (it also meets the server's strength rules). */
const PASSWORD = 'Bench-Passw0rd!';
/** The game-server token the server is started with (--game-server-token). */
const GAME_SERVER_TOKEN = 'instances-bench-game-server-token';
const SEED_BATCH = 500;
/** Opening and verifying one socket may take this long before it counts as failed. */
const CONNECT_TIMEOUT_MS = 60_000;
/** A join or leave still unanswered after this long counts as failed. */
const STEP_TIMEOUT_MS = 10_000;
/** After a run stops starting cycles, cycles still open after this long count as failed. */
const DRAIN_TIMEOUT_MS = 15_000;
/** Join latencies are also kept as the worst per this many ms of a run (where the slow joins were). */
const BUCKET_MS = 100;
/** Sockets each worker opens at once while connecting. */
const CONNECT_CONCURRENCY = 100;
/** RequestNewInstance messages the owner has in flight while the instances are created. */
const CREATE_WINDOW = 50;
/** File descriptors needed besides the sockets (files, pipes, workers). */
const FD_MARGIN = 512;
/** Environment flag of a bench process re-executed with a raised descriptor limit (it must not loop). */
const FD_RAISED_ENV = 'HYPERNEX_INSTANCES_BENCH_FD_RAISED';

const PHASES = ['small', 'main', 'idle', 'saturation'];

const HELP = `Usage: node bench/instances.js [options]

Seeds a temporary data folder, starts the server (bin/hypernex-companion.js serve) in its own process, connects
game servers and users over loopback from worker threads and prints the figures next to the targets. Exit 0 when
the run was clean (targets met or not), 1 on errors, 130 on Ctrl-C. Needs the compiled server
(npx tsc -p tsconfig.build.json). Linux only.

Every user loops JoinInstance -> joinedinstance -> LeaveInstance -> leftinstance on a random instance of the
phase. The paced phases start cycles at --rate joins/s in total (a user busy with its cycle is skipped) and keep
the users per instance constant (users / instances), so only the number of sockets changes between them:
  small        --small-users users (their sockets only)
  main         --users users: join p99 < 20 ms
  idle         --users users plus --idle idle verified sockets (one user each)
  saturation   --users users in a closed loop (no pause): the most joins per second (no latency target)
CPU per join (server process utime+stime / joins, one join = one join+leave cycle) of main and idle must stay
within 1.25x of the phase with fewer sockets. Before each paced phase the server's background CPU with the same
sockets and no load is measured (--quiet s: its heartbeat pings and re-verifies every socket every 10 s); the
verdict compares CPU per join net of that background, the gross figure is shown too.

Options:
  --seconds N                measured length of each phase (default 10)
  --warmup N                 seconds of unreported load before each phase (default 1; 0 skips it)
  --quiet N                  seconds of no load to measure background CPU before each paced phase (default 10,
                             one heartbeat period; 0 skips it, then gross CPU per join is compared)
  --rate N                   joins per second offered in the paced phases (default 1000)
  --users N                  users of the main phase (default 2000)
  --small-users N            users of the small phase (default 200)
  --idle N                   extra idle verified sockets of the idle phase (default 10000)
  --game-servers N           game servers (default 20)
  --instances-per-server N   instances on each game server (default 20: 400 instances, 5 users each)
  --workers N                load-generator worker threads (default 2; see "client ELU" in the report)
  --phases LIST              comma-separated subset of ${PHASES.join(',')} (default: all)
  --json                     print the results as JSON on stdout (no progress on stderr)
  --server-cpu-prof DIR      run the server with --cpu-prof, write its profile to DIR and summarize where the
                             measured windows spent their time
  -h, --help                 this help
`;

const TARGETS = { joinP99Ms: 20, cpuGrowth: 1.25, offeredShare: 0.95 };

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/** The message name of a server frame, read without parsing it: frames are {"message":"name","result":...}. */
function messageName(data) {
  const head = data.toString('latin1', 0, 48);
  if (!head.startsWith('{"message":"')) return '';
  const end = head.indexOf('"', 12);
  return end < 0 ? '' : head.slice(12, end);
}

// ---------------------------------------------------------------------------------------------------------------
// Load worker (worker thread): a share of the game servers and of the users. Every reply carries the errors seen
// since the previous reply.
// ---------------------------------------------------------------------------------------------------------------

function loadWorker() {
  const { url, users, gameServerIndexes } = workerData;
  const clients = users.map((u) => ({
    id: u.id,
    token: u.token,
    prefix: `{"userId":${JSON.stringify(u.id)},"tokenContent":${JSON.stringify(u.token)},"message":"`,
    ws: null,
    state: 'offline', // offline, verifying, idle, joining, leaving, lost, closed
    sentAt: 0,
    instance: null,
    onVerified: null,
  }));
  const gameServers = [];
  let closing = false;
  let run = null;
  let errors = { count: 0, samples: [] };
  const error = (text) => {
    errors.count++;
    if (errors.samples.length < 5 && !errors.samples.includes(text)) errors.samples.push(text);
  };
  const takeErrors = () => {
    const out = errors;
    errors = { count: 0, samples: [] };
    return out;
  };
  const reply = (message, transfer = []) => {
    const e = takeErrors();
    parentPort.postMessage({ ...message, errors: e.count, errorSamples: e.samples }, transfer);
  };

  function connectGameServer(index) {
    return new Promise((resolveConnect, reject) => {
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
      });
      const gs = { ws, id: null, index };
      gameServers.push(gs);
      const send = (message, args) =>
        ws.send(
          JSON.stringify({ gameServerId: gs.id, serverTokenContent: GAME_SERVER_TOKEN, message, args }),
        );
      const timer = setTimeout(
        () => reject(new Error('a game server got no sendauth in time')),
        CONNECT_TIMEOUT_MS,
      );
      ws.on('open', () =>
        ws.send(JSON.stringify({ serverTokenContent: GAME_SERVER_TOKEN, message: 'auth', args: {} })),
      );
      ws.on('message', (data) => {
        const name = messageName(data);
        // Most frames are updatedinstance / tempusertoken / kickeduser for the instances: nothing to answer.
        if (name === 'sendauth') {
          gs.id = JSON.parse(data.toString('utf8')).result.gameServerId;
          clearTimeout(timer);
          resolveConnect(gs);
        } else if (name === 'requestedinstancecreated') {
          const { temporaryId } = JSON.parse(data.toString('utf8')).result;
          send('claiminstancerequest', { TemporaryId: temporaryId, Uri: `127.0.0.1:${7777 + index}` });
        } else if (name === 'selectedgameserver') {
          const meta = JSON.parse(data.toString('utf8')).result.instanceMeta;
          send('instanceready', { instanceId: meta.InstanceId });
        } else if (name === 'failedtoclaiminstancerequest' || name === 'error' || name === '') {
          error(`game server got ${data.toString('utf8').slice(0, 200)}`);
        }
      });
      ws.on('error', (e) => {
        if (gs.id === null) reject(e);
        else error(`game-server socket error: ${e.message}`);
      });
      ws.on('close', (code) => {
        clearTimeout(timer);
        if (gs.id === null)
          reject(new Error(`the server closed a game-server socket before sendauth (${code})`));
        else if (!closing) error(`the server closed a game-server socket (code ${code})`);
      });
    });
  }

  function connectUser(c) {
    return new Promise((resolveConnect) => {
      let settled = false;
      const done = (problem) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        c.onVerified = null;
        if (problem) {
          error(problem);
          c.state = 'lost';
          c.ws.terminate();
        }
        resolveConnect();
      };
      const timer = setTimeout(() => done('a user socket was not verified in time'), CONNECT_TIMEOUT_MS);
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
      });
      c.ws = ws;
      c.state = 'verifying';
      c.onVerified = () => done(null);
      ws.on('open', () => ws.send(`${c.prefix}auth","args":{}}`));
      ws.on('message', (data) => onUserMessage(c, data));
      ws.on('error', (e) => done(`user socket error: ${e.message}`));
      ws.on('close', (code) => {
        const was = c.state;
        c.state = 'closed';
        if (!settled) done(`a user socket closed before it was verified (code ${code})`);
        else if (!closing && was !== 'lost') error(`the server closed a user socket (code ${code})`);
        if (was === 'joining' || was === 'leaving') run?.cycleEnded(c, false);
      });
    });
  }

  function onUserMessage(c, data) {
    const name = messageName(data);
    switch (name) {
      case 'updatedinstance':
        return; // the instance changed (a member joined or left): every member hears of it
      case 'authenticated':
        c.state = 'idle';
        c.onVerified?.();
        return;
      case 'joinedinstance': {
        if (c.state !== 'joining' || !data.includes(c.instance.instanceId)) break;
        const now = performance.now();
        run.joined(now - c.sentAt, now);
        c.state = 'leaving';
        c.sentAt = now;
        c.ws.send(`${c.prefix}LeaveInstance","args":${c.instance.args}}`);
        return;
      }
      case 'leftinstance': {
        if (c.state !== 'leaving' || !data.includes(c.instance.instanceId)) break;
        run.left(performance.now() - c.sentAt);
        c.state = 'idle';
        run.cycleEnded(c, true);
        return;
      }
      case 'failedtojoininstance':
      case 'failedtoleaveinstance': {
        const wasBusy = c.state === 'joining' || c.state === 'leaving';
        let reason = '?';
        try {
          reason = JSON.parse(data.toString('utf8')).result.reason;
        } catch {
          // keep '?'
        }
        error(`${name}: ${reason}`);
        if (wasBusy) {
          c.state = 'idle';
          run.cycleEnded(c, false);
        }
        return;
      }
      default:
        break;
    }
    error(`unexpected message for a user (state ${c.state}): ${data.toString('utf8').slice(0, 200)}`);
  }

  /** Opens and verifies the first `count` users (those not open yet), CONNECT_CONCURRENCY at a time. */
  async function connectUsers(count) {
    const todo = clients.slice(0, count).filter((c) => c.state === 'offline');
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONNECT_CONCURRENCY, todo.length) }, async () => {
        while (next < todo.length) await connectUser(todo[next++]);
      }),
    );
    return clients.slice(0, count).filter((c) => c.state === 'idle').length;
  }

  /**
   * One timed run over the first `active` users. rate > 0: cycles start at `rate` per second (spread over time,
   * each on a random idle user; a backlog builds when none is idle); rate 0: closed loop, every user starts its
   * next cycle as soon as the last one ended. Resolves once every started cycle ended (or timed out).
   */
  function runLoad({ durationMs, active, instances, rate }) {
    const targets = instances.map(([gameServerId, instanceId]) => ({
      instanceId,
      args: `{"gameServerId":"${gameServerId}","instanceId":"${instanceId}"}`,
    }));
    const pool = clients.slice(0, active).filter((c) => c.state === 'idle');
    const latencies = [];
    const leaveLatencies = [];
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const deadline = started + durationMs;
    // The slowest join sent in each BUCKET_MS of the run: shows whether slow joins come in stalls.
    const worstByBucket = new Float64Array(Math.ceil(durationMs / BUCKET_MS) + 1);
    let launched = 0;
    let inFlight = 0;
    let joinsInWindow = 0;
    let maxBacklog = 0;
    let finish;
    const finished = new Promise((resolveRun) => (finish = resolveRun));
    let ended = false;

    const launch = (c) => {
      c.state = 'joining';
      c.instance = targets[Math.floor(Math.random() * targets.length)];
      inFlight++;
      launched++;
      c.sentAt = performance.now();
      c.ws.send(`${c.prefix}JoinInstance","args":${c.instance.args}}`);
    };
    const pickIdle = () => {
      const i = Math.floor(Math.random() * pool.length);
      const c = pool[i];
      pool[i] = pool[pool.length - 1];
      pool.pop();
      return c;
    };
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(ticker);
      clearInterval(watchdog);
      run = null;
      const out = {
        type: 'ran',
        elapsedMs: performance.now() - started,
        durationMs,
        launched,
        joinsInWindow,
        maxBacklog,
        elu: performance.eventLoopUtilization(elu).utilization,
        latencies: Float64Array.from(latencies),
        leaveLatencies: Float64Array.from(leaveLatencies),
        worstByBucket,
      };
      finish(out);
    };
    run = {
      joined(ms, now) {
        latencies.push(ms);
        const bucket = Math.min(worstByBucket.length - 1, Math.floor((now - ms - started) / BUCKET_MS));
        if (ms > worstByBucket[bucket]) worstByBucket[bucket] = ms;
        if (now <= deadline) joinsInWindow++;
      },
      left(ms) {
        leaveLatencies.push(ms);
      },
      cycleEnded(c, ok) {
        inFlight--;
        const now = performance.now();
        if (ok || c.state === 'idle') {
          if (rate === 0 && now < deadline) launch(c);
          else pool.push(c);
        }
        if (now >= deadline && inFlight === 0) end();
      },
    };
    let ticker = null;
    const tick = () => {
      const now = performance.now();
      if (now >= deadline) {
        if (inFlight === 0) end();
        else ticker = setTimeout(() => end(), DRAIN_TIMEOUT_MS);
        return;
      }
      const due = Math.floor(((now - started) * rate) / 1000) - launched;
      for (let n = due; n > 0 && pool.length > 0; n--) launch(pickIdle());
      maxBacklog = Math.max(maxBacklog, Math.floor(((now - started) * rate) / 1000) - launched);
      ticker = setTimeout(tick, 1);
    };
    const watchdog = setInterval(() => {
      const now = performance.now();
      for (const c of clients) {
        if ((c.state === 'joining' || c.state === 'leaving') && now - c.sentAt > STEP_TIMEOUT_MS) {
          error(
            `no answer to ${c.state === 'joining' ? 'JoinInstance' : 'LeaveInstance'} within ${STEP_TIMEOUT_MS} ms`,
          );
          c.state = 'lost';
          run?.cycleEnded(c, false);
        }
      }
    }, 1000);
    if (rate === 0) {
      while (pool.length > 0) launch(pool.pop());
      ticker = setTimeout(tick, durationMs);
    } else {
      tick();
    }
    return finished.then((out) => {
      if (inFlight > 0) error(`${inFlight} cycles still open ${DRAIN_TIMEOUT_MS} ms after the run`);
      for (const c of clients) if (c.state === 'joining' || c.state === 'leaving') c.state = 'lost';
      return out;
    });
  }

  parentPort.on('message', async (message) => {
    try {
      if (message.type === 'gameServers') {
        const list = await Promise.all(gameServerIndexes.map((index) => connectGameServer(index)));
        reply({ type: 'gameServers', ids: list.map((gs) => [gs.index, gs.id]) });
      } else if (message.type === 'connect') {
        const started = performance.now();
        const verified = await connectUsers(message.count);
        reply({ type: 'connected', verified, ms: performance.now() - started });
      } else if (message.type === 'run') {
        const out = await runLoad(message);
        reply(out, [out.latencies.buffer, out.leaveLatencies.buffer, out.worstByBucket.buffer]);
      } else if (message.type === 'close') {
        closing = true;
        for (const c of clients) c.ws?.terminate();
        for (const gs of gameServers) gs.ws.terminate();
        reply({ type: 'closed' });
      }
    } catch (e) {
      parentPort.postMessage({ type: 'error', message: e.message });
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Idle worker (worker thread): opens and verifies idle user sockets and keeps them (ws answers the pings).
// ---------------------------------------------------------------------------------------------------------------

function idleWorker() {
  const { url, users } = workerData;
  const sockets = [];
  let closing = false;
  let dropped = 0;
  const errors = { count: 0, samples: [] };
  const error = (text) => {
    errors.count++;
    if (errors.samples.length < 5 && !errors.samples.includes(text)) errors.samples.push(text);
  };

  function open(user) {
    return new Promise((resolveOpen) => {
      let verified = false;
      let settled = false;
      const ws = new WebSocket(url, {
        perMessageDeflate: false,
        skipUTF8Validation: true,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
      });
      sockets.push(ws);
      const done = (problem) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (problem) error(problem);
        resolveOpen(!problem);
      };
      const timer = setTimeout(() => done('an idle socket was not verified in time'), CONNECT_TIMEOUT_MS);
      ws.on('open', () =>
        ws.send(JSON.stringify({ userId: user.id, tokenContent: user.token, message: 'auth', args: {} })),
      );
      ws.on('message', (data) => {
        if (!verified && messageName(data) === 'authenticated') {
          verified = true;
          done(null);
        } else {
          error(`unexpected message on an idle socket: ${data.toString('utf8').slice(0, 200)}`);
        }
      });
      ws.on('error', (e) => done(`idle socket error: ${e.message}`));
      ws.on('close', (code) => {
        if (!verified) done(`an idle socket closed before it was verified (code ${code})`);
        else if (!closing) dropped++;
      });
    });
  }

  parentPort.on('message', async (message) => {
    if (message.type === 'go') {
      const started = performance.now();
      let next = 0;
      let verified = 0;
      await Promise.all(
        Array.from({ length: Math.min(message.concurrency, users.length) }, async () => {
          while (next < users.length) if (await open(users[next++])) verified++;
        }),
      );
      parentPort.postMessage({ type: 'verified', verified, ms: performance.now() - started });
    } else if (message.type === 'close') {
      closing = true;
      for (const ws of sockets) ws.terminate();
      if (dropped) error(`${dropped} idle verified sockets were closed by the server`);
      parentPort.postMessage({ type: 'closed', errors: errors.count, errorSamples: errors.samples });
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Coordinator (main thread)
// ---------------------------------------------------------------------------------------------------------------

const state = { tempDir: null, server: null, workers: [], owner: null, cleaning: null, stopping: false };

async function cleanup() {
  state.cleaning ??= (async () => {
    state.owner?.terminate();
    await terminateWorkers(state);
    if (state.server) await stopServer(state, state.server).catch(() => undefined);
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
        quiet: { type: 'string', default: '10' },
        rate: { type: 'string', default: '1000' },
        users: { type: 'string', default: '2000' },
        'small-users': { type: 'string', default: '200' },
        idle: { type: 'string', default: '10000' },
        'game-servers': { type: 'string', default: '20' },
        'instances-per-server': { type: 'string', default: '20' },
        workers: { type: 'string', default: '2' },
        phases: { type: 'string', default: PHASES.join(',') },
        json: { type: 'boolean', default: false },
        'server-cpu-prof': { type: 'string' },
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
    quiet: number('quiet', 0),
    rate: number('rate', 1),
    users: Math.floor(number('users', 1)),
    smallUsers: Math.floor(number('small-users', 1)),
    idle: Math.floor(number('idle', 0)),
    gameServers: Math.floor(number('game-servers', 1)),
    instancesPerServer: Math.floor(number('instances-per-server', 1)),
    workers: Math.floor(number('workers', 1)),
    json: values.json,
    cpuProfDir: values['server-cpu-prof'] ? resolve(values['server-cpu-prof']) : null,
    phases: values.phases.split(',').map((name) => name.trim()),
  };
  for (const name of options.phases) {
    if (!PHASES.includes(name)) throw new BenchError(`--phases takes a list of ${PHASES.join(', ')}`);
  }
  if (options.smallUsers > options.users) throw new BenchError('--small-users must not exceed --users');
  if (options.workers > options.users) throw new BenchError('--workers must not exceed --users');
  return options;
}

/** Descriptors the bench process (and the server) need: every socket at once plus margin. */
function fdsNeeded(options) {
  return (
    options.users + options.gameServers + 1 + (options.phases.includes('idle') ? options.idle : 0) + FD_MARGIN
  );
}

/**
 * When this process may not open enough descriptors, runs the bench again through a shell that raises the limit
 * (Node cannot raise its own) and returns its exit code; returns null when no re-run is needed.
 */
async function reexecWithMoreFds(options) {
  const need = fdsNeeded(options);
  if (fdLimits().soft >= need || process.env[FD_RAISED_ENV]) return null;
  const child = spawn(
    'bash',
    ['-c', raiseFdScript(Math.max(65_536, need)), 'bash', process.execPath, SCRIPT, ...process.argv.slice(2)],
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

/** Seeds the world owner, the active users and the idle users: one argon2 hash for all (as bench/accounts.js). */
async function seed(dataDir, counts) {
  const { openHost, randomIds, enums, argon2, seedApi } = await loadServerForSeeding(DIST);
  const { Rank } = enums;
  const started = performance.now();
  // fsync off while seeding (one `sync` at the end instead): only the bench's setup gets faster.
  const host = await openHost({ dataDir, logLevel: 'silent', fsync: false });
  const out = { owner: null, users: [], idle: [] };
  try {
    const params = host.config.passwordHash;
    const hashed = await argon2.hash(PASSWORD, {
      algorithm: 2, // Argon2id, as server/services/passwords.ts
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: 1,
    });
    const now = Math.floor(Date.now() / 1000);
    const plan = [
      ...Array.from({ length: 1 }, () => 'owner'),
      ...Array.from({ length: counts.users }, () => 'users'),
      ...Array.from({ length: counts.idle }, () => 'idle'),
    ];
    for (let start = 0; start < plan.length; start += SEED_BATCH) {
      const changes = [];
      for (let i = start; i < Math.min(plan.length, start + SEED_BATCH); i++) {
        const id = randomIds.id('user');
        const username = `bench${i}`;
        const token = randomIds.secret();
        changes.push(
          seededUser(seedApi, {
            id,
            username,
            hashed,
            token,
            now,
            lifetimeSeconds: host.config.tokenLifetimeSeconds,
            rank: Rank.Registered,
          }),
        );
        const user = { id, token };
        if (plan[i] === 'owner') out.owner = user;
        else out[plan[i]].push(user);
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
  return { ...out, seedMs: performance.now() - started };
}

/** CPU seconds used so far by the whole server process and by its main (event-loop) thread. */
async function processCpu(pid) {
  const ticks = async (path) => {
    const text = await readFile(path, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime + stime
  };
  const [processSeconds, mainSeconds, schedstat] = await Promise.all([
    ticks(`/proc/${pid}/stat`),
    ticks(`/proc/${pid}/task/${pid}/stat`),
    readFile(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').catch(() => ''),
  ]);
  // schedstat: ns on a CPU, ns runnable but waiting for a CPU, time slices (absent without schedstats).
  const mainWaitSeconds = Number(schedstat.split(' ')[1]) / 1e9;
  return { processSeconds, mainSeconds, mainWaitSeconds, at: performance.now() };
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
      wallSeconds: wall,
      serverSeconds,
      serverMainSeconds: after.mainSeconds - before.mainSeconds,
      clientSeconds,
      serverCpuPercent: (100 * serverSeconds) / wall,
      serverMainThreadCpuPercent: (100 * (after.mainSeconds - before.mainSeconds)) / wall,
      // Time the server's event-loop thread was ready to run but waited for a CPU (taken by other processes).
      serverMainRunQueueWaitPercent: (100 * (after.mainWaitSeconds - before.mainWaitSeconds)) / wall,
      clientCpuPercent: (100 * clientSeconds) / wall,
      // CPU used by processes other than the server and this bench (other benchmarks, builds), and steal.
      otherCpuPercent: machineWall > 0 ? Math.max(0, (100 * other) / machineWall) : NaN,
      stealPercent: machineWall > 0 ? (100 * (machineAfter.steal - machineBefore.steal)) / machineWall : NaN,
    };
  };
}

async function startServer(ctx) {
  const extra = ['--config', ctx.configPath, '--game-server-token', GAME_SERVER_TOKEN];
  const nodeArgs = await serveArgs(CLI, ctx.dataDir, { cpuProfDir: ctx.options.cpuProfDir, extra });
  // Through a shell that raises the open-file limit; exec keeps the child's pid node's.
  const script = raiseFdScript(Math.max(65_536, fdsNeeded(ctx.options)));
  const server = await spawnServer(state, {
    command: 'bash',
    args: ['-c', script, 'bash', process.execPath, ...nodeArgs],
  });
  server.wsUrl = `ws://${server.url.host}/`;
  server.fdLimit = fdLimits(server.pid).soft;
  return server;
}

/** Uploads the world every instance shows, as its owner (POST /api/v1/upload, JSON body). */
async function uploadWorld(server, owner) {
  const res = await fetch(new URL('/api/v1/upload', server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      userid: owner.id,
      tokenContent: owner.token,
      file: { name: 'w.hnw', data: Buffer.from('instances bench world').toString('base64') },
      worldMeta: {
        Publicity: 0,
        Name: 'Bench Plaza',
        Description: '',
        Tags: [],
        ThumbnailURL: '',
        IconURLs: [],
        ServerScripts: [],
        BuildPlatform: 0,
      },
    }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = await res.json().catch(() => null);
  const worldId = body?.result?.WorldId;
  if (res.status !== 200 || body?.success !== true || typeof worldId !== 'string') {
    throw new BenchError(
      `uploading the world failed: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`,
    );
  }
  return worldId;
}

/**
 * The owner (one socket, here) asks for `perServer` instances on every game server; the game servers (in the
 * load workers) claim and ready them. Resolves with [gameServerId, instanceId] pairs ordered so that any prefix
 * spreads evenly over the game servers. The owner's socket is closed after, which takes it out of every instance.
 */
async function createInstances(server, owner, worldId, gameServerIds, perServer) {
  const ws = new WebSocket(server.wsUrl, { perMessageDeflate: false });
  state.owner = ws;
  const byServer = new Map(gameServerIds.map((id) => [id, []]));
  const ready = new Set();
  const total = gameServerIds.length * perServer;
  let sent = 0;
  const send = (message, args) =>
    ws.send(JSON.stringify({ userId: owner.id, tokenContent: owner.token, message, args }));
  const request = () => {
    const gameServerId = gameServerIds[sent % gameServerIds.length];
    sent++;
    send('RequestNewInstance', { worldId, instancePublicity: 0, instanceProtocol: 0, gameServerId });
  };
  await new Promise((resolveAll, reject) => {
    const timer = setTimeout(
      () => reject(new BenchError(`only ${ready.size} of ${total} instances were ready after 60 s`)),
      60_000,
    );
    ws.on('open', () => send('auth', {}));
    ws.on('message', (data) => {
      const name = messageName(data);
      if (name === 'createdtemporaryinstance') return;
      const { result } = JSON.parse(data.toString('utf8'));
      if (name === 'authenticated') {
        for (let i = 0; i < Math.min(CREATE_WINDOW, total); i++) request();
      } else if (name === 'instanceopened') {
        byServer.get(result.gameServerId)?.push(result.instanceId);
      } else if (name === 'updatedinstance') {
        const meta = result.instanceMeta;
        if (!meta.Readied || ready.has(meta.InstanceId)) return;
        ready.add(meta.InstanceId);
        if (sent < total) request();
        if (ready.size === total) {
          clearTimeout(timer);
          resolveAll();
        }
      } else {
        clearTimeout(timer);
        reject(new BenchError(`creating the instances: unexpected ${data.toString('utf8').slice(0, 300)}`));
      }
    });
    ws.on('error', (e) => reject(new BenchError(`owner socket: ${e.message}`)));
    ws.on('close', (code) => reject(new BenchError(`the server closed the owner socket (code ${code})`)));
  });
  ws.removeAllListeners('close');
  await new Promise((resolveClose) => {
    ws.once('close', resolveClose);
    ws.close();
  });
  state.owner = null;
  const instances = [];
  for (let k = 0; k < perServer; k++) {
    for (const id of gameServerIds) {
      const instanceId = byServer.get(id)[k];
      if (!instanceId) throw new BenchError(`game server ${id} did not get ${perServer} instances`);
      instances.push([id, instanceId]);
    }
  }
  return instances;
}

/** Collects the errors of worker replies into `ctx.errors`. */
function noteErrors(ctx, phase, replies) {
  for (const r of replies) {
    ctx.errors.total += r.errors ?? 0;
    for (const sample of r.errorSamples ?? []) {
      if (ctx.errors.samples.length < 10) ctx.errors.samples.push(`${phase}: ${sample}`);
    }
  }
}

/** One timed run on every load worker over the first `active` users and the first `instanceCount` instances. */
async function loadRun(ctx, phase, { active, instanceCount, rate, durationMs }) {
  const { workers } = ctx;
  const shares = splitEvenly(active, workers.length);
  const instances = ctx.instances.slice(0, instanceCount);
  const results = await Promise.all(
    workers.map((worker, i) =>
      ask(worker, {
        type: 'run',
        durationMs,
        active: shares[i],
        instances,
        rate: rate === 0 ? 0 : (rate * shares[i]) / active,
      }),
    ),
  );
  noteErrors(ctx, phase, results);
  const latencies = mergeSorted(results.map((r) => r.latencies));
  const leaves = mergeSorted(results.map((r) => r.leaveLatencies));
  const inWindow = results.reduce((sum, r) => sum + r.joinsInWindow, 0);
  const worst = new Float64Array(results[0].worstByBucket.length);
  for (const r of results)
    for (let i = 0; i < worst.length; i++) worst[i] = Math.max(worst[i], r.worstByBucket[i]);
  let slowJoins = 0;
  for (let i = latencies.length - 1; i >= 0 && latencies[i] >= TARGETS.joinP99Ms; i--) slowJoins++;
  return {
    joins: latencies.length,
    joinsPerSecond: inWindow / (durationMs / 1000),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.length ? latencies[latencies.length - 1] : NaN,
    leaveP50Ms: quantile(leaves, 0.5),
    leaveP99Ms: quantile(leaves, 0.99),
    maxBacklog: results.reduce((sum, r) => sum + r.maxBacklog, 0),
    // Joins slower than the p99 target, and the BUCKET_MS slices of the run (by send time) holding such joins.
    slowJoins,
    slowBuckets: worst.filter((ms) => ms >= TARGETS.joinP99Ms).length,
    buckets: worst.length,
    worstBuckets: [...worst]
      .map((ms, i) => ({ atSeconds: (i * BUCKET_MS) / 1000, maxMs: ms }))
      .sort((a, b) => b.maxMs - a.maxMs)
      .slice(0, 5),
    drainMs: Math.max(...results.map((r) => r.elapsedMs - r.durationMs)),
    clientEventLoopUtilization: Math.max(...results.map((r) => r.elu)),
  };
}

/** Makes sure the first `count` users are connected and verified. */
async function connectUsers(ctx, phase, count) {
  const shares = splitEvenly(count, ctx.workers.length);
  const replies = await ctx.race(
    Promise.all(ctx.workers.map((w, i) => ask(w, { type: 'connect', count: shares[i] }))),
  );
  noteErrors(ctx, phase, replies);
  const verified = replies.reduce((sum, r) => sum + r.verified, 0);
  if (verified < count) throw new BenchError(`${phase}: only ${verified} of ${count} user sockets verified`);
}

/**
 * One phase: warm-up, background CPU with no load (paced phases), then the measured run with its server CPU.
 * `rate` 0 runs a closed loop.
 */
async function phase(ctx, name, { active, rate, sockets }) {
  const { options, server } = ctx;
  const instanceCount = Math.max(
    1,
    Math.min(ctx.instances.length, Math.round((active * ctx.instances.length) / options.users)),
  );
  const spec = { active, instanceCount, rate };
  if (options.warmup > 0) {
    progress(options, `  warm-up ${options.warmup} s ...`);
    await ctx.race(loadRun(ctx, `${name} warm-up`, { ...spec, durationMs: options.warmup * 1000 }));
  }
  let quiet = null;
  if (rate > 0 && options.quiet > 0) {
    progress(options, `  background CPU, ${options.quiet} s without load ...`);
    const end = await cpuWindow(server.pid);
    await ctx.race(sleep(options.quiet * 1000));
    quiet = await end();
  }
  progress(
    options,
    `  measuring ${options.seconds} s: ${active} users on ${instanceCount} instances, ` +
      `${rate ? `${rate} joins/s offered` : 'closed loop'}, ${sockets} sockets ...`,
  );
  const end = await cpuWindow(server.pid);
  const windowUs = [monotonicUs()];
  const run = await ctx.race(loadRun(ctx, name, { ...spec, durationMs: options.seconds * 1000 }));
  windowUs.push(monotonicUs());
  const cpu = await end();
  ctx.windows[name] = windowUs;
  const backgroundPerSecond = quiet ? quiet.serverSeconds / quiet.wallSeconds : 0;
  const net = cpu.serverSeconds - backgroundPerSecond * cpu.wallSeconds;
  return {
    users: active,
    sockets,
    instances: instanceCount,
    usersPerInstance: active / instanceCount,
    offeredRate: rate || null,
    ...run,
    cpu,
    memory: await readProcStatus(server.pid),
    background: quiet
      ? {
          seconds: quiet.wallSeconds,
          serverCpuPercent: quiet.serverCpuPercent,
          serverSecondsPerSecond: backgroundPerSecond,
        }
      : null,
    serverMicrosPerJoin: run.joins ? (1e6 * cpu.serverSeconds) / run.joins : NaN,
    serverMainMicrosPerJoin: run.joins ? (1e6 * cpu.serverMainSeconds) / run.joins : NaN,
    serverNetMicrosPerJoin: run.joins ? (1e6 * net) / run.joins : NaN,
    clientMicrosPerJoin: run.joins ? (1e6 * cpu.clientSeconds) / run.joins : NaN,
  };
}

/**
 * Where the server spent its time in each measured window, from its --cpu-prof file (written when it exits):
 * self time per function and per area. Null without --server-cpu-prof.
 */
async function summarizeProfile(dir, pid, windows) {
  if (!dir) return null;
  const name = (await readdir(dir)).find((f) => f.includes(`.${pid}.`) && f.endsWith('.cpuprofile'));
  if (!name) return { file: null, error: `no profile for pid ${pid} in ${dir}` };
  const profile = JSON.parse(await readFile(join(dir, name), 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = { file: join(dir, name), phases: {} };
  for (const [phaseName, [fromUs, toUs]] of Object.entries(windows)) {
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
    const byArea = new Map();
    const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
    let busy = 0;
    for (const [id, us] of selfUs) {
      const { functionName, url, lineNumber } = nodes.get(id).callFrame;
      const file = url.startsWith('file://') ? fileURLToPath(url).slice(ROOT.length) : url;
      if (functionName === '(idle)') continue;
      busy += us;
      add(byFunction, `${functionName || '(anonymous)'}${file ? ` ${file}:${lineNumber + 1}` : ''}`, us);
      let area = 'node internals';
      if (functionName === '(garbage collector)') area = 'garbage collector';
      else if (functionName === '(program)') area = '(program: native, not attributed)';
      else if (!url) area = `native: ${functionName}`;
      else if (file.startsWith('dist/server/')) area = `server: ${file.slice('dist/server/'.length)}`;
      else if (file.startsWith('node_modules/')) area = file.split('/').slice(0, 2).join('/');
      add(byArea, area, us);
    }
    const top = (map, n) =>
      [...map]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([what, us]) => ({ what, ms: us / 1000, percentOfBusy: busy ? (100 * us) / busy : NaN }));
    out.phases[phaseName] = {
      sampledMs: total / 1000,
      busyMs: busy / 1000,
      functions: top(byFunction, 15),
      areas: top(byArea, 10),
    };
  }
  return out;
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
  x: (n) => (Number.isFinite(n) ? `${n.toFixed(2)}x` : 'n/a'),
};

/** The figures with a target; a phase that was not run leaves its rows out. Not valid when the run had errors. */
function buildTargets(r) {
  const rows = [];
  const valid = r.errors.total === 0;
  const row = (name, value, shown, op, limit, target) =>
    rows.push({
      name,
      value,
      op,
      limit,
      pass: op === '<' ? value < limit : value >= limit,
      valid: valid && Number.isFinite(value),
      shown,
      target,
    });
  const { small, main, idle } = r.phases;
  for (const [key, p] of [
    ['main', main],
    ['small', small],
    ['idle', idle],
  ]) {
    if (!p) continue;
    row(
      `${key}: join p99`,
      p.p99Ms,
      `${fmt.ms(p.p99Ms)} ms`,
      '<',
      TARGETS.joinP99Ms,
      `< ${TARGETS.joinP99Ms} ms`,
    );
    row(
      `${key}: joins/s`,
      p.joinsPerSecond,
      `${fmt.int(p.joinsPerSecond)} /s`,
      '>=',
      TARGETS.offeredShare * p.offeredRate,
      `>= ${fmt.int(TARGETS.offeredShare * p.offeredRate)} /s`,
    );
  }
  const perJoin = (p) => (r.config.quiet > 0 ? p.serverNetMicrosPerJoin : p.serverMicrosPerJoin);
  if (small && main) {
    const ratio = perJoin(main) / perJoin(small);
    row(
      'CPU/join main vs small',
      ratio,
      fmt.x(ratio),
      '<',
      TARGETS.cpuGrowth,
      `< ${fmt.x(TARGETS.cpuGrowth)}`,
    );
  }
  if (main && idle) {
    const ratio = perJoin(idle) / perJoin(main);
    row(
      'CPU/join idle vs main',
      ratio,
      fmt.x(ratio),
      '<',
      TARGETS.cpuGrowth,
      `< ${fmt.x(TARGETS.cpuGrowth)}`,
    );
  }
  return rows;
}

function printTable(r) {
  const lines = [];
  const pad = (cells, widths) =>
    cells
      .map((cell, i) => String(cell).padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const c = r.config;
  lines.push('');
  lines.push(
    `Hypernex Companion instances bench: ${c.gameServers} game servers, ${fmt.int(r.setup.instances)} instances ` +
      `(${c.instancesPerServer} per server), ${fmt.int(c.users)} users (${fmt.int(c.users / r.setup.instances)} ` +
      `per instance), ${fmt.int(c.rate)} joins/s offered, ${c.seconds} s per phase, ${c.workers} load worker(s)`,
  );
  lines.push(
    `${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}, load average ${r.env.loadAverage
      .map((n) => n.toFixed(1))
      .join(' ')} at start`,
  );
  lines.push(
    `seeded ${fmt.int(r.setup.seededUsers)} users in ${(r.setup.seedMs / 1000).toFixed(2)} s; server up in ` +
      `${fmt.int(r.setup.startupMs)} ms; ${r.setup.instances} instances created and readied in ` +
      `${fmt.int(r.setup.instancesMs)} ms; fd limit ${r.setup.fdLimit}`,
  );
  lines.push('');
  const widths = [26, 16, 14, 7];
  lines.push(pad(['figure', 'result', 'target', ''], widths));
  lines.push(
    pad(
      widths.map((w) => '-'.repeat(w)),
      widths,
    ),
  );
  for (const t of r.targets) {
    lines.push(pad([t.name, t.shown, t.target, !t.valid ? 'INVALID' : t.pass ? 'ok' : 'MISS'], widths));
  }
  const s = r.phases.saturation;
  if (s) {
    lines.push(pad(['saturation: joins/s', `${fmt.int(s.joinsPerSecond)} /s`, '(no target)'], widths));
    lines.push(
      pad(
        ['saturation: join p50/p99', `${fmt.ms(s.p50Ms)} / ${fmt.ms(s.p99Ms)} ms`, '(closed loop)'],
        widths,
      ),
    );
  }
  lines.push('');
  const lw = [10, 7, 5, 9, 6, 7, 7, 7, 7, 7, 22];
  lines.push(
    pad(
      [
        'phase',
        'sockets',
        'users',
        'instances',
        'joins',
        'joins/s',
        'p50 ms',
        'p99 ms',
        'max ms',
        'leave99',
        'joins >= 20 ms',
      ],
      lw,
    ),
  );
  for (const [name, p] of Object.entries(r.phases)) {
    lines.push(
      pad(
        [
          name,
          fmt.int(p.sockets),
          fmt.int(p.users),
          `${fmt.int(p.instances)} (${fmt.int(p.usersPerInstance)})`,
          fmt.int(p.joins),
          fmt.int(p.joinsPerSecond),
          fmt.ms(p.p50Ms),
          fmt.ms(p.p99Ms),
          fmt.ms(p.maxMs),
          fmt.ms(p.leaveP99Ms),
          `${fmt.pct((100 * p.slowJoins) / p.joins)} in ${p.slowBuckets}/${p.buckets} slices`,
        ],
        lw,
      ),
    );
  }
  lines.push(
    'p50/p99/max: JoinInstance sent -> joinedinstance received; joins/s: answers within the window; leave99:',
    `LeaveInstance -> leftinstance p99; joins >= 20 ms: their share, and how many ${BUCKET_MS} ms slices of the run`,
    '(by send time) hold one (few slices: the slow joins come in stalls, e.g. the server not getting a CPU).',
  );
  for (const [name, p] of Object.entries(r.phases)) {
    const worst = p.worstBuckets.filter((b) => b.maxMs >= TARGETS.joinP99Ms);
    if (worst.length === 0) continue;
    lines.push(
      `  ${name}: slowest slices at ${worst.map((b) => `${b.atSeconds.toFixed(1)} s (${fmt.ms(b.maxMs)} ms)`).join(', ')}`,
    );
  }
  lines.push('');
  const cw = [10, 7, 8, 7, 9, 8, 8, 6, 6, 6];
  lines.push(
    pad(
      ['phase', 'server', 'us/join', 'bg CPU', 'net/join', 'srv wait', 'client', 'ELU', 'other', 'steal'],
      cw,
    ),
  );
  let noisy = false;
  for (const [name, p] of Object.entries(r.phases)) {
    if (p.cpu.otherCpuPercent > 10 || p.cpu.stealPercent > 10 || p.cpu.serverMainRunQueueWaitPercent > 5)
      noisy = true;
    lines.push(
      pad(
        [
          name,
          fmt.pct(p.cpu.serverCpuPercent),
          fmt.int(p.serverMicrosPerJoin),
          p.background ? fmt.pct(p.background.serverCpuPercent) : '-',
          p.background ? fmt.int(p.serverNetMicrosPerJoin) : '-',
          fmt.pct(p.cpu.serverMainRunQueueWaitPercent),
          fmt.int(p.clientMicrosPerJoin),
          p.clientEventLoopUtilization.toFixed(2),
          fmt.pct(p.cpu.otherCpuPercent),
          fmt.pct(p.cpu.stealPercent),
        ],
        cw,
      ),
    );
  }
  lines.push(
    'CPU in % of one core. server: server process (all threads); us/join: its CPU us per join (one join+leave',
    'cycle); bg CPU: server CPU with the same sockets and no load (heartbeat); net/join: us/join minus that',
    'background; srv wait: time its event-loop thread was runnable but waited for a CPU (other processes);',
    "client: this bench's CPU us per join; ELU: busiest load worker (near 1.00: the client is the bottleneck);",
    'other: CPU of processes other than server and bench; steal: time the hypervisor gave to other guests.',
  );
  if (noisy) {
    lines.push(
      'WARNING: the machine was busy with other work (other CPU or steal above 10%, or the server waiting for a ' +
        'CPU above 5%): latencies and rates understate the server; CPU per join is less affected but still noisy.',
    );
  }
  if (r.profile) {
    lines.push('');
    if (!r.profile.file) lines.push(`server CPU profile: ${r.profile.error}`);
    else {
      lines.push(`server CPU profile: ${r.profile.file}`);
      for (const [name, p] of Object.entries(r.profile.phases)) {
        lines.push(`  ${name}: ${fmt.int(p.busyMs)} ms busy of ${fmt.int(p.sampledMs)} ms sampled; by area:`);
        for (const a of p.areas.slice(0, 8))
          lines.push(`    ${fmt.pct(a.percentOfBusy).padStart(4)}  ${a.what}`);
        lines.push('   top functions (self time):');
        for (const f of p.functions.slice(0, 10))
          lines.push(`    ${fmt.pct(f.percentOfBusy).padStart(4)}  ${f.what}`);
      }
    }
  }
  if (r.errors.total > 0) {
    lines.push('');
    lines.push(`ERRORS: ${r.errors.total}; these figures are not valid. Samples:`);
    for (const sample of r.errors.samples) lines.push(`  ${sample}`);
  }
  if (r.server.stderr) {
    lines.push('');
    lines.push('server stderr:');
    lines.push(r.server.stderr.trimEnd());
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
      `this process may open only ${fdLimits().soft} files, ${fdsNeeded(options)} needed: raise the hard ` +
        `limit (ulimit -Hn) or lower --idle / --users`,
    );
  }
  const onSignal = (signal) => {
    state.stopping = true;
    process.stderr.write(`\n${signal}: stopping the server and workers and removing the data folder\n`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Last resort if something throws past the handlers: never leave a server or a data folder behind.
  process.once('exit', () => {
    if (state.server) state.server.child.kill('SIGKILL');
    if (state.tempDir) rmSync(state.tempDir, RM_OPTIONS);
  });
  const fatal = new Promise((_, reject) => process.on('benchFatal', reject));
  fatal.catch(() => undefined);
  const race = (promise) => Promise.race([promise, fatal]);

  if (!existsSync(join(DIST, 'host.js')) || !existsSync(join(DIST, 'cli.js'))) {
    throw new BenchError('dist/server is missing: build it first with `npx tsc -p tsconfig.build.json`');
  }
  const loadAverage = os.loadavg();
  state.tempDir = await mkdtemp(join(os.tmpdir(), 'hypernex-instances-bench-'));
  const ctx = {
    options,
    race,
    dataDir: join(state.tempDir, 'data'),
    configPath: join(state.tempDir, 'config.json'),
    errors: { total: 0, samples: [] },
    windows: {},
  };
  // A per-socket rate limit far above the load, so the server drops nothing; everything else is the default.
  await writeFile(
    ctx.configPath,
    JSON.stringify({ socket: { messagesPerSecond: 100_000, messageBurst: 100_000 } }),
  );
  const idleCount = options.phases.includes('idle') ? options.idle : 0;
  progress(options, `seeding ${1 + options.users + idleCount} users in ${ctx.dataDir} ...`);
  const seeded = await seed(ctx.dataDir, { users: options.users, idle: idleCount });

  progress(options, 'starting the server ...');
  const server = await startServer(ctx);
  ctx.server = server;
  if (server.fdLimit < fdsNeeded(options)) {
    throw new BenchError(
      `the server may open only ${server.fdLimit} files, ${fdsNeeded(options)} needed: raise the hard limit ` +
        `(ulimit -Hn) or lower --idle / --users`,
    );
  }
  const worldId = await race(uploadWorld(server, seeded.owner));

  // Load workers: worker i holds users share i and the game servers i, i + workers, ...
  const userShares = splitEvenly(options.users, options.workers);
  ctx.workers = userShares.map((count, index) => {
    const first = userShares.slice(0, index).reduce((sum, n) => sum + n, 0);
    return new Worker(SCRIPT, {
      workerData: {
        role: 'load',
        url: server.wsUrl,
        users: seeded.users.slice(first, first + count),
        gameServerIndexes: Array.from({ length: options.gameServers }, (_, g) => g).filter(
          (g) => g % options.workers === index,
        ),
      },
    });
  });
  state.workers.push(...ctx.workers);
  for (const worker of ctx.workers) worker.on('error', (error) => process.emit('benchFatal', error));

  progress(options, `connecting ${options.gameServers} game servers and creating the instances ...`);
  const gsReplies = await race(Promise.all(ctx.workers.map((w) => ask(w, { type: 'gameServers' }))));
  noteErrors(ctx, 'setup', gsReplies);
  const gameServerIds = gsReplies
    .flatMap((r) => r.ids)
    .sort((a, b) => a[0] - b[0])
    .map(([, id]) => id);
  const instancesStarted = performance.now();
  ctx.instances = await race(
    createInstances(server, seeded.owner, worldId, gameServerIds, options.instancesPerServer),
  );
  const instancesMs = performance.now() - instancesStarted;

  const phases = {};
  const base = options.gameServers; // game-server sockets are always open
  if (options.phases.includes('small')) {
    progress(options, `small: ${options.smallUsers} users`);
    await connectUsers(ctx, 'small', options.smallUsers);
    phases.small = await phase(ctx, 'small', {
      active: options.smallUsers,
      rate: options.rate,
      sockets: base + options.smallUsers,
    });
  }
  if (options.phases.some((name) => name !== 'small')) {
    progress(options, `connecting ${options.users} users ...`);
    await connectUsers(ctx, 'main', options.users);
  }
  if (options.phases.includes('main')) {
    progress(options, `main: ${options.users} users`);
    phases.main = await phase(ctx, 'main', {
      active: options.users,
      rate: options.rate,
      sockets: base + options.users,
    });
  }
  let idleSetup = null;
  if (options.phases.includes('idle')) {
    progress(options, `idle: ${options.users} users + ${idleCount} idle verified sockets`);
    const idleWorkerThread = new Worker(SCRIPT, {
      workerData: { role: 'idle', url: server.wsUrl, users: seeded.idle },
    });
    state.workers.push(idleWorkerThread);
    idleWorkerThread.on('error', (error) => process.emit('benchFatal', error));
    progress(options, `  opening and verifying ${idleCount} idle sockets ...`);
    const verified = await race(ask(idleWorkerThread, { type: 'go', concurrency: 200 }));
    if (verified.verified < idleCount) {
      const closed = await ask(idleWorkerThread, { type: 'close' });
      noteErrors(ctx, 'idle', [closed]);
      throw new BenchError(
        `only ${verified.verified} of ${idleCount} idle sockets verified: ${closed.errorSamples.join('; ')}`,
      );
    }
    idleSetup = { verified: verified.verified, ms: verified.ms };
    phases.idle = await phase(ctx, 'idle', {
      active: options.users,
      rate: options.rate,
      sockets: base + options.users + idleCount,
    });
    const closed = await ask(idleWorkerThread, { type: 'close' });
    noteErrors(ctx, 'idle', [closed]);
    await idleWorkerThread.terminate();
    state.workers = state.workers.filter((w) => w !== idleWorkerThread);
    await sleep(1000); // let the server take the closes
  }
  if (options.phases.includes('saturation')) {
    progress(options, `saturation: ${options.users} users, closed loop`);
    phases.saturation = await phase(ctx, 'saturation', {
      active: options.users,
      rate: 0,
      sockets: base + options.users,
    });
  }
  const memory = await readProcStatus(server.pid);
  const closeReplies = await Promise.all(ctx.workers.map((w) => ask(w, { type: 'close' })));
  noteErrors(ctx, 'close', closeReplies);
  await terminateWorkers(state);
  const exit = await stopServer(state, server);
  const profile = await summarizeProfile(options.cpuProfDir, server.pid, ctx.windows);
  await removeStateDir(state, 'tempDir');
  if (exit.code !== 0) {
    ctx.errors.total++;
    ctx.errors.samples.push(`the server exited with code ${exit.code} (signal ${exit.signal})`);
  }

  const result = {
    config: {
      seconds: options.seconds,
      warmupSeconds: options.warmup,
      quiet: options.quiet,
      rate: options.rate,
      users: options.users,
      smallUsers: options.smallUsers,
      idle: options.idle,
      gameServers: options.gameServers,
      instancesPerServer: options.instancesPerServer,
      workers: options.workers,
      phases: options.phases,
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      loadAverage,
    },
    setup: {
      seededUsers: 1 + options.users + idleCount,
      seedMs: seeded.seedMs,
      startupMs: server.startupMs,
      instances: ctx.instances.length,
      instancesMs,
      idleSockets: idleSetup,
      fdLimit: server.fdLimit,
    },
    targetsDefinition: TARGETS,
    phases,
    memory,
    errors: ctx.errors,
    server: { exitCode: exit.code, exitSignal: exit.signal, stderr: server.stderr },
    profile,
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
