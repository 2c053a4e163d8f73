#!/usr/bin/env node
// Login-storm bench: runs the real CLI server in its own process over a throwaway data folder, signs one real user
// up, then measures that user's login latency on a quiet server and while a storm of logins for made-up usernames
// (default 300 at once) is in flight, in several rounds. It also prints how long the made-up logins took to be
// refused: they should take about as long as a real check (so time does not tell who exists) without taking a
// turn in the password-hashing queue. It reports, it does not assert: exit 0 when the run was clean (target met
// or not), 1 on any error or unexpected answer.
//
//   node bench/login-storm.js [--storm 300] [--rounds 3] [--json] [--help]
//
// Needs the compiled server: npx tsc -p tsconfig.build.json (or npm run build:server).
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  BenchError,
  RM_OPTIONS,
  machineCpu,
  machineShares,
  processCpu,
  progress,
  quantile,
  removeStateDir,
  serveArgs,
  spawnServer,
  stopServer,
} from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');

const USERNAME = 'stormbench';
const PASSWORD = 'Bench-Passw0rd!';
/** A request still unanswered after this long fails the run. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Quiet logins measured per round (one at a time). */
const QUIET_LOGINS = 5;
/** The real user's login starts this long after the storm's requests were sent (they are queued by then). */
const STORM_HEAD_START_MS = 200;
/** Other CPU or steal above this (in % of one core) marks the run as taken on a busy machine. */
const BUSY_PERCENT = 10;
const TARGET_STORM_LOGIN_MS = 2000;

const HELP = `Usage: node bench/login-storm.js [options]

Starts the server (bin/hypernex-companion.js serve) in its own process over a temporary data folder, signs one
user up, and prints that user's login latency without load and during a storm of logins for usernames that do not
exist. Exit 0 when the run was clean (target met or not), 1 on errors. Needs the compiled server
(npx tsc -p tsconfig.build.json).

Options:
  --storm N      made-up-username logins sent at once, each on its own connection (default 300)
  --rounds N     storms (and quiet measurements) to run; the median is reported (default 3)
  --json         print the results as JSON on stdout (no progress on stderr)
  -h, --help     this help
`;

const state = { server: null, dataDir: null, stopping: false };

function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        storm: { type: 'string', default: '300' },
        rounds: { type: 'string', default: '3' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new BenchError(`${error.message} (see --help)`);
  }
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const whole = (name, min, max) => {
    const value = Number(values[name]);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new BenchError(`--${name} must be a whole number from ${min} to ${max}`);
    return value;
  };
  return { storm: whole('storm', 1, 5000), rounds: whole('rounds', 1, 20), json: values.json };
}

/** POSTs `body` as JSON and resolves with the parsed envelope and the latency in ms. */
function post(agent, url, path, body) {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolvePost, reject) => {
    const started = performance.now();
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
        timeout: REQUEST_TIMEOUT_MS,
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const ms = performance.now() - started;
          try {
            resolvePost({ status: res.statusCode, answer: JSON.parse(Buffer.concat(chunks).toString()), ms });
          } catch {
            reject(new BenchError(`${path} answered something that is not JSON (status ${res.statusCode})`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new BenchError(`${path} got no answer within ${REQUEST_TIMEOUT_MS} ms`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function realLogin(agent, url) {
  const { answer, ms } = await post(agent, url, '/api/v1/login', { username: USERNAME, password: PASSWORD });
  if (answer.success !== true || typeof answer.result?.token?.content !== 'string')
    throw new BenchError(`the real user's login failed: ${JSON.stringify(answer)}`);
  return ms;
}

async function unknownLogin(agent, url, username, password = PASSWORD) {
  const { answer, ms } = await post(agent, url, '/api/v1/login', { username, password });
  if (answer.success !== false || answer.result?.error?.code !== 'INCORRECT_CREDENTIALS')
    throw new BenchError(
      `a made-up username's login was not refused as incorrect: ${JSON.stringify(answer)}`,
    );
  return ms;
}

const fmtMs = (n) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US'));
const median = (values) => quantile(Float64Array.from(values).sort(), 0.5);

async function main() {
  const options = parseOptions();
  process.once('SIGINT', () => {
    state.stopping = true;
    cleanup().finally(() => process.exit(130));
  });
  process.on('benchFatal', (error) => {
    process.stderr.write(`bench failed: ${error.message}\n`);
    process.exit(1);
  });
  process.once('exit', () => {
    if (state.server) state.server.child.kill('SIGKILL');
    if (state.dataDir) rmSync(state.dataDir, RM_OPTIONS);
  });
  if (!existsSync(join(DIST, 'cli.js')))
    throw new BenchError('dist/server is missing: build it first with `npx tsc -p tsconfig.build.json`');
  state.dataDir = await mkdtemp(join(os.tmpdir(), 'hypernex-login-storm-'));
  progress(options, 'starting the server ...');
  const server = await spawnServer(state, { args: await serveArgs(CLI, state.dataDir) });
  const url = server.url;
  // The real user keeps one connection; each storm login opens its own, as many clients would.
  const userAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const stormAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  try {
    const created = await post(userAgent, url, '/api/v1/createUser', {
      username: USERNAME,
      password: PASSWORD,
      email: `${USERNAME}@bench.invalid`,
    });
    if (created.answer.success !== true)
      throw new BenchError(`could not sign the bench user up: ${JSON.stringify(created.answer)}`);
    await realLogin(userAgent, url); // warm-up
    await unknownLogin(userAgent, url, 'nobodywarmup');
    // Timing on a quiet server: a wrong password for the real user against a made-up username, interleaved
    // (fewer than the throttle's 10 failures).
    progress(options, `timing: ${QUIET_LOGINS} wrong passwords and ${QUIET_LOGINS} made-up usernames ...`);
    const wrongPassword = [];
    const madeUp = [];
    for (let i = 0; i < QUIET_LOGINS; i++) {
      wrongPassword.push(await unknownLogin(userAgent, url, USERNAME, 'Wrong-Passw0rd!'));
      madeUp.push(await unknownLogin(userAgent, url, `nobodyquiet${i}`));
    }

    const rounds = [];
    for (let round = 1; round <= options.rounds; round++) {
      progress(options, `round ${round}: ${QUIET_LOGINS} quiet logins, then a storm of ${options.storm} ...`);
      const quiet = [];
      for (let i = 0; i < QUIET_LOGINS; i++) quiet.push(await realLogin(userAgent, url));
      const machineBefore = await machineCpu();
      const cpuBefore = await processCpu(server.pid);
      const clientBefore = process.cpuUsage();
      const stormStarted = performance.now();
      const storm = Array.from({ length: options.storm }, (_, i) =>
        unknownLogin(stormAgent, url, `nobody${round}x${i}`),
      );
      await new Promise((resolveWait) => setTimeout(resolveWait, STORM_HEAD_START_MS));
      const duringStorm = await realLogin(userAgent, url);
      const unknown = await Promise.all(storm);
      const stormMs = performance.now() - stormStarted;
      const cpuAfter = await processCpu(server.pid);
      const machineAfter = await machineCpu();
      rounds.push({
        quietLoginMs: median(quiet),
        stormLoginMs: duringStorm,
        stormMs,
        unknownP50Ms: median(unknown),
        unknownMaxMs: Math.max(...unknown),
        ...machineShares(
          machineBefore,
          machineAfter,
          cpuAfter.processSeconds - cpuBefore.processSeconds,
          process.cpuUsage(clientBefore),
        ),
      });
    }
    const result = {
      config: { storm: options.storm, rounds: options.rounds },
      env: { node: process.version, cpus: os.cpus().length },
      quietLoginMs: median(rounds.map((r) => r.quietLoginMs)),
      stormLoginMs: median(rounds.map((r) => r.stormLoginMs)),
      unknownP50Ms: median(rounds.map((r) => r.unknownP50Ms)),
      quietWrongPasswordMs: median(wrongPassword),
      quietMadeUpMs: median(madeUp),
      rounds,
      busyMachine: rounds.some((r) => r.otherCpuPercent > BUSY_PERCENT || r.stealPercent > BUSY_PERCENT),
    };
    if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else print(result);
  } finally {
    userAgent.destroy();
    stormAgent.destroy();
  }
  const exit = await stopServer(state, server);
  await removeStateDir(state, 'dataDir');
  if (exit.code !== 0) {
    process.stderr.write(
      `the server exited with code ${exit.code} (signal ${exit.signal}): ${server.stderr}\n`,
    );
    return 1;
  }
  return 0;
}

function print(r) {
  const ok = r.stormLoginMs < TARGET_STORM_LOGIN_MS ? 'ok' : 'MISS';
  const lines = [
    '',
    `Hypernex Companion login-storm bench: ${r.config.storm} made-up-username logins at once, ${r.config.rounds} round(s)`,
    `${os.cpus()[0]?.model?.trim() ?? 'unknown CPU'}, ${r.env.cpus} CPUs, Node ${r.env.node}`,
    '',
    `real user's login, no storm (median)       ${fmtMs(r.quietLoginMs)} ms`,
    `real user's login during the storm         ${fmtMs(r.stormLoginMs)} ms   target < ${TARGET_STORM_LOGIN_MS} ms  ${ok}`,
    `storm: made-up usernames refused (p50)     ${fmtMs(r.unknownP50Ms)} ms`,
    `quiet: wrong password / made-up username   ${fmtMs(r.quietWrongPasswordMs)} / ${fmtMs(r.quietMadeUpMs)} ms   (close: time does not tell who exists)`,
    '',
    'round  quiet login  login in storm  storm done  unknown p50 / max  other CPU  steal',
  ];
  r.rounds.forEach((round, i) => {
    lines.push(
      `${String(i + 1).padEnd(7)}${`${fmtMs(round.quietLoginMs)} ms`.padEnd(13)}` +
        `${`${fmtMs(round.stormLoginMs)} ms`.padEnd(16)}${`${fmtMs(round.stormMs)} ms`.padEnd(12)}` +
        `${`${fmtMs(round.unknownP50Ms)} / ${fmtMs(round.unknownMaxMs)} ms`.padEnd(19)}` +
        `${`${Math.round(round.otherCpuPercent)}%`.padEnd(11)}${Math.round(round.stealPercent)}%`,
    );
  });
  lines.push(
    'other CPU: processes other than the server and this bench, in % of one core; steal: hypervisor.',
  );
  if (r.busyMachine)
    lines.push(
      `WARNING: the machine was busy with other work (other CPU or steal above ${BUSY_PERCENT}%): measure again.`,
    );
  lines.push('');
  process.stdout.write(lines.join('\n'));
}

async function cleanup() {
  if (state.server) await stopServer(state, state.server).catch(() => undefined);
  await removeStateDir(state, 'dataDir').catch(() => undefined);
}

main()
  .then((code) => {
    process.exitCode = code;
  })
  .catch(async (error) => {
    if (state.stopping) return;
    process.stderr.write(`bench failed: ${error instanceof BenchError ? error.message : error.stack}\n`);
    await cleanup();
    process.exitCode = 1;
  });
