import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';

/**
 * A throwaway redis-server for fault tests: on a free loopback port with a folder of its own (never the shared one
 * on 6379), which a test stops (SIGSTOP), resumes, kills and starts again on the same port.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Fails (saying what to install) when redis-server cannot be run. */
export function requireRedisServer(): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `redis-server cannot be run (${probe.error?.message ?? probe.stderr}). These tests start a throwaway ` +
        "one of their own: install Debian's package with apt-get install -y redis-server.",
    );
  }
}

/** A redis-server of the test's own: started, stopped (SIGSTOP), resumed, killed and started again on one port. */
export class ThrowawayRedis {
  #child: ChildProcess | null = null;
  #output = '';
  paused = false;

  constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.#child !== null;
  }

  async start(): Promise<void> {
    this.#output = '';
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout.on('data', (chunk: Buffer) => (this.#output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (this.#output += chunk.toString()));
    this.#child = child;
    const deadline = Date.now() + 10_000;
    while (!(await answersPing(this.port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        this.#child = null;
        child.kill('SIGKILL');
        throw new Error(`redis-server did not start on port ${this.port}:\n${this.#output}`);
      }
      await sleep(50);
    }
  }

  pause(): void {
    this.#child?.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    this.#child?.kill('SIGCONT');
    this.paused = false;
  }

  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = null;
    this.paused = false;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await Promise.race([exited, sleep(5000)]);
    }
  }

  /** After a test that failed half-way: running and answering again. */
  async heal(): Promise<void> {
    if (this.paused) this.resume();
    if (!this.running) await this.start();
  }
}

/** Whether something on `port` answers PING with PONG within a short bound. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (answer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), 500);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
    socket.on('error', () => done(false));
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}
