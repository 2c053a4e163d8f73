#!/usr/bin/env node
// The benchmark harness: node bench/run.js <scenario> [--seconds N] [--json] [--database URL] [--redis URL]
// [scenario options] [-- more serve arguments]. A scenario (bench/scenarios/<name>.js) exports describe, options,
// seed(ctx) and load(ctx, seeded); it starts the real compiled host through ctx (harness/host.js), and load
// resolves with its figures, printed as one table (or JSON with --json). Needs the build (npm run build).
import { existsSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  BenchError,
  ROOT,
  RM_OPTIONS,
  benchSchema,
  pinned,
  removeDir,
  tempRoot,
  windows,
} from './harness/host.js';
import { fmt } from './harness/stats.js';

const SCENARIOS = join(ROOT, 'bench', 'scenarios');
/** Other CPU or steal above this (% of one core) in a measured window: the figures understate the host. */
const BUSY_PERCENT = 10;
const COMMON = {
  seconds: { default: 10, help: 'length of each measured phase' },
  json: { type: 'boolean', help: 'print the result as JSON on stdout (no progress on stderr)' },
  database: { type: 'string', help: 'run the hosts on PostgreSQL, in a schema of their own (dropped after)' },
  redis: { type: 'string', help: 'pass --redis URL to the hosts' },
  help: { type: 'boolean', help: 'this help' },
};

function usage(name, scenario) {
  const head = `Usage: node bench/run.js ${name ?? '<scenario>'} [options] [-- serve arguments]\n`;
  const names = readdirSync(SCENARIOS).map((f) => f.replace(/\.js$/, ''));
  if (!scenario) return `${head}Scenarios: ${names.join(', ')}\n`;
  const lines = [head, scenario.describe, ''];
  for (const [key, o] of Object.entries({ ...COMMON, ...scenario.options })) {
    const value = o.default ?? COMMON[key]?.default;
    const shown = value === undefined ? '' : ` (default ${value})`;
    lines.push(`  --${key.padEnd(22)} ${o.help ?? COMMON[key].help}${shown}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The scenario's options and the common ones; numbers where the default is one; serve arguments after `--`. */
function options(scenario, args) {
  const spec = { ...COMMON };
  const parsed = {};
  for (const [key, o] of Object.entries({ ...COMMON, ...scenario.options })) {
    spec[key] = { ...COMMON[key], ...o };
    parsed[key] = { type: spec[key].type ?? 'string', default: spec[key].default?.toString() };
  }
  const split = args.includes('--') ? args.indexOf('--') : args.length;
  const { values } = parseArgs({ args: args.slice(0, split), options: parsed, strict: true });
  const out = { serveArgs: args.slice(split + 1) };
  for (const [key, o] of Object.entries(spec)) {
    out[key] = typeof o.default === 'number' ? Number(values[key]) : values[key];
    if (Number.isNaN(out[key]) || out[key] < 0) throw new BenchError(`--${key} takes a number`);
  }
  out.phases = out.phases?.split(','); // a list of the scenario's phases to run
  return out;
}

function machine() {
  const max = (key) => Math.max(...windows.map((w) => w[key]).filter(Number.isFinite));
  const m = { otherCpuPercent: max('otherCpuPercent'), stealPercent: max('stealPercent') };
  return { ...m, busy: m.otherCpuPercent > BUSY_PERCENT || m.stealPercent > BUSY_PERCENT };
}

function table(name, result) {
  const lines = ['', `${name}: ${result.title ?? ''}`];
  lines.push(`${os.cpus()[0]?.model?.trim()}, ${os.cpus().length} CPUs, Node ${process.version}`, '');
  const verdict = (r) => (result.failures?.count ? 'INVALID' : r.pass ? 'ok' : 'MISS');
  const rows = result.rows.map((r) => {
    const target = r.target ? [`${r.target[0]} ${fmt(r.target[1], r.unit)}`, verdict(r)] : ['', ''];
    return [r.name, r.shown ?? fmt(r.value, r.unit), ...target];
  });
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i].length), 6));
  const line = (r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ');
  for (const r of [['figure', 'result', 'target', ''], ...rows]) lines.push(line(r).trimEnd());
  lines.push(...(result.notes ?? []), ...(pinned.text ? [`${pinned.text}.`] : []));
  const m = machine();
  const other = `other CPU up to ${fmt(m.otherCpuPercent, '%')}, steal up to ${fmt(m.stealPercent, '%')}`;
  if (windows.length) lines.push(`machine during the measured windows: ${other} (of one core)`);
  if (m.busy) lines.push('WARNING: the machine was busy with other work: the figures understate the host.');
  if (result.failures?.count) {
    lines.push(`FAILURES: ${result.failures.count}; these figures are not valid. Samples:`);
    lines.push(...result.failures.samples.map((s) => `  ${s}`));
  }
  return `${lines.join('\n')}\n`;
}

async function main() {
  const [name, ...args] = process.argv.slice(2);
  const file = join(SCENARIOS, `${name}.js`);
  if (!name || !existsSync(file)) throw new BenchError(usage());
  const scenario = (await import(file)).default;
  const opts = options(scenario, args);
  if (opts.help) return process.stdout.write(usage(name, scenario));
  if (!existsSync(join(ROOT, 'dist', 'bundle', 'cli.js'))) throw new BenchError('build first: npm run build');
  let failWith;
  const fatal = new Promise((_, reject) => (failWith = reject));
  fatal.catch(() => undefined);
  const ctx = {
    options: opts,
    children: new Set(),
    configs: 0,
    stopping: false,
    progress: (text) => opts.json || process.stderr.write(`${text}\n`),
    /** Ends the run (a host that died). */
    fail: (error) => failWith(error),
    /** Races `promise` against the run's failure. */
    guard: (promise) => Promise.race([promise, fatal]),
  };
  const cleanup = async () => {
    ctx.stopping = true;
    await Promise.all([...ctx.children].map((c) => c.stop().catch(() => undefined)));
    await ctx.cleanupScenario?.();
    await ctx.schema?.drop().catch(() => undefined);
    if (ctx.tmp) await removeDir(ctx.tmp).catch(() => undefined);
  };
  process.once('SIGINT', () => cleanup().finally(() => process.exit(130)));
  process.once('exit', () => {
    for (const c of ctx.children) c.child.kill('SIGKILL');
    if (ctx.tmp) rmSync(ctx.tmp, RM_OPTIONS);
  });
  try {
    ctx.tmp = await tempRoot();
    ctx.dataDir = join(ctx.tmp, 'data');
    if (opts.database) ctx.schema = await benchSchema(opts.database);
    ctx.database = ctx.schema?.url;
    const redis = opts.redis ? ['--redis', opts.redis] : [];
    ctx.serveArgs = [...(ctx.database ? ['--database', ctx.database] : []), ...redis, ...opts.serveArgs];
    const seeded = await ctx.guard(scenario.seed ? scenario.seed(ctx) : {});
    const result = await ctx.guard(scenario.load(ctx, seeded));
    result.failures ??= { count: 0, samples: [] };
    for (const c of [...ctx.children]) {
      const { code } = await c.stop();
      if (code === 0 || !c.name.startsWith('host')) continue;
      result.failures.count++;
      result.failures.samples.push(`the ${c.name} exited with code ${code}: ${c.stderr}`);
    }
    // A row is [name, value, unit, [op ('<', '<=' or '>='), limit]]; a string value is shown as it is.
    result.rows = result.rows.map(([name, value, unit, target]) => {
      if (typeof value === 'string') return { name, shown: value };
      const [op, limit] = target || [];
      const pass = target && (op === '<' ? value < limit : op === '<=' ? value <= limit : value >= limit);
      return { name, value, unit, target, pass };
    });
    const valid = !result.failures.count;
    if (!opts.json) process.stdout.write(table(name, result));
    else {
      const { help: _help, json: _json, ...config } = opts;
      const out = { scenario: name, config, rows: result.rows, details: result.details, machine: machine() };
      if (pinned.text) out.pinned = pinned.text;
      process.stdout.write(`${JSON.stringify({ ...out, failures: result.failures, valid }, null, 2)}\n`);
    }
    return valid ? 0 : 1;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => (process.exitCode = typeof code === 'number' ? code : 0),
  (error) => {
    process.stderr.write(`bench failed: ${error instanceof BenchError ? error.message : error.stack}\n`);
    process.exitCode = 1;
  },
);
