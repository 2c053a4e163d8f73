#!/usr/bin/env node
// Search and popularity load bench (issue 8): seeds a throwaway data folder with users, avatars and worlds named
// from a generated word list (tags from a small vocabulary, ~10% OwnerOnly), runs the real CLI server in its own
// process, uploads a few hundred public avatars with real build files over HTTP, then drives it over loopback from
// worker threads: a) 64 clients mixing user/avatar/world name searches (1-3 letters or a word) and tag queries on
// random pages, b) 16 clients downloading public avatar builds (each a use) while 48 read popularity rankings.
// Every answer is checked for success:true, every 8th in full (every listed id known, public and matching; see
// --check-every). It reports, it does not
// assert: exit 0 when the run was clean (targets met or not), 1 on any error or failed request.
//
//   node bench/search.js [--seconds 10] [--json] [--phases search,popularity] [--help for more]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
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
  splitEvenly,
  quantile,
  recordFailure,
  prng,
  stopServer,
  removeStateDir,
  seededUser,
  loadServerForSeeding,
  serveArgs,
  spawnServer,
  RawConnection,
} from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');

const PASSWORD = 'Bench-Passw0rd!';
const SEED_BATCH = 500;
/** A request still unanswered after this long counts as failed and its connection is dropped. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Other CPU or steal above this (in % of one core) during a phase marks the run as taken on a busy machine. */
const BUSY_PERCENT = 10;
const UPLOAD_CONCURRENCY = 8;
const PHASES = ['search', 'popularity'];
/** Share of each kind of query in the search mix. */
const SEARCH_MIX = [
  ['user', 0.2],
  ['avatar', 0.3],
  ['world', 0.2],
  ['avatarTag', 0.2],
  ['worldTag', 0.1],
];
const SEARCH_KINDS = SEARCH_MIX.map(([kind]) => kind);
const ITEMS_PER_PAGE = [10, 25, 50, 100];
const MAX_PAGE = 4;
const WINDOWS = ['Hourly', 'Daily', 'Weekly', 'Monthly', 'Yearly'];

const HELP = `Usage: node bench/search.js [options]

Seeds a temporary data folder, starts the server (bin/hypernex-companion.js serve) in its own process, uploads
public avatars with real builds, loads search/tag and popularity endpoints over loopback and prints the figures
next to the targets. Exit 0 when the run was clean (targets met or not), 1 on errors or failed requests, 130 on
Ctrl-C. Needs the compiled server (npx tsc -p tsconfig.build.json).

Options:
  --seconds N              length of each phase (default 10)
  --warmup N               seconds of unreported search load first (default 1; 0 skips it)
  --users N                users to seed (default 10000)
  --avatars N              avatars in all, uploaded ones included (default 20000)
  --worlds N               worlds to seed (default 5000)
  --popular N              public avatars uploaded over HTTP with a real build, the ones downloaded (default 300)
  --build-bytes N          size of each uploaded build file (default 8192)
  --clients N              concurrent clients, one keep-alive connection each (default 64)
  --downloaders N          of those, clients downloading builds in the popularity phase (default 16)
  --phases LIST            comma-separated subset of ${PHASES.join(',')} (default: all)
  --workers N              load-generator worker threads (default 1; see "client ELU" in the report)
  --check-every N          parse and check every Nth answer of each client in full (ids known, public, matching,
                           ranked), the others for HTTP 200 and success:true only (default 8; 1 checks all). On
                           a 2-core machine full parsing of every answer makes the load generator the bottleneck.
  --json                   print the results as JSON on stdout (no progress on stderr)
  --server-cpu-prof DIR    run the server with --cpu-prof and write its profile to DIR
  -h, --help               this help
`;

const TARGETS = { searchRps: 2000, searchP99Ms: 50, popularityP99Ms: 20 };

// ---------------------------------------------------------------------------------------------------------------
// Generated names: English words, pseudo-words from syllables, a small tag vocabulary (deterministic).
// ---------------------------------------------------------------------------------------------------------------

const ADJECTIVES = (
  'neon cyber dark tiny cozy retro pastel shadow crystal frost ember storm golden silver sleepy angry happy lost ' +
  'wild royal ancient lunar solar cosmic haunted sunny misty electric velvet broken hidden'
).split(' ');
const NOUNS = (
  'fox wolf angel demon knight ninja kitty bunny dragon robot ghost witch pirate samurai astronaut maid ' +
  'vampire elf golem slime raven tiger panda shark owl mage bard ranger pilot drone mecha spirit'
).split(' ');
const PLACES = (
  'forest castle tower city beach club cafe arena dungeon garden island lake station temple village ' +
  'lounge rooftop library museum harbor canyon observatory bunker maze cinema'
).split(' ');
const SYLLABLES = (
  'ka ri mo to shi na lu ve xa zen dra gon fi el ar thor mi ra ko sa ne on ly ix ae bel cor dax eth fyn ' +
  'ha jo ki ul vo ze rin tal mor sen qua'
).split(' ');
const TAGS = (
  'anime cute furry robot scifi fantasy horror chill music dance social game pvp quest puzzle racing art ' +
  'nature cyberpunk meme realistic cartoon fullbody android pc hangout vr spooky'
).split(' ');

function vocabulary(random) {
  const pseudo = new Set();
  while (pseudo.size < 300) {
    let word = '';
    for (let i = 0, n = 2 + Math.floor(random() * 2); i < n; i++)
      word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    pseudo.add(word);
  }
  return { pseudo: [...pseudo], words: [...new Set([...ADJECTIVES, ...NOUNS, ...PLACES, ...pseudo])] };
}

function makeNamer(random, pseudo) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const cap = (word) => word[0].toUpperCase() + word.slice(1);
  const usernames = new Set();
  return {
    avatar() {
      const r = random();
      if (r < 0.35) return `${cap(pick(ADJECTIVES))} ${cap(pick(NOUNS))}`;
      if (r < 0.6) return `${cap(pick(pseudo))} the ${cap(pick(NOUNS))}`;
      if (r < 0.8) return `${cap(pick(NOUNS))} ${cap(pick(pseudo))} v${1 + Math.floor(random() * 5)}`;
      return cap(pick(pseudo));
    },
    world() {
      const r = random();
      if (r < 0.4) return `${cap(pick(pseudo))} ${cap(pick(PLACES))}`;
      if (r < 0.75) return `The ${cap(pick(ADJECTIVES))} ${cap(pick(PLACES))}`;
      return `${cap(pick(NOUNS))} ${cap(pick(PLACES))} ${1 + Math.floor(random() * 9)}`;
    },
    username() {
      for (;;) {
        const r = random();
        const base =
          r < 0.4
            ? cap(pick(pseudo))
            : r < 0.7
              ? `${pick(pseudo)}_${pick(NOUNS)}`
              : cap(pick(ADJECTIVES)) + cap(pick(NOUNS));
        const name = random() < 0.5 ? base : `${base}${Math.floor(random() * 1000)}`;
        if (!usernames.has(name.toLowerCase())) {
          usernames.add(name.toLowerCase());
          return name;
        }
      }
    },
    tags() {
      const set = new Set();
      // Skewed: a few tags are very common, most are rare.
      for (let i = 0, n = 1 + Math.floor(random() * 3); i < n; i++)
        set.add(TAGS[Math.floor(TAGS.length * random() ** 2)]);
      return [...set];
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Load generator (worker threads). One request in flight per client (closed loop), one keep-alive connection each.
// ---------------------------------------------------------------------------------------------------------------

const randomInt = (n) => Math.floor(Math.random() * n);
const pickOne = (list) => list[randomInt(list.length)];

/** Builds the request makers of a worker; each returns { kind, path, check(body) -> problem or null }. */
function makeOperations(data) {
  const users = new Map(data.users);
  const assets = { avatar: new Map(), world: new Map() };
  for (const kind of ['avatar', 'world']) {
    for (const [id, name, tags, isPublic] of data[kind === 'avatar' ? 'avatars' : 'worlds'])
      assets[kind].set(id, { name, tags, isPublic });
  }
  const popular = new Set(data.builds.map((b) => b.avatarId));
  // Pages 0..MAX_PAGE, the first ones most often (P(0) ~ 45%, P(MAX_PAGE) ~ 10%).
  const paging = () => `${pickOne(ITEMS_PER_PAGE)}/${Math.floor((MAX_PAGE + 1) * Math.random() ** 2)}`;

  /** Half 1-3 letters cut from a word, half a whole word (a few words that match nothing). */
  function needle() {
    const word = pickOne(data.words);
    if (Math.random() < 0.5) {
      const length = 1 + randomInt(3);
      const start = randomInt(Math.max(1, word.length - length + 1));
      return word.slice(start, start + length);
    }
    return Math.random() < 0.05 ? `${word}qz` : word;
  }

  function candidates(parsed, itemsPerPage, matches) {
    const list = parsed.result?.Candidates;
    if (!Array.isArray(list)) return 'no Candidates array';
    if (list.length > itemsPerPage) return `${list.length} candidates for itemsPerPage ${itemsPerPage}`;
    if (new Set(list).size !== list.length) return 'duplicate candidates';
    for (const id of list) {
      const problem = matches(id);
      if (problem) return problem;
    }
    return null;
  }

  function search() {
    let r = Math.random();
    let kind = SEARCH_KINDS[SEARCH_KINDS.length - 1];
    for (const [k, share] of SEARCH_MIX) {
      if (r < share) {
        kind = k;
        break;
      }
      r -= share;
    }
    const page = paging();
    const itemsPerPage = Number(page.split('/')[0]);
    if (kind === 'user') {
      const text = needle();
      return {
        kind,
        path: `/api/v1/search/user/${encodeURIComponent(text)}/${page}`,
        check: (parsed) =>
          candidates(parsed, itemsPerPage, (id) =>
            users.get(id)?.includes(text) ? null : `user ${id} does not match "${text}"`,
          ),
      };
    }
    const assetKind = kind.startsWith('avatar') ? 'avatar' : 'world';
    const known = assets[assetKind];
    if (kind === 'avatar' || kind === 'world') {
      const text = needle();
      return {
        kind,
        path: `/api/v1/search/${assetKind}/${encodeURIComponent(text)}/${page}`,
        check: (parsed) =>
          candidates(parsed, itemsPerPage, (id) => {
            const asset = known.get(id);
            if (!asset) return `unknown ${assetKind} ${id}`;
            if (!asset.isPublic) return `OwnerOnly ${assetKind} ${id} listed`;
            return asset.name.includes(text) ? null : `${assetKind} ${id} does not match "${text}"`;
          }),
      };
    }
    const tag = Math.random() < 0.03 ? 'no-such-tag' : TAGS[Math.floor(TAGS.length * Math.random() ** 2)];
    return {
      kind,
      path: `/api/v1/tag/${assetKind}/${tag}/${page}`,
      check: (parsed) =>
        candidates(parsed, itemsPerPage, (id) => {
          const asset = known.get(id);
          if (!asset) return `unknown ${assetKind} ${id}`;
          if (!asset.isPublic) return `OwnerOnly ${assetKind} ${id} listed`;
          return asset.tags.includes(tag) ? null : `${assetKind} ${id} lacks tag ${tag}`;
        }),
    };
  }

  function download() {
    // Skewed towards the first builds, so the rankings have a clear order.
    const build = data.builds[Math.floor(data.builds.length * Math.random() ** 3)];
    return {
      kind: 'download',
      raw: true,
      path: `/api/v1/file/${build.userId}/${build.fileId}`,
      check: (body) =>
        body.length === build.size ? null : `download of ${body.length} bytes, expected ${build.size}`,
    };
  }

  function popularity() {
    const type = randomInt(WINDOWS.length);
    const window = WINDOWS[type];
    const itemsPerPage = pickOne(ITEMS_PER_PAGE);
    return {
      kind: 'popularity',
      path: `/api/v1/popularity/avatar/${type}/${itemsPerPage}/${randomInt(3)}`,
      check(parsed) {
        const list = parsed.result?.Popularity;
        if (!Array.isArray(list)) return 'no Popularity array';
        if (list.length > itemsPerPage) return `${list.length} entries for itemsPerPage ${itemsPerPage}`;
        let previous = Infinity;
        for (const entry of list) {
          if (!popular.has(entry?.Id)) return `popularity of an avatar never downloaded: ${entry?.Id}`;
          if (WINDOWS.some((w) => !Number.isInteger(entry[w]?.Usages))) return 'entry without Usages';
          const usages = entry[window].Usages;
          if (usages <= 0 || usages > previous) return `${window} ranking out of order or with 0 uses`;
          previous = usages;
        }
        return null;
      },
    };
  }

  return { search, download, popularity };
}

function newStat() {
  return { count: 0, failures: 0, samples: [], latencies: [], items: 0, empty: 0, checked: 0 };
}

/** Every search and popularity answer starts so (the envelope's first key); a refusal starts with false. */
const SUCCESS_PREFIX = Buffer.from('{"success":true');

async function clientLoop(conn, operation, deadline, stats, checkEvery) {
  while (performance.now() < deadline) {
    const op = operation();
    const stat = (stats[op.kind] ??= newStat());
    const started = performance.now();
    let res;
    try {
      res = await conn.get(op.path);
    } catch (error) {
      recordFailure(stat, `transport: ${error.message}`);
      await sleep(20); // a dead server must not turn the loop into a busy spin
      continue;
    }
    const ms = performance.now() - started;
    let problem;
    if (op.raw) {
      problem =
        res.status === 200 ? op.check(res.body) : `HTTP ${res.status} ${res.body.toString().slice(0, 200)}`;
    } else if (stat.count % checkEvery !== checkEvery - 1) {
      // A light check between full ones: the load generator must not be the bottleneck (see --check-every).
      if (res.status !== 200) problem = `HTTP ${res.status}`;
      else if (!res.body.subarray(0, SUCCESS_PREFIX.length).equals(SUCCESS_PREFIX))
        problem = `not a success: ${res.body.toString('utf8', 0, 200)}`;
    } else {
      stat.checked++;
      try {
        const parsed = JSON.parse(res.body.toString('utf8'));
        if (res.status !== 200) problem = `HTTP ${res.status}`;
        else if (parsed.success !== true) problem = `success:false ${parsed.message}`;
        else problem = op.check(parsed);
        const list = parsed.result?.Candidates ?? parsed.result?.Popularity;
        if (!problem && Array.isArray(list)) {
          stat.items += list.length;
          if (list.length === 0) stat.empty++;
        }
      } catch {
        problem = `unparsable answer (HTTP ${res.status})`;
      }
    }
    if (problem) {
      recordFailure(stat, `${op.path}: ${problem}`);
    } else {
      stat.count++;
      stat.latencies.push(ms);
    }
  }
}

function startWorker() {
  const { host, port, connections, data, checkEvery } = workerData;
  const conns = Array.from({ length: connections }, () => new RawConnection(host, port));
  const ops = makeOperations(data);
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
    // message.type === 'run': { durationMs, mix: { search, download, popularity } } (clients of each role)
    const stats = {};
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const deadline = started + message.durationMs;
    const loops = [];
    let client = 0;
    for (const [role, count] of Object.entries(message.mix)) {
      for (let i = 0; i < count; i++)
        loops.push(clientLoop(conns[client++], ops[role], deadline, stats, checkEvery));
    }
    await Promise.all(loops);
    const out = {
      elapsedMs: performance.now() - started,
      elu: performance.eventLoopUtilization(elu).utilization,
    };
    out.stats = {};
    const transfer = [];
    for (const [kind, stat] of Object.entries(stats)) {
      const latencies = Float64Array.from(stat.latencies);
      transfer.push(latencies.buffer);
      out.stats[kind] = { ...stat, latencies };
    }
    parentPort.postMessage(out, transfer);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Coordinator (main thread)
// ---------------------------------------------------------------------------------------------------------------

const state = { dataDir: null, server: null, workers: [], cleaning: null, stopping: false };

async function cleanup() {
  state.cleaning ??= (async () => {
    await Promise.all(state.workers.map((worker) => worker.terminate().catch(() => undefined)));
    state.workers = [];
    if (state.server) await stopServer(state, state.server).catch(() => undefined);
    await removeStateDir(state, 'dataDir').catch(() => undefined);
  })();
  return state.cleaning;
}

function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        seconds: { type: 'string', default: '10' },
        warmup: { type: 'string', default: '1' },
        users: { type: 'string', default: '10000' },
        avatars: { type: 'string', default: '20000' },
        worlds: { type: 'string', default: '5000' },
        popular: { type: 'string', default: '300' },
        'build-bytes': { type: 'string', default: '8192' },
        clients: { type: 'string', default: '64' },
        downloaders: { type: 'string', default: '16' },
        phases: { type: 'string', default: PHASES.join(',') },
        workers: { type: 'string', default: '1' },
        'check-every': { type: 'string', default: '8' },
        json: { type: 'boolean', default: false },
        'server-cpu-prof': { type: 'string' },
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
    users: Math.floor(number('users', 1)),
    avatars: Math.floor(number('avatars', 1)),
    worlds: Math.floor(number('worlds', 0)),
    popular: Math.floor(number('popular', 1)),
    buildBytes: Math.floor(number('build-bytes', 1)),
    clients: Math.floor(number('clients', 2)),
    downloaders: Math.floor(number('downloaders', 1)),
    workers: Math.floor(number('workers', 1)),
    checkEvery: Math.floor(number('check-every', 1)),
    json: values.json,
    cpuProfDir: values['server-cpu-prof'] ? resolve(values['server-cpu-prof']) : null,
    phases: values.phases.split(',').map((name) => name.trim()),
  };
  for (const name of options.phases) {
    if (!PHASES.includes(name)) throw new BenchError(`--phases takes a list of ${PHASES.join(', ')}`);
  }
  if (options.popular > options.avatars) throw new BenchError('--popular must not exceed --avatars');
  if (options.downloaders >= options.clients) throw new BenchError('--downloaders must be below --clients');
  if (options.workers > options.clients) throw new BenchError('--workers must not exceed --clients');
  return options;
}

/**
 * Seeds users, and avatars and worlds straight into the store (all but the uploaded ones), each asset owned by a
 * random user listed in that user's Avatars/Worlds. Returns what the load generator needs to check answers.
 */
async function seed(dataDir, options) {
  const { openHost, randomIds, enums, argon2, seedApi } = await loadServerForSeeding(DIST);
  const { Rank } = enums;
  const started = performance.now();
  const random = prng(8);
  const { pseudo, words } = vocabulary(random);
  const namer = makeNamer(random, pseudo);
  // fsync off while seeding (one `sync` at the end instead): the server under test runs with its default.
  const host = await openHost({ dataDir, logLevel: 'silent', fsync: false });
  const users = [];
  const avatars = [];
  const worlds = [];
  try {
    const params = host.config.passwordHash;
    const hashed = await argon2.hash(PASSWORD, {
      algorithm: 2, // Argon2id, as server/services/passwords.ts
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: 1,
    });
    const now = Math.floor(Date.now() / 1000);
    const records = [];
    for (let i = 0; i < options.users; i++) {
      const username = namer.username();
      const token = randomIds.secret();
      records.push(
        seededUser(seedApi, {
          id: randomIds.id('user'),
          username,
          hashed,
          token,
          now,
          lifetimeSeconds: host.config.tokenLifetimeSeconds,
          rank: Rank.Registered,
        }),
      );
      users.push({ id: records[i].Id, username, token });
    }
    const assetRecords = [];
    const asset = (kind, count) => {
      const collection = kind === 'avatar' ? 'avatars' : 'worlds';
      for (let i = 0; i < count; i++) {
        const owner = records[Math.floor(random() * records.length)];
        const name = kind === 'avatar' ? namer.avatar() : namer.world();
        const tags = namer.tags();
        const publicity = random() < 0.1 ? 1 : 0;
        const created = now - Math.floor(random() * 365 * 86_400);
        // The shapes of AvatarMetaDto / WorldMetaDto (server/protocol/uploads.ts); the build files do not exist.
        const record = {
          Id: randomIds.id(kind),
          OwnerId: owner.Id,
          Publicity: publicity,
          Name: name,
          Description: `A ${kind} for the search bench.`,
          Tags: tags,
          ...(kind === 'avatar' ? { ImageURL: '' } : { ThumbnailURL: '', IconURLs: [] }),
          Builds: [
            {
              FileId: randomIds.id('file'),
              BuildPlatform: 0,
              ...(kind === 'world' && { ServerScripts: [] }),
            },
          ],
          DateCreated: created,
          DateUpdated: created,
        };
        (kind === 'avatar' ? owner.Avatars : owner.Worlds).push(record.Id);
        assetRecords.push((t) => t.repo(collection).put(record.Id, record));
        (kind === 'avatar' ? avatars : worlds).push([record.Id, name.toLowerCase(), tags, publicity === 0]);
      }
    };
    asset('avatar', options.avatars - options.popular);
    asset('world', options.worlds);
    const writes = [...records.map((user) => (t) => t.repo('users').put(user.Id, user)), ...assetRecords];
    for (let start = 0; start < writes.length; start += SEED_BATCH) {
      await host.store.tx((t) => {
        for (const write of writes.slice(start, start + SEED_BATCH)) write(t);
      });
    }
  } finally {
    // Seeded records reach their files now, as on a host that has been running a while: the server must not
    // start the measured run replaying the seed's log.
    await host.store.checkpoint();
    await host.close();
  }
  execFileSync('sync');
  return {
    users,
    avatars,
    worlds,
    words,
    namer,
    seedMs: performance.now() - started,
  };
}

/** Uploads `count` public avatars with a real build each (JSON upload), from random seeded users. */
async function uploadPopular(url, seeded, options) {
  const started = performance.now();
  const builds = [];
  let next = 0;
  const one = async () => {
    while (next < options.popular) {
      next++;
      const user = seeded.users[Math.floor(Math.random() * seeded.users.length)];
      const name = seeded.namer.avatar();
      const tags = seeded.namer.tags();
      const res = await fetch(new URL('/api/v1/upload', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          userid: user.id,
          tokenContent: user.token,
          file: { name: 'bench.hna', data: randomBytes(options.buildBytes).toString('base64') },
          avatarMeta: {
            Publicity: 0,
            Name: name,
            Description: '',
            Tags: tags,
            ImageURL: '',
            BuildPlatform: 0,
          },
        }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const parsed = await res.json().catch(() => ({}));
      const fileId = parsed.result?.UploadData?.FileId;
      const avatarId = parsed.result?.AvatarId;
      if (parsed.success !== true || typeof fileId !== 'string' || typeof avatarId !== 'string') {
        throw new BenchError(
          `upload failed: HTTP ${res.status} ${parsed.message} ${JSON.stringify(parsed.result)}`,
        );
      }
      builds.push({ userId: user.id, fileId, avatarId, size: options.buildBytes });
      seeded.avatars.push([avatarId, name.toLowerCase(), tags, true]);
    }
  };
  await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, one));
  return { builds, ms: performance.now() - started };
}

/** After the downloads: the Hourly uses summed over every ranking page (cache: 1 s). */
async function countedUses(url) {
  await sleep(1100);
  let total = 0;
  for (let page = 0; ; page++) {
    const res = await fetch(new URL(`/api/v1/popularity/avatar/0/100/${page}`, url));
    const parsed = await res.json();
    if (parsed.success !== true) throw new BenchError(`popularity read failed: ${parsed.message}`);
    const list = parsed.result.Popularity;
    for (const entry of list) total += entry.Hourly.Usages;
    if (list.length < 100) return total;
  }
}

async function startServer(dataDir, cpuProfDir) {
  const args = await serveArgs(CLI, dataDir, { cpuProfDir });
  return spawnServer(state, { args, untilDataFolder: true });
}

async function startWorkers(options, server, data) {
  const workers = splitEvenly(options.clients, options.workers).map(
    (connections) =>
      new Worker(new URL(import.meta.url), {
        workerData: {
          host: server.url.hostname,
          port: Number(server.url.port),
          connections,
          data,
          checkEvery: options.checkEvery,
        },
      }),
  );
  state.workers = workers;
  for (const worker of workers) worker.on('error', (error) => process.emit('benchFatal', error));
  return workers;
}

/** Latency figures of the given per-worker stats merged. */
function summarize(parts, elapsedMs, clients) {
  const count = parts.reduce((sum, p) => sum + p.count, 0);
  const latencies = new Float64Array(count);
  let offset = 0;
  for (const p of parts) {
    latencies.set(p.latencies, offset);
    offset += p.latencies.length;
  }
  latencies.sort();
  return {
    ...(clients !== undefined && { clients }),
    requests: count,
    failures: parts.reduce((sum, p) => sum + p.failures, 0),
    failureSamples: [...new Set(parts.flatMap((p) => p.samples))].slice(0, 5),
    perSecond: count / (elapsedMs / 1000),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.length ? latencies[latencies.length - 1] : NaN,
    /** JSON answers: mean items listed, and the share of empty lists. */
    meanItems:
      parts.reduce((sum, p) => sum + p.items, 0) /
      Math.max(
        1,
        parts.reduce((s, p) => s + p.checked, 0),
      ),
    emptyShare:
      parts.reduce((sum, p) => sum + p.empty, 0) /
      Math.max(
        1,
        parts.reduce((s, p) => s + p.checked, 0),
      ),
  };
}

/** Runs one timed phase on every worker; `mix` gives the total clients of each role. */
async function runPhase(workers, pid, durationMs, mix) {
  const shares = Object.fromEntries(
    Object.entries(mix).map(([role, n]) => [role, splitEvenly(n, workers.length)]),
  );
  const machineBefore = await machineCpu();
  const cpuBefore = await serverCpu(pid);
  const clientCpuBefore = process.cpuUsage();
  const results = await Promise.all(
    workers.map(
      (worker, index) =>
        new Promise((resolveRun, reject) => {
          const onExit = (code) => reject(new BenchError(`a load worker exited (code ${code})`));
          worker.once('message', (message) => {
            worker.off('exit', onExit);
            resolveRun(message);
          });
          worker.once('exit', onExit);
          const workerMix = Object.fromEntries(
            Object.entries(shares).map(([role, split]) => [role, split[index]]),
          );
          worker.postMessage({ type: 'run', durationMs, mix: workerMix });
        }),
    ),
  );
  const cpuAfter = await serverCpu(pid);
  const machineAfter = await machineCpu();
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const elapsedMs = Math.max(...results.map((r) => r.elapsedMs));
  const wallSeconds = (cpuAfter.at - cpuBefore.at) / 1000;
  const kinds = {};
  const allKinds = [...new Set(results.flatMap((r) => Object.keys(r.stats)))];
  for (const kind of allKinds) {
    kinds[kind] = summarize(
      results.map((r) => r.stats[kind] ?? newStat()),
      elapsedMs,
    );
  }
  const searchParts = results.flatMap((r) => SEARCH_KINDS.filter((k) => r.stats[k]).map((k) => r.stats[k]));
  const search = mix.search ? summarize(searchParts, elapsedMs, mix.search) : undefined;
  const totalRequests = Object.values(kinds).reduce((sum, k) => sum + k.requests, 0);
  const mainSeconds = cpuAfter.mainSeconds - cpuBefore.mainSeconds;
  return {
    seconds: elapsedMs / 1000,
    mix,
    ...(search && { search }),
    kinds,
    serverCpuPercent: (100 * (cpuAfter.processSeconds - cpuBefore.processSeconds)) / wallSeconds,
    serverMainThreadCpuPercent: (100 * mainSeconds) / wallSeconds,
    serverMainMicrosPerRequest: totalRequests ? (1e6 * mainSeconds) / totalRequests : NaN,
    clientCpuPercent: (100 * (clientCpu.user + clientCpu.system)) / 1e6 / wallSeconds,
    workerEventLoopUtilization: Math.max(...results.map((r) => r.elu)),
    ...machineShares(
      machineBefore,
      machineAfter,
      cpuAfter.processSeconds - cpuBefore.processSeconds,
      clientCpu,
    ),
  };
}

/**
 * What else the machine did during a phase, in % of one CPU: `otherCpuPercent` is CPU used by processes other
 * than the server and this bench, `stealPercent` is time the hypervisor gave to other guests.
 */
function machineShares(before, after, serverSeconds, clientCpu) {
  const wall = (after.total - before.total) / os.cpus().length;
  if (!(wall > 0)) return { otherCpuPercent: NaN, stealPercent: NaN };
  const other = after.busy - before.busy - serverSeconds - (clientCpu.user + clientCpu.system) / 1e6;
  return {
    otherCpuPercent: Math.max(0, (100 * other) / wall),
    stealPercent: (100 * (after.steal - before.steal)) / wall,
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
};

function buildTargets(r) {
  const rows = [];
  const row = (name, value, unit, op, limit, valid) => {
    const shown = unit === 'ms' ? fmt.ms(value) : fmt.int(value);
    const pass = op === '<' ? value < limit : value >= limit;
    rows.push({
      name,
      value,
      unit,
      op,
      limit,
      pass,
      valid,
      shown: `${shown} ${unit}`,
      target: `${op} ${fmt.int(limit)} ${unit}`,
    });
  };
  const s = r.phases.search?.search;
  if (s) {
    row('searches', s.perSecond, 'req/s', '>=', TARGETS.searchRps, !s.failures);
    row('search p99', s.p99Ms, 'ms', '<', TARGETS.searchP99Ms, !s.failures);
  }
  const p = r.phases.popularity;
  if (p) {
    const ok = !Object.values(p.kinds).some((k) => k.failures) && r.popularityCheck?.ok;
    row('popularity read p99', p.kinds.popularity?.p99Ms, 'ms', '<', TARGETS.popularityP99Ms, ok);
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
  const c = r.config;
  lines.push('');
  lines.push(
    `Hypernex Companion search bench: ${fmt.int(c.users)} users, ${fmt.int(c.avatars)} avatars ` +
      `(${fmt.int(c.popular)} uploaded with builds), ${fmt.int(c.worlds)} worlds, ${c.clients} clients, ` +
      `${c.seconds} s per phase, ${c.workers} load worker(s), ${c.checkEvery === 1 ? 'every answer' : `every ${c.checkEvery}th answer`} checked in full`,
  );
  lines.push(`${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}, data folder in ${r.env.tmpdir}`);
  lines.push(
    `seeded in ${(r.seed.ms / 1000).toFixed(2)} s, server up in ${fmt.int(r.startup.ms)} ms, ` +
      `${c.popular} uploads in ${(r.seed.uploadMs / 1000).toFixed(2)} s`,
  );
  lines.push('');
  const widths = [30, 18, 16, 7];
  lines.push(pad(['figure', 'result', 'target', ''], widths));
  lines.push(
    pad(
      widths.map((w) => '-'.repeat(w)),
      widths,
    ),
  );
  const info = (name, shown) => lines.push(pad([name, shown, '', ''], widths));
  const verdict = (name) => {
    const t = r.targets.find((x) => x.name === name);
    if (t)
      lines.push(pad([t.name, t.shown, t.target, !t.valid ? 'INVALID' : t.pass ? 'ok' : 'MISS'], widths));
  };
  const s = r.phases.search;
  if (s) {
    verdict('searches');
    verdict('search p99');
    info('search p50 / max', `${fmt.ms(s.search.p50Ms)} / ${fmt.ms(s.search.maxMs)} ms`);
    for (const kind of SEARCH_KINDS) {
      const k = s.kinds[kind];
      if (!k) continue;
      info(
        `  ${kind}: rate, p50 / p99`,
        `${fmt.int(k.perSecond)}/s, ${fmt.ms(k.p50Ms)} / ${fmt.ms(k.p99Ms)} ms`,
      );
      info(`  ${kind}: items, empty`, `${k.meanItems.toFixed(1)}, ${fmt.pct(100 * k.emptyShare)} empty`);
    }
  }
  const p = r.phases.popularity;
  if (p) {
    verdict('popularity read p99');
    const read = p.kinds.popularity;
    const dl = p.kinds.download;
    if (read) {
      info('popularity read p50 / rate', `${fmt.ms(read.p50Ms)} ms, ${fmt.int(read.perSecond)}/s`);
      info(
        'popularity read items, empty',
        `${read.meanItems.toFixed(1)}, ${fmt.pct(100 * read.emptyShare)} empty`,
      );
    }
    if (dl) {
      info('downloads: rate', `${fmt.int(dl.perSecond)}/s`);
      info('downloads: p50 / p99', `${fmt.ms(dl.p50Ms)} / ${fmt.ms(dl.p99Ms)} ms`);
    }
    if (r.popularityCheck)
      info(
        'downloads counted (Hourly)',
        `${fmt.int(r.popularityCheck.counted)} of ${fmt.int(r.popularityCheck.downloads)}`,
      );
  }
  lines.push(
    pad(['server RSS after startup', fmt.mib(r.memory.afterStartup.rssMiB), '(no target)', ''], widths),
  );
  lines.push(pad(['server RSS after load', fmt.mib(r.memory.afterLoad.rssMiB), '(no target)', ''], widths));
  lines.push(pad(['server peak RSS', fmt.mib(r.memory.afterLoad.hwmMiB), '(no target)', ''], widths));
  lines.push('');
  const pw = [11, 9, 7, 10, 15, 10, 10, 9, 6];
  const head = [
    'phase',
    'requests',
    'failed',
    'server CPU',
    'server main',
    'client CPU',
    'client ELU',
    'other CPU',
  ];
  lines.push(pad([...head, 'steal'], pw));
  for (const [name, phase] of Object.entries(r.phases)) {
    const kinds = Object.values(phase.kinds);
    lines.push(
      pad(
        [
          name,
          fmt.int(kinds.reduce((sum, k) => sum + k.requests, 0)),
          fmt.int(kinds.reduce((sum, k) => sum + k.failures, 0)),
          fmt.pct(phase.serverCpuPercent),
          `${fmt.pct(phase.serverMainThreadCpuPercent)} ${Math.round(phase.serverMainMicrosPerRequest)}us/rq`,
          fmt.pct(phase.clientCpuPercent),
          phase.workerEventLoopUtilization.toFixed(2),
          fmt.pct(phase.otherCpuPercent),
          fmt.pct(phase.stealPercent),
        ],
        pw,
      ),
    );
  }
  lines.push(
    'CPU in % of one core. server main: its event-loop thread; client ELU near 1.00: the load generator is the',
    'bottleneck; other CPU: processes other than server and bench; steal: time the hypervisor gave to other guests.',
  );
  if (r.busyMachine) {
    lines.push(
      `WARNING: the machine was busy with other work (other CPU or steal above ${BUSY_PERCENT}%) during a phase: ` +
        'these figures understate the server. Run again on a quiet machine.',
    );
  }
  if (r.failures.total > 0 || (r.popularityCheck && !r.popularityCheck.ok)) {
    lines.push('');
    lines.push(`FAILED REQUESTS OR CHECKS: ${r.failures.total}; these figures are not valid. Samples:`);
    for (const sample of r.failures.samples) lines.push(`  ${sample}`);
    if (r.popularityCheck && !r.popularityCheck.ok)
      lines.push(
        `  popularity counted ${r.popularityCheck.counted} uses for ${r.popularityCheck.downloads} downloads`,
      );
  }
  if (r.server.stderr) lines.push('', 'server stderr:', r.server.stderr.trimEnd());
  if (r.server.cpuProfDir) lines.push(`server CPU profile written to ${r.server.cpuProfDir}`);
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
  state.dataDir = await mkdtemp(join(os.tmpdir(), 'hypernex-bench-'));
  progress(
    options,
    `seeding ${options.users} users, ${options.avatars - options.popular} avatars, ${options.worlds} worlds ` +
      `in ${state.dataDir} ...`,
  );
  const seeded = await seed(state.dataDir, options);

  progress(options, 'starting the server ...');
  const server = await startServer(state.dataDir, options.cpuProfDir);
  const pid = server.child.pid;
  const afterStartup = await readProcStatus(pid);
  progress(options, `uploading ${options.popular} public avatars with ${options.buildBytes}-byte builds ...`);
  const uploaded = await Promise.race([uploadPopular(server.url, seeded, options), fatal]);

  const data = {
    users: seeded.users.map((u) => [u.id, u.username.toLowerCase()]),
    avatars: seeded.avatars,
    worlds: seeded.worlds,
    builds: uploaded.builds,
    words: seeded.words,
  };
  const workers = await startWorkers(options, server, data);
  const durationMs = options.seconds * 1000;
  const phases = {};
  const run = (mix, ms) => Promise.race([runPhase(workers, pid, ms, mix), fatal]);
  if (options.warmup > 0) {
    progress(options, `warm-up: ${options.warmup} s of searches ...`);
    phases.warmup = await run({ search: options.clients }, options.warmup * 1000);
  }
  if (options.phases.includes('search')) {
    progress(options, `a) searches and tags, ${options.clients} clients, ${options.seconds} s ...`);
    phases.search = await run({ search: options.clients }, durationMs);
  }
  let popularityCheck = null;
  if (options.phases.includes('popularity')) {
    const readers = options.clients - options.downloaders;
    progress(
      options,
      `b) popularity: ${options.downloaders} downloading + ${readers} reading clients, ${options.seconds} s ...`,
    );
    phases.popularity = await run({ download: options.downloaders, popularity: readers }, durationMs);
    const downloads = phases.popularity.kinds.download?.requests ?? 0;
    const counted = await Promise.race([countedUses(server.url), fatal]);
    popularityCheck = { downloads, counted, ok: downloads === counted };
  }
  const afterLoad = await readProcStatus(pid);

  for (const worker of workers) worker.postMessage({ type: 'stop' });
  await Promise.all(workers.map((worker) => worker.terminate()));
  state.workers = [];
  const exit = await stopServer(state, server);
  await removeStateDir(state, 'dataDir');

  const warmup = phases.warmup;
  delete phases.warmup;
  const failureSamples = [];
  let failureTotal = 0;
  for (const [name, phase] of Object.entries({ warmup, ...phases })) {
    if (!phase) continue;
    for (const [kind, k] of Object.entries(phase.kinds)) {
      failureTotal += k.failures;
      for (const sample of k.failureSamples) failureSamples.push(`${name}/${kind}: ${sample}`);
    }
  }
  const result = {
    config: {
      users: options.users,
      avatars: options.avatars,
      popular: options.popular,
      worlds: options.worlds,
      buildBytes: options.buildBytes,
      clients: options.clients,
      downloaders: options.downloaders,
      seconds: options.seconds,
      warmupSeconds: options.warmup,
      workers: options.workers,
      checkEvery: options.checkEvery,
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      tmpdir: os.tmpdir(),
    },
    seed: {
      ms: seeded.seedMs,
      uploadMs: uploaded.ms,
      ownerOnlyAvatars: seeded.avatars.filter((a) => !a[3]).length,
      ownerOnlyWorlds: seeded.worlds.filter((w) => !w[3]).length,
    },
    startup: { ms: server.startupMs },
    memory: { afterStartup, afterLoad },
    phases,
    popularityCheck,
    failures: { total: failureTotal, samples: failureSamples },
    server: {
      exitCode: exit.code,
      exitSignal: exit.signal,
      stderr: server.stderr,
      cpuProfDir: options.cpuProfDir,
    },
  };
  result.targets = buildTargets(result);
  result.valid = failureTotal === 0 && exit.code === 0 && (!popularityCheck || popularityCheck.ok);
  result.busyMachine = Object.values(phases).some(
    (phase) => phase.otherCpuPercent > BUSY_PERCENT || phase.stealPercent > BUSY_PERCENT,
  );
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else printTable(result);
  if (exit.code !== 0)
    process.stderr.write(`the server exited with code ${exit.code} (signal ${exit.signal})\n`);
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
