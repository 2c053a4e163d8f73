// Hosts under test and what the harness reads about them: the compiled CLI's `serve` in processes of their own over
// temp folders (127.0.0.1, a free port), CPU and memory from /proc, a PostgreSQL schema of the bench's own.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'bin', 'hypernex-companion.js');
export const BASELINES = join(ROOT, 'bench', 'harness', 'baselines.js');
/** A module of the compiled server (dist/server). */
export const dist = (path) => import(pathToFileURL(join(ROOT, 'dist', 'server', path)).href);

/** An expected failure of a run: printed without a stack. */
export class BenchError extends Error {}

/** `promise`, or a BenchError (`what`) when it takes longer than `ms`. */
export function within(ms, promise, what) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new BenchError(what)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A host's `limits` for the bench: every client comes from 127.0.0.1, so the connection caps must not count them. */
export const UNCAPPED = { connectionsPerAddress: 100_000, connections: 100_000 };
export const RM_OPTIONS = { recursive: true, force: true, maxRetries: 10, retryDelay: 50 };
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds of a whole process and of its main (event-loop) thread. */
export async function procCpu(pid) {
  const ticks = async (path) => {
    const text = await readFile(path, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  };
  const paths = [`/proc/${pid}/stat`, `/proc/${pid}/task/${pid}/stat`];
  const [processSeconds, mainSeconds] = await Promise.all(paths.map(ticks));
  return { processSeconds, mainSeconds, at: performance.now() };
}

/** Resident and peak resident memory in MiB. */
export async function procMemory(pid) {
  const text = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
}

/** Write counters: wchar (bytes to write-like syscalls), write_bytes (page cache dirtied), syscw (calls). */
export async function procIo(pid) {
  const text = await readFile(`/proc/${pid}/io`, 'utf8');
  const field = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { wchar: field('wchar'), writeBytes: field('write_bytes'), syscw: field('syscw') };
}

export function fdLimit(pid = 'self') {
  const match = /^Max open files\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  return match?.[1] === 'unlimited' ? Infinity : Number(match?.[1]);
}

async function machineCpu() {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0];
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const busy = user + nice + system + irq + softirq;
  return { busy: busy / CLK_TCK, steal: steal / CLK_TCK, total: (busy + idle + iowait + steal) / CLK_TCK };
}

/** Every window measured in this run: the runner warns when the machine was busy with other work in one. */
export const windows = [];

/**
 * Starts measuring the CPU of process `pid` (0: none, e.g. the store bench), of this bench and of the rest of the
 * machine; the returned function ends the window. CPU in % of one core; other: processes other than these two
 * (other benchmarks, builds); steal: time the hypervisor gave to other guests.
 */
export async function cpuWindow(pid = 0) {
  const read = async () => ({
    machine: await machineCpu(),
    server: pid ? await procCpu(pid) : { processSeconds: 0, mainSeconds: 0 },
    client: process.cpuUsage(),
    at: performance.now(),
  });
  const before = await read();
  return async () => {
    const after = await read();
    const wallSeconds = (after.at - before.at) / 1000;
    const serverSeconds = after.server.processSeconds - before.server.processSeconds;
    const mainSeconds = after.server.mainSeconds - before.server.mainSeconds;
    const clientSeconds =
      (after.client.user + after.client.system - before.client.user - before.client.system) / 1e6;
    const machineWall = (after.machine.total - before.machine.total) / os.cpus().length;
    const other = after.machine.busy - before.machine.busy - serverSeconds - clientSeconds;
    const ofMachine = (seconds) => (machineWall > 0 ? (100 * seconds) / machineWall : NaN);
    const w = { wallSeconds, serverSeconds, mainSeconds, clientSeconds };
    w.serverCpuPercent = (100 * serverSeconds) / wallSeconds;
    w.mainCpuPercent = (100 * mainSeconds) / wallSeconds;
    w.clientCpuPercent = (100 * clientSeconds) / wallSeconds;
    w.otherCpuPercent = Math.max(0, ofMachine(other));
    w.stealPercent = ofMachine(after.machine.steal - before.machine.steal);
    windows.push(w);
    return w;
  };
}

/** Awaits `fn()` in a CPU window of process `pid` (as cpuWindow): [what it resolved with, the window]. */
export async function withCpu(pid, fn) {
  const end = await cpuWindow(pid);
  const result = await fn();
  return [result, await end()];
}

/**
 * Spawns `node args...` and resolves once its stdout matches `ready` (startupMs, match): a child of the run, stopped
 * at its end; once up, a death nobody asked for ends the run. stderr is kept for the report.
 */
export function spawnNode(ctx, name, args, { env, ready = /listening on (\S+)\r?\n/ } = {}) {
  const child = spawn(process.execPath, args, { stdio: 'pipe', env: { ...process.env, ...env } });
  const proc = { name, child, pid: child.pid, stderr: '', stopping: false, up: false };
  const started = performance.now();
  proc.exited = new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));
  child.stdin.on('error', () => undefined);
  child.stderr
    .setEncoding('utf8')
    .on('data', (text) => (proc.stderr += proc.stderr.length < 20_000 ? text : ''));
  proc.stop = async () => {
    proc.stopping = true;
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await proc.exited;
    clearTimeout(timer);
    ctx.children.delete(proc);
    return proc.exited;
  };
  ctx.children.add(proc);
  return new Promise((resolveReady, reject) => {
    let out = '';
    const late = () => reject(new BenchError(`the ${name} did not start in 120 s: ${proc.stderr}`));
    const timer = setTimeout(late, 120_000);
    const onData = (text) => {
      proc.match = ready.exec((out += text));
      if (!proc.match) return;
      clearTimeout(timer);
      child.stdout.off('data', onData).resume();
      proc.up = true;
      proc.startupMs = performance.now() - started;
      proc.url = new URL(proc.match[1]);
      resolveReady(proc);
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    proc.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      const what = `the ${name} exited (code ${code}, signal ${signal}): ${proc.stderr}`;
      if (!proc.up) reject(new BenchError(what));
      else if (!proc.stopping && !ctx.stopping) ctx.fail(new BenchError(what));
    });
  });
}

const SERVED = /listening on (http:\/\/\S+)\r?\n[\s\S]*^data folder: .*\r?\n/m;

/**
 * Starts `count` hosts (`serve` of the compiled CLI, each in its own process) and resolves with them, each with
 * `url`, `wsUrl`, `pid`, `startupMs`, `stderr` and `stop()`. Options: `dataDir` (one folder for all; default a
 * new temp folder each, the first being ctx.dataDir), `config` (an object passed as --config), `args` (more serve
 * arguments), `nodeArgs`, `env`, `ui`. The run's own serve arguments (--database, --redis, those after `--`) are
 * always passed: hosts sharing PostgreSQL and Redis are `startHosts(ctx, 2, { dataDir: ctx.dataDir })`.
 */
export async function startHosts(ctx, count, options = {}) {
  const { dataDir, config, args = [], nodeArgs = [], env, ui = false } = options;
  const extra = [...ctx.serveArgs, ...args];
  if (config) {
    const path = join(ctx.tmp, `config-${ctx.configs++}.json`);
    await writeFile(path, JSON.stringify(config));
    extra.push('--config', path);
  }
  const hosts = [];
  for (let i = 0; i < count; i++) {
    const dir = dataDir ?? (i === 0 ? ctx.dataDir : join(ctx.tmp, `data-${i}`));
    await mkdir(dir, { recursive: true });
    const serve = ['serve', '--data-dir', dir, '--host', '127.0.0.1', '--port', '0', '--log-level', 'error'];
    if (!ui) serve.push('--no-ui');
    const name = count > 1 ? `host ${i + 1}` : 'host';
    const host = await spawnNode(ctx, name, [...nodeArgs, CLI, ...serve, ...extra], { env, ready: SERVED });
    host.wsUrl = `ws://${host.url.host}/`;
    host.dataDir = dir;
    hosts.push(host);
  }
  return hosts;
}

/**
 * One host alone gets CPU 0 (all its threads) and the run, whose load generators share its process, the other
 * CPUs: as on a LAN, where the clients are other machines, the two do not take turns on one core, which made
 * run-to-run figures swing by a fifth. Said in the table; nothing is pinned on one CPU or without taskset.
 */
export const pinned = { text: '' };
function pinAlone(host) {
  // Every CPU of the machine: availableParallelism() counts only those this process may use, one once pinned.
  const cpus = os.cpus().length;
  if (cpus < 2) return;
  try {
    const rest = cpus > 2 ? `1-${cpus - 1}` : '1';
    pin(host.pid, '0');
    pin(process.pid, rest);
    pinned.text = `host pinned to CPU 0, load generator to CPU${cpus > 2 ? 's' : ''} ${rest}`;
  } catch {
    pinned.text = '';
  }
}

/** Every thread of `pid` on `cpus`, checked (the table says so only when it is so). */
function pin(pid, cpus) {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  if (/^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1] !== cpus)
    throw new Error(`${pid} is not on CPU ${cpus}`);
}

export async function startHost(ctx, options) {
  const [host] = await startHosts(ctx, 1, options);
  if (ctx.children.size === 1) pinAlone(host);
  return host;
}

/** A temp folder of the run (removed at its end). */
export const tempRoot = () => mkdtemp(join(os.tmpdir(), 'hypernex-bench-'));

/** A schema of the bench's own in the --database database: the URL placing connections in it, and a drop. */
export async function benchSchema(url) {
  const { default: pg } = await import('pg');
  const name = `hx_bench_${Date.now().toString(36)}`;
  const admin = async (sql) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  };
  await admin(`CREATE SCHEMA ${name}`);
  const placed = new URL(url);
  placed.searchParams.set('options', `-c search_path=${name}`);
  return { url: placed.toString(), drop: () => admin(`DROP SCHEMA ${name} CASCADE`) };
}

export const removeDir = (dir) => rm(dir, RM_OPTIONS);
