import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { hash, verify } from '@node-rs/argon2';

/** @node-rs/argon2's `Algorithm.Argon2id` (an ambient const enum, so not importable as a value). */
const ARGON2ID = 2;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hashed: string, password: string): Promise<boolean>;
  /**
   * For unknown usernames: waits about as long as a real verify would take now, without hashing, so time does
   * not tell who exists and a storm of made-up names never takes a turn in the queue real users wait in.
   */
  verifyDummy(password: string): Promise<void>;
}

/** Weight of the newest run in the running mean of argon2 run times. */
const RUN_WEIGHT = 0.2;

/**
 * argon2id (@node-rs/argon2, run off the main thread). At most `concurrency` hashes run at once: the rest queue
 * here rather than filling libuv's pool, so a login storm leaves a core and the fs threads to everything else.
 */
export function createPasswordHasher(options: {
  memoryCost: number;
  timeCost: number;
  concurrency: number;
}): PasswordHasher {
  const params = {
    algorithm: ARGON2ID,
    memoryCost: options.memoryCost,
    timeCost: options.timeCost,
    parallelism: 1,
  };
  /** Running mean of how long one argon2 run takes here (queue wait excluded); null before the first. */
  let runMs: number | null = null;
  async function timed<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      const ms = performance.now() - started;
      runMs = runMs === null ? ms : runMs * (1 - RUN_WEIGHT) + ms * RUN_WEIGHT;
    }
  }
  let running = 0;
  const waiting: Array<() => void> = [];
  async function limited<T>(work: () => Promise<T>): Promise<T> {
    // A finishing hash hands its slot straight to the next waiter, so the limit holds exactly.
    if (running >= options.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await timed(work);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  }
  // Before any real run there is no pace to copy: one hash, once per process and outside the queue, measures it.
  let calibration: Promise<unknown> | null = null;
  return {
    hash: (password) => limited(() => hash(password, params)),
    verify: (hashed, password) =>
      limited(async () => {
        try {
          return await verify(hashed, password);
        } catch {
          return false;
        }
      }),
    async verifyDummy() {
      if (runMs === null) {
        calibration ??= timed(() => hash('not a real password, only measures time', params)).catch(
          () => undefined,
        );
        await calibration;
      }
      // A real check waits its turn (one run for every `concurrency` checks queued) and then runs; a little
      // jitter, as real runs vary.
      const turns = 1 + waiting.length / options.concurrency;
      await sleep((runMs ?? 0) * turns * (0.9 + Math.random() * 0.2));
    },
  };
}
