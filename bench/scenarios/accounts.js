import { procMemory, startHost, withCpu } from '../harness/host.js';
import { httpLoad } from '../harness/http.js';
import { PASSWORD, seedUsers } from '../harness/seed.js';
import { failuresOf, fmt } from '../harness/stats.js';

const STORM = 16;

/** Requests of one kind, cycling through the users (two requests in flight never share a user). */
export function requests(users, kind) {
  let [next, bio] = [0, 0];
  return () => {
    const user = users[next++ % users.length];
    const as = { userid: user.id, tokenContent: user.token };
    const text = `bench ${bio++}`;
    const login = { username: user.username, password: PASSWORD, app: 'bench' };
    const [body, ok] = {
      getUser: [as, (a) => a.result?.UserData?.Id === user.id],
      updateBio: [{ ...as, bio: { StatusText: text } }, (a) => a.result?.Bio?.StatusText === text],
      login: [login, (a) => a.result?.LoginResult === 4],
    }[kind];
    const check = (a) => (ok(a) ? null : `${kind}: ${JSON.stringify(a.result)}`);
    return { path: `/api/v1/${kind}`, body, check };
  };
}

export default {
  describe:
    'getUser and acknowledged updateBio throughput and p50/p99 with many users; getUser p99 during a login storm ' +
    `(${STORM} clients logging in); startup time and memory. With --database: the same on PostgreSQL.`,
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
    const load = (connections, kind, seconds = o.seconds) =>
      httpLoad(host.url, { connections, seconds, next: requests(users, kind) });
    if (o.warmup > 0) await load(o.clients, 'getUser', o.warmup);
    const mixes = {
      getUser: { getUser: o.clients },
      updateBio: { updateBio: o.clients },
      loginStorm: { getUser: o.clients - STORM, login: STORM },
    };
    for (const [name, mix] of Object.entries(mixes).filter(([name]) => o.phases.includes(name))) {
      ctx.progress(`${name}: ${JSON.stringify(mix)} clients, ${o.seconds} s`);
      const loads = () => Promise.all(Object.entries(mix).map(([kind, n]) => load(n, kind)));
      const [done, cpu] = await withCpu(host.pid, loads);
      const kinds = Object.fromEntries(Object.keys(mix).map((kind, i) => [kind, done[i]]));
      const mainMicros = (1e6 * cpu.mainSeconds) / done.reduce((n, r) => n + r.count, 0);
      phases[name] = { kinds, cpu, mainMicros };
    }
    const afterLoad = await procMemory(host.pid);

    const rows = [['startup', host.startupMs, 'ms', ['<', 1000]]];
    const latency = (label, r, p99) =>
      rows.push([`${label} p99`, r.p99, 'ms', p99 && ['<', p99]], [`${label} p50`, r.p50, 'ms']);
    for (const [kind, [rps, p99]] of Object.entries({ getUser: [5000, 20], updateBio: [1000, 250] })) {
      const r = phases[kind]?.kinds[kind];
      if (r) rows.push([`${kind} throughput`, r.perSecond, 'req/s', ['>=', rps]]);
      if (r) latency(kind, r, p99);
    }
    if (phases.loginStorm) {
      const { getUser, login } = phases.loginStorm.kinds;
      latency('storm: getUser', getUser, 50);
      rows.push(['storm: getUser rate', getUser.perSecond, 'req/s']);
      rows.push(['storm: logins', `${login.perSecond.toFixed(1)} /s`]);
      latency('storm: login', login);
    }
    for (const [name, { cpu, mainMicros }] of Object.entries(phases)) {
      const percents = `${fmt(cpu.serverCpuPercent, '%')} / ${fmt(cpu.mainCpuPercent, '%')}`;
      rows.push([`${name}: server CPU / main`, percents]);
      rows.push([`${name}: main thread per request`, mainMicros, 'us']);
    }
    rows.push(['RSS after startup', afterStartup.rssMiB, 'MiB'], ['RSS after load', afterLoad.rssMiB, 'MiB']);
    rows.push(['peak RSS', afterLoad.hwmMiB, 'MiB']);
    const store = o.database ? 'PostgreSQL' : 'embedded';
    return {
      title: `${users.length} users, ${o.clients} clients, ${o.seconds} s per phase, ${store} store, seeded in ${(seedMs / 1000).toFixed(1)} s`,
      rows,
      notes: ["CPU in % of one core; main: the host's event-loop thread."],
      details: { phases, memory: { afterStartup, afterLoad } },
      failures: failuresOf(Object.values(phases).flatMap((p) => Object.values(p.kinds))),
    };
  },
};
