// Seeding: the data a scenario needs goes in through the server's own openHost and store seam, in batches, before
// the host under test starts (fsync off while seeding, one `sync` after: only the setup gets faster).
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { dist } from './host.js';

/** The password of every seeded user (it meets the server's strength rules). */
export const PASSWORD = 'Bench-Passw0rd!';
const BATCH = 500;

/**
 * Opens ctx.dataDir (and ctx.database) with openHost and calls `fn(api)`; what `fn` writes is committed in
 * batches, checkpointed (the host under test must not start by replaying the seed's log) and flushed. api:
 * `newUser({ username, rank, friends, id })` makes a user record signed in with a token of its own (written by
 * `put('users', record)`), `user(spec)` makes and writes one, `users(n, spec)` n of them; `put(collection,
 * record)`, `append(log, entry)`, `ids`, `now`, `host`. Resolves with what `fn` returned and `seedMs`.
 */
export async function seed(ctx, fn, overrides = {}) {
  const [{ openHost }, { hashToken }, { randomIds }, { newUserRecord }, argon2] = await Promise.all([
    dist('host.js'),
    dist('services/accounts.js'),
    dist('services/context.js'),
    dist('store/users.js'),
    import('@node-rs/argon2'),
  ]);
  const started = performance.now();
  const options = { dataDir: ctx.dataDir, ...overrides, ...(ctx.database && { database: ctx.database }) };
  const host = await openHost({ ...options, logLevel: 'silent', fsync: false });
  let out;
  try {
    const { memoryCost, timeCost } = host.config.passwordHash;
    const hashed = await argon2.hash(PASSWORD, { algorithm: 2, memoryCost, timeCost, parallelism: 1 });
    const now = Math.floor(Date.now() / 1000);
    const expire = now + host.config.tokenLifetimeSeconds;
    const batch = [];
    const flush = async () => {
      const writes = batch.splice(0);
      if (writes.length) await host.store.tx((t) => writes.forEach((write) => write(t)));
    };
    const write = async (change) => {
      batch.push(change);
      if (batch.length >= BATCH) await flush();
    };
    const api = {
      host,
      ids: randomIds,
      now,
      newUser({ username, rank = 2, friends = [], id = randomIds.id('user') }) {
        const token = randomIds.secret();
        const [hash, email] = [hashToken(token).toString('hex'), `${username.toLowerCase()}@bench.invalid`];
        const session = { hash, dateCreated: now, dateExpire: expire, app: 'bench' };
        const record = newUserRecord({ id, username, email, hashed, rank, now, token: session });
        record.Friends = friends;
        return { id, username, token, record };
      },
      async user(spec) {
        const user = api.newUser(spec);
        await api.put('users', user.record);
        return user;
      },
      /** `n` users, `spec(i)` each. */
      async users(n, spec) {
        const list = [];
        for (let i = 0; i < n; i++) list.push(await api.user(spec(i)));
        return list;
      },
      put: (collection, record) => write((t) => t.repo(collection).put(record.Id, record)),
      append: (log, entry) => write((t) => t.append(log, entry)),
    };
    out = await fn(api);
    await flush();
    await host.store.checkpoint();
  } finally {
    await host.close();
  }
  execFileSync('sync');
  return { ...out, seedMs: performance.now() - started };
}

/** `count` users named `${prefix}${i}`, Registered unless `rank(i)` says otherwise. */
export const seedUsers = (ctx, count, { prefix = 'bench', rank } = {}) =>
  seed(ctx, async (api) => ({
    users: await api.users(count, (i) => ({ username: `${prefix}${i}`, rank: rank?.(i) })),
  }));
