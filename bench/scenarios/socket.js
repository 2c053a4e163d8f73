import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BASELINES,
  BenchError,
  UNCAPPED,
  cpuWindow,
  fdLimit,
  procMemory,
  startHost,
  spawnNode,
} from '../harness/host.js';
import { seed } from '../harness/seed.js';
import { inviteLoad, socketDriver, userAuth } from '../harness/socket.js';
import { problems, several, spread, summary } from '../harness/stats.js';

const CONFIG = {
  socket: { inviteRequestCooldownSeconds: 0, messagesPerSecond: 10_000_000, messageBurst: 10_000_000 },
  fsync: true,
  limits: UNCAPPED,
};
/** Loaded into the idle host (with --expose-gc): on SIGUSR2 a full GC, then process.memoryUsage() to a file. */
const PROBE =
  "import{writeFileSync}from'node:fs';process.on('SIGUSR2',()=>{globalThis.gc();globalThis.gc();" +
  'writeFileSync(process.env.HYPERNEX_BENCH_PROBE,JSON.stringify(process.memoryUsage()))});';

/** Relay or host: connect the friends (the connect storm), settle, warm up, one measured run. */
async function throughput(ctx, kind, friends) {
  const relay = kind === 'relay';
  const target = await (relay
    ? spawnNode(ctx, 'relay', [BASELINES, 'relay'])
    : startHost(ctx, { config: CONFIG }));
  const wsUrl = `ws://${target.url.host}/`;
  ctx.progress(`  ${kind}: connecting ${friends.length} sockets ...`);
  const url = (i) => (relay ? `${wsUrl}?id=${friends[i].id}` : wsUrl);
  const cpu = () => cpuWindow(target.pid);
  const r = await inviteLoad(ctx, friends, { url, cpu, relay, by: `the ${kind}` });
  await target.stop();
  return { ...r, mainMicros: (1e6 * r.cpu.mainSeconds) / r.inWindow };
}

/** Idle verified sockets on a fresh host: memory per socket (after a full GC on each side) and verify time. */
async function idle(ctx, users) {
  const probe = join(ctx.tmp, 'probe.json');
  const host = await startHost(ctx, {
    config: CONFIG,
    nodeArgs: ['--expose-gc', '--import', `data:text/javascript,${encodeURIComponent(PROBE)}`],
    env: { HYPERNEX_BENCH_PROBE: probe },
  });
  const measure = async () => {
    await unlink(probe).catch(() => undefined);
    host.child.kill('SIGUSR2');
    for (let i = 0; i < 200; i++) {
      await sleep(50);
      const heap = await readFile(probe, 'utf8').then(JSON.parse, () => null);
      if (heap) return { ...heap, ...(await procMemory(host.pid)) };
    }
    throw new BenchError('the host did not answer the memory probe');
  };
  await sleep(1000);
  const before = await measure();
  const driver = socketDriver();
  ctx.progress(`  opening and verifying ${users.length} idle sockets ...`);
  const [options, concurrency] = [(u) => ({ auth: userAuth(u) }), ctx.options['connect-concurrency']];
  const { sockets, ms } = await ctx.guard(driver.openAll(host.wsUrl, users, options, concurrency));
  await sleep(2000); // idle: only the heartbeat runs now
  const after = await measure();
  const dropped = driver.dropped;
  driver.closeAll();
  await host.stop();
  const per = (of) => (of(after) - of(before)) / 1024 / users.length;
  const [heap, buffers] = [per((m) => m.heapUsed), per((m) => m.external + m.arrayBuffers)];
  const rows = [
    ['idle: memory per socket (RSS, after GC)', per((m) => m.rssMiB * 1048576), 'KiB', ['<', 20]],
  ];
  rows.push(['idle: JS heap / buffers per socket', several([heap, buffers], 'KiB', 1)]);
  rows.push([`idle: verify ${users.length} sockets`, ms / 1000, 's']);
  rows.push(['idle: verify p50 / p99', spread(summary(sockets.map((s) => s.verifiedMs)), ['p50', 'p99'], 1)]);
  rows.push(['idle: host RSS before / after', several([before.rssMiB, after.rssMiB], 'MiB', 1)]);
  return { rows, dropped };
}

export default {
  describe:
    'requestinvite delivery among verified friends (a window of requests in flight) against a bare ws relay, in ' +
    'interleaved rounds (the median round by rate ratio reported); the friends connect storm (every arrival told ' +
    'to every connected friend); memory per idle verified socket and the time to verify them on a fresh host.',
  options: {
    friends: { default: 1000, help: 'users who are all friends, one socket each' },
    window: { default: 100, help: 'requests in flight' },
    warmup: { default: 1, help: 'seconds of unreported load before each run' },
    repeat: { default: 3, help: 'rounds of relay then host' },
    idle: { default: 10_000, help: 'idle sockets (one user each)' },
    'connect-concurrency': { default: 256, help: 'idle sockets opened at once' },
    phases: { default: 'relay,server,idle', help: 'a subset of relay,server,idle' },
  },
  async seed(ctx) {
    const o = ctx.options;
    const { phases } = o;
    const need = (phases.includes('idle') ? o.idle : 0) + o.friends + 512;
    if (fdLimit() < need) throw new BenchError(`open-file limit ${fdLimit()} too low: ulimit -n ${need}`);
    const make = async (api) => {
      const ids = Array.from({ length: o.friends }, () => api.ids.id('user'));
      const friend = (i) => ({
        id: ids[i],
        username: `friend${i}`,
        friends: ids.filter((x) => x !== ids[i]),
      });
      const idle = await api.users(phases.includes('idle') ? o.idle : 0, (i) => ({ username: `idle${i}` }));
      return { friends: await api.users(o.friends, friend), idle };
    };
    return seed(ctx, make, CONFIG);
  },

  async load(ctx, { friends, idle: idleUsers }) {
    const o = ctx.options;
    const { phases } = o;
    const rounds = [];
    const throughputPhases = phases.includes('relay') || phases.includes('server');
    for (let round = 1; round <= o.repeat && throughputPhases; round++) {
      ctx.progress(`round ${round}/${o.repeat}`);
      const r = {};
      if (phases.includes('relay')) r.relay = await throughput(ctx, 'relay', friends);
      if (phases.includes('server')) r.server = await throughput(ctx, 'server', friends);
      r.ratio = r.relay && r.server ? r.server.perSecond / r.relay.perSecond : NaN;
      rounds.push(r);
    }
    const failures = problems();
    for (const r of rounds) [r.relay, r.server].forEach((p) => p?.errors.samples.forEach(failures.add));
    const { relay, server, ratio } =
      [...rounds].sort((a, b) => a.ratio - b.ratio)[(rounds.length - 1) >> 1] ?? {};
    const rows = [];
    if (server) rows.push(['host: delivered', server.perSecond, 'msg/s']);
    if (relay) rows.push(['bare relay: delivered', relay.perSecond, 'msg/s']);
    if (server && relay) {
      rows.push(['host / relay rate', ratio, 'x', ['>=', 0.5]]);
      rows.push(['event-loop CPU/msg: relay / host', several([relay.mainMicros, server.mainMicros], 'us')]);
      rows.push(['rounds (host / relay)', rounds.map((r) => r.ratio.toFixed(2)).join(', ')]);
    }
    if (server) {
      rows.push(['host send -> gotinviterequest p99', server.lat.p99, 'ms', ['<', 15]]);
      rows.push(['host p50 / max', spread(server.lat, ['p50', 'max'])]);
      rows.push(['host durable answer p50 / p99', spread(server.ack)]);
      rows.push([`host: connect ${friends.length} friends`, server.connectMs / 1000, 's']);
      rows.push(['  friendstatus messages', server.friendStatus, '']);
    }
    if (relay) rows.push(['relay p50 / p99', spread(relay.lat)]);
    if (phases.includes('idle')) {
      ctx.progress(`idle: ${idleUsers.length} sockets on a fresh host`);
      const r = await idle(ctx, idleUsers);
      if (r.dropped) failures.add(`${r.dropped} idle sockets closed by the host`);
      rows.push(...r.rows);
    }
    const title = `${friends.length} friends, window ${o.window}, ${o.seconds} s per run, ${o.repeat} round(s)`;
    return { title, rows, details: { rounds: rounds.map(({ relay: a, server: b }) => [a, b]) }, failures };
  },
};
