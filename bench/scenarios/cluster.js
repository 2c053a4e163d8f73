// Cluster: hosts sharing PostgreSQL and Redis (issue 15). Invite requests between friends on different hosts against
// the same load on one host, then with a third host; getUser and updateBio on PostgreSQL against the embedded store;
// the CPU of every host, of PostgreSQL and of Redis, to say where the next limit is.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { holdToCpu } from '../harness/cpu-budget.js';
import { BenchError, cpuWindow, procCpu, startHost, startHosts } from '../harness/host.js';
import { httpLoad } from '../harness/http.js';
import { seed, seedUsers } from '../harness/seed.js';
import { inviteLoad } from '../harness/socket.js';
import { fmt, median, problems, several } from '../harness/stats.js';
import { requests } from './accounts.js';

const CONFIG = {
  socket: { inviteRequestCooldownSeconds: 0, messagesPerSecond: 1e7, messageBurst: 1e7 },
  limits: { connectionsPerAddress: 100_000, connections: 100_000 },
};

/** CPU seconds of every process named `name` (postgres, redis-server). */
async function cpuOf(name) {
  let seconds = 0;
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    const comm = await readFile(join('/proc', pid, 'comm'), 'utf8').catch(() => '');
    if (comm.trim() === name)
      seconds += (await procCpu(pid).catch(() => ({ processSeconds: 0 }))).processSeconds;
  }
  return seconds;
}

/** The machine's busy and total CPU time so far (/proc/stat, in clock ticks: their ratio is what counts). */
async function machineTicks() {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0];
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = ticks[3] + ticks[4]; // idle, iowait
  const total = ticks.reduce((sum, t) => sum + t, 0);
  return { busy: total - idle, total };
}

/**
 * Who asks whom, friend i being on host i % count. `across`: any friend asks a friend on another host (with one
 * host, any other). `one-way`: the friends of the first host ask those of the others, so one host only sends and
 * the others only receive (with one host, the same pairs as with two): where each side's CPU goes. `within`: any
 * friend asks another on their own host, so nothing crosses (what splitting the load over processes costs alone).
 */
function pairs(kind, count, n) {
  const any = () => Math.floor(Math.random() * n);
  if (kind === 'one-way') {
    const groups = Math.max(count, 2);
    const sender = () => groups * Math.floor(Math.random() * Math.ceil(n / groups));
    const pick = () => {
      for (;;) {
        const to = any();
        if (to % groups !== 0) return to;
      }
    };
    return { sender, pick };
  }
  const fits = (s, to) => count === 1 || (kind === 'within') === (to % count === s % count);
  const pick = (s) => {
    for (;;) {
      const to = any();
      if (to !== s && fits(s, to)) return to;
    }
  };
  return { sender: any, pick };
}

/** `count` hosts on the run's database and Redis; friend i signs in on host i % count; who asks whom: pairs(). */
async function invites(ctx, count, friends) {
  const hosts = await startHosts(ctx, count, { dataDir: ctx.dataDir, config: CONFIG });
  const share = ctx.options['host-cpu'];
  if (share > 0) for (const h of hosts) held.add(await holdToCpu(h.pid, share));
  const { sender, pick } = pairs(ctx.options.pairs, count, friends.length);
  const cpu = async () => {
    const ends = await Promise.all(hosts.map((h) => cpuWindow(h.pid)));
    const [pg0, redis0] = [await cpuOf('postgres'), await cpuOf('redis-server')];
    const [machine0, generator0] = [await machineTicks(), process.cpuUsage()];
    return async () => {
      const machine = await machineTicks();
      const generator = process.cpuUsage(generator0);
      return {
        hosts: await Promise.all(ends.map((end) => end())),
        pg: (await cpuOf('postgres')) - pg0,
        redis: (await cpuOf('redis-server')) - redis0,
        // Of every core: 1 is the whole machine busy.
        machineBusy: (machine.busy - machine0.busy) / (machine.total - machine0.total),
        generator: (generator.user + generator.system) / 1e6,
      };
    };
  };
  const url = (i) => hosts[i % count].wsUrl;
  const r = await inviteLoad(ctx, friends, { url, cpu, sender, pick, settleMs: 1000, by: 'a host' });
  await Promise.all(hosts.map((h) => h.stop()));
  await letGo();
  const per = (seconds) => (1e6 * seconds) / r.inWindow;
  const eachHost = r.cpu.hosts.map((c) => per(c.serverSeconds));
  const hostMicros = eachHost.reduce((sum, micros) => sum + micros, 0);
  return {
    ...r,
    eachHost,
    hostMicros,
    pgMicros: per(r.cpu.pg),
    redisMicros: per(r.cpu.redis),
    generatorMicros: per(r.cpu.generator),
    machineBusy: 100 * r.cpu.machineBusy,
  };
}

/** The CPU groups of the hosts held to --host-cpu (each lets its host go and removes its group). */
const held = new Set();
async function letGo() {
  await Promise.all([...held].map((release) => release()));
  held.clear();
}

/** getUser then updateBio on one host (its store: the run's database, or the embedded folder `dataDir`). */
async function accounts(ctx, users, dataDir, embedded) {
  const o = ctx.options;
  const serveArgs = ctx.serveArgs;
  if (embedded) ctx.serveArgs = [];
  const host = await startHost(ctx, { dataDir }).finally(() => (ctx.serveArgs = serveArgs));
  const out = {};
  const load = (kind, seconds) =>
    httpLoad(host.url, { connections: o.clients, seconds, next: requests(users, kind) });
  for (const kind of ['getUser', 'updateBio']) {
    // Unreported first, as for the invites: both stores measured warm (compiled code, records read once).
    if (o.warmup > 0) await load(kind, o.warmup);
    out[kind] = await load(kind, o.seconds);
  }
  await host.stop();
  return out;
}

/** What the invite rows say of --host-cpu. */
const heldTo = (ctx) =>
  ctx.options['host-cpu'] > 0 ? ` (each held to ${ctx.options['host-cpu']} core)` : '';

/** The median of `values`, and (several rounds) a row listing each round's. */
function perRound(name, values, unit, target, digits = 2) {
  const row = [name, median(values), unit, target];
  if (values.length < 2) return [row];
  return [row, [`  rounds: ${values.map((v) => v.toFixed(digits)).join(', ')}`, '']];
}

/** The host counts of --hosts, and --pairs, checked before any host starts. */
function inviteOptions(o) {
  const counts = String(o.hosts).split(',').map(Number);
  if (!counts.every((count) => Number.isInteger(count) && count >= 1))
    throw new BenchError(`--hosts is a list of host counts such as 1,2,3, not ${o.hosts}`);
  if (!['across', 'one-way', 'within'].includes(o.pairs))
    throw new BenchError(`--pairs is across, one-way or within, not ${o.pairs}`);
  return counts;
}

/** Invite requests on each count of --hosts, `rounds` times in turn; medians, and the ratios the issue sets. */
async function inviteRounds(ctx, friends, failures) {
  const counts = inviteOptions(ctx.options);
  const runs = Object.fromEntries(counts.map((count) => [count, []]));
  for (let round = 1; round <= ctx.options.rounds; round++) {
    for (const count of counts) {
      ctx.progress(`invites, round ${round}: ${count} host(s), ${friends.length} sockets`);
      const r = await invites(ctx, count, friends);
      r.errors.samples.forEach(failures.add);
      runs[count].push({ ...r, allMicros: r.hostMicros + r.pgMicros + r.redisMicros });
    }
  }
  const rows = [];
  const of = (count, key) => runs[count].map((r) => r[key]);
  for (const count of counts) {
    const label = (count === 1 ? '1 host' : `${count} hosts, ${ctx.options.pairs}`) + heldTo(ctx);
    rows.push([`invites, ${label}: delivered`, median(of(count, 'perSecond')), 'msg/s']);
    const lat = (key, q) => median(runs[count].map((r) => r[key][q]));
    rows.push([
      `  send -> gotinviterequest p50 / p99`,
      several([lat('lat', 'p50'), lat('lat', 'p99')], 'ms', 2),
    ]);
    rows.push([`  durable answer p50 / p99`, several([lat('ack', 'p50'), lat('ack', 'p99')], 'ms', 2)]);
    const cpu = ['hostMicros', 'pgMicros', 'redisMicros'].map((key) => median(of(count, key)));
    rows.push([`  CPU per request: hosts / PostgreSQL / Redis`, several(cpu, 'us')]);
    rows.push([`  load generator CPU per request`, median(of(count, 'generatorMicros')), 'us']);
    rows.push([`  machine busy (every core)`, median(of(count, 'machineBusy')), '%']);
    if (count > 1) {
      const each = runs[count][0].eachHost.map((_, i) => median(runs[count].map((r) => r.eachHost[i])));
      rows.push([`  CPU per request, host by host`, several(each, 'us')]);
    }
  }
  const ratio = (name, a, b, key, target) => {
    if (!runs[a] || !runs[b]) return;
    const values = runs[a].map((r, i) => r[key] / runs[b][i][key]);
    rows.push(...perRound(name, values, 'x', target));
  };
  ratio('CPU per request, 2 hosts / 1', 2, 1, 'allMicros', ['<=', 1.5]);
  ratio('CPU per request, 3 hosts / 1', 3, 1, 'allMicros', ['<=', 1.5]);
  ratio('delivered, 2 hosts / 1', 2, 1, 'perSecond', ['>=', 1]);
  ratio('delivered, 3 hosts / 2', 3, 2, 'perSecond', ['>=', 1]);
  return rows;
}

/** getUser and updateBio on the embedded store then on PostgreSQL, `rounds` times; PostgreSQL against embedded. */
async function accountRounds(ctx, users, embeddedUsers, failures) {
  const runs = [];
  for (let round = 1; round <= ctx.options.rounds; round++) {
    ctx.progress(`accounts, round ${round}: embedded store, then PostgreSQL`);
    const embedded = await accounts(ctx, embeddedUsers, join(ctx.tmp, 'embedded'), true);
    const onPg = await accounts(ctx, users, ctx.dataDir, false);
    for (const r of [...Object.values(embedded), ...Object.values(onPg)])
      r.failureSamples.forEach(failures.add);
    runs.push({ embedded, onPg });
  }
  const rows = [];
  for (const kind of ['getUser', 'updateBio']) {
    for (const store of ['embedded', 'onPg']) {
      const name = `${kind}, ${store === 'embedded' ? 'embedded' : 'PostgreSQL'}`;
      const p99 = median(runs.map((r) => r[store][kind].p99));
      rows.push([
        name,
        `${fmt(median(runs.map((r) => r[store][kind].perSecond)), 'req/s')}, p99 ${p99.toFixed(1)} ms`,
      ]);
    }
    const ratio = runs.map((r) => r.onPg[kind].perSecond / r.embedded[kind].perSecond);
    rows.push(...perRound(`${kind}, PostgreSQL / embedded`, ratio, 'x', ['>=', 0.8]));
  }
  return rows;
}

export default {
  describe:
    'hosts sharing --database and --redis: requestinvite between friends signed in on different hosts (a window ' +
    'in flight) on 1, 2 and 3 hosts, with the CPU per request of the hosts, PostgreSQL and Redis; getUser and ' +
    'updateBio on PostgreSQL against the embedded store, in the same run.',
  options: {
    friends: { default: 200, help: 'users who are all friends, one socket each' },
    window: { default: 50, help: 'invite requests in flight' },
    warmup: {
      default: 3,
      help:
        'seconds of unreported load before each run (hosts start afresh for each run and share its load: with ' +
        '2 or 3 of them each needs longer before its code is compiled)',
    },
    users: { default: 10_000, help: 'users for getUser and updateBio' },
    clients: { default: 64, help: 'HTTP clients' },
    pairs: {
      default: 'across',
      help:
        "who asks whom: across (friends on different hosts, both ways) or one-way (the first host's friends ask " +
        "the others': one host sends, the others receive; the CPU per host splits the two sides)",
    },
    hosts: {
      default: '1,2,3',
      help: 'the host counts of the invite runs (the ratios need the counts they compare)',
    },
    phases: { default: 'invites,accounts', help: 'a subset of invites,accounts' },
    'host-cpu': {
      default: 0,
      help:
        'hold each host of the invite runs to this share of one core (0.3: 30 ms of CPU per 100 ms; a cgroup ' +
        'quota, root only), as hosts on machines of their own: whether a host added adds capacity (0: not held)',
    },
    rounds: {
      default: 1,
      help: 'times each phase runs, in turn (figures are medians: run to run they move by a third)',
    },
  },
  async seed(ctx) {
    const o = ctx.options;
    if (!o.database || !o.redis) throw new BenchError('cluster needs --database URL and --redis URL');
    ctx.cleanupScenario = letGo;
    const make = async (api) => {
      const ids = Array.from({ length: o.friends }, () => api.ids.id('user'));
      const spec = (i) => ({ id: ids[i], username: `friend${i}`, friends: ids.filter((x) => x !== ids[i]) });
      return {
        friends: await api.users(o.friends, spec),
        users: await api.users(o.users, (i) => ({ username: `u${i}` })),
      };
    };
    const seeded = await seed(ctx, make, CONFIG);
    if (!o.phases.includes('accounts')) return seeded;
    // The same users in an embedded folder of their own.
    const [database, dataDir] = [ctx.database, ctx.dataDir];
    Object.assign(ctx, { database: undefined, dataDir: join(ctx.tmp, 'embedded') });
    const embedded = await seedUsers(ctx, o.users, { prefix: 'u' }).finally(() =>
      Object.assign(ctx, { database, dataDir }),
    );
    return { ...seeded, embeddedUsers: embedded.users };
  },

  async load(ctx, { friends, users, embeddedUsers }) {
    const o = ctx.options;
    const rows = [];
    const failures = problems();
    if (o.phases.includes('invites')) rows.push(...(await inviteRounds(ctx, friends, failures)));
    if (o.phases.includes('accounts'))
      rows.push(...(await accountRounds(ctx, users, embeddedUsers, failures)));
    const rounds = o.rounds > 1 ? `, ${o.rounds} rounds (medians; each round's figure after "rounds:")` : '';
    return {
      title: `${friends.length} friends, window ${o.window}, ${o.seconds} s per run${rounds}`,
      rows,
      notes: ['CPU per request: all host processes together, all PostgreSQL processes, redis-server.'],
      failures,
    };
  },
};
