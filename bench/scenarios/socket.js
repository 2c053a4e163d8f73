// Socket: invite-request delivery among verified friends against a bare ws relay (interleaved rounds, the median
// reported), the connect storm of the friends, and memory per idle verified socket.
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchError, ROOT, cpuWindow, fdLimit, procMemory, startHost, startNode } from '../harness/host.js';
import { seed } from '../harness/seed.js';
import { messageName, socketDriver, userAuth } from '../harness/socket.js';
import { problems, summary } from '../harness/stats.js';

const CONFIG = {
  socket: { inviteRequestCooldownSeconds: 0, messagesPerSecond: 10_000_000, messageBurst: 10_000_000 },
  fsync: true,
  // Every client comes from 127.0.0.1: the connection caps must not count the bench's sockets.
  limits: { connectionsPerAddress: 100_000, connections: 100_000 },
};
/** Loaded into the idle host (with --expose-gc): on SIGUSR2 a full GC, then process.memoryUsage() to a file. */
const PROBE =
  "import{writeFileSync}from'node:fs';process.on('SIGUSR2',()=>{globalThis.gc();globalThis.gc();" +
  'writeFileSync(process.env.HYPERNEX_BENCH_PROBE,JSON.stringify(process.memoryUsage()))});';
const DRAIN_MS = 10_000;
const ACK_MS = 30_000;

/**
 * Keeps `window` requests in flight among the friends' sockets for `ms`: a request is in flight from its send
 * until the target gets gotinviterequest (at most one per sender-target pair), and, on the host, until the sender
 * gets its durable answer (sentinviterequest).
 */
function inviteRun(t, window, ms) {
  const n = t.ids.length;
  const r = { inFlight: new Map(), acks: new Map(), ackOut: 0, sent: 0, inWindow: 0, lat: [], ackLat: [] };
  const started = performance.now();
  const deadline = started + ms;
  let sending = true;
  return new Promise((resolveRun) => {
    const finish = () => {
      if (!t.run) return;
      t.run = null;
      [deadlineTimer, drain, ackTimer].forEach(clearTimeout);
      resolveRun({ ...r, lost: r.inFlight.size, acksMissing: r.ackOut, perSecond: r.inWindow / (ms / 1000) });
    };
    const pump = () => {
      while (sending && r.inFlight.size < window && performance.now() < deadline) {
        const s = Math.floor(Math.random() * n);
        let to = Math.floor(Math.random() * (n - 1));
        if (to >= s) to++;
        const key = s * n + to;
        if (r.inFlight.has(key)) continue;
        const at = performance.now();
        r.inFlight.set(key, at);
        if (!t.relay) {
          r.acks.set(key, [...(r.acks.get(key) ?? []), at]);
          r.ackOut++;
        }
        t.sockets[s].send(t.payload(s, to));
        r.sent++;
      }
      if (!sending && r.inFlight.size === 0 && r.ackOut === 0) finish();
    };
    t.run = {
      delivered(key) {
        const at = performance.now();
        const sentAt = r.inFlight.get(key);
        if (sentAt === undefined) return t.errors.add('a gotinviterequest nobody was waiting for');
        r.inFlight.delete(key);
        r.lat.push(at - sentAt);
        if (at <= deadline) r.inWindow++;
        pump();
      },
      answered(key, ok, reason) {
        const sentAt = r.acks.get(key)?.shift();
        if (sentAt === undefined) return t.errors.add('an answer for no request in flight');
        r.ackOut--;
        if (ok) r.ackLat.push(performance.now() - sentAt);
        else {
          t.errors.add(`failedtorequestinvite ${reason}`);
          r.inFlight.delete(key);
        }
        pump();
      },
    };
    const deadlineTimer = setTimeout(() => {
      sending = false;
      pump();
    }, ms);
    const drain = setTimeout(() => r.inFlight.size > 0 && finish(), ms + DRAIN_MS);
    const ackTimer = setTimeout(finish, ms + ACK_MS);
    pump();
  });
}

/** Relay or host: connect the friends (the connect storm), settle, warm up, one measured run. */
async function throughput(ctx, kind, friends) {
  const o = ctx.options;
  const relay = kind === 'relay';
  const target = relay
    ? await startNode(ctx, 'relay', [join(ROOT, 'bench', 'harness', 'baselines.js'), 'relay'])
    : await startHost(ctx, { config: CONFIG });
  const wsUrl = `ws://${target.url.host}/`;
  const ids = friends.map((u) => u.id);
  const index = new Map(ids.map((id, i) => [id, i]));
  const driver = socketDriver();
  const t = { ids, relay, run: null, errors: problems(), friendStatus: 0 };
  t.payload = relay
    ? (s, to) => `{"to":"${ids[to]}","message":"gotinviterequest","result":{"fromUserId":"${ids[s]}"}}`
    : (s, to) => `{"userId":"${ids[s]}","message":"RequestInvite","args":{"targetUserId":"${ids[to]}"}}`;
  const onMessage = (i) => (data) => {
    if (messageName(data) === 'friendstatus') return t.friendStatus++;
    const { message: name, result } = JSON.parse(data.toString('utf8'));
    if (name === 'gotinviterequest') t.run?.delivered(index.get(result.fromUserId) * ids.length + i);
    else if (name === 'sentinviterequest' || name === 'failedtorequestinvite')
      t.run?.answered(
        i * ids.length + index.get(result.targetUserId),
        name === 'sentinviterequest',
        result.reason,
      );
    else t.errors.add(`unexpected ${name}`);
  };
  ctx.progress(`  ${kind}: connecting ${friends.length} sockets ...`);
  const { sockets, ms: connectMs } = await ctx.guard(
    driver.openAll(
      wsUrl,
      friends,
      (u, i) =>
        relay
          ? { url: `${wsUrl}?id=${u.id}`, onMessage: onMessage(i) }
          : { auth: userAuth(u), onMessage: onMessage(i) },
      100,
    ),
  );
  t.sockets = sockets;
  await driver.quiet();
  if (o.warmup > 0) await ctx.guard(inviteRun(t, o.window, o.warmup * 1000));
  const end = await cpuWindow(target.pid);
  const running = inviteRun(t, o.window, o.seconds * 1000);
  await sleep(o.seconds * 1000); // CPU over the sending window only
  const cpu = await end();
  const run = await ctx.guard(running);
  driver.closeAll();
  await target.stop();
  if (run.lost) t.errors.add(`${run.lost} requests never delivered`);
  if (run.acksMissing) t.errors.add(`${run.acksMissing} sentinviterequest answers missing`);
  if (driver.dropped) t.errors.add(`${driver.dropped} sockets closed by the ${kind}`);
  return {
    ...run,
    lat: summary(run.lat),
    ack: summary(run.ackLat),
    ackLat: undefined,
    inFlight: undefined,
    acks: undefined,
    cpu,
    mainMicrosPerMessage: (1e6 * cpu.mainSeconds) / run.inWindow,
    connectMs,
    friendStatus: t.friendStatus,
    errors: t.errors,
  };
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
      if (heap) return { heap, ...(await procMemory(host.pid)) };
    }
    throw new BenchError('the host did not answer the memory probe');
  };
  await sleep(1000);
  const before = await measure();
  const driver = socketDriver();
  ctx.progress(`  opening and verifying ${users.length} idle sockets ...`);
  const end = await cpuWindow(host.pid);
  const { sockets, ms } = await ctx.guard(
    driver.openAll(host.wsUrl, users, (u) => ({ auth: userAuth(u) }), ctx.options['connect-concurrency']),
  );
  const cpu = await end();
  await sleep(2000);
  const after = await measure();
  const dropped = driver.dropped;
  driver.closeAll();
  await host.stop();
  const per = (a, b) => (1024 * (b - a)) / users.length;
  return {
    kibPerSocket: per(before.rssMiB, after.rssMiB),
    heapKibPerSocket: (after.heap.heapUsed - before.heap.heapUsed) / 1024 / users.length,
    verifySeconds: ms / 1000,
    verify: summary(sockets.map((s) => s.verifiedMs)),
    rssMiB: [before.rssMiB, after.rssMiB],
    mainMicrosPerSocket: (1e6 * cpu.mainSeconds) / users.length,
    dropped,
  };
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
    const phases = o.phases.split(',');
    const need = (phases.includes('idle') ? o.idle : 0) + (phases.includes('server') ? o.friends : 0) + 512;
    if (fdLimit() < need) throw new BenchError(`open-file limit ${fdLimit()} too low: ulimit -n ${need}`);
    return seed(
      ctx,
      async (api) => {
        const ids = Array.from({ length: o.friends }, () => api.ids.id('user'));
        const friends = [];
        for (const [i, id] of ids.entries())
          friends.push(await api.user({ id, username: `friend${i}`, friends: ids.filter((x) => x !== id) }));
        const idleUsers = [];
        for (let i = 0; phases.includes('idle') && i < o.idle; i++)
          idleUsers.push(await api.user({ username: `idle${i}` }));
        return { friends, idle: idleUsers };
      },
      CONFIG,
    );
  },

  async load(ctx, { friends, idle: idleUsers }) {
    const o = ctx.options;
    const phases = o.phases.split(',');
    const rounds = [];
    for (
      let round = 1;
      round <= o.repeat && (phases.includes('relay') || phases.includes('server'));
      round++
    ) {
      ctx.progress(`round ${round}/${o.repeat}`);
      const r = {};
      if (phases.includes('relay')) r.relay = await throughput(ctx, 'relay', friends);
      if (phases.includes('server')) r.server = await throughput(ctx, 'server', friends);
      r.ratio = r.relay && r.server ? r.server.perSecond / r.relay.perSecond : NaN;
      rounds.push(r);
    }
    const rows = [];
    const failures = problems();
    const pick = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor((rounds.length - 1) / 2)];
    for (const r of rounds)
      for (const p of [r.relay, r.server].filter(Boolean)) p.errors.samples.forEach(failures.add);
    const { relay, server } = pick ?? {};
    if (server) rows.push({ name: 'host: delivered', value: server.perSecond, unit: 'msg/s' });
    if (relay) rows.push({ name: 'bare relay: delivered', value: relay.perSecond, unit: 'msg/s' });
    if (server && relay) {
      rows.push({ name: 'host / relay rate', value: pick.ratio, unit: 'x', target: ['>=', 0.5] });
      rows.push({
        name: 'event-loop CPU/msg: relay / host',
        shown: `${Math.round(relay.mainMicrosPerMessage)} / ${Math.round(server.mainMicrosPerMessage)} us`,
      });
      rows.push({ name: 'rounds (host/relay)', shown: rounds.map((r) => r.ratio.toFixed(2)).join(', ') });
    }
    if (server) {
      rows.push({ name: 'host p50 send -> gotinviterequest', value: server.lat.p50, unit: 'ms' });
      rows.push({
        name: 'host p99 send -> gotinviterequest',
        value: server.lat.p99,
        unit: 'ms',
        target: ['<', 15],
      });
      rows.push({ name: 'host max', value: server.lat.max, unit: 'ms' });
      rows.push({
        name: 'host durable answer p50 / p99',
        shown: `${server.ack.p50.toFixed(2)} / ${server.ack.p99.toFixed(2)} ms`,
      });
      rows.push({
        name: `host: connect ${friends.length} friends`,
        value: server.connectMs / 1000,
        unit: 's',
      });
      rows.push({ name: '  friendstatus messages', value: server.friendStatus, unit: '' });
    }
    if (relay)
      rows.push({
        name: 'relay p50 / p99',
        shown: `${relay.lat.p50.toFixed(2)} / ${relay.lat.p99.toFixed(2)} ms`,
      });
    let idleResult;
    if (phases.includes('idle')) {
      ctx.progress(`idle: ${idleUsers.length} sockets on a fresh host`);
      idleResult = await idle(ctx, idleUsers);
      if (idleResult.dropped) failures.add(`${idleResult.dropped} idle sockets closed by the host`);
      rows.push({
        name: 'idle: memory per socket (RSS, after GC)',
        value: idleResult.kibPerSocket,
        unit: 'KiB',
        target: ['<', 20],
      });
      rows.push({ name: 'idle: JS heap per socket', value: idleResult.heapKibPerSocket, unit: 'KiB' });
      rows.push({
        name: `idle: verify ${idleUsers.length} sockets`,
        value: idleResult.verifySeconds,
        unit: 's',
      });
      rows.push({
        name: 'idle: verify p50 / p99',
        shown: `${idleResult.verify.p50.toFixed(1)} / ${idleResult.verify.p99.toFixed(1)} ms`,
      });
      rows.push({
        name: 'idle: host RSS before / after',
        shown: idleResult.rssMiB.map((m) => `${m.toFixed(1)} MiB`).join(' / '),
      });
    }
    return {
      title: `${friends.length} friends, window ${o.window}, ${o.seconds} s per run, ${o.repeat} round(s)`,
      rows,
      details: {
        rounds: rounds.map((r) => ({
          ...r,
          relay: r.relay && { ...r.relay, errors: undefined },
          server: r.server && { ...r.server, errors: undefined },
        })),
        idle: idleResult,
      },
      failures,
    };
  },
};
