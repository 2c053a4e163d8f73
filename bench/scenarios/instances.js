import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { UNCAPPED, procMemory, startHost, within, withCpu } from '../harness/host.js';
import { WORLD_META, post } from '../harness/http.js';
import { seed } from '../harness/seed.js';
import { messageName, socketDriver, userAuth, userMessage } from '../harness/socket.js';
import { problems, several, spread, summary } from '../harness/stats.js';

const TOKEN = 'instances-bench-game-server-token';
const CONFIG = { socket: { messagesPerSecond: 100_000, messageBurst: 100_000 }, limits: UNCAPPED };
const STEP_TIMEOUT_MS = 10_000;

/** Game servers signed in with the host's game-server token, claiming and readying what they are handed. */
async function gameServers(driver, url, count) {
  const list = [];
  for (let g = 0; g < count; g++) {
    let gs;
    const send = (message, args) =>
      gs.send({ gameServerId: gs.id, serverTokenContent: TOKEN, message, args });
    gs = await driver.open(url, {
      auth: { serverTokenContent: TOKEN, message: 'auth', args: {} },
      until: 'sendauth',
      onMessage(data) {
        const name = messageName(data);
        if (name === 'requestedinstancecreated') {
          const { temporaryId } = JSON.parse(data.toString()).result;
          send('claiminstancerequest', { TemporaryId: temporaryId, Uri: `127.0.0.1:${7777 + g}` });
        } else if (name === 'selectedgameserver')
          send('instanceready', { instanceId: JSON.parse(data.toString()).result.instanceMeta.InstanceId });
      },
    });
    gs.id = gs.first.result.gameServerId;
    list.push(gs);
  }
  return list;
}

/** The owner asks for `perServer` instances on each game server: [gameServerId, instanceId], spread evenly. */
async function createInstances(driver, url, owner, worldId, ids, perServer) {
  const total = ids.length * perServer;
  const byServer = new Map(ids.map((id) => [id, []]));
  const ready = new Set();
  let sent = 0;
  let done;
  const finished = new Promise((resolveDone) => (done = resolveDone));
  const args = (gameServerId) => ({ worldId, instancePublicity: 0, instanceProtocol: 0, gameServerId });
  const request = () => ws.send(userMessage(owner, 'RequestNewInstance', args(ids[sent++ % ids.length])));
  const ws = await driver.open(url, {
    auth: userAuth(owner),
    onMessage(data) {
      const { message, result } = JSON.parse(data.toString());
      if (message === 'instanceopened') byServer.get(result.gameServerId).push(result.instanceId);
      const meta = message === 'updatedinstance' && result.instanceMeta;
      if (!meta?.Readied || ready.has(meta.InstanceId)) return;
      ready.add(meta.InstanceId);
      if (sent < total) request();
      if (ready.size === total) done();
    },
  });
  for (let i = 0; i < Math.min(50, total); i++) request();
  await within(60_000, finished, 'the instances were not all ready after 60 s');
  ws.close();
  return Array.from({ length: total }, (_, k) => {
    const gameServerId = ids[k % ids.length];
    const instanceId = byServer.get(gameServerId)[Math.floor(k / ids.length)];
    return { instanceId, args: `{"gameServerId":"${gameServerId}","instanceId":"${instanceId}"}` };
  });
}

/**
 * Users loop JoinInstance -> joinedinstance -> LeaveInstance -> leftinstance on random instances: `rate` cycles
 * started per second in all (0: closed loop, each user again at once) for `ms`; resolves once every cycle ended.
 */
function joinRun(users, instances, rate, ms, errors) {
  const joins = [];
  const started = performance.now();
  const deadline = started + ms;
  const pool = users.filter((u) => u.state === 'idle');
  let [launched, inFlight, inWindow] = [0, 0, 0];
  let finish;
  const finished = new Promise((resolveRun) => (finish = resolveRun));
  const launch = (u) => {
    u.state = 'joining';
    u.instance = instances[Math.floor(Math.random() * instances.length)];
    inFlight++;
    launched++;
    u.sentAt = performance.now();
    u.socket.send(`${u.prefix}JoinInstance","args":${u.instance.args}}`);
  };
  const ended = (u) => {
    inFlight--;
    if (rate === 0 && performance.now() < deadline) launch(u);
    else pool.push(u);
  };
  for (const u of users) {
    u.onFrame = (name, data) => {
      if (name === 'updatedinstance') return;
      const now = performance.now();
      if (name === 'joinedinstance' && u.state === 'joining' && data.includes(u.instance.instanceId)) {
        joins.push(now - u.sentAt);
        if (now <= deadline) inWindow++;
        u.state = 'leaving';
        u.sentAt = now;
        return u.socket.send(`${u.prefix}LeaveInstance","args":${u.instance.args}}`);
      }
      // leftinstance ends a cycle; a refusal (failedtojoininstance...) too, counted as an error.
      if (name !== 'leftinstance' || u.state !== 'leaving')
        errors.add(`${name} while ${u.state}: ${String(data).slice(0, 160)}`);
      if (u.state === 'joining' || u.state === 'leaving') ended(Object.assign(u, { state: 'idle' }));
    };
  }
  const tick = () => {
    const now = performance.now();
    if (now < deadline) {
      for (let due = Math.floor(((now - started) * rate) / 1000) - launched; due > 0 && pool.length; due--)
        launch(pool.splice(Math.floor(Math.random() * pool.length), 1)[0]);
      return setTimeout(tick, rate === 0 ? ms : 1);
    }
    const waitUntil = now + STEP_TIMEOUT_MS;
    const drain = () => (inFlight === 0 || performance.now() > waitUntil ? finish() : setTimeout(drain, 10));
    drain();
  };
  if (rate === 0) pool.splice(0).forEach(launch);
  tick();
  return finished.then(() => {
    if (inFlight) errors.add(`${inFlight} join/leave cycles unanswered`);
    for (const u of users) if (u.state !== 'idle') u.state = 'lost';
    return { ...summary(joins), perSecond: inWindow / (ms / 1000) };
  });
}

export default {
  describe:
    'Game servers with instances of one world; users loop join -> leave at an offered rate, the same users per ' +
    'instance in each phase: small, main, idle (main + idle verified sockets), saturation (closed loop). CPU per ' +
    'join, net of the background CPU of the same sockets without load, must not grow with the sockets.',
  options: {
    rate: { default: 1000, help: 'joins per second offered in the paced phases' },
    users: { default: 2000, help: 'users of the main phase' },
    'small-users': { default: 200, help: 'users of the small phase' },
    idle: { default: 10_000, help: 'idle verified sockets added in the idle phase' },
    'game-servers': { default: 20, help: 'game servers' },
    'instances-per-server': { default: 20, help: 'instances on each' },
    quiet: { default: 10, help: 'seconds measuring the background CPU before each paced phase (0: none)' },
    warmup: { default: 1, help: 'seconds of unreported load before each phase' },
    phases: { default: 'small,main,idle,saturation', help: 'a subset of small,main,idle,saturation' },
  },
  seed: (ctx) =>
    seed(ctx, async (api) => {
      const idle = ctx.options.phases.includes('idle') ? ctx.options.idle : 0;
      const users = await api.users(ctx.options.users, (i) => ({ username: `bench${i}` }));
      const owner = await api.user({ username: 'owner' });
      return { owner, users, idle: await api.users(idle, (i) => ({ username: `idle${i}` })) };
    }),

  async load(ctx, seeded) {
    const o = ctx.options;
    const host = await startHost(ctx, { config: CONFIG, args: ['--game-server-token', TOKEN] });
    const { owner } = seeded;
    const file = { name: 'w.hnw', data: Buffer.from('instances bench world').toString('base64') };
    const as = { userid: owner.id, tokenContent: owner.token };
    const world = await post(host.url, 'upload', { ...as, file, worldMeta: WORLD_META });
    const driver = socketDriver();
    const [count, per] = [o['game-servers'], o['instances-per-server']];
    ctx.progress(`${count} game servers, ${count * per} instances ...`);
    const servers = await ctx.guard(gameServers(driver, host.wsUrl, count));
    const ids = servers.map((g) => g.id);
    const worldId = world.result.WorldId;
    const instances = await ctx.guard(createInstances(driver, host.wsUrl, owner, worldId, ids, per));
    const errors = problems();
    const prefix = (u) => `{"userId":"${u.id}","tokenContent":"${u.token}","message":"`;
    const users = seeded.users.map((u) => ({ ...u, state: 'offline', prefix: prefix(u) }));
    const connect = async (n) => {
      const todo = users.slice(0, n).filter((u) => u.state === 'offline');
      const { sockets } = await driver.openAll(host.wsUrl, todo, (u) => ({
        auth: userAuth(u),
        onMessage: (data) => u.onFrame?.(messageName(data), data),
      }));
      todo.forEach((u, i) => Object.assign(u, { socket: sockets[i], state: 'idle' }));
    };
    const phases = {};
    const phase = async (name, active, rate, idle = 0) => {
      const sockets = o['game-servers'] + active + idle;
      const list = users.slice(0, active);
      const share = instances.slice(0, Math.max(1, Math.round((active * instances.length) / o.users)));
      const join = (seconds) => ctx.guard(joinRun(list, share, rate, seconds * 1000, errors));
      if (o.warmup > 0) await join(o.warmup);
      let background = 0;
      if (rate > 0 && o.quiet > 0) {
        const [, quiet] = await withCpu(host.pid, () => sleep(o.quiet * 1000));
        background = quiet.serverSeconds / quiet.wallSeconds;
      }
      ctx.progress(`${name}: ${active} users, ${share.length} instances, ${rate || 'closed loop'} joins/s`);
      const [run, cpu] = await withCpu(host.pid, () => join(o.seconds));
      const per = (seconds) => (1e6 * seconds) / run.count;
      const net = per(cpu.serverSeconds - background * cpu.wallSeconds);
      const [micros, main] = [per(cpu.serverSeconds), per(cpu.mainSeconds)];
      phases[name] = { ...run, rate, sockets, cpu, micros, net, main };
    };
    if (o.phases.includes('small')) {
      await ctx.guard(connect(o['small-users']));
      await phase('small', o['small-users'], o.rate);
    }
    await ctx.guard(connect(o.users));
    if (o.phases.includes('main')) await phase('main', o.users, o.rate);
    if (o.phases.includes('idle')) {
      const idle = socketDriver();
      ctx.progress(`opening ${seeded.idle.length} idle sockets ...`);
      await ctx.guard(idle.openAll(host.wsUrl, seeded.idle, (u) => ({ auth: userAuth(u) }), 200));
      await phase('idle', o.users, o.rate, seeded.idle.length);
      idle.closeAll();
      await sleep(1000);
    }
    if (o.phases.includes('saturation')) await phase('saturation', o.users, 0);
    const memory = await procMemory(host.pid);
    if (driver.dropped) errors.add(`${driver.dropped} sockets closed by the host`);
    driver.closeAll();
    const rows = [];
    for (const [name, p] of Object.entries(phases)) {
      rows.push([`${name} (${p.sockets} sockets): join p50 / p99 / max`, spread(p, ['p50', 'p99', 'max'])]);
      if (name === 'main') rows.push(['main: join p99', p.p99, 'ms', ['<', 20]]);
      if (p.rate) rows.push([`${name}: joins/s of those offered`, p.perSecond / p.rate, 'x', ['>=', 0.95]]);
      else rows.push([`${name}: joins/s`, p.perSecond, '/s']);
      rows.push([`${name}: host CPU per join, net / gross / main`, several([p.net, p.micros, p.main], 'us')]);
    }
    for (const name of ['main', 'idle']) {
      const growth = phases[name]?.net / phases.small?.net;
      if (growth) rows.push([`CPU/join growth ${name} vs small (net)`, growth, 'x', ['<', 1.25]]);
    }
    rows.push(['host RSS at the end', memory.rssMiB, 'MiB']);
    const title = `${instances.length} instances on ${servers.length} game servers, ${o.seconds} s per phase`;
    return { title, rows, details: { phases }, failures: errors };
  },
};
