import { performance } from 'node:perf_hooks';
import { dist, withCpu } from '../harness/host.js';

const SERIAL = 200;
/** A user-sized record: a bio, twenty friends, some padding (~1.3 KB). */
const record = (n) => ({
  Bio: { StatusText: 'x'.repeat(200) },
  Friends: Array.from({ length: 20 }, (_, i) => `user_${i}0000000-0000-4000-8000-000000000000`),
  pad: 'y'.repeat(800),
  n,
});

async function measure(store, { clients, seconds }) {
  await store.tx((t) => {
    for (let i = 0; i < clients; i++) t.repo('users').put(`u${i}`, record(0));
  });
  const bump = (i) => store.tx((t) => t.repo('users').update(`u${i}`, (draft) => void draft.n++));
  const serialStarted = performance.now();
  for (let k = 0; k < SERIAL; k++) await bump(0);
  const serialMs = (performance.now() - serialStarted) / SERIAL;
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  const client = async (_, i) => {
    for (; performance.now() < deadline; done++) await bump(i);
  };
  const [, cpu] = await withCpu(0, () => Promise.all(Array.from({ length: clients }, client)));
  return { serialMs, perSecond: done / cpu.wallSeconds, cpuMicros: (1e6 * cpu.clientSeconds) / done };
}

export default {
  describe:
    'The storage seam alone, embedded and (with --database) PostgreSQL: latency of one acknowledged commit, ' +
    "commits per second and this process's CPU per commit with many at once (PostgreSQL's own CPU not in it).",
  options: { seconds: { default: 4 }, clients: { default: 64, help: 'transactions at once' } },

  async load(ctx) {
    const rows = [];
    const run = async (label, open) => {
      ctx.progress(`${label} ...`);
      const store = await open();
      try {
        const m = await measure(store, ctx.options);
        rows.push([`${label}: one commit at a time`, m.serialMs, 'ms']);
        rows.push([`${label}: ${ctx.options.clients} at once`, m.perSecond, 'commits/s']);
        rows.push([`${label}: CPU per commit here`, m.cpuMicros, 'us']);
      } finally {
        await store.close();
      }
    };
    const { Store } = await dist('store/store.js');
    await run('embedded', () => Store.open(ctx.dataDir, { collections: ['users'] }));
    if (ctx.database) {
      const { PgStore } = await dist('store/pg-store.js');
      await run('PostgreSQL', () => PgStore.open(ctx.database, { collections: ['users'] }));
    }
    return { title: `${ctx.options.clients} clients, ${ctx.options.seconds} s`, rows };
  },
};
