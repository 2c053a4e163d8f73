/**
 * Helpers shared by the benchmark scripts in this folder (statistics, /proc readers, CPU sampling, worker
 * messaging, descriptor limits, starting the server, seeded users). Each was copied between several scripts
 * before it moved here.
 */

import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

/** An expected failure of a bench run: its message is printed without a stack. */
export class BenchError extends Error {}

/** Retries: in-flight writes of the seeding (Ctrl-C during it) can refill a folder while it is being removed. */
export const RM_OPTIONS = { recursive: true, force: true, maxRetries: 10, retryDelay: 50 };

/** Shell prefix that raises the open-file limit (as far as the hard limit allows), then execs the command. */
export const raiseFdScript = (want) =>
  `ulimit -n ${want} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"`;

export function progress(options, text) {
  if (!options.json) process.stderr.write(`${text}\n`);
}

/** The open-file limits of a process, from /proc. */
export function fdLimits(pid = 'self') {
  const text = readFileSync(`/proc/${pid}/limits`, 'utf8');
  const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  const value = (v) => (v === 'unlimited' ? Infinity : Number(v));
  return { soft: value(match?.[1]), hard: value(match?.[2]) };
}

/** Resident and peak resident memory of a process, in MiB, from /proc/PID/status. */
export function readProcStatus(pid) {
  return readFile(`/proc/${pid}/status`, 'utf8').then((text) => {
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
  });
}

export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds used so far by the whole server process and by its main (event-loop) thread. */
export async function processCpu(pid) {
  const ticks = async (path) => {
    const text = await readFile(path, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime + stime
  };
  const [processSeconds, mainSeconds] = await Promise.all([
    ticks(`/proc/${pid}/stat`),
    ticks(`/proc/${pid}/task/${pid}/stat`),
  ]);
  return { processSeconds, mainSeconds, at: performance.now() };
}

/** Machine-wide CPU seconds (all CPUs) from /proc/stat: busy (user, nice, system, irq, softirq), steal, total. */
export async function machineCpu() {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq;
  return { busy: busy / CLK_TCK, steal: steal / CLK_TCK, total: (busy + idle + iowait + steal) / CLK_TCK };
}

/**
 * What else the machine did during a phase, in % of one CPU: `otherCpuPercent` is CPU used by processes other
 * than the server and this bench (e.g. a build or test run elsewhere), `stealPercent` is time the hypervisor gave
 * to other guests. Either one well above ~10% means the figures of that phase understate the server.
 */
export function machineShares(before, after, serverSeconds, clientCpu) {
  const wall = (after.total - before.total) / os.cpus().length;
  if (!(wall > 0)) return { otherCpuPercent: NaN, stealPercent: NaN };
  const clientSeconds = (clientCpu.user + clientCpu.system) / 1e6;
  const other = after.busy - before.busy - serverSeconds - clientSeconds;
  return {
    otherCpuPercent: Math.max(0, (100 * other) / wall),
    stealPercent: (100 * (after.steal - before.steal)) / wall,
  };
}

/** Posts `message` to a worker and resolves with its next reply (rejects on an error reply or its exit). */
export function ask(worker, message) {
  return new Promise((resolveReply, reject) => {
    const off = () => {
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      worker.off('error', onError);
    };
    const onMessage = (reply) => {
      off();
      if (reply.type === 'error') reject(new BenchError(reply.message));
      else resolveReply(reply);
    };
    const onExit = (code) => {
      off();
      reject(new BenchError(`a worker exited (code ${code})`));
    };
    const onError = (error) => {
      off();
      reject(error);
    };
    worker.on('message', onMessage);
    worker.on('exit', onExit);
    worker.on('error', onError);
    worker.postMessage(message);
  });
}

/** `total` split into `parts` whole numbers that differ by at most one (the larger ones first). */
export function splitEvenly(total, parts) {
  return Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
}

/** The `q` quantile (nearest rank) of an ascending array; NaN when it is empty. */
export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The values of several arrays in one ascending Float64Array. */
export function mergeSorted(arrays) {
  const total = arrays.reduce((sum, a) => sum + a.length, 0);
  const out = new Float64Array(total);
  let offset = 0;
  for (const a of arrays) {
    out.set(a, offset);
    offset += a.length;
  }
  return out.sort();
}

/** A fresh per-operation tally: completed requests, failures (with up to five distinct messages), latencies. */
export function newStat() {
  return { count: 0, failures: 0, samples: [], latencies: [] };
}

export function recordFailure(stat, message) {
  stat.failures++;
  if (stat.samples.length < 5 && !stat.samples.includes(message)) stat.samples.push(message);
}

/** A seeded pseudo-random generator (mulberry32): the same seed gives the same sequence in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Removes the folder named by `state[key]` (if any) and forgets it. */
export async function removeStateDir(state, key) {
  if (!state[key]) return;
  await rm(state[key], RM_OPTIONS);
  state[key] = null;
}

/** Terminates the worker threads in `state.workers` and empties that list. */
export async function terminateWorkers(state) {
  const workers = state.workers;
  state.workers = [];
  await Promise.all(workers.map((worker) => worker.terminate().catch(() => undefined)));
}

/**
 * Stops a server started by a bench (SIGTERM, SIGKILL after 10 s), clears `state.server` and resolves with what
 * its `exited` promise gives.
 */
export async function stopServer(state, server) {
  server.stopping = true;
  if (server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
    const result = await server.exited;
    clearTimeout(timer);
    state.server = null;
    return result;
  }
  state.server = null;
  return server.exited;
}

/**
 * Node arguments that run the CLI's `serve` on 127.0.0.1 and a free port, logging errors only, without the UI
 * unless asked, under --cpu-prof when `cpuProfDir` is given. `extra` goes after the data folder.
 */
export async function serveArgs(cli, dataDir, { cpuProfDir = null, ui = false, extra = [] } = {}) {
  const args = [];
  if (cpuProfDir) {
    await mkdir(cpuProfDir, { recursive: true });
    args.push('--cpu-prof', '--cpu-prof-dir', cpuProfDir);
  }
  args.push(cli, 'serve', '--data-dir', dataDir, ...extra, '--host', '127.0.0.1', '--port', '0');
  if (!ui) args.push('--no-ui');
  args.push('--log-level', 'error');
  return args;
}

/**
 * Follows a bench's child process: `exited` resolves with its exit, the start of its stderr is kept, and once it is
 * up (`match` set by untilReady) a death nobody asked for (neither `proc.stopping` nor the bench's own
 * `state.stopping`) ends the run (benchFatal) with that stderr.
 */
export function followChild(state, child, name) {
  const proc = {
    name,
    child,
    pid: child.pid,
    stderr: '',
    exited: null,
    match: null,
    url: null,
    startedAt: performance.now(),
    startupMs: NaN,
    stopping: false,
  };
  proc.exited = new Promise((resolveExit) =>
    child.once('exit', (code, signal) => resolveExit({ code, signal })),
  );
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    if (proc.stderr.length < 20_000) proc.stderr += text;
  });
  child.stdout.setEncoding('utf8');
  proc.exited.then(({ code, signal }) => {
    if (proc.match && !proc.stopping && !state.stopping) {
      process.emit(
        'benchFatal',
        new BenchError(`the ${name} died during the run (code ${code}, signal ${signal}): ${proc.stderr}`),
      );
    }
  });
  return proc;
}

/**
 * Resolves once what the child printed so far matches `ready` (a RegExp, or a function of the output returning a
 * match or null), setting proc.match and proc.startupMs; its later output is drained. Rejects when it exits first
 * or takes longer than `timeoutMs`.
 */
export function untilReady(proc, ready, timeoutMs = 60_000) {
  const test = typeof ready === 'function' ? ready : (out) => ready.exec(out);
  const { stdout } = proc.child;
  return new Promise((resolveReady, reject) => {
    let out = '';
    const timer = setTimeout(
      () =>
        reject(new BenchError(`the ${proc.name} did not start within ${timeoutMs / 1000} s: ${proc.stderr}`)),
      timeoutMs,
    );
    const onData = (text) => {
      out += text;
      const match = test(out);
      if (!match) return;
      proc.match = match;
      proc.startupMs = performance.now() - proc.startedAt;
      clearTimeout(timer);
      stdout.off('data', onData);
      stdout.resume(); // keep draining what it prints afterwards
      resolveReady(proc);
    };
    stdout.on('data', onData);
    proc.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new BenchError(
          `the ${proc.name} exited during startup (code ${code}, signal ${signal}): ${proc.stderr}`,
        ),
      );
    });
  });
}

/** "listening on <url>" as a whole line: the port may come in pieces. */
export const LISTENING = /listening on (http:\/\/\S+)\r?\n/;

/**
 * Spawns the server and resolves once it printed "listening on" (with `untilDataFolder`, its whole startup
 * output, which ends with "data folder:"): followChild's record with `url`. It is state.server from the start,
 * for cleanup; once up, its death before stopServer ends the run (benchFatal).
 */
export async function spawnServer(
  state,
  { command = process.execPath, args, env, timeoutMs = 60_000, untilDataFolder = false },
) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const server = followChild(state, child, 'server');
  state.server = server;
  await untilReady(
    server,
    (out) => {
      const match = LISTENING.exec(out);
      return match && (!untilDataFolder || /^data folder: .*\r?\n/m.test(out)) ? match : null;
    },
    timeoutMs,
  );
  server.url = new URL(server.match[1]);
  return server;
}

/**
 * What the benches seed a data folder with, from the compiled server in `distDir` (dist/server): openHost, the
 * token hash, ids, the protocol enums, argon2, and `seedApi` for seededUser.
 */
export async function loadServerForSeeding(distDir) {
  const dist = (path) => import(pathToFileURL(join(distDir, path)).href);
  const [{ openHost }, { hashToken }, { randomIds }, enums, argon2, { newUserRecord }] = await Promise.all([
    dist('host.js'),
    dist('services/accounts.js'),
    dist('services/context.js'),
    dist('protocol/enums.js'),
    import('@node-rs/argon2'),
    dist('store/users.js'),
  ]);
  return { openHost, hashToken, randomIds, enums, argon2, seedApi: { newUserRecord, hashToken } };
}

/**
 * A seeded user as the server stores a new account, signed in with `token` (app "bench"). `api` holds
 * `newUserRecord` (dist/server/store/users.js) and `hashToken` (dist/server/services/accounts.js).
 */
export function seededUser(api, { id, username, hashed, token, now, lifetimeSeconds, rank, friends = [] }) {
  const user = api.newUserRecord({
    id,
    username,
    email: `${username.toLowerCase()}@bench.invalid`,
    hashed,
    rank,
    now,
    token: {
      hash: api.hashToken(token).toString('hex'),
      dateCreated: now,
      dateExpire: now + lifetimeSeconds,
      app: 'bench',
    },
  });
  user.Friends = friends;
  return user;
}

/**
 * A minimal HTTP/1.1 client over one socket: one request at a time, Content-Length bodies only. Answers are
 * `{ status, body }` (the body's bytes) with `text` decoding them on demand.
 */
export class RawConnection {
  #host;
  #port;
  #socket = null;
  #pending = null;
  #chunks = [];
  #size = 0;
  #headerEnd = -1;
  #total = -1;
  #status = 0;
  #close = false;
  startedAt = 0;

  constructor(host, port) {
    this.#host = host;
    this.#port = port;
  }

  get busySince() {
    return this.#pending ? this.startedAt : 0;
  }

  /** POSTs `body` as JSON. */
  request(path, body) {
    const payload = Buffer.from(body, 'utf8');
    const head =
      `POST ${path} HTTP/1.1\r\nHost: ${this.#host}:${this.#port}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${payload.length}\r\n\r\n`;
    return this.#send(Buffer.concat([Buffer.from(head, 'latin1'), payload]));
  }

  get(path) {
    return this.#send(
      Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${this.#host}:${this.#port}\r\n\r\n`, 'latin1'),
    );
  }

  #send(bytes) {
    return new Promise((resolvePromise, reject) => {
      this.#pending = { resolve: resolvePromise, reject };
      this.startedAt = performance.now();
      this.#chunks = [];
      this.#size = 0;
      this.#headerEnd = -1;
      this.#total = -1;
      if (!this.#socket || this.#socket.destroyed) this.#open();
      this.#socket.write(bytes);
    });
  }

  /** Drops the connection, failing the request in flight (timeouts). */
  abort(reason) {
    this.close();
    this.#fail(new Error(reason));
  }

  close() {
    this.#socket?.destroy();
    this.#socket = null;
  }

  #open() {
    const socket = net.connect({ host: this.#host, port: this.#port, noDelay: true });
    this.#socket = socket;
    // Events of a socket already replaced (after a timeout or "Connection: close") are ignored.
    socket.on('data', (chunk) => {
      if (this.#socket === socket) this.#onData(chunk);
    });
    socket.on('error', (error) => {
      if (this.#socket === socket) this.#fail(error);
    });
    socket.on('close', () => {
      if (this.#socket !== socket) return;
      this.#socket = null;
      this.#fail(new Error('connection closed by the server'));
    });
  }

  #fail(error) {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = null;
    pending.reject(error);
  }

  #onData(chunk) {
    if (!this.#pending) return;
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    const buffer = this.#chunks.length === 1 ? chunk : Buffer.concat(this.#chunks, this.#size);
    if (this.#chunks.length > 1) this.#chunks = [buffer];
    if (this.#headerEnd < 0) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      this.#headerEnd = end + 4;
      const head = buffer.toString('latin1', 0, end).toLowerCase();
      this.#status = Number(head.slice(9, 12));
      const match = /\r\ncontent-length:\s*(\d+)/.exec(head);
      if (!match) {
        this.abort('response without Content-Length (chunked responses are not supported by this client)');
        return;
      }
      this.#total = this.#headerEnd + Number(match[1]);
      this.#close = /\r\nconnection:\s*close/.test(head);
    }
    if (this.#size < this.#total) return;
    const pending = this.#pending;
    this.#pending = null;
    const body = buffer.subarray(this.#headerEnd, this.#total);
    this.#chunks = [];
    if (this.#close) this.close();
    pending.resolve({
      status: this.#status,
      body,
      get text() {
        return body.toString('utf8');
      },
    });
  }
}

/** Stores seeded user records in one transaction (the store's only way in). */
export function putUsers(host, users) {
  return host.store.tx((t) => {
    for (const user of users) t.repo('users').put(user.Id, user);
  });
}
