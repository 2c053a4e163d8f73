// Accounts: getUser and acknowledged updateBio with many users, getUser during a login storm, startup and memory.
import { cpuWindow, procMemory, startHost } from '../harness/host.js';
import { httpLoad } from '../harness/http.js';
import { PASSWORD, seedUsers } from '../harness/seed.js';

const LOGIN_CLIENTS = 16;

/** Requests of one kind, cycling through the users (two requests in flight never share a user). */
function requests(users, kind) {
  let next = 0;
  let bio = 0;
  return () => {
    const user = users[next++ % users.length];
    const as = { userid: user.id, tokenContent: user.token };
    if (kind === 'getUser')
      return {
        path: '/api/v1/getUser',
        body: as,
        check: (a) => (a.result?.UserData?.Id === user.id ? null : 'another user'),
      };
    if (kind === 'login') {
      const body = { username: user.username, password: PASSWORD, app: 'bench' };
      return {
        path: '/api/v1/login',
        body,
        check: (a) => (a.result?.LoginResult === 4 ? null : 'not signed in'),
      };
    }
    const text = `bench ${bio++}`;
    return {
      path: '/api/v1/updateBio',
      body: { ...as, bio: { StatusText: text } },
      check: (a) => (a.result?.Bio?.StatusText === text ? null : 'updateBio did not echo the new StatusText'),
    };
  };
}

export default {
  describe:
    'getUser and acknowledged updateBio throughput and p50/p99 with many users; getUser p99 during a login storm ' +
    `(${LOGIN_CLIENTS} clients logging in); startup time and memory. With --database: the same on PostgreSQL.`,
  options: {
    users: { default: 10_000, help: 'users to seed' },
    clients: { default: 64, help: 'concurrent clients (keep-alive connections)' },
    warmup: { default: 1, help: 'seconds of unreported getUser load first' },
    phases: { default: 'getUser,updateBio,loginStorm', help: 'a subset of getUser,updateBio,loginStorm' },
  },
  seed: (ctx) => seedUsers(ctx, ctx.options.users),

  async load(ctx, { users, seedMs }) {
    const o = ctx.options;
    const host = await startHost(ctx);
    const afterStartup = await procMemory(host.pid);
    const phases = {};
    const run = async (name, mix) => {
      ctx.progress(
        `${name}: ${Object.entries(mix)
          .map(([k, n]) => `${n} ${k}`)
          .join(' + ')} clients, ${o.seconds} s`,
      );
      const end = await cpuWindow(host.pid);
      const kinds = Object.entries(mix).map(([kind, connections]) =>
        httpLoad(host.url, { connections, seconds: o.seconds, next: requests(users, kind) }).then((r) => [
          kind,
          r,
        ]),
      );
      const out = Object.fromEntries(await Promise.all(kinds));
      const cpu = await end();
      const total = Object.values(out).reduce((sum, r) => sum + r.count, 0);
      phases[name] = { kinds: out, cpu, mainMicrosPerRequest: (1e6 * cpu.mainSeconds) / total };
    };
    if (o.warmup > 0)
      await httpLoad(host.url, {
        connections: o.clients,
        seconds: o.warmup,
        next: requests(users, 'getUser'),
      });
    const want = o.phases.split(',');
    if (want.includes('getUser')) await run('getUser', { getUser: o.clients });
    if (want.includes('updateBio')) await run('updateBio', { updateBio: o.clients });
    if (want.includes('loginStorm'))
      await run('loginStorm', { getUser: o.clients - LOGIN_CLIENTS, login: LOGIN_CLIENTS });
    const afterLoad = await procMemory(host.pid);

    const rows = [{ name: 'startup', value: host.startupMs, unit: 'ms', target: ['<', 1000] }];
    const failures = { count: 0, samples: [] };
    const latency = (label, r, p99Target) => {
      rows.push({
        name: `${label} p99`,
        value: r.p99,
        unit: 'ms',
        target: p99Target && ['<', p99Target],
        valid: !r.failures,
      });
      rows.push({ name: `${label} p50`, value: r.p50, unit: 'ms' });
    };
    for (const [name, p] of Object.entries(phases)) {
      for (const r of Object.values(p.kinds)) {
        failures.count += r.failures;
        failures.samples.push(...r.failureSamples.map((s) => `${name}: ${s}`));
      }
    }
    if (phases.getUser) {
      const r = phases.getUser.kinds.getUser;
      rows.push({
        name: 'getUser throughput',
        value: r.perSecond,
        unit: 'req/s',
        target: ['>=', 5000],
        valid: !r.failures,
      });
      latency('getUser', r, 20);
    }
    if (phases.updateBio) {
      const r = phases.updateBio.kinds.updateBio;
      rows.push({
        name: 'updateBio throughput',
        value: r.perSecond,
        unit: 'req/s',
        target: ['>=', 1000],
        valid: !r.failures,
      });
      latency('updateBio', r, 250);
    }
    if (phases.loginStorm) {
      const { getUser, login } = phases.loginStorm.kinds;
      latency('storm: getUser', getUser, 50);
      rows.push({ name: 'storm: getUser rate', value: getUser.perSecond, unit: 'req/s' });
      rows.push({
        name: 'storm: logins',
        value: login.perSecond,
        unit: '/s',
        shown: `${login.perSecond.toFixed(1)} /s`,
      });
      latency('storm: login', login);
    }
    for (const [name, p] of Object.entries(phases)) {
      rows.push({
        name: `${name}: server CPU / main`,
        shown: `${Math.round(p.cpu.serverCpuPercent)}% / ${Math.round(p.cpu.mainCpuPercent)}%`,
      });
      rows.push({ name: `${name}: main thread per request`, value: p.mainMicrosPerRequest, unit: 'us' });
    }
    rows.push({ name: 'RSS after startup', value: afterStartup.rssMiB, unit: 'MiB' });
    rows.push({ name: 'RSS after load', value: afterLoad.rssMiB, unit: 'MiB' });
    rows.push({ name: 'peak RSS', value: afterLoad.hwmMiB, unit: 'MiB' });
    return {
      title: `${users.length} users, ${o.clients} clients, ${o.seconds} s per phase, ${o.database ? 'PostgreSQL' : 'embedded'} store, seeded in ${(seedMs / 1000).toFixed(1)} s`,
      rows,
      notes: ["CPU in % of one core; main: the host's event-loop thread."],
      details: { phases, memory: { afterStartup, afterLoad } },
      failures,
    };
  },
};
