#!/usr/bin/env node
// Moderation load bench: for each log size asked (default 0, 100,000 and 300,000 entries) it seeds a throwaway
// data folder with many users and a moderation log of that size, runs the real CLI server in its own process and
// has 64 moderators issue warn/unwarn pairs over loopback from a worker thread, then prints acknowledged actions
// per second, latency, startup time and the bytes each action costs on disk, next to the targets. Comparing the
// log sizes shows whether the per-action cost grows with the log. It reports, it does not assert: exit 0 when
// the run was clean (targets met or not), 1 on any error or failed request.
//
//   node bench/moderation.js [--seconds 10] [--logs 0,100000,300000] [--json] [--help for more]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, open, readFile, stat } from 'node:fs/promises';
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
  prng,
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
const LOG_FILE = 'moderation-log.jsonl';

/** The password every seeded user has (it also meets the server's strength rules). */
const PASSWORD = 'Bench-Passw0rd!';
const SEED_BATCH = 500;
/** A request still unanswered after this long counts as failed and its connection is dropped. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Rank values of server/protocol/enums.ts. */
const RANK_REGISTERED = 2;
const RANK_VERIFIED = 3;
const RANK_MODERATOR = 4;
/** User record files sampled for their size after a run. */
const USER_FILE_SAMPLE = 200;

const HELP = `Usage: node bench/moderation.js [options]

For each log size: seeds a temporary data folder with users and a moderation log (${LOG_FILE}) of that many
entries, starts the server (bin/hypernex-companion.js serve) in its own process, has the moderators issue
warn/unwarn pairs over loopback and prints the figures next to the targets. Exit 0 when the run was clean
(targets met or not), 1 on errors or failed requests, 130 on Ctrl-C. Needs the compiled server
(npx tsc -p tsconfig.build.json).

Options:
  --logs LIST              comma-separated log sizes (entries) to run against, smallest first
                           (default 0,100000,300000); the headline targets use 100000 when listed, else the largest
  --seconds N              length of the measured load per log size (default 10)
  --warmup N               seconds of unreported load first (default 1; 0 skips it)
  --users N                users to seed, moderators included (default 10000)
  --clients N              concurrent moderators, one keep-alive connection each (default 64)
  --workers N              load-generator worker threads (default 1)
  --json                   print the results as JSON on stdout (no progress on stderr)
  --server-cpu-prof DIR    run each server with --cpu-prof and write its profile to DIR
  --server-config FILE     pass --config FILE to the server (experiments, e.g. {"fsync": false}; the figures
                           then no longer describe the default configuration)
  --threadpool N           run the server with UV_THREADPOOL_SIZE=N (experiments; default: Node's, 4)
  -h, --help               this help
`;

const TARGETS = {
  actionsPerSecond: 1000,
  p99Ms: 250,
  /** Largest log vs empty log: bytes written per action may not grow by more than this (measurement slack). */
  bytesGrowth: 1.1,
  /** Largest log vs empty log: server CPU per action; looser, as CPU figures are noisier than byte counts. */
  cpuGrowth: 1.25,
};
const REFERENCE_LOG = 100_000;

// ---------------------------------------------------------------------------------------------------------------
// Load generator (worker threads). Each client is one moderator with one keep-alive connection and its own
// targets, issuing warn then unwarn on the next target (closed loop: one request in flight per client), so no
// two requests in flight ever touch the same target and every answer can be checked strictly.
// ---------------------------------------------------------------------------------------------------------------

/** Sends one moderation action and checks its answer; true when it was acknowledged as expected. */
async function act(conn, moderator, action, targetId, counter, stat) {
  const warn = action === 'warnuser';
  const body = JSON.stringify({
    userid: moderator.id,
    tokenContent: moderator.token,
    action,
    targetUserId: targetId,
    ...(warn && {
      warnReason: `Bench warning ${counter}`,
      warnDescription: 'Issued by the moderation bench: please keep the chat friendly.',
    }),
  });
  const started = performance.now();
  let res;
  try {
    res = await conn.request('/api/v1/moderation', body);
  } catch (error) {
    recordFailure(stat, `transport: ${error.message}`);
    await sleep(20); // a dead server must not turn the loop into a busy spin
    return false;
  }
  const ms = performance.now() - started;
  let problem = null;
  try {
    const parsed = JSON.parse(res.text);
    const state = parsed.result?.ModerationState;
    const entry = parsed.result?.LogEntry;
    if (res.status !== 200) problem = `HTTP ${res.status} ${parsed.message}`;
    else if (parsed.success !== true) problem = `success:false ${parsed.message}`;
    else if (parsed.message !== 'Done!') problem = `message ${JSON.stringify(parsed.message)}`;
    else if (state?.Id !== targetId || entry?.targetUserId !== targetId)
      problem = 'answer is about another user';
    else if (entry?.action !== action) problem = `LogEntry.action ${entry?.action}, expected ${action}`;
    else if (state.WarnStatus?.isWarned !== warn)
      problem = `${action} left isWarned ${state.WarnStatus?.isWarned}`;
  } catch {
    problem = `unparsable answer (HTTP ${res.status})`;
  }
  if (problem) {
    recordFailure(stat, `${action}: ${problem}`);
    return false;
  }
  stat.count++;
  stat.latencies.push(ms);
  return true;
}

async function moderatorLoop(conn, moderator, targets, state, deadline, stats) {
  while (performance.now() < deadline) {
    const target = targets[state.next++ % targets.length];
    // The unwarn of a pair is sent even when the deadline passed meanwhile: every target is left unwarned.
    if (await act(conn, moderator, 'warnuser', target, state.next, stats.warnuser)) {
      await act(conn, moderator, 'unwarnuser', target, state.next, stats.unwarnuser);
    }
  }
}

function startWorker() {
  const { host, port, clients } = workerData; // clients: [{ moderator: {id, token}, targets: [id] }]
  const conns = clients.map(() => new RawConnection(host, port));
  const cursors = clients.map(() => ({ next: 0 }));
  const watchdog = setInterval(() => {
    const now = performance.now();
    for (const conn of conns) {
      if (conn.busySince && now - conn.busySince > REQUEST_TIMEOUT_MS) conn.abort('request timed out');
    }
  }, 1000);
  watchdog.unref();
  parentPort.on('message', async (message) => {
    if (message.type === 'stop') {
      clearInterval(watchdog);
      for (const conn of conns) conn.close();
      parentPort.close();
      return;
    }
    // message.type === 'run': { durationMs }
    const stats = { warnuser: newStat(), unwarnuser: newStat() };
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const deadline = started + message.durationMs;
    await Promise.all(
      clients.map((c, i) => moderatorLoop(conns[i], c.moderator, c.targets, cursors[i], deadline, stats)),
    );
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

const state = { dataDir: null, server: null, workers: [], cleaning: null, stopping: false };

async function stopWorkers() {
  const workers = state.workers;
  state.workers = [];
  for (const worker of workers) worker.postMessage({ type: 'stop' });
  await Promise.all(workers.map((worker) => worker.terminate().catch(() => undefined)));
}

async function cleanup() {
  state.cleaning ??= (async () => {
    await stopWorkers();
    if (state.server) await stopServer(state, state.server).catch(() => undefined);
    // On failure state.dataDir stays set, so the exit handler tries once more.
    await removeStateDir(state, 'dataDir').catch(() => undefined);
  })();
  return state.cleaning;
}

function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        logs: { type: 'string', default: '0,100000,300000' },
        seconds: { type: 'string', default: '10' },
        warmup: { type: 'string', default: '1' },
        users: { type: 'string', default: '10000' },
        clients: { type: 'string', default: '64' },
        workers: { type: 'string', default: '1' },
        json: { type: 'boolean', default: false },
        'server-cpu-prof': { type: 'string' },
        'server-config': { type: 'string' },
        threadpool: { type: 'string' },
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
    users: Math.floor(number('users', 2)),
    clients: Math.floor(number('clients', 1)),
    workers: Math.floor(number('workers', 1)),
    json: values.json,
    cpuProfDir: values['server-cpu-prof'] ? resolve(values['server-cpu-prof']) : null,
    serverConfig: values['server-config'] ? resolve(values['server-config']) : null,
    threadpool: values.threadpool === undefined ? null : Math.floor(number('threadpool', 1)),
    logs: values.logs.split(',').map((text) => Number(text.trim())),
  };
  if (
    options.logs.length === 0 ||
    options.logs.some((n) => !Number.isInteger(n) || n < 0 || n > 10_000_000)
  ) {
    throw new BenchError('--logs takes a comma-separated list of whole numbers 0..10000000');
  }
  options.logs = [...new Set(options.logs)].sort((a, b) => a - b);
  if (options.users < options.clients * 2)
    throw new BenchError('--users must be at least twice --clients (each moderator needs targets)');
  if (options.workers > options.clients) throw new BenchError('--workers must not exceed --clients');
  return options;
}

/** Seeds `count` users, the first `moderators` of them with rank Moderator, the rest Registered. */
async function seedUsers(dataDir, count, moderators) {
  const { openHost, randomIds, argon2, seedApi } = await loadServerForSeeding(DIST);
  // fsync off while seeding (one `sync` at the end instead): only the bench's setup gets faster, the server
  // under test runs with its default (fsync on).
  const host = await openHost({ dataDir, logLevel: 'silent', fsync: false });
  const users = [];
  try {
    const params = host.config.passwordHash;
    const hashed = await argon2.hash(PASSWORD, {
      algorithm: 2, // Argon2id, as server/services/passwords.ts
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: 1,
    });
    const now = Math.floor(Date.now() / 1000);
    for (let start = 0; start < count; start += SEED_BATCH) {
      const changes = [];
      for (let i = start; i < Math.min(count, start + SEED_BATCH); i++) {
        const id = randomIds.id('user');
        const moderator = i < moderators;
        const username = moderator ? `benchmod${i}` : `bench${i}`;
        const token = randomIds.secret();
        const rank = moderator ? RANK_MODERATOR : RANK_REGISTERED;
        const user = seededUser(seedApi, {
          id,
          username,
          hashed,
          token,
          now,
          lifetimeSeconds: host.config.tokenLifetimeSeconds,
          rank: rank,
        });
        changes.push(user);
        users.push({ id, username, token, rank });
      }
      await putUsers(host, changes);
    }
  } finally {
    // Seeded records reach their files now, as on a host that has been running a while: the server must not
    // start the measured run replaying the seed's log.
    await host.store.checkpoint();
    await host.close();
  }
  return users;
}

const REASONS = [
  'Spamming in chat',
  'Harassing other players',
  'Inappropriate avatar',
  'Griefing a public world',
  'Impersonating a staff member',
  'Exploiting a physics bug',
  'Hate speech',
  'Crashing instances on purpose',
  'Advertising another server',
  'Ear-rape audio',
];
const DESCRIPTIONS = [
  '',
  'Reported by several players in the lobby.',
  'Seen on the instance recording; this is not the first time.',
  'Kept doing it after a verbal warning from a moderator. Next time it will be a ban.',
  'User was asked to stop twice and ignored it. Screenshots are in the moderation channel, thread #',
];
const BADGES = ['supporter', 'creator', 'event-host', 'translator', 'tester', 'og'];
/** How often each action shows up in the seeded history (weights). */
const ACTION_MIX = [
  ['warnuser', 34],
  ['unwarnuser', 22],
  ['banuser', 10],
  ['unbanuser', 8],
  ['addbadge', 12],
  ['removebadge', 8],
  ['setrank', 6],
];

/**
 * Writes `count` entries shaped as server/services/moderation.ts ModerationLogEntry straight into the log file:
 * a year of history by the seeded moderators on the seeded targets, each entry's "before" being the previous
 * "after" of its target. seq is 0, so startup never re-applies any of them to the user records.
 */
async function writeLog(path, count, moderators, targets) {
  const random = prng(0x5eed + count);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const mixTotal = ACTION_MIX.reduce((sum, [, weight]) => sum + weight, 0);
  const pickAction = () => {
    let r = random() * mixTotal;
    for (const [action, weight] of ACTION_MIX) {
      r -= weight;
      if (r < 0) return action;
    }
    return ACTION_MIX[0][0];
  };
  const states = new Map();
  const stateOf = (target) => {
    let s = states.get(target.id);
    if (!s) {
      s = {
        Id: target.id,
        Username: target.username,
        Rank: RANK_REGISTERED,
        Badges: [],
        BanStatus: { isBanned: false, BanBegin: 0, BanEnd: 0, BanReason: '', BanDescription: '' },
        BanCount: 0,
        WarnStatus: { isWarned: false, TimeWarned: 0, WarnReason: '', WarnDescription: '' },
        WarnCount: 0,
        isBanned: false,
      };
      states.set(target.id, s);
    }
    return s;
  };
  const clone = (s) => ({
    ...s,
    Badges: [...s.Badges],
    BanStatus: { ...s.BanStatus },
    WarnStatus: { ...s.WarnStatus },
  });
  const now = Math.floor(Date.now() / 1000);
  const start = now - 365 * 86_400;
  const step = count > 0 ? (365 * 86_400 - 3600) / count : 0;
  const handle = await open(path, 'w');
  try {
    let chunk = '';
    for (let i = 0; i < count; i++) {
      const moderator = pick(moderators);
      const target = pick(targets);
      const time = Math.floor(start + i * step);
      const before = stateOf(target);
      const after = clone(before);
      let action = pickAction();
      if (action === 'unwarnuser' && !before.WarnStatus.isWarned) action = 'warnuser';
      if (action === 'unbanuser' && !before.BanStatus.isBanned) action = 'banuser';
      if (action === 'removebadge' && before.Badges.length === 0) action = 'addbadge';
      if (action === 'addbadge' && before.Badges.length >= 3) action = 'removebadge';
      let fields = {};
      switch (action) {
        case 'warnuser': {
          const reason = pick(REASONS);
          const description = pick(DESCRIPTIONS) + (random() < 0.3 ? `${Math.floor(random() * 9000)}` : '');
          after.WarnStatus = {
            isWarned: true,
            TimeWarned: time,
            WarnReason: reason,
            WarnDescription: description,
          };
          after.WarnCount += 1;
          fields = { warnReason: reason, warnDescription: description };
          break;
        }
        case 'unwarnuser':
          after.WarnStatus = { ...after.WarnStatus, isWarned: false };
          break;
        case 'banuser': {
          const reason = pick(REASONS);
          const description = pick(DESCRIPTIONS);
          const timeEnd = time + pick([1, 3, 7, 30]) * 86_400;
          after.BanStatus = {
            isBanned: true,
            BanBegin: time,
            BanEnd: timeEnd,
            BanReason: reason,
            BanDescription: description,
          };
          after.BanCount += 1;
          after.isBanned = true;
          fields = { banReason: reason, banDescription: description, timeEnd };
          break;
        }
        case 'unbanuser':
          after.BanStatus = { ...after.BanStatus, isBanned: false };
          after.isBanned = false;
          break;
        case 'addbadge': {
          const badge = pick(BADGES.filter((b) => !before.Badges.includes(b)));
          after.Badges.push(badge);
          fields = { badgeName: badge };
          break;
        }
        case 'removebadge': {
          const badge = pick(before.Badges);
          after.Badges = after.Badges.filter((b) => b !== badge);
          fields = { badgeName: badge };
          break;
        }
        case 'setrank': {
          const newRank = before.Rank === RANK_REGISTERED ? RANK_VERIFIED : RANK_REGISTERED;
          after.Rank = newRank;
          fields = { newRank };
          break;
        }
      }
      states.set(target.id, after);
      const entry = {
        id: `modlog_${randomUUID()}`,
        seq: 0,
        time,
        moderatorId: moderator.id,
        moderatorName: moderator.username,
        action,
        targetUserId: target.id,
        targetName: target.username,
        fields,
        before,
        after,
      };
      chunk += `${JSON.stringify(entry)}\n`;
      if (chunk.length > 1 << 20) {
        await handle.write(chunk);
        chunk = '';
      }
    }
    if (chunk) await handle.write(chunk);
  } finally {
    await handle.close();
  }
  return (await stat(path)).size;
}

/** The server's I/O counters: wchar (bytes given to write-like syscalls, sockets included), write_bytes
 * (bytes of page cache it dirtied for storage, page-granular), syscw (write-like syscalls). */
async function readProcIo(pid) {
  const text = await readFile(`/proc/${pid}/io`, 'utf8');
  const field = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { wchar: field('wchar'), writeBytes: field('write_bytes'), syscw: field('syscw') };
}

async function startServer(dataDir, { cpuProfDir, serverConfig, threadpool }) {
  const extra = serverConfig ? ['--config', serverConfig] : [];
  const env = { ...process.env };
  if (threadpool) env.UV_THREADPOOL_SIZE = String(threadpool);
  // A 300k-entry log takes a while to index.
  const args = await serveArgs(CLI, dataDir, { cpuProfDir, extra });
  return spawnServer(state, { args, env, timeoutMs: 120_000 });
}

function startWorkers(options, server, moderators, targets) {
  // Moderator m works on targets m, m + clients, m + 2*clients, ...: disjoint shares.
  const clients = moderators.slice(0, options.clients).map((moderator, m) => ({
    moderator: { id: moderator.id, token: moderator.token },
    targets: targets.filter((_, i) => i % options.clients === m).map((t) => t.id),
  }));
  const per = splitEvenly(options.clients, options.workers);
  let first = 0;
  const workers = per.map((count) => {
    const share = clients.slice(first, first + count);
    first += count;
    return new Worker(new URL(import.meta.url), {
      workerData: { host: server.url.hostname, port: Number(server.url.port), clients: share },
    });
  });
  state.workers = workers;
  for (const worker of workers) worker.on('error', (error) => process.emit('benchFatal', error));
  return workers;
}

/** Runs one timed load on every worker. */
async function runPhase(workers, pid, durationMs) {
  const machineBefore = await machineCpu();
  const cpuBefore = await serverCpu(pid);
  const ioBefore = await readProcIo(pid);
  const clientCpuBefore = process.cpuUsage();
  const results = await Promise.all(
    workers.map(
      (worker) =>
        new Promise((resolveRun, reject) => {
          const onMessage = (message) => {
            worker.off('exit', onExit);
            resolveRun(message);
          };
          const onExit = (code) => reject(new BenchError(`a load worker exited (code ${code})`));
          worker.once('message', onMessage);
          worker.once('exit', onExit);
          worker.postMessage({ type: 'run', durationMs });
        }),
    ),
  );
  const cpuAfter = await serverCpu(pid);
  const ioAfter = await readProcIo(pid);
  const machineAfter = await machineCpu();
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const elapsedMs = Math.max(...results.map((r) => r.elapsedMs));
  const wallSeconds = (cpuAfter.at - cpuBefore.at) / 1000;
  const kinds = {};
  const all = [];
  for (const kind of ['warnuser', 'unwarnuser']) {
    const parts = results.map((r) => r.stats[kind]);
    const latencies = Float64Array.from(parts.flatMap((p) => Array.from(p.latencies))).sort();
    all.push(latencies);
    kinds[kind] = {
      actions: latencies.length,
      failures: parts.reduce((sum, p) => sum + p.failures, 0),
      failureSamples: [...new Set(parts.flatMap((p) => p.samples))].slice(0, 5),
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
    };
  }
  const latencies = new Float64Array(all[0].length + all[1].length);
  latencies.set(all[0]);
  latencies.set(all[1], all[0].length);
  latencies.sort();
  const actions = latencies.length;
  const serverSeconds = cpuAfter.processSeconds - cpuBefore.processSeconds;
  return {
    seconds: elapsedMs / 1000,
    actions,
    failures: kinds.warnuser.failures + kinds.unwarnuser.failures,
    perSecond: actions / (elapsedMs / 1000),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: actions ? latencies[actions - 1] : NaN,
    kinds,
    io: {
      wchar: ioAfter.wchar - ioBefore.wchar,
      writeBytes: ioAfter.writeBytes - ioBefore.writeBytes,
      syscw: ioAfter.syscw - ioBefore.syscw,
    },
    serverCpuPercent: (100 * serverSeconds) / wallSeconds,
    serverMainThreadCpuPercent: (100 * (cpuAfter.mainSeconds - cpuBefore.mainSeconds)) / wallSeconds,
    serverMicrosPerAction: actions ? (1e6 * serverSeconds) / actions : NaN,
    serverMainMicrosPerAction: actions
      ? (1e6 * (cpuAfter.mainSeconds - cpuBefore.mainSeconds)) / actions
      : NaN,
    clientCpuPercent: (100 * (clientCpu.user + clientCpu.system)) / 1e6 / wallSeconds,
    workerEventLoopUtilization: Math.max(...results.map((r) => r.elu)),
    ...machineShares(machineBefore, machineAfter, serverSeconds, clientCpu),
  };
}

/** Mean size of the record files of up to USER_FILE_SAMPLE targets (each action rewrites its target's file). */
async function meanUserFileBytes(dataDir, targets) {
  const sample = targets.slice(0, USER_FILE_SAMPLE);
  const sizes = await Promise.all(sample.map((t) => stat(join(dataDir, 'users', `${t.id}.json`))));
  return sizes.reduce((sum, s) => sum + s.size, 0) / sizes.length;
}

/** One log size: seed, start, load, measure, stop, clean up. */
async function runLogSize(options, entries, fatal) {
  state.dataDir = await mkdtemp(join(os.tmpdir(), 'hypernex-bench-mod-'));
  const dataDir = state.dataDir;
  const logPath = join(dataDir, LOG_FILE);
  progress(options, `[log ${fmt.int(entries)}] seeding ${options.users} users in ${dataDir} ...`);
  const seedStarted = performance.now();
  const users = await seedUsers(dataDir, options.users, options.clients);
  const moderators = users.filter((u) => u.rank === RANK_MODERATOR);
  const targets = users.filter((u) => u.rank !== RANK_MODERATOR);
  progress(options, `[log ${fmt.int(entries)}] writing ${fmt.int(entries)} log entries ...`);
  const seededLogBytes = await writeLog(logPath, entries, moderators, targets);
  // Flush the seeded files now, so their writeback does not compete with the measured fsyncs.
  execFileSync('sync');
  const seedMs = performance.now() - seedStarted;

  progress(options, `[log ${fmt.int(entries)}] starting the server ...`);
  const server = await startServer(dataDir, options);
  const pid = server.child.pid;
  const afterStartup = await readProcStatus(pid);
  const workers = startWorkers(options, server, moderators, targets);
  const run = (ms) => Promise.race([runPhase(workers, pid, ms), fatal]);
  let warmup = null;
  if (options.warmup > 0) {
    progress(options, `[log ${fmt.int(entries)}] warm-up: ${options.warmup} s ...`);
    warmup = await run(options.warmup * 1000);
  }
  progress(
    options,
    `[log ${fmt.int(entries)}] ${options.clients} moderators, warn/unwarn pairs, ${options.seconds} s ...`,
  );
  const logBefore = (await stat(logPath)).size;
  const phase = await run(options.seconds * 1000);
  const logAfter = (await stat(logPath)).size;
  const afterLoad = await readProcStatus(pid);
  await stopWorkers();
  const exit = await stopServer(state, server);
  const userFileBytes = await meanUserFileBytes(dataDir, targets);
  await removeStateDir(state, 'dataDir');

  const logBytesPerAction = phase.actions ? (logAfter - logBefore) / phase.actions : NaN;
  return {
    logEntries: entries,
    seededLogBytes,
    seedMs,
    startupMs: server.startupMs,
    memory: { afterStartup, afterLoad },
    phase,
    warmupFailures: warmup?.failures ?? 0,
    warmupFailureSamples: warmup
      ? Object.values(warmup.kinds).flatMap((k) => k.failureSamples.map((s) => `warm-up: ${s}`))
      : [],
    disk: {
      logBytesPerAction,
      userFileBytes,
      // What the server hands to the file system per action: the log line plus one whole user record file
      // (written to a temp file, fsynced and renamed over the old one).
      logicalBytesPerAction: logBytesPerAction + userFileBytes,
      wcharPerAction: phase.actions ? phase.io.wchar / phase.actions : NaN,
      dirtiedBytesPerAction: phase.actions ? phase.io.writeBytes / phase.actions : NaN,
      writeSyscallsPerAction: phase.actions ? phase.io.syscw / phase.actions : NaN,
    },
    server: { exitCode: exit.code, exitSignal: exit.signal, stderr: server.stderr },
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
  ratio: (n) => (Number.isFinite(n) ? `${n.toFixed(2)}x` : 'n/a'),
  short: (n) => (n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n)),
};

function buildTargets(r) {
  const rows = [];
  const row = (name, value, shown, op, limit, target, valid) =>
    rows.push({
      name,
      value,
      op,
      limit,
      shown,
      target,
      valid,
      pass: op === '<' ? value < limit : value >= limit,
    });
  const ref = r.runs.find((x) => x.logEntries === REFERENCE_LOG) ?? r.runs.at(-1);
  const label = `${fmt.short(ref.logEntries)} log`;
  const refValid = ref.phase.failures === 0;
  row(
    `actions/s (${label})`,
    ref.phase.perSecond,
    `${fmt.int(ref.phase.perSecond)} /s`,
    '>=',
    TARGETS.actionsPerSecond,
    `>= ${fmt.int(TARGETS.actionsPerSecond)} /s`,
    refValid,
  );
  row(
    `p99 (${label})`,
    ref.phase.p99Ms,
    `${fmt.ms(ref.phase.p99Ms)} ms`,
    '<',
    TARGETS.p99Ms,
    `< ${TARGETS.p99Ms} ms`,
    refValid,
  );
  if (r.runs.length > 1) {
    const small = r.runs[0];
    const large = r.runs.at(-1);
    const valid = small.phase.failures === 0 && large.phase.failures === 0;
    const vs = `${fmt.short(large.logEntries)} vs ${fmt.short(small.logEntries)}`;
    const growth = (pick) => pick(large) / pick(small);
    const bytes = growth((x) => x.disk.logicalBytesPerAction);
    row(
      `bytes/action growth ${vs}`,
      bytes,
      fmt.ratio(bytes),
      '<',
      TARGETS.bytesGrowth,
      `< ${TARGETS.bytesGrowth}x`,
      valid,
    );
    const dirtied = growth((x) => x.disk.dirtiedBytesPerAction);
    row(
      `dirtied B/action growth ${vs}`,
      dirtied,
      fmt.ratio(dirtied),
      '<',
      TARGETS.bytesGrowth,
      `< ${TARGETS.bytesGrowth}x`,
      valid,
    );
    const cpu = growth((x) => x.phase.serverMicrosPerAction);
    row(
      `CPU/action growth ${vs}`,
      cpu,
      fmt.ratio(cpu),
      '<',
      TARGETS.cpuGrowth,
      `< ${TARGETS.cpuGrowth}x`,
      valid,
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
  lines.push('');
  lines.push(
    `Hypernex Companion moderation bench: ${fmt.int(r.config.users)} users, ${r.config.clients} moderators ` +
      `issuing warn/unwarn pairs, ${r.config.seconds} s per log size, ${r.config.workers} load worker(s)`,
  );
  lines.push(`${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}, data folders in ${r.env.tmpdir}`);
  if (r.config.serverConfig || r.config.threadpool) {
    lines.push(
      `EXPERIMENT: server run with${r.config.serverConfig ? ` --config ${r.config.serverConfig}` : ''}` +
        `${r.config.threadpool ? ` UV_THREADPOOL_SIZE=${r.config.threadpool}` : ''}, not the default setup`,
    );
  }
  lines.push('');
  const widths = [34, 16, 14, 7];
  lines.push(pad(['figure', 'result', 'target', ''], widths));
  lines.push(pad(['-'.repeat(34), '-'.repeat(16), '-'.repeat(14), '-'.repeat(7)], widths));
  for (const t of r.targets) {
    lines.push(pad([t.name, t.shown, t.target, !t.valid ? 'INVALID' : t.pass ? 'ok' : 'MISS'], widths));
  }
  for (const run of r.runs) {
    if (run.logEntries === 0) continue;
    lines.push(
      pad(
        [
          `startup with ${fmt.short(run.logEntries)} log (${fmt.mib(run.seededLogBytes / 1048576)})`,
          `${fmt.int(run.startupMs)} ms`,
          '(no target)',
        ],
        widths,
      ),
    );
  }
  lines.push('');
  const pw = [9, 8, 8, 9, 8, 7, 7, 7, 9, 9, 9, 9, 10];
  lines.push(
    pad(
      [
        'log',
        'log MiB',
        'startup',
        'actions',
        'per s',
        'p50',
        'p99',
        'max',
        'log B/act',
        'user file',
        'wchar/act',
        'dirty/act',
        'writes/act',
      ],
      pw,
    ),
  );
  for (const run of r.runs) {
    const p = run.phase;
    lines.push(
      pad(
        [
          fmt.int(run.logEntries),
          (run.seededLogBytes / 1048576).toFixed(1),
          `${fmt.int(run.startupMs)} ms`,
          fmt.int(p.actions),
          fmt.int(p.perSecond),
          fmt.ms(p.p50Ms),
          fmt.ms(p.p99Ms),
          fmt.ms(p.maxMs),
          fmt.int(run.disk.logBytesPerAction),
          fmt.int(run.disk.userFileBytes),
          fmt.int(run.disk.wcharPerAction),
          fmt.int(run.disk.dirtiedBytesPerAction),
          run.disk.writeSyscallsPerAction.toFixed(2),
        ],
        pw,
      ),
    );
  }
  lines.push(
    "Latencies in ms. log B/act: growth of the log file per acknowledged action; user file: size of the target's",
    'record file, carried whole in the write-ahead log by every action and rewritten at checkpoints (temp file +',
    'fsync + rename, once per target however many actions it had since); wchar/act: bytes the server passed',
    'to write syscalls (HTTP answers included); dirty/act: page-cache bytes it dirtied for storage (/proc/PID/io',
    'write_bytes, page-granular: the real block cost, file-system journal not included); writes/act: write syscalls.',
  );
  lines.push('');
  const cw = [9, 11, 12, 10, 10, 7, 11, 12, 12, 11, 10, 6];
  lines.push(
    pad(
      [
        'log',
        'server CPU',
        'server main',
        'CPU/act',
        'main/act',
        'client',
        'client ELU',
        'RSS start',
        'peak start',
        'RSS end',
        'other CPU',
        'steal',
      ],
      cw,
    ),
  );
  let noisy = false;
  for (const run of r.runs) {
    const p = run.phase;
    if (p.otherCpuPercent > 10 || p.stealPercent > 10) noisy = true;
    lines.push(
      pad(
        [
          fmt.int(run.logEntries),
          fmt.pct(p.serverCpuPercent),
          fmt.pct(p.serverMainThreadCpuPercent),
          `${fmt.int(p.serverMicrosPerAction)} us`,
          `${fmt.int(p.serverMainMicrosPerAction)} us`,
          fmt.pct(p.clientCpuPercent),
          p.workerEventLoopUtilization.toFixed(2),
          fmt.mib(run.memory.afterStartup.rssMiB),
          fmt.mib(run.memory.afterStartup.hwmMiB),
          fmt.mib(run.memory.afterLoad.rssMiB),
          fmt.pct(p.otherCpuPercent),
          fmt.pct(p.stealPercent),
        ],
        cw,
      ),
    );
  }
  lines.push(
    'CPU in % of one core. server CPU: whole process (with libuv/GC threads); server main: its event-loop thread;',
    'CPU/act, main/act: whole-process and event-loop-thread CPU per action; client ELU near 1.00: the load generator',
    'is the bottleneck; peak start: VmHWM once listening (startup reads the whole log); other CPU: processes other',
    'than server and bench; steal: time the hypervisor gave to other guests.',
  );
  if (noisy) {
    lines.push(
      'WARNING: the machine was busy with other work (other CPU or steal above 10%) during a run: these figures ' +
        'understate the server. Run again on a quiet machine.',
    );
  }
  if (r.failures.total > 0) {
    lines.push('');
    lines.push(`FAILED REQUESTS: ${r.failures.total}; these figures are not valid. Samples:`);
    for (const sample of r.failures.samples) lines.push(`  ${sample}`);
  }
  for (const run of r.runs) {
    if (!run.server.stderr) continue;
    lines.push('');
    lines.push(`server stderr (log ${fmt.int(run.logEntries)}):`);
    lines.push(run.server.stderr.trimEnd());
  }
  if (r.config.cpuProfDir) lines.push(`server CPU profiles written to ${r.config.cpuProfDir}`);
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
  const runs = [];
  for (const entries of options.logs) runs.push(await runLogSize(options, entries, fatal));

  let failureTotal = 0;
  const failureSamples = [];
  for (const run of runs) {
    failureTotal += run.phase.failures + run.warmupFailures;
    failureSamples.push(...run.warmupFailureSamples.map((s) => `log ${run.logEntries}: ${s}`));
    for (const k of Object.values(run.phase.kinds)) {
      failureSamples.push(...k.failureSamples.map((s) => `log ${run.logEntries}: ${s}`));
    }
  }
  const result = {
    config: {
      users: options.users,
      clients: options.clients,
      seconds: options.seconds,
      warmupSeconds: options.warmup,
      workers: options.workers,
      logs: options.logs,
      cpuProfDir: options.cpuProfDir,
      serverConfig: options.serverConfig,
      threadpool: options.threadpool,
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      tmpdir: os.tmpdir(),
    },
    runs,
    failures: { total: failureTotal, samples: failureSamples.slice(0, 10) },
  };
  result.targets = buildTargets(result);
  const cleanExit = runs.every((run) => run.server.exitCode === 0);
  result.valid = failureTotal === 0 && cleanExit;
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else printTable(result);
  for (const run of runs) {
    if (run.server.exitCode !== 0) {
      process.stderr.write(
        `the server (log ${run.logEntries}) exited with code ${run.server.exitCode} (signal ${run.server.exitSignal})\n`,
      );
    }
  }
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
