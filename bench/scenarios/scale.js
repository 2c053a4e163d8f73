// Scale on PostgreSQL (issue 25): a host on a community of a million users starts without reading them, in bounded
// memory, and answers getUser about as fast as on a community of ten thousand. The communities are written straight
// into the database with SQL (the store's own tables, keys and settings; a million users through the API would take
// an hour), then the real host serves them.
import { randomBytes } from 'node:crypto';
import { benchSchema, BenchError, dist, procMemory, startHost } from '../harness/host.js';
import { httpLoad } from '../harness/http.js';
import { failuresOf, spread } from '../harness/stats.js';

/** Users written per INSERT. */
const CHUNK = 50_000;

async function query(url, sql, values = []) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SET synchronous_commit = off');
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The store's tables in the schema of `url` (its migrations, as a host's start runs them). */
async function migrate(url) {
  const { PgStore } = await dist('store/pg-store.js');
  const store = await PgStore.open(url, { collections: [] });
  await store.close();
}

/** `count` users u0..u(count-1), ids user_0.., all signed in with `token`; the host's setup done. */
async function community(url, count, token, progress) {
  const [{ newUserRecord }, { hashToken }] = await Promise.all([
    dist('store/users.js'),
    dist('services/accounts.js'),
  ]);
  await migrate(url);
  const now = Math.floor(Date.now() / 1000);
  const session = {
    hash: hashToken(token).toString('hex'),
    dateCreated: now,
    dateExpire: now + 86_400,
    app: 'bench',
  };
  const template = JSON.stringify(
    newUserRecord({
      id: '@ID@',
      username: '@NAME@',
      email: '@MAIL@',
      hashed: '$argon2id$bench',
      rank: 2,
      now,
      token: session,
    }),
  );
  for (let from = 0; from < count; from += CHUNK) {
    const to = Math.min(count, from + CHUNK) - 1;
    progress(`writing users ${from}..${to} of ${count}`);
    await query(
      url,
      `INSERT INTO hx_records (collection, id, version, data)
       SELECT 'users', 'user_' || i, 1,
              replace(replace(replace($1, '@ID@', 'user_' || i), '@NAME@', 'u' || i), '@MAIL@', 'u' || i || '@bench.invalid')::json
         FROM generate_series($2::int, $3::int) AS i`,
      [template, from, to],
    );
    await query(
      url,
      `INSERT INTO hx_keys (collection, idx, key, id)
       SELECT 'users', k.idx, k.key, 'user_' || i FROM generate_series($1::int, $2::int) AS i,
         LATERAL (VALUES ('name', 'u' || i), ('email', 'u' || i || '@bench.invalid')) AS k(idx, key)`,
      [from, to],
    );
  }
  await query(url, `INSERT INTO hx_indexes (collection, idx) VALUES ('users', 'name'), ('users', 'email')`);
  await query(
    url,
    `INSERT INTO hx_records (collection, id, version, data) VALUES ('settings', 'host', 1, '{"ownerSetupDone":true}')`,
  );
  await query(url, 'ANALYZE');
}

/**
 * `count` public avatars (avatar_0.., owned by user_0) used in the last minutes, 1 to 1,000 times each: their
 * popularity records with their rank keys, as hosts write them.
 */
async function usedAvatars(url, count, progress) {
  const now = Math.floor(Date.now() / 1000);
  const [five, hour, day] = [300, 3600, 86_400].map((size) => String(now - (now % size)));
  for (let from = 0; from < count; from += CHUNK) {
    const to = Math.min(count, from + CHUNK) - 1;
    progress(`writing used avatars ${from}..${to} of ${count}`);
    await query(
      url,
      `INSERT INTO hx_records (collection, id, version, data)
       SELECT 'avatars', 'avatar_' || i, 1, json_build_object('Id', 'avatar_' || i, 'OwnerId', 'user_0',
              'Publicity', 0, 'Name', 'a' || i, 'Description', '', 'Tags', '[]'::json, 'DateCreated', $3::int,
              'DateUpdated', $3::int, 'ImageURL', '', 'Builds', '[]'::json)
         FROM generate_series($1::int, $2::int) AS i`,
      [from, to, now],
    );
    await query(
      url,
      `INSERT INTO hx_records (collection, id, version, data)
       SELECT 'popularity', 'avatar_' || i, 1, json_build_object('id', 'avatar_' || i, 'kind', 'avatar',
              'five', json_build_object($3::text, c), 'hours', json_build_object($4::text, c),
              'days', json_build_object($5::text, c), 'totals', json_build_array(c, c, c, c, c))
         FROM generate_series($1::int, $2::int) AS i, LATERAL (SELECT i % 1000 + 1 AS c) AS used`,
      [from, to, five, hour, day],
    );
    await query(
      url,
      `INSERT INTO hx_list_keys (collection, idx, key, id)
       SELECT 'popularity', 'rank', 'avatar:' || w || ':' || lpad((1000000000000 - (i % 1000 + 1))::text, 13, '0'),
              'avatar_' || i
         FROM generate_series($1::int, $2::int) AS i, generate_series(0, 4) AS w`,
      [from, to],
    );
  }
  await query(url, `INSERT INTO hx_indexes (collection, idx) VALUES ('popularity', 'rank')`);
  await query(url, 'ANALYZE');
}

/** A page of the most used avatars in one of the five windows, one of the first five pages of 50. */
function readPopularity() {
  return () => {
    const type = Math.floor(Math.random() * 5);
    const check = (a) =>
      Array.isArray(a.result?.Popularity) ? null : `popularity: ${JSON.stringify(a.result)}`;
    return { path: `/api/v1/popularity/avatar/${type}/50/${Math.floor(Math.random() * 5)}`, check };
  };
}

/** getUser of users spread over the whole community, each with its token (the private view). */
function getUsers(count, token) {
  return () => {
    const id = `user_${Math.floor(Math.random() * count)}`;
    const check = (a) => (a.result?.UserData?.Id === id ? null : `getUser: ${JSON.stringify(a.result)}`);
    return { path: '/api/v1/getUser', body: { userid: id, tokenContent: token }, check };
  };
}

/** User searches by a part of a name (`u` and 1-5 digits: from thousands of matches to none), first page. */
function searchUsers() {
  return () => {
    const text = `u${Math.floor(Math.random() * 10 ** (1 + Math.floor(Math.random() * 5)))}`;
    const check = (a) => (Array.isArray(a.result?.Candidates) ? null : `search: ${JSON.stringify(a.result)}`);
    return { path: `/api/v1/search/user/${text}/10/0`, check };
  };
}

/** Starts the host on `url`, measures its start and memory, then loads getUser, then user searches. */
async function serve(ctx, url, count, token) {
  const serveArgs = ctx.serveArgs;
  ctx.serveArgs = ['--database', url];
  const host = await startHost(ctx).finally(() => (ctx.serveArgs = serveArgs));
  try {
    const started = await procMemory(host.pid);
    await httpLoad(host.url, { connections: ctx.options.clients, seconds: 1, next: getUsers(count, token) });
    const load = await httpLoad(host.url, {
      connections: ctx.options.clients,
      seconds: ctx.options.seconds,
      next: getUsers(count, token),
    });
    const after = await procMemory(host.pid);
    const search = await httpLoad(host.url, {
      connections: 4,
      seconds: ctx.options.seconds,
      next: searchUsers(),
    });
    const searched = await procMemory(host.pid);
    const popularity = await httpLoad(host.url, {
      connections: 4,
      seconds: ctx.options.seconds,
      next: readPopularity(),
    });
    const ranked = await procMemory(host.pid);
    return { startupMs: host.startupMs, started, after, load, search, searched, popularity, ranked };
  } finally {
    await host.stop();
  }
}

export default {
  describe:
    'a host on a PostgreSQL community of --users users (default a million) against one of --small: start time and ' +
    'memory right after the start, getUser throughput and p50/p99 with tokens, users picked across the community; ' +
    'then user searches by part of a name, and the memory after them; then pages of the popularity rankings of ' +
    '--assets used avatars (a hundredth of them in the small community), and the memory after them.',
  options: {
    users: { default: 1_000_000, help: 'users of the large community' },
    small: { default: 10_000, help: 'users of the small community' },
    clients: { default: 64, help: 'HTTP clients' },
    assets: {
      default: 100_000,
      help: 'public avatars used lately in the large community (a hundredth in the small)',
    },
  },
  async seed(ctx) {
    const o = ctx.options;
    if (!o.database) throw new BenchError('scale needs --database URL');
    const token = randomBytes(32).toString('base64url');
    const small = await benchSchema(o.database);
    ctx.cleanupScenario = () => small.drop().catch(() => undefined);
    await community(small.url, o.small, token, ctx.progress);
    await usedAvatars(small.url, Math.round(o.assets / 100), ctx.progress);
    await community(ctx.database, o.users, token, ctx.progress);
    await usedAvatars(ctx.database, o.assets, ctx.progress);
    return { token, small };
  },

  async load(ctx, { token, small }) {
    const o = ctx.options;
    const rows = [];
    let loads = [];
    {
      ctx.progress(`host on ${o.small} users`);
      const few = await serve(ctx, small.url, o.small, token);
      ctx.progress(`host on ${o.users} users`);
      const many = await serve(ctx, ctx.database, o.users, token);
      for (const [label, r] of [
        [`${o.small} users`, few],
        [`${o.users} users`, many],
      ]) {
        const large = r === many;
        rows.push([`${label}: startup`, r.startupMs, 'ms', large && ['<', 3000]]);
        rows.push([`${label}: RSS after startup`, r.started.rssMiB, 'MiB', large && ['<', 300]]);
        rows.push([`${label}: getUser`, r.load.perSecond, 'req/s']);
        rows.push([`${label}: getUser p50 / p99`, spread(r.load)]);
        rows.push([`${label}: RSS after load`, r.after.rssMiB, 'MiB']);
        rows.push([`${label}: user search, 4 clients`, r.search.perSecond, 'req/s']);
        rows.push([`${label}: user search p50 / p99`, spread(r.search)]);
        rows.push([`${label}: RSS after searches`, r.searched.rssMiB, 'MiB', large && ['<', 300]]);
        rows.push([`${label}: popularity pages, 4 clients`, r.popularity.perSecond, 'req/s']);
        rows.push([`${label}: popularity p50 / p99`, spread(r.popularity)]);
        rows.push([`${label}: RSS after popularity`, r.ranked.rssMiB, 'MiB', large && ['<', 300]]);
      }
      rows.push(['getUser p99, large / small', many.load.p99 / few.load.p99, 'x', ['<', 1.5]]);
      loads = [few.load, many.load, few.search, many.search, few.popularity, many.popularity];
    }
    return {
      title: `${o.users} users against ${o.small}, ${o.clients} clients, ${o.seconds} s`,
      rows,
      notes: [
        'users written with SQL into the store tables; a user read again comes from the cache of the host while ' +
          'its lease holds (ten thousand fit in it, a million do not)',
      ],
      failures: failuresOf(loads),
    };
  },
};
