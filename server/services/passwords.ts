import { hash, verify } from '@node-rs/argon2';

/** @node-rs/argon2's `Algorithm.Argon2id` (an ambient const enum, so not importable as a value). */
const ARGON2ID = 2;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hashed: string, password: string): Promise<boolean>;
  /** Spends the same time as a real verify, for unknown users, so timing does not tell who exists. */
  verifyDummy(password: string): Promise<void>;
}

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
  let running = 0;
  const waiting: Array<() => void> = [];
  async function limited<T>(work: () => Promise<T>): Promise<T> {
    // A finishing hash hands its slot straight to the next waiter, so the limit holds exactly.
    if (running >= options.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  }
  let dummy: Promise<string> | null = null;
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
    async verifyDummy(password) {
      dummy ??= hash('not a real password, only spends time', params);
      const hashed = await dummy;
      await limited(() => verify(hashed, password).catch(() => false));
    },
  };
}
