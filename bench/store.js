#!/usr/bin/env node
// Store bench: the storage seam alone, embedded (data folder, fsync on) and, with --database, PostgreSQL, under the
// same load: one commit at a time (the latency of an acknowledged commit), then many transactions at once, each
// changing its own ~1.3 KB record (throughput, and this process's CPU per commit; PostgreSQL's own CPU is not in
// it). It reports, it does not assert.
//
//   node bench/store.js [--seconds 4] [--clients 64] [--database postgres://USER:PASS@HOST:PORT/DB]
//
// Needs the compiled server (npm run build). With --database it works in a schema of its own, dropped at the end.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { machineCpu, machineShares, RM_OPTIONS } from './lib.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    clients: { type: 'string', default: '64' },
    database: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write('Usage: node bench/store.js [--seconds 4] [--clients 64] [--database URL]\n');
  process.exit(0);
}
const seconds = Number(values.seconds);
const clients = Number(values.clients);
const dist = (path) => import(pathToFileURL(join(import.meta.dirname, '..', 'dist', 'server', path)).href);

/** A user-sized record: a bio, twenty friends, some padding. */
const record = (n) => ({
  Bio: { StatusText: 'x'.repeat(200) },
  Friends: Array.from({ length: 20 }, (_, i) => `user_${i}0000000-0000-4000-8000-000000000000`),
  pad: 'y'.repeat(800),
  n,
});

async function measure(label, store) {
  await store.tx((t) => {
    for (let i = 0; i < clients; i++) t.repo('users').put(`u${i}`, record(0));
  });
  const bump = (i) =>
    store.tx((t) =>
      t.repo('users').update(`u${i}`, (draft) => {
        draft.n++;
      }),
    );
  const serialStarted = performance.now();
  const serial = 200;
  for (let k = 0; k < serial; k++) await bump(0);
  const serialMs = (performance.now() - serialStarted) / serial;
  const machineBefore = await machineCpu();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const end = started + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      while (performance.now() < end) {
        await bump(i);
        done++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const shares = machineShares(machineBefore, await machineCpu(), 0, cpu);
  process.stdout.write(
    `${label.padEnd(12)} one at a time ${serialMs.toFixed(2)} ms/commit   ${clients} at once ` +
      `${Math.round(done / elapsed)} commits/s, ${Math.round((cpu.user + cpu.system) / done)} us CPU/commit here` +
      `   (other CPU ${Math.round(shares.otherCpuPercent)}%)\n`,
  );
}

const { Store } = await dist('store/store.js');
const dir = await mkdtemp(join(os.tmpdir(), 'hypernex-store-bench-'));
try {
  const store = await Store.open(dir, { collections: ['users'] });
  try {
    await measure('embedded', store);
  } finally {
    await store.close();
  }
} finally {
  await rm(dir, RM_OPTIONS);
}

if (values.database) {
  const { PgStore } = await dist('store/pg-store.js');
  const { default: pg } = await import('pg');
  const schema = `hx_bench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: values.database });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  try {
    const url = new URL(values.database);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const store = await PgStore.open(url.toString(), { collections: ['users'] });
    try {
      await measure('PostgreSQL', store);
    } finally {
      await store.close();
    }
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}
process.stdout.write(
  'other CPU: processes other than this one (PostgreSQL included), in % of one core; high means measure again\n',
);
