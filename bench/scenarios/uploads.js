import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BenchError,
  BASELINES,
  procMemory,
  removeDir,
  startHost,
  spawnNode,
  withCpu,
} from '../harness/host.js';
import { WORLD_META } from '../harness/http.js';
import { seedUsers } from '../harness/seed.js';

const MIB = 1024 * 1024;
const CHUNK = randomBytes(MIB);
const WARMUP = 16 * MIB;
const md5Of = (bytes) => {
  const md5 = createHash('md5');
  for (let sent = 0; sent < bytes; sent += MIB) md5.update(CHUNK.subarray(0, Math.min(MIB, bytes - sent)));
  return md5.digest('hex');
};

/** POSTs head + `bytes` of the repeated chunk + tail, streamed with backpressure; resolves with the answer. */
async function postStream(url, path, type, bytes, head = '', tail = '') {
  async function* body() {
    if (head) yield Buffer.from(head);
    for (let sent = 0; sent < bytes; sent += MIB) yield CHUNK.subarray(0, Math.min(MIB, bytes - sent));
    if (tail) yield Buffer.from(tail);
  }
  const headers = { 'content-type': type, 'content-length': String(Buffer.byteLength(head + tail) + bytes) };
  const res = await fetch(new URL(path, url), { method: 'POST', headers, body: body(), duplex: 'half' });
  return res.json();
}

async function toHost(url, user, bytes, md5) {
  const b = `----HypernexBench${randomBytes(12).toString('hex')}`;
  const part = (name, extra = '') => `--${b}\r\nContent-Disposition: form-data; name="${name}"${extra}\r\n`;
  const field = (name, value) => `${part(name)}\r\n${value}\r\n`;
  const file = `${part('file', '; filename="bench.hnw"')}Content-Type: application/octet-stream\r\n\r\n`;
  const head = field('userid', user.id) + field('tokenContent', user.token);
  const meta = field('worldMeta', JSON.stringify(WORLD_META));
  const type = `multipart/form-data; boundary=${b}`;
  const a = await postStream(url, '/api/v1/upload', type, bytes, head + meta + file, `\r\n--${b}--\r\n`);
  const data = a.result?.UploadData;
  if (a.message !== 'Uploaded World!' || data?.Hash !== md5 || data?.Size !== bytes)
    throw new BenchError(`upload: ${a.message} ${JSON.stringify(a.result)}`);
  return data.Key;
}

async function toBaseline(url, fsync, bytes, md5) {
  const a = await postStream(url, `/?fsync=${fsync ? 1 : 0}`, 'application/octet-stream', bytes);
  if (a.Hash !== md5 || a.Size !== bytes) throw new BenchError(`baseline upload: ${JSON.stringify(a)}`);
  await rm(a.Path);
}

/** `count` uploads at once to process `pid`: MiB/s over all, CPU s per GiB, peak RSS (VmHWM: a fresh host each). */
async function measure(pid, count, bytes, send) {
  const all = () => Promise.all(Array.from({ length: count }, (_, i) => send(i)));
  const [results, cpu] = await withCpu(pid, all);
  const gib = (count * bytes) / 1024 / MIB;
  const peakMB = (await procMemory(pid)).hwmMiB * 1.048576;
  const mibPerSecond = (gib * 1024) / cpu.wallSeconds;
  return { mibPerSecond, cpuPerGiB: cpu.serverSeconds / gib, peakMB, results };
}

async function scenario(ctx, name, count, bytes) {
  const md5 = md5Of(bytes);
  const dir = join(ctx.tmp, `stream-${name}`);
  await mkdir(dir);
  const base = await spawnNode(ctx, 'streaming server', [BASELINES, 'stream', dir]);
  const warm = Math.min(bytes, WARMUP);
  await toBaseline(base.url, false, warm, md5Of(warm));
  const runs = { bare: [], bareFsync: [], host: [] };
  for (let rep = 1; rep <= ctx.options.repeat; rep++) {
    ctx.progress(`[${name} ${rep}] bare, bare + fsync, host: ${count} x ${bytes / MIB} MiB ...`);
    const bare = (fsync) => measure(base.pid, count, bytes, () => toBaseline(base.url, fsync, bytes, md5));
    runs.bare.push(await bare(false));
    runs.bareFsync.push(await bare(true));
    const dataDir = join(ctx.tmp, `data-${name}-${rep}`);
    const { users } = await seedUsers({ ...ctx, dataDir }, count, { prefix: 'uploader' });
    const config = { uploads: { maxFileBytes: Math.max(bytes, 1e9) } };
    const host = await startHost(ctx, { dataDir, config });
    await toHost(host.url, users[0], warm, md5Of(warm));
    const m = await measure(host.pid, count, bytes, (i) => toHost(host.url, users[i], bytes, md5));
    const stored = await Promise.all(m.results.map((key) => stat(join(dataDir, 'files', key))));
    if (stored.some((file) => file.size !== bytes)) throw new BenchError('a stored file is short');
    runs.host.push(m);
    await host.stop();
    await removeDir(dataDir);
  }
  await base.stop();
  const mid = (list) => list.toSorted((a, b) => a.mibPerSecond - b.mibPerSecond)[(list.length - 1) >> 1];
  const [bare, bareFsync, host] = [mid(runs.bare), mid(runs.bareFsync), mid(runs.host)];
  const tag = count === 1 ? `${bytes / MIB} MiB` : `${count} x ${bytes / MIB} MiB`;
  const rate = (m) => m.mibPerSecond.toFixed(1);
  const cpu = [host, bareFsync].map((m) => m.cpuPerGiB.toFixed(2)).join(' / ');
  return [
    [`${tag}: host`, `${rate(host)} MiB/s`],
    [`${tag}: bare / bare + fsync`, `${rate(bare)} / ${rate(bareFsync)} MiB/s`],
    [`${tag}: host vs bare + fsync`, host.mibPerSecond / bareFsync.mibPerSecond, 'x', ['>=', 0.9]],
    [`${tag}: host vs bare, no fsync`, host.mibPerSecond / bare.mibPerSecond, 'x', ['>=', 0.9]],
    [`${tag}: host peak RSS`, Math.max(...runs.host.map((m) => m.peakMB)), 'MB', ['<', 150]],
    [`${tag}: CPU per GiB host / bare + fsync`, `${cpu} s`],
    [`${tag}: rounds (host MiB/s)`, runs.host.map(rate).join(', ')],
  ];
}

export default {
  describe:
    'A large .hnw world upload with worldMeta (multipart, as the CCK sends it) to the host against a bare node:http ' +
    'server streaming to a file with MD5 (without and with fsync), peak RSS of the host, and several uploads at ' +
    'once (one user each); every answer MD5-checked; rounds interleaved, the median round reported.',
  options: {
    'size-mib': { default: 1024, help: 'size of the single upload' },
    concurrent: { default: 8, help: 'uploads at once in the second case' },
    'concurrent-size-mib': { default: 100, help: 'size of each of those' },
    cases: { default: 'single,concurrent', help: 'a subset of single,concurrent' },
    repeat: { default: 3, help: 'rounds' },
  },

  async load(ctx) {
    const o = ctx.options;
    const rows = [];
    const cases = o.cases.split(',');
    const mib = (n) => Math.round(n * MIB);
    if (cases.includes('single')) rows.push(...(await scenario(ctx, 'single', 1, mib(o['size-mib']))));
    const [count, size] = [o.concurrent, mib(o['concurrent-size-mib'])];
    if (cases.includes('concurrent')) rows.push(...(await scenario(ctx, 'concurrent', count, size)));
    return { title: `${o.repeat} round(s)`, rows };
  },
};
