import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { appendFile, chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A throwaway PostgreSQL server for fault tests: its own cluster (initdb) in a temp folder, on a free loopback
 * port, that a test can stop (fast or immediate), start again on the same port and data, pause (SIGSTOP) and
 * resume. Never the shared server the other PostgreSQL tests use. Debian's binaries, Linux only (/proc).
 */

export type StopMode = 'fast' | 'immediate';

export interface PgInstance {
  /** postgres://postgres@127.0.0.1:<port>/hypernex_faults (trust authentication, a superuser). */
  readonly url: string;
  readonly port: number;
  /** The temp folder holding the data directory, the socket directory and the server log. */
  readonly dir: string;
  /** Stops the server (resuming it first if paused) and waits until it is gone. Does nothing when stopped. */
  stop(mode?: StopMode): Promise<void>;
  /** Starts the server again on the same port and data, and waits until it accepts connections. */
  start(): Promise<void>;
  /** SIGSTOPs the postmaster and all its children: connections stay open, nothing answers. */
  pause(): Promise<void>;
  /** SIGCONTs the postmaster and all its children. */
  resume(): Promise<void>;
  /** Stops the server (immediate) and removes the folder. Safe to call more than once. */
  destroy(): Promise<void>;
}

/** Where Debian's postgresql-<version> packages put their server binaries. */
export const DEBIAN_PG_ROOT = '/usr/lib/postgresql';
/** The bound of every wait: a command, the server starting or stopping, a connection. */
const WAIT_MS = 30_000;
const SUPERUSER = 'postgres';
const DATABASE = 'hypernex_faults';
/** The system user the server runs as when this process is root (initdb and postgres refuse root). */
const SYSTEM_USER = 'postgres';
const INSTALL_HINT =
  "These tests start a throwaway server of their own: install Debian's package with " +
  'apt-get install -y postgresql.';

/** util-linux's runuser, by its full path: /usr/sbin is not on every root PATH. */
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path)) ?? 'runuser';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The bin folder of the newest PostgreSQL under `root` that has initdb, pg_ctl and postgres. */
export function findPostgresBin(root = DEBIAN_PG_ROOT): string {
  let versions: string[] = [];
  try {
    versions = readdirSync(root).filter((name) => /^\d+(\.\d+)?$/.test(name));
  } catch {
    // No such folder: reported below with the others.
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = join(root, version, 'bin');
    if (['initdb', 'pg_ctl', 'postgres'].every((name) => isExecutable(join(bin, name)))) return bin;
  }
  throw new Error(
    `PostgreSQL's server binaries (initdb, pg_ctl, postgres) are not under ${root}/<version>/bin. ${INSTALL_HINT}`,
  );
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

interface SystemUser {
  uid: number;
  gid: number;
}

/** Who runs the server: the postgres system user when this process is root, else this process's user (null). */
function serverUser(): SystemUser | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => spawnSync('id', [flag, SYSTEM_USER], { encoding: 'utf8', timeout: WAIT_MS });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error(
      `This process runs as root, and PostgreSQL refuses to: the server would run as the '${SYSTEM_USER}' ` +
        `system user, which does not exist (${(uid.stderr || uid.error?.message || '').trim()}). ${INSTALL_HINT}`,
    );
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** This process's environment without PG* variables (PGDATA, PGPORT, PGOPTIONS… would steer the binaries). */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('PG')));
}

/**
 * Runs one of the PostgreSQL binaries (as the server's user) to its end within WAIT_MS, naming `what` when it
 * fails or does not end; resolves with its output.
 */
async function run(user: SystemUser | null, cwd: string, what: string, command: string, args: string[]) {
  const [file, argv] = user ? [RUNUSER, ['-u', SYSTEM_USER, '--', command, ...args]] : [command, args];
  const child = spawn(file, argv, { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), WAIT_MS);
  });
  try {
    const ended = await Promise.race([once(child, 'close'), timedOut]);
    if (ended === 'timeout') {
      // runuser passes SIGTERM on to the command it runs.
      child.kill('SIGTERM');
      throw new Error(`timed out after ${WAIT_MS / 1000} s waiting for ${what} to finish:\n${output}`);
    }
    const [code, signal] = ended as [number | null, NodeJS.Signals | null];
    if (code !== 0) throw new Error(`${what} failed (${signal ?? `exit code ${code}`}):\n${output}`);
    return output;
  } catch (error) {
    // 'error' (the command could not be run at all) rejects once(child, 'close').
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`${what} could not be run: ${file} is missing.${user ? '' : ` ${INSTALL_HINT}`}`);
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no free loopback port');
  return address.port;
}

/** A process's state letter from /proc (R, S, T, Z…), or null when there is no such process. */
function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid …: comm may hold spaces and parentheses, the last ')' ends it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  const state = processState(pid);
  return state !== null && state !== 'Z' && state !== 'X';
}

/** The pids whose parent is `pid` (the postmaster's backends and auxiliary processes). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(name));
    } catch {
      // It ended while we looked.
    }
  }
  return children;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** Blocks this thread for `ms` (only where nothing may be awaited: an 'exit' or signal hook). */
function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Instances not yet destroyed. While there is one, hooks end them when this process ends: on 'exit', and on the
 * signals that end a process without 'exit' (vitest stops its fork workers with SIGTERM, then SIGKILL after
 * 500 ms; pg_ctl puts the postmaster in a session of its own, so nothing else would end it).
 */
const live = new Set<ThrowawayPg>();
const ENDING_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

function track(instance: ThrowawayPg): void {
  if (live.size === 0) {
    process.on('exit', onExit);
    for (const name of ENDING_SIGNALS) process.on(name, onEndingSignal);
  }
  live.add(instance);
}

function untrack(instance: ThrowawayPg): void {
  if (!live.delete(instance) || live.size > 0) return;
  process.off('exit', onExit);
  for (const name of ENDING_SIGNALS) process.off(name, onEndingSignal);
}

function onExit(): void {
  endNow([...live], 3000);
}

function onEndingSignal(name: NodeJS.Signals): void {
  // Within vitest's 500 ms before SIGKILL: a postmaster told to shut down (SIGQUIT) finishes on its own.
  endNow([...live], 300);
  // Our listener made the signal harmless; with no other listener, end the process as the signal would have.
  if (process.listenerCount(name) === 0) process.kill(process.pid, name);
}

/**
 * Ends servers without awaiting anything: SIGCONT and SIGQUIT (an immediate shutdown, which removes its shared
 * memory) to every one at once, up to `waitMs` for them to go, SIGKILL for what is left when there was time to
 * wait (3 s and more); then the folders.
 */
function endNow(instances: ThrowawayPg[], waitMs: number): void {
  const postmasters = instances.map((instance) => instance.askToQuit()).filter((pid) => pid !== null);
  for (let waited = 0; waited < waitMs && postmasters.some(isAlive); waited += 20) blockFor(20);
  if (waitMs >= 3000) {
    for (const pid of postmasters.filter(isAlive)) {
      for (const each of [...childrenOf(pid), pid]) signal(each, 'SIGKILL');
    }
  }
  for (const instance of instances) instance.forget();
}

class ThrowawayPg implements PgInstance {
  #postmaster: number | null = null;
  #paused = false;
  readonly #data: string;
  readonly #socketDir: string;
  readonly #log: string;

  constructor(
    readonly dir: string,
    readonly port: number,
    readonly bin: string,
    readonly user: SystemUser | null,
  ) {
    this.#data = join(dir, 'data');
    this.#socketDir = join(dir, 'socket');
    this.#log = join(dir, 'postgres.log');
    track(this);
  }

  get url(): string {
    return `postgres://${SUPERUSER}@127.0.0.1:${this.port}/${DATABASE}`;
  }

  /** initdb with trust authentication, then this instance's settings in postgresql.conf. */
  async init(): Promise<void> {
    await mkdir(this.#socketDir, { mode: 0o700 });
    if (this.user) await chown(this.#socketDir, this.user.uid, this.user.gid);
    await this.#run('initdb', 'initdb', [
      ...['-D', this.#data, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C'],
      // A throwaway cluster: initdb need not fsync its files (the server's own writes are fsynced).
      '--no-sync',
    ]);
    const settings = {
      listen_addresses: "'127.0.0.1'",
      port: String(this.port),
      unix_socket_directories: `'${this.#socketDir}'`,
      max_connections: '100',
      shared_buffers: "'16MB'",
      fsync: 'on',
      synchronous_commit: 'on',
      huge_pages: 'off',
      logging_collector: 'off',
    };
    const lines = Object.entries(settings).map(([key, value]) => `${key} = ${value}`);
    await appendFile(join(this.#data, 'postgresql.conf'), `\n# throwaway test server\n${lines.join('\n')}\n`);
  }

  async start(): Promise<void> {
    if (!live.has(this)) throw new Error(`the PostgreSQL that was on port ${this.port} is destroyed`);
    if (this.#postmaster !== null && isAlive(this.#postmaster)) {
      if (this.#paused) await this.resume();
      return;
    }
    this.#postmaster = null;
    this.#paused = false;
    const timeout = String(WAIT_MS / 1000);
    await this.#run(`pg_ctl start (port ${this.port})`, 'pg_ctl', [
      ...['start', '-D', this.#data, '-l', this.#log, '-w', '-t', timeout],
    ]);
    this.#postmaster = await this.#readPostmasterPid();
    await this.#waitForConnections();
  }

  async stop(mode: StopMode = 'fast'): Promise<void> {
    if (this.#postmaster !== null && !isAlive(this.#postmaster)) this.#postmaster = null;
    if (this.#postmaster === null) return;
    // A stopped postmaster cannot shut down: it must run to see the signal.
    if (this.#paused) await this.resume();
    const timeout = String(WAIT_MS / 1000);
    await this.#run(`pg_ctl stop -m ${mode} (port ${this.port})`, 'pg_ctl', [
      ...['stop', '-D', this.#data, '-m', mode, '-w', '-t', timeout],
    ]);
    this.#postmaster = null;
  }

  async pause(): Promise<void> {
    const postmaster = this.#running('pause');
    // The postmaster first, and stopped before its children are listed: it forks none the list would miss.
    signal(postmaster, 'SIGSTOP');
    this.#paused = true;
    await this.#waitFor(
      'the postmaster to be stopped (SIGSTOP)',
      () => processState(postmaster) === 'T' || null,
    );
    const pids = [postmaster, ...childrenOf(postmaster)];
    for (const pid of pids) signal(pid, 'SIGSTOP');
    await this.#waitFor(
      'every server process to be stopped (SIGSTOP)',
      () => pids.every((pid) => processState(pid) === 'T' || !isAlive(pid)) || null,
    );
  }

  async resume(): Promise<void> {
    const postmaster = this.#running('resume');
    for (const pid of [...childrenOf(postmaster), postmaster]) signal(pid, 'SIGCONT');
    this.#paused = false;
    await this.#waitFor(
      'every server process to run again (SIGCONT)',
      () => [postmaster, ...childrenOf(postmaster)].every((pid) => processState(pid) !== 'T') || null,
    );
  }

  async destroy(): Promise<void> {
    let failure: unknown = null;
    try {
      await this.stop('immediate');
    } catch (error) {
      failure = error;
      this.killNow();
    }
    untrack(this);
    await rm(this.dir, { recursive: true, force: true, maxRetries: 3 });
    if (failure) throw failure;
  }

  /** Ends the server without awaiting anything, and removes the folder (a stop that failed). */
  killNow(): void {
    endNow([this], 3000);
  }

  /** SIGCONT to the server's processes and SIGQUIT to the postmaster; its pid, or null when none runs. */
  askToQuit(): number | null {
    const postmaster = this.#postmaster ?? this.#pidFromFile();
    if (postmaster === null || !isAlive(postmaster)) return null;
    for (const pid of [postmaster, ...childrenOf(postmaster)]) signal(pid, 'SIGCONT');
    signal(postmaster, 'SIGQUIT');
    return postmaster;
  }

  /** Stops tracking this instance and removes its folder (a postmaster may still be finishing its shutdown). */
  forget(): void {
    this.#postmaster = null;
    this.#paused = false;
    untrack(this);
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }

  /** Creates the database the url names. */
  async createDatabase(): Promise<void> {
    await withClient(this.#adminUrl(), (client) => client.query(`CREATE DATABASE ${DATABASE}`));
  }

  /** The last lines of the server log, for failure messages. */
  async logTail(lines = 30): Promise<string> {
    const text = await readFile(this.#log, 'utf8').catch(() => '');
    return text.split('\n').slice(-lines).join('\n');
  }

  #adminUrl(): string {
    return `postgres://${SUPERUSER}@127.0.0.1:${this.port}/postgres`;
  }

  #running(action: string): number {
    const postmaster = this.#postmaster;
    if (postmaster === null || !isAlive(postmaster)) {
      throw new Error(`cannot ${action} the PostgreSQL on port ${this.port}: it is not running`);
    }
    return postmaster;
  }

  async #run(what: string, binary: string, args: string[]): Promise<string> {
    try {
      return await run(this.user, this.dir, what, join(this.bin, binary), args);
    } catch (error) {
      const log = await this.logTail();
      if (log) (error as Error).message += `\nserver log (${this.#log}):\n${log}`;
      throw error;
    }
  }

  #pidFromFile(): number | null {
    try {
      const pid = Number(readFileSync(join(this.#data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : null;
    } catch {
      return null;
    }
  }

  #readPostmasterPid(): Promise<number> {
    return this.#waitFor('postmaster.pid to name a running postmaster', () => {
      const pid = this.#pidFromFile();
      return pid !== null && isAlive(pid) ? pid : null;
    });
  }

  async #waitForConnections(): Promise<void> {
    let last = '';
    const deadline = Date.now() + WAIT_MS;
    while (Date.now() < deadline) {
      try {
        await withClient(this.#adminUrl(), (client) => client.query('SELECT 1'));
        return;
      } catch (error) {
        last = (error as Error).message;
      }
      await sleep(50);
    }
    throw new Error(
      `timed out after ${WAIT_MS / 1000} s waiting for PostgreSQL on 127.0.0.1:${this.port} to accept ` +
        `connections (last error: ${last})\nserver log:\n${await this.logTail()}`,
    );
  }

  /** Polls `probe` until it gives a value (not null), for at most WAIT_MS. */
  async #waitFor<T>(what: string, probe: () => T | null): Promise<T> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const value = probe();
      if (value !== null) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MS / 1000} s waiting for ${what}`);
      await sleep(10);
    }
  }
}

/** One short-lived connection with every wait bounded and an 'error' listener. */
async function withClient<R>(url: string, work: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 2000,
    query_timeout: WAIT_MS,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await Promise.race([client.end().catch(() => {}), sleep(2000)]);
  }
}

/** Gives the folder to the server's user, which must be able to reach it (a 0700 TMPDIR of root's would not do). */
async function handOver(dir: string, user: SystemUser): Promise<void> {
  await chown(dir, user.uid, user.gid);
  const probe = spawnSync(RUNUSER, ['-u', SYSTEM_USER, '--', 'test', '-w', dir], { timeout: WAIT_MS });
  if (probe.status !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `The '${SYSTEM_USER}' system user, which runs the throwaway PostgreSQL when this process is root, cannot ` +
        `write to ${dir} (${probe.error?.message ?? `exit code ${probe.status}`}): point TMPDIR at a folder ` +
        'every user can reach, such as /tmp.',
    );
  }
}

/** Whether a failed first start was about the port (taken between freePort and the postmaster's bind). */
const PORT_TAKEN = /could not bind|Address already in use|could not create any TCP\/IP sockets/;

/**
 * Starts a throwaway PostgreSQL: initdb in a fresh temp folder, postgres on a free loopback port, and a database
 * for the test. Run as the postgres system user when this process is root. Throws with an install hint when
 * Debian's binaries are missing.
 */
export async function startPgInstance(): Promise<PgInstance> {
  const bin = findPostgresBin();
  const user = serverUser();
  for (let attempt = 1; ; attempt++) {
    const dir = await mkdtemp(join(tmpdir(), 'hnx-pg-'));
    if (user) await handOver(dir, user);
    const instance = new ThrowawayPg(dir, await freePort(), bin, user);
    try {
      await instance.init();
      await instance.start();
      await instance.createDatabase();
      return instance;
    } catch (error) {
      const portTaken = PORT_TAKEN.test((error as Error).message);
      instance.killNow();
      if (!portTaken || attempt >= 3) throw error;
    }
  }
}
