#!/usr/bin/env node
// Upload bench: uploads a large .hnw world (default 1 GiB) with its worldMeta as multipart/form-data over
// loopback to the real CLI server, in its own process, and in the same run the same bytes to "the limit": a bare
// node:http server (also its own process, started from this file) that streams the request body to a file while
// computing MD5, answered without and with an fsync first. Then 8 concurrent 100 MiB uploads to each. Prints
// throughput, the server/limit ratio and the server's peak RSS next to the targets. It reports, it does not
// assert: exit 0 when the run was clean (targets met or not), 1 on any error or failed upload.
//
//   node bench/uploads.js [--size-mib 1024] [--concurrent 8] [--concurrent-size-mib 100] [--json] [--help]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, stat, statfs, unlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  BenchError,
  RM_OPTIONS,
  progress,
  CLK_TCK,
  processCpu,
  seededUser,
  loadServerForSeeding,
  followChild,
  untilReady,
  LISTENING,
  putUsers,
} from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');
const SELF = fileURLToPath(import.meta.url);

const MIB = 1024 * 1024;
/** The client sends the file as this one random MiB over and over (nothing of the file is held whole). */
const CHUNK = MIB;
const PASSWORD = 'Bench-Passw0rd!';
/** An upload still unanswered after this long fails the run. */
const UPLOAD_TIMEOUT_MS = 15 * 60_000;
const RSS_POLL_MS = 25;
/** Untimed upload that warms up each fresh receiving process first. */
const WARMUP_BYTES = 16 * MIB;
/** Free space kept beyond what the largest scenario stores at once. */
const DISK_MARGIN = 1024 * MIB;
const WORLD_META = {
  Id: '',
  Publicity: 0,
  Name: 'Bench',
  Description: '',
  Tags: [],
  ThumbnailURL: '',
  IconURLs: [],
  ServerScripts: [],
  BuildPlatform: 0,
};

const SCENARIOS = ['single', 'concurrent'];

const HELP = `Usage: node bench/uploads.js [options]

Uploads a .hnw world with worldMeta (multipart/form-data) over loopback to the server (bin/hypernex-companion.js
serve, own process and data folder) and, in the same run, the same bytes to a bare node:http server that streams
the body to a file with MD5 (the limit), answering without and with an fsync. Verifies every answer's MD5.
Exit 0 when the run was clean (targets met or not), 1 on errors or failed uploads, 130 on Ctrl-C. Needs the
compiled server (npx tsc -p tsconfig.build.json).

Options:
  --size-mib N             size of the single upload in MiB (default 1024)
  --concurrent N           concurrent uploads in the second scenario, one user each (default 8)
  --concurrent-size-mib N  size of each concurrent upload in MiB (default 100)
  --scenarios LIST         comma-separated subset of ${SCENARIOS.join(',')} (default: both)
  --repeat N               rounds of limit, limit + fsync, server per scenario, interleaved; the median round
                           of each is reported (default 3)
  --json                   print the results as JSON on stdout (no progress on stderr)
  --server-cpu-prof DIR    run the server with --cpu-prof and write its profiles to DIR
  -h, --help               this help
`;

const TARGETS = {
  /** Server throughput / limit throughput. */
  ratio: 0.9,
  /** Peak RSS of the server process, in MB (10^6 bytes). */
  peakRssMB: 150,
};

// ---------------------------------------------------------------------------------------------------------------
// The limit: a bare node:http server, run as `node bench/uploads.js --limit-server DIR`. For each POST it streams
// the body into a new file in DIR through an MD5 Transform (as the server's streamToFile does), fsyncs it first
// when the URL has ?fsync=1, and answers {Hash, Size, Path}. It exits when its stdin closes (the bench is gone).
// ---------------------------------------------------------------------------------------------------------------

function limitServer(dir) {
  let count = 0;
  const server = http.createServer((req, res) => {
    const fsync = new URL(req.url, 'http://x').searchParams.get('fsync') === '1';
    const path = join(dir, `upload-${count++}.bin`);
    const md5 = createHash('md5');
    let size = 0;
    const hasher = new Transform({
      transform(chunk, _enc, done) {
        md5.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    pipeline(req, hasher, createWriteStream(path, { flags: 'wx' }))
      .then(async () => {
        if (!fsync) return;
        const handle = await open(path, 'r+');
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
      })
      .then(
        () => {
          const body = JSON.stringify({ Hash: md5.digest('hex'), Size: size, Path: path });
          res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          });
          res.end(body);
        },
        (error) => {
          const body = JSON.stringify({ error: String(error) });
          res.writeHead(500, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          });
          res.end(body);
        },
      );
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.resume();
  process.stdin.once('end', stop);
}

// ---------------------------------------------------------------------------------------------------------------
// Coordinator
// ---------------------------------------------------------------------------------------------------------------

const state = { root: null, children: new Set(), cleaning: null, stopping: false };

async function cleanup() {
  state.cleaning ??= (async () => {
    await Promise.all([...state.children].map((child) => stopChild(child).catch(() => undefined)));
    if (state.root) {
      await rm(state.root, RM_OPTIONS).catch(() => undefined);
      if (!existsSync(state.root)) state.root = null;
    }
  })();
  return state.cleaning;
}

function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        'size-mib': { type: 'string', default: '1024' },
        concurrent: { type: 'string', default: '8' },
        'concurrent-size-mib': { type: 'string', default: '100' },
        scenarios: { type: 'string', default: SCENARIOS.join(',') },
        repeat: { type: 'string', default: '3' },
        json: { type: 'boolean', default: false },
        'server-cpu-prof': { type: 'string' },
        'limit-server': { type: 'string' },
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
    limitServer: values['limit-server'] ?? null,
    sizeBytes: Math.round(number('size-mib', 1 / 1024) * MIB),
    concurrent: Math.floor(number('concurrent', 1)),
    concurrentBytes: Math.round(number('concurrent-size-mib', 1 / 1024) * MIB),
    scenarios: values.scenarios.split(',').map((name) => name.trim()),
    repeat: Math.floor(number('repeat', 1)),
    json: values.json,
    cpuProfDir: values['server-cpu-prof'] ? resolve(values['server-cpu-prof']) : null,
  };
  for (const name of options.scenarios) {
    if (!SCENARIOS.includes(name))
      throw new BenchError(`--scenarios takes a list of ${SCENARIOS.join(', ')}`);
  }
  return options;
}

/** Seeds `count` users able to upload (rank Registered), each with one login token. */
async function seedUsers(dataDir, count) {
  const { openHost, randomIds, enums, argon2, seedApi } = await loadServerForSeeding(DIST);
  const { Rank } = enums;
  const host = await openHost({ dataDir, logLevel: 'silent' });
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
    const changes = [];
    for (let i = 0; i < count; i++) {
      const id = randomIds.id('user');
      const username = `uploader${i}`;
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
      users.push({ id, username, token });
    }
    await putUsers(host, changes);
  } finally {
    await host.close();
  }
  return users;
}

function readProcStatus(pid) {
  return readFile(`/proc/${pid}/status`, 'utf8').then((text) => {
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { rssBytes: kb('VmRSS') * 1024, hwmBytes: kb('VmHWM') * 1024 };
  });
}

/** Write-like syscalls a process made so far (/proc/PID/io syscw). */
async function readProcIo(pid) {
  const text = await readFile(`/proc/${pid}/io`, 'utf8');
  return { syscw: Number(/^syscw:\s+(\d+)/m.exec(text)?.[1] ?? NaN) };
}

/** Machine-wide CPU seconds (all CPUs) from /proc/stat: busy and steal. */
async function machineCpu() {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq;
  return {
    busy: busy / CLK_TCK,
    steal: steal / CLK_TCK,
    iowait: iowait / CLK_TCK,
    total: (busy + idle + iowait + steal) / CLK_TCK,
  };
}

/** Starts `node args...` and resolves once it prints "listening on URL". */
async function startChild(name, args) {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const proc = followChild(state, child, name);
  state.children.add(proc);
  child.stdin.on('error', () => undefined);
  await untilReady(proc, LISTENING);
  proc.url = new URL(proc.match[1]);
  return proc;
}

async function stopChild(proc) {
  proc.stopping = true;
  if (proc.child.exitCode === null && proc.child.signalCode === null) {
    proc.child.kill('SIGTERM');
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
    const result = await proc.exited;
    clearTimeout(timer);
    state.children.delete(proc);
    return result;
  }
  state.children.delete(proc);
  return proc.exited;
}

async function startServer(dataDir, configPath, cpuProfDir) {
  const nodeArgs = [];
  if (cpuProfDir) {
    await mkdir(cpuProfDir, { recursive: true });
    nodeArgs.push('--cpu-prof', '--cpu-prof-dir', cpuProfDir);
  }
  return startChild('server', [
    ...nodeArgs,
    CLI,
    'serve',
    '--data-dir',
    dataDir,
    '--config',
    configPath,
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--no-ui',
    '--log-level',
    'error',
  ]);
}

/** MD5 of `bytes` bytes of the repeated `chunk`: what the client sends as the file. */
function md5Of(chunk, bytes) {
  const md5 = createHash('md5');
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    md5.update(sent + chunk.length <= bytes ? chunk : chunk.subarray(0, bytes - sent));
  }
  return md5.digest('hex');
}

/**
 * POSTs head + `bytes` bytes of the repeated chunk + tail with a known Content-Length, writing with
 * backpressure, and resolves with the answer and its timings (ms from the request's start).
 */
function postStream(url, path, contentType, head, chunk, bytes, tail) {
  return new Promise((resolvePost, reject) => {
    const started = performance.now();
    let sentMs = NaN;
    let answered = false;
    const req = http.request({
      host: url.hostname,
      port: Number(url.port),
      method: 'POST',
      path,
      agent: false,
      headers: { 'content-type': contentType, 'content-length': head.length + bytes + tail.length },
    });
    req.setTimeout(UPLOAD_TIMEOUT_MS, () => req.destroy(new Error('upload timed out')));
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.on('response', (res) => {
      answered = true;
      res.setEncoding('utf8');
      let text = '';
      res.on('data', (part) => (text += part));
      res.on('end', () =>
        resolvePost({ status: res.statusCode, text, sentMs, ms: performance.now() - started }),
      );
      res.on('error', reject);
    });
    (async () => {
      if (!req.write(head)) await once(req, 'drain');
      for (let sent = 0; sent < bytes && !answered; sent += chunk.length) {
        const part = sent + chunk.length <= bytes ? chunk : chunk.subarray(0, bytes - sent);
        if (!req.write(part)) await once(req, 'drain');
      }
      if (answered) return; // answered early (an error): the rest of the body is not wanted
      req.end(tail);
      await once(req, 'finish');
      sentMs = performance.now() - started;
    })().catch((error) => req.destroy(error));
  });
}

/** One multipart upload to the server; checks the answer against the client's MD5. */
async function uploadToServer(url, user, chunk, bytes, md5) {
  const boundary = `----HypernexBench${randomBytes(12).toString('hex')}`;
  const field = (name, value) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('userid', user.id) +
      field('tokenContent', user.token) +
      field('worldMeta', JSON.stringify(WORLD_META)) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.hnw"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
    'utf8',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  const res = await postStream(
    url,
    '/api/v1/upload',
    `multipart/form-data; boundary=${boundary}`,
    head,
    chunk,
    bytes,
    tail,
  );
  let parsed;
  try {
    parsed = JSON.parse(res.text);
  } catch {
    throw new BenchError(`upload: unparsable answer (HTTP ${res.status}): ${res.text.slice(0, 300)}`);
  }
  const data = parsed.result?.UploadData;
  if (res.status !== 200 || parsed.success !== true || parsed.message !== 'Uploaded World!') {
    throw new BenchError(
      `upload failed: HTTP ${res.status} ${parsed.message} ${JSON.stringify(parsed.result)}`,
    );
  }
  if (data?.Hash !== md5) throw new BenchError(`upload: server Hash ${data?.Hash}, client MD5 ${md5}`);
  if (data?.Size !== bytes) throw new BenchError(`upload: server Size ${data?.Size}, sent ${bytes}`);
  if (typeof parsed.result.WorldId !== 'string') throw new BenchError('upload: no WorldId in the answer');
  return { ...res, bodyBytes: head.length + bytes + tail.length, key: data.Key };
}

/** One raw upload to the limit; checks its MD5 and removes the file it wrote. */
async function uploadToLimit(url, fsync, chunk, bytes, md5) {
  const empty = Buffer.alloc(0);
  const res = await postStream(
    url,
    `/?fsync=${fsync ? 1 : 0}`,
    'application/octet-stream',
    empty,
    chunk,
    bytes,
    empty,
  );
  const parsed = JSON.parse(res.text);
  if (res.status !== 200) throw new BenchError(`limit upload failed: HTTP ${res.status} ${res.text}`);
  if (parsed.Hash !== md5 || parsed.Size !== bytes) {
    throw new BenchError(`limit upload: Hash ${parsed.Hash} Size ${parsed.Size}, expected ${md5} ${bytes}`);
  }
  return { ...res, bodyBytes: bytes, path: parsed.Path };
}

/** Polls VmRSS of `pid` until stopped; returns the highest seen. */
function pollRss(pid) {
  let peak = 0;
  let stopped = false;
  const tick = async () => {
    while (!stopped) {
      try {
        const { rssBytes } = await readProcStatus(pid);
        if (rssBytes > peak) peak = rssBytes;
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, RSS_POLL_MS));
    }
  };
  const running = tick();
  return async () => {
    stopped = true;
    await running;
    return peak;
  };
}

/**
 * Runs `count` uploads of `bytes` each at once against one process and measures them: wall time from the first
 * request to the last answer, total throughput, the process's CPU and peak RSS.
 */
async function measure(proc, count, bytes, send) {
  execFileSync('sync'); // earlier runs' dirty pages must not be written back during this one
  const pid = proc.child.pid;
  const before = await readProcStatus(pid);
  const cpuBefore = await processCpu(pid);
  const ioBefore = await readProcIo(pid);
  const machineBefore = await machineCpu();
  const stopPoll = pollRss(pid);
  const started = performance.now();
  let results;
  let wallMs;
  let polledPeak;
  try {
    results = await Promise.all(Array.from({ length: count }, (_, i) => send(i)));
    wallMs = performance.now() - started;
  } finally {
    polledPeak = await stopPoll();
  }
  const cpuAfter = await processCpu(pid);
  const ioAfter = await readProcIo(pid);
  const machineAfter = await machineCpu();
  const after = await readProcStatus(pid);
  const wall = (cpuAfter.at - cpuBefore.at) / 1000;
  const machineWall = (machineAfter.total - machineBefore.total) / os.cpus().length;
  const procSeconds = cpuAfter.processSeconds - cpuBefore.processSeconds;
  const totalBytes = count * bytes;
  return {
    uploads: count,
    bytesEach: bytes,
    wallMs,
    mibPerSecond: totalBytes / MIB / (wallMs / 1000),
    // Per upload: until the body was fully handed to the socket, and from then until the answer (the server's
    // tail: the rest of the stream, fsync, placing the file and committing the records).
    sentMs: results.map((r) => r.sentMs),
    answerMs: results.map((r) => r.ms),
    tailMs: results.map((r) => r.ms - r.sentMs),
    rssBeforeBytes: before.rssBytes,
    peakRssBytes: Math.max(polledPeak, after.rssBytes),
    hwmBytes: after.hwmBytes,
    cpuPercent: (100 * procSeconds) / wall,
    mainThreadCpuPercent: (100 * (cpuAfter.mainSeconds - cpuBefore.mainSeconds)) / wall,
    cpuSecondsPerGiB: procSeconds / (totalBytes / (1024 * MIB)),
    // Write syscalls per MiB stored (socket writes included, a handful): small writes cost event-loop time.
    writesPerMiB: (ioAfter.syscw - ioBefore.syscw) / (totalBytes / MIB),
    // Other processes' CPU is not separable here (the client is this process); iowait hints at a slow disk.
    machineBusyPercent: (100 * (machineAfter.busy - machineBefore.busy)) / machineWall,
    iowaitPercent: (100 * (machineAfter.iowait - machineBefore.iowait)) / machineWall,
    stealPercent: (100 * (machineAfter.steal - machineBefore.steal)) / machineWall,
    results,
  };
}

/**
 * The median run (by throughput) of several, with every run's throughput, and the peaks over all of them: on a
 * shared machine one run says little, and the median keeps the figures of one real run together.
 */
function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a.mibPerSecond - b.mibPerSecond);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  return {
    ...median,
    mibPerSecondSamples: samples.map((m) => m.mibPerSecond),
    cpuSecondsPerGiBSamples: samples.map((m) => m.cpuSecondsPerGiB),
    peakRssBytes: Math.max(...samples.map((m) => m.peakRssBytes)),
    hwmBytes: Math.max(...samples.map((m) => m.hwmBytes)),
  };
}

/** Uploads to the server once, in a fresh data folder and process of its own (its peak RSS is this run's). */
async function serverRun(options, name, rep, count, bytes, chunk, md5, configPath, label) {
  const dataDir = join(state.root, `server-${name}-${rep}`);
  await mkdir(dataDir);
  const users = await seedUsers(dataDir, count);
  execFileSync('sync');
  const server = await startServer(dataDir, configPath, options.cpuProfDir);
  // A small untimed upload first: the limit's process is warm (JIT) by the time it is measured, so is this one.
  const warm = Math.min(bytes, WARMUP_BYTES);
  await uploadToServer(server.url, users[0], chunk, warm, md5Of(chunk, warm));
  progress(options, `[${name} ${rep}] server: ${label} ...`);
  const m = await measure(server, count, bytes, (i) =>
    uploadToServer(server.url, users[i], chunk, bytes, md5),
  );
  // The stored file must be the whole upload.
  for (const r of m.results) {
    const size = (await stat(join(dataDir, 'files', r.key))).size;
    if (size !== bytes) throw new BenchError(`stored file ${r.key} has ${size} bytes, uploaded ${bytes}`);
  }
  delete m.results;
  const exit = await stopChild(server);
  await rm(dataDir, RM_OPTIONS);
  return {
    m,
    exit: { code: exit.code, signal: exit.signal, stderr: server.stderr, startupMs: server.startupMs },
  };
}

/** `repeat` rounds of: the limit without fsync, the limit with fsync, the server (interleaved against drift). */
async function runScenario(options, name, count, bytes, chunk, md5, configPath) {
  const label = count === 1 ? `1 x ${fmt.mib(bytes)}` : `${count} x ${fmt.mib(bytes)}`;
  const out = { name, count, bytes, label, repeat: options.repeat };
  const samples = { limit: [], limitFsync: [], server: [] };
  const exits = [];
  const limitDir = join(state.root, `limit-${name}`);
  await mkdir(limitDir);
  const limit = await startChild('limit server', [SELF, '--limit-server', limitDir]);
  const warm = Math.min(bytes, WARMUP_BYTES);
  const warmMd5 = md5Of(chunk, warm);
  for (const fsync of [false, true])
    await unlink((await uploadToLimit(limit.url, fsync, chunk, warm, warmMd5)).path);
  for (let rep = 1; rep <= options.repeat; rep++) {
    for (const fsync of [false, true]) {
      progress(options, `[${name} ${rep}] limit${fsync ? ' + fsync' : ''}: ${label} ...`);
      const m = await measure(limit, count, bytes, () => uploadToLimit(limit.url, fsync, chunk, bytes, md5));
      for (const r of m.results) await unlink(r.path);
      delete m.results;
      samples[fsync ? 'limitFsync' : 'limit'].push(m);
    }
    const { m, exit } = await serverRun(options, name, rep, count, bytes, chunk, md5, configPath, label);
    samples.server.push(m);
    exits.push(exit);
  }
  await stopChild(limit);
  await rm(limitDir, RM_OPTIONS);
  for (const [key, list] of Object.entries(samples)) out[key] = summarize(list);
  out.serverExit = {
    code: exits.find((e) => e.code !== 0)?.code ?? 0,
    signal: exits.find((e) => e.signal)?.signal ?? null,
    stderr: exits.map((e) => e.stderr).join(''),
    startupMs: exits.map((e) => e.startupMs),
  };
  out.ratio = out.server.mibPerSecond / out.limitFsync.mibPerSecond;
  out.ratioNoFsync = out.server.mibPerSecond / out.limit.mibPerSecond;
  // CPU per byte: what throughput would follow on a quiet machine where the receiver is CPU-bound.
  out.cpuRatio = out.server.cpuSecondsPerGiB / out.limitFsync.cpuSecondsPerGiB;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------

const fmt = {
  int: (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a'),
  mib: (bytes) => (bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${(bytes / MIB).toFixed(2)} MiB`),
  mb: (bytes) => (Number.isFinite(bytes) ? `${(bytes / 1e6).toFixed(1)} MB` : 'n/a'),
  rate: (n) => (Number.isFinite(n) ? `${n.toFixed(1)} MiB/s` : 'n/a'),
  pct: (n) => (Number.isFinite(n) ? `${Math.round(n)}%` : 'n/a'),
  s: (ms) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : 'n/a'),
};

function buildTargets(r) {
  const rows = [];
  const row = (name, value, shown, op, limit, target) =>
    rows.push({ name, value, shown, op, limit, target, pass: op === '<' ? value < limit : value >= limit });
  for (const s of Object.values(r.scenarios)) {
    const tag = s.name === 'single' ? fmt.mib(s.bytes) : `${s.count} x ${fmt.mib(s.bytes)}`;
    row(`${tag}: vs limit + fsync`, s.ratio, s.ratio.toFixed(2), '>=', TARGETS.ratio, `>= ${TARGETS.ratio}`);
    row(
      `${tag}: vs limit, no fsync`,
      s.ratioNoFsync,
      s.ratioNoFsync.toFixed(2),
      '>=',
      TARGETS.ratio,
      `>= ${TARGETS.ratio}`,
    );
    row(
      `${tag}: server peak RSS`,
      s.server.peakRssBytes / 1e6,
      fmt.mb(s.server.peakRssBytes),
      '<',
      TARGETS.peakRssMB,
      `< ${TARGETS.peakRssMB} MB`,
    );
    rows.push({
      name: `${tag}: server throughput`,
      value: s.server.mibPerSecond,
      shown: fmt.rate(s.server.mibPerSecond),
      target: '(no target)',
      pass: null,
    });
    rows.push({
      name: `${tag}: CPU/byte vs limit + fsync`,
      value: s.cpuRatio,
      shown: `${s.cpuRatio.toFixed(2)}x`,
      target: '(no target)',
      pass: null,
    });
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
    'Hypernex Companion upload bench: multipart .hnw + worldMeta over loopback, vs a bare node:http limit',
  );
  lines.push(
    `${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}, files in ${r.env.tmpdir} ` +
      `(${fmt.mb(r.env.freeBytesBefore)} free before)`,
  );
  lines.push('');
  const widths = [36, 12, 11, 7];
  lines.push(pad(['figure', 'result', 'target', ''], widths));
  lines.push(pad(['-'.repeat(36), '-'.repeat(12), '-'.repeat(11), '-'.repeat(7)], widths));
  for (const t of r.targets) {
    lines.push(pad([t.name, t.shown, t.target, t.pass === null ? '' : t.pass ? 'ok' : 'MISS'], widths));
  }
  lines.push('');
  const w = [25, 12, 9, 11, 9, 9, 9, 10, 10, 10, 20];
  lines.push(
    pad(
      [
        'run',
        'throughput',
        'wall',
        'body sent',
        'tail',
        'CPU',
        'main',
        'CPU s/GiB',
        'writes/MiB',
        'peak RSS',
        'all rounds MiB/s',
      ],
      w,
    ),
  );
  for (const s of Object.values(r.scenarios)) {
    for (const [key, title] of [
      ['limit', 'limit'],
      ['limitFsync', 'limit + fsync'],
      ['server', 'server'],
    ]) {
      const m = s[key];
      const max = (list) => Math.max(...list);
      lines.push(
        pad(
          [
            `${s.name}: ${title}`,
            fmt.rate(m.mibPerSecond),
            fmt.s(m.wallMs),
            fmt.s(max(m.sentMs)),
            fmt.s(max(m.tailMs)),
            fmt.pct(m.cpuPercent),
            fmt.pct(m.mainThreadCpuPercent),
            m.cpuSecondsPerGiB.toFixed(2),
            m.writesPerMiB.toFixed(1),
            fmt.mb(m.peakRssBytes),
            m.mibPerSecondSamples.map((x) => x.toFixed(0)).join(' '),
          ],
          w,
        ),
      );
    }
    lines.push(
      `  ${s.label}: server / limit+fsync ${s.ratio.toFixed(2)}, server / limit ${s.ratioNoFsync.toFixed(2)}, ` +
        `server CPU per byte ${s.cpuRatio.toFixed(2)}x the limit + fsync's; ` +
        `server RSS ${fmt.mb(s.server.rssBeforeBytes)} before, VmHWM ${fmt.mb(s.server.hwmBytes)}; ` +
        `machine busy ${fmt.pct(s.server.machineBusyPercent)}, iowait ${fmt.pct(s.server.iowaitPercent)}, ` +
        `steal ${fmt.pct(s.server.stealPercent)} during the server run`,
    );
  }
  lines.push(
    `Each row is the median of ${r.config.repeat} interleaved round(s) by throughput (peak RSS: the highest of all).`,
    'throughput: file bytes / wall time from the first request to the last answer (all uploads); body sent: until',
    'the last body byte was handed to the socket (slowest upload); tail: from then to the answer (rest of the',
    'stream, fsync, placing the file, committing records; slowest upload). CPU and main: the receiving process,',
    'whole and event-loop thread, % of one core; machine busy: all processes, bench client included, % of all',
    'CPUs. writes/MiB: write syscalls of the receiver per MiB stored. peak RSS: highest VmRSS polled every 25 ms',
    '(or at the end). MB = 10^6 bytes.',
  );
  for (const s of Object.values(r.scenarios)) {
    if (!s.serverExit.stderr) continue;
    lines.push('', `server stderr (${s.name}):`, s.serverExit.stderr.trimEnd());
  }
  if (r.config.cpuProfDir) lines.push(`server CPU profiles written to ${r.config.cpuProfDir}`);
  lines.push('');
  process.stdout.write(lines.join('\n'));
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
  const options = parseOptions();
  if (options.limitServer) {
    limitServer(options.limitServer);
    return null;
  }
  const onSignal = (signal) => {
    state.stopping = true;
    process.stderr.write(`\n${signal}: stopping the servers and removing the temporary files\n`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', () => {
    for (const proc of state.children) proc.child.kill('SIGKILL');
    if (state.root) rmSync(state.root, RM_OPTIONS);
  });
  const fatal = new Promise((_, reject) => process.on('benchFatal', reject));
  fatal.catch(() => undefined);

  if (!existsSync(join(DIST, 'host.js')) || !existsSync(join(DIST, 'cli.js'))) {
    throw new BenchError('dist/server is missing: build it first with `npx tsc -p tsconfig.build.json`');
  }
  const plan = [];
  if (options.scenarios.includes('single')) plan.push(['single', 1, options.sizeBytes]);
  if (options.scenarios.includes('concurrent'))
    plan.push(['concurrent', options.concurrent, options.concurrentBytes]);

  // Disk space: each scenario keeps at most its own uploads at once (every run is cleaned up before the next).
  const fs = await statfs(os.tmpdir());
  const freeBytes = fs.bavail * fs.bsize;
  const need = Math.max(...plan.map(([, count, bytes]) => count * bytes)) + DISK_MARGIN;
  if (freeBytes < need) {
    throw new BenchError(
      `not enough free space in ${os.tmpdir()}: ${fmt.mb(freeBytes)} free, ${fmt.mb(need)} needed (see df)`,
    );
  }

  state.root = await mkdtemp(join(os.tmpdir(), 'hypernex-bench-up-'));
  const maxBytes = Math.max(...plan.map(([, , bytes]) => bytes));
  const configPath = join(state.root, 'config.json');
  // The default limit is 1000 MB (as the real server); a 1 GiB bench file needs a little more.
  await writeFile(
    configPath,
    JSON.stringify({ uploads: { maxFileBytes: Math.max(maxBytes, 1000 * 1_000_000) } }),
  );

  const chunk = randomBytes(CHUNK);
  const scenarios = {};
  for (const [name, count, bytes] of plan) {
    progress(options, `[${name}] MD5 of the ${fmt.mib(bytes)} file (client side, not timed) ...`);
    const md5 = md5Of(chunk, bytes);
    scenarios[name] = await Promise.race([
      runScenario(options, name, count, bytes, chunk, md5, configPath),
      fatal,
    ]);
  }
  await rm(state.root, RM_OPTIONS);
  state.root = null;

  const result = {
    config: {
      sizeBytes: options.sizeBytes,
      concurrent: options.concurrent,
      concurrentBytes: options.concurrentBytes,
      scenarios: options.scenarios,
      repeat: options.repeat,
      cpuProfDir: options.cpuProfDir,
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      tmpdir: os.tmpdir(),
      freeBytesBefore: freeBytes,
    },
    scenarios,
  };
  result.targets = buildTargets(result);
  result.valid = Object.values(scenarios).every((s) => s.serverExit.code === 0);
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else printTable(result);
  for (const s of Object.values(scenarios)) {
    if (s.serverExit.code !== 0) {
      process.stderr.write(
        `the server (${s.name}) exited with code ${s.serverExit.code} (${s.serverExit.signal})\n`,
      );
    }
  }
  return result.valid ? 0 : 1;
}

main()
  .then(async (code) => {
    if (code === null) return; // the limit server runs until stopped
    await cleanup();
    process.exitCode = code;
  })
  .catch(async (error) => {
    if (state.stopping) return;
    process.stderr.write(`bench failed: ${error instanceof BenchError ? error.message : error.stack}\n`);
    await cleanup();
    process.exitCode = 1;
  });
