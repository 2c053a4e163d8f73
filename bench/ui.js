#!/usr/bin/env node
// UI bench (issue 7): seeds a throwaway data folder, runs the real CLI server (serving the built UI) in its own
// process, drives Debian's Chromium through playwright-core over loopback and prints the figures next to the
// targets:
//   1. page load to interactive, signed out (the sign-in form) and signed in (a stored session, the shell), each
//      load in a fresh browser context (empty cache and storage);
//   2. the gzipped size of the JS the UI ships (dist/renderer/assets);
//   3. requestinvite to toast: user A sends RequestInvite over a raw `ws` socket from Node, the toast shows in B's
//      page (stamped in the page by a MutationObserver; same machine, same clock).
// It reports, it does not assert: exit 0 when the run was clean (targets met or not), 1 on any error (a page
// that never became interactive, a refused or lost invite request, console errors in a page, a server crash),
// 130 on Ctrl-C.
//
//   node bench/ui.js [--loads 10] [--invites 20] [--json] [--phases load,size,invite] [--help for more]
//
// Needs the built server and UI (npm run build) and Chromium at /usr/bin/chromium. Linux only (reads /proc).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { WebSocket } from 'ws';
import { MANY_FRIENDS, runSocial, SOCIAL_TARGETS, SOCIAL_USERS } from './ui-social.js';
import {
  BenchError,
  RM_OPTIONS,
  progress,
  CLK_TCK,
  machineCpu,
  quantile,
  stopServer,
  removeStateDir,
  seededUser,
  loadServerForSeeding,
  serveArgs,
  spawnServer,
  putUsers,
} from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist', 'server');
const UI_DIR = join(ROOT, 'dist', 'renderer');
const ASSETS_DIR = join(UI_DIR, 'assets');
const RENDERER_SRC = join(ROOT, 'renderer');
const CLI = join(ROOT, 'bin', 'hypernex-companion.js');
const CHROMIUM = '/usr/bin/chromium';
/** As test/e2e/harness.ts launches it. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
/** renderer/shared/session.ts */
const SESSION_STORAGE_KEY = 'hypernex-companion.session';

/** The password every seeded user has (it also meets the server's strength rules). */
const PASSWORD = 'Bench-Passw0rd!';
/** A: asks for invites over a raw socket; B: signed in, gets the toasts; C: the signed-in page loads. */
const USERNAMES = { a: 'BenchAnn', b: 'BenchBea', c: 'BenchCal' };

/** One page load may take this long to become interactive before it counts as failed. */
const LOAD_TIMEOUT_MS = 20_000;
/** One invite request may take this long to show its toast (and to be acknowledged) before it counts as lost. */
const TOAST_TIMEOUT_MS = 5_000;
/** Warm-up invite requests may find B not connected yet (OFFLINE): retried for this long. */
const ONLINE_WAIT_MS = 10_000;
/** Between invite requests, after the toast is closed: a random pause in this range (no frame alignment). */
const INVITE_GAP_MS = [50, 250];
/** Rounds of the page/Node clock comparison (the one with the shortest round trip counts). */
const CLOCK_ROUNDS = 15;
/** Other CPU or steal above this (in % of one core) during a phase marks the run as taken on a busy machine. */
const BUSY_PERCENT = 10;
const MAX_LOADS = 200;
const MAX_INVITES = 500;

const PHASES = ['load', 'size', 'invite', 'social'];

const TARGETS = {
  loadMs: 1000,
  jsGzipBytes: 250_000,
  inviteToToastMs: 100,
};

const HELP = `Usage: node bench/ui.js [options]

Seeds a temporary data folder, starts the server (bin/hypernex-companion.js serve, serving dist/renderer) in its
own process, drives Chromium (${CHROMIUM}, through playwright-core) over loopback and prints the figures next
to the targets. Exit 0 when the run was clean (targets met or not), 1 on errors, 130 on Ctrl-C. Needs the built
server and UI (npm run build) and Chromium (apt-get install -y chromium). Linux only.

Phases:
  load     navigation start -> sign-in form (signed out) or shell (stored session) visible and enabled,
           p95 < ${TARGETS.loadMs} ms; each load in a fresh browser context
  size     all .js under dist/renderer/assets, gzip level 9: < ${TARGETS.jsGzipBytes / 1000} kB (1 kB = 1000 bytes)
  invite   A's RequestInvite sent on a raw socket -> toast in B's page, p95 < ${TARGETS.inviteToToastMs} ms
           (invite-request cooldown set to 0 through --config)
  social   friend request (HTTP) -> row on the target's open Friends screen, and acceptance -> row on the
           sender's, p95 < ${SOCIAL_TARGETS.socialPushMs} ms (10 rounds after one warm-up); API requests a Friends
           screen with ${MANY_FRIENDS} friends makes to render: <= ${SOCIAL_TARGETS.friendsRenderRequests}

Options:
  --loads N        measured loads of each kind, signed out and signed in (default 10, at most ${MAX_LOADS})
  --invites N      measured invite requests (default 20, at most ${MAX_INVITES})
  --warmup N       unreported loads of each kind and invite requests first (default 1; 0 skips the loads;
                   one invite request always goes first, until B's socket is up)
  --phases LIST    comma-separated subset of ${PHASES.join(',')} (default: all)
  --timeout N      give up (exit 1) when the whole run takes longer than N seconds (default 300)
  --json           print the results as JSON on stdout (no progress on stderr)
  -h, --help       this help
`;

const state = {
  tempDir: null,
  server: null,
  browser: null,
  sockets: new Set(),
  cleaning: null,
  stopping: false,
};

async function cleanup() {
  state.cleaning ??= (async () => {
    for (const ws of state.sockets) ws.terminate();
    state.sockets.clear();
    if (state.browser) {
      const browser = state.browser;
      state.browser = null;
      await withTimeout(browser.close(), 15_000, 'closing the browser').catch(() => undefined);
    }
    if (state.server) await stopServer(state, state.server).catch(() => undefined);
    // On failure state.tempDir stays set, so the exit handler tries once more.
    await removeStateDir(state, 'tempDir').catch(() => undefined);
  })();
  return state.cleaning;
}

function parseOptions() {
  let values;
  try {
    values = parseArgs({
      options: {
        loads: { type: 'string', default: '10' },
        invites: { type: 'string', default: '20' },
        warmup: { type: 'string', default: '1' },
        phases: { type: 'string', default: PHASES.join(',') },
        timeout: { type: 'string', default: '300' },
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
  const int = (name, min, max) => {
    const value = Number(values[name]);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new BenchError(`--${name} must be a whole number from ${min} to ${max}`);
    return value;
  };
  const options = {
    loads: int('loads', 1, MAX_LOADS),
    invites: int('invites', 1, MAX_INVITES),
    warmup: int('warmup', 0, 10),
    timeoutSeconds: int('timeout', 10, 3600),
    phases: values.phases.split(',').map((name) => name.trim()),
    json: values.json,
  };
  for (const name of options.phases) {
    if (!PHASES.includes(name)) throw new BenchError(`--phases takes a list of ${PHASES.join(', ')}`);
  }
  return options;
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BenchError(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Milliseconds since the epoch with sub-millisecond resolution (the same base the page's stamps use). */
function epochNow() {
  return performance.timeOrigin + performance.now();
}

// ---------------------------------------------------------------------------------------------------------------
// Preconditions
// ---------------------------------------------------------------------------------------------------------------

function checkPrerequisites(options) {
  if (!existsSync(join(DIST, 'host.js')) || !existsSync(join(DIST, 'cli.js'))) {
    throw new BenchError('dist/server is missing: build it first with `npm run build`');
  }
  if (!existsSync(join(UI_DIR, 'index.html')) || !existsSync(ASSETS_DIR)) {
    throw new BenchError(
      `the built UI is missing (${join(UI_DIR, 'index.html')}): run \`npm run build\` first`,
    );
  }
  const needsBrowser = options.phases.includes('load') || options.phases.includes('invite');
  if (needsBrowser && !existsSync(CHROMIUM)) {
    throw new BenchError(
      `Chromium is not installed at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (Debian/Ubuntu, ` +
        'as root); never `npx playwright install`',
    );
  }
}

/** Newest modification time of the files under `dir` (0 when there are none). */
function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return newest;
}

/** True when a renderer source changed after the last UI build: the figures then describe an older UI. */
function uiBuildLooksStale() {
  try {
    return newestMtime(RENDERER_SRC) > statSync(join(UI_DIR, 'index.html')).mtimeMs;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// JS size
// ---------------------------------------------------------------------------------------------------------------

/** The .js files index.html loads at start (module scripts and modulepreloads), as paths under dist/renderer. */
function referencedScripts(html) {
  const refs = new Set();
  const tag = /<(script|link)\b([^>]*)>/gi;
  for (const [, name, attrs] of html.matchAll(tag)) {
    const attr = (key) => new RegExp(`\\b${key}\\s*=\\s*["']([^"']+)["']`, 'i').exec(attrs)?.[1];
    const url = name.toLowerCase() === 'script' ? attr('src') : attr('href');
    if (!url || !/\.js(\?|$)/.test(url)) continue;
    if (name.toLowerCase() === 'link' && !/modulepreload|preload/i.test(attr('rel') ?? '')) continue;
    refs.add(url.replace(/^\.?\//, '').replace(/\?.*$/, ''));
  }
  return [...refs];
}

async function measureSize() {
  const html = await readFile(join(UI_DIR, 'index.html'), 'utf8');
  const names = (await readdir(ASSETS_DIR)).filter((name) => name.endsWith('.js')).sort();
  const files = [];
  for (const name of names) {
    const data = await readFile(join(ASSETS_DIR, name));
    files.push({
      file: `assets/${name}`,
      rawBytes: data.length,
      gzipBytes: gzipSync(data, { level: 9 }).length,
    });
  }
  const initialRefs = referencedScripts(html);
  const missing = initialRefs.filter((ref) => !files.some((f) => f.file === ref));
  if (missing.length)
    throw new BenchError(`index.html references JS that is not in assets: ${missing.join(', ')}`);
  const sum = (list, key) => list.reduce((total, f) => total + f[key], 0);
  const initial = files.filter((f) => initialRefs.includes(f.file));
  const css = (await readdir(ASSETS_DIR)).filter((name) => name.endsWith('.css'));
  let cssRaw = 0;
  let cssGzip = 0;
  for (const name of css) {
    const data = await readFile(join(ASSETS_DIR, name));
    cssRaw += data.length;
    cssGzip += gzipSync(data, { level: 9 }).length;
  }
  return {
    files,
    all: { count: files.length, rawBytes: sum(files, 'rawBytes'), gzipBytes: sum(files, 'gzipBytes') },
    initial: {
      count: initial.length,
      rawBytes: sum(initial, 'rawBytes'),
      gzipBytes: sum(initial, 'gzipBytes'),
    },
    css: { count: css.length, rawBytes: cssRaw, gzipBytes: cssGzip },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Seeding and the server
// ---------------------------------------------------------------------------------------------------------------

async function seed(dataDir, overrides) {
  const { openHost, randomIds, enums, argon2, seedApi } = await loadServerForSeeding(DIST);
  const { Rank } = enums;
  const started = performance.now();
  const host = await openHost({ ...overrides, dataDir, logLevel: 'silent', fsync: false });
  const users = {};
  try {
    const params = host.config.passwordHash;
    const hashed = await argon2.hash(PASSWORD, {
      algorithm: 2, // Argon2id, as server/services/passwords.ts
      memoryCost: params.memoryCost,
      timeCost: params.timeCost,
      parallelism: 1,
    });
    const now = Math.floor(Date.now() / 1000);
    for (const [key, username] of Object.entries(USERNAMES)) {
      users[key] = { id: randomIds.id('user'), username, token: randomIds.secret() };
    }
    for (const [key, username] of Object.entries(SOCIAL_USERS)) {
      users[key] = { id: randomIds.id('user'), username, token: randomIds.secret() };
    }
    const many = Array.from({ length: MANY_FRIENDS }, (_, i) => ({
      id: randomIds.id('user'),
      username: `fr${String(i).padStart(3, '0')}`,
      token: randomIds.secret(),
    }));
    const friendsOf = { a: [users.b.id], b: [users.a.id], c: [], d: [], e: [], f: many.map((u) => u.id) };
    for (const { id, username, token } of many) {
      friendsOf[username] = [users.f.id];
      users[username] = { id, username, token, extra: true };
    }
    const changes = [];
    for (const [key, { id, username, token }] of Object.entries(users)) {
      changes.push(
        seededUser(seedApi, {
          id,
          username,
          hashed,
          token,
          now,
          lifetimeSeconds: host.config.tokenLifetimeSeconds,
          rank: Rank.Registered,
          friends: friendsOf[key],
        }),
      );
    }
    await putUsers(host, changes);
    for (const key of Object.keys(users)) if (users[key].extra) delete users[key];
    // No owner needed: without this the signed-out page would be the owner setup screen, not the sign-in form.
    await host.setup.markDone();
  } finally {
    await host.close();
  }
  execFileSync('sync');
  return { users, seedMs: performance.now() - started };
}

async function startServer(dataDir, configPath) {
  const args = await serveArgs(CLI, dataDir, { ui: true, extra: ['--config', configPath] });
  const server = await spawnServer(state, { args, untilDataFolder: true });
  if (server.url.hostname !== '127.0.0.1') throw new BenchError(`the server bound ${server.url.host}`);
  return server;
}

// ---------------------------------------------------------------------------------------------------------------
// CPU accounting: was the machine busy with other work?
// ---------------------------------------------------------------------------------------------------------------

/**
 * CPU seconds used by this process and all its descendants (server, Chromium and its helpers), counting
 * children they already reaped (cutime/cstime), so processes that ended during a phase still count.
 */
async function treeCpu() {
  const procs = new Map();
  const names = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  await Promise.all(
    names.map(async (name) => {
      try {
        const text = await readFile(`/proc/${name}/stat`, 'utf8');
        const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
        const seconds = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK;
        procs.set(Number(name), { ppid: Number(f[1]), seconds });
      } catch {
        // Gone meanwhile.
      }
    }),
  );
  const children = new Map();
  for (const [pid, { ppid }] of procs) {
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(pid);
  }
  let seconds = 0;
  let count = 0;
  const stack = [process.pid];
  while (stack.length) {
    const pid = stack.pop();
    const proc = procs.get(pid);
    if (proc) {
      seconds += proc.seconds;
      count++;
    }
    stack.push(...(children.get(pid) ?? []));
  }
  return { seconds, count };
}

async function cpuSnapshot() {
  const [machine, tree] = await Promise.all([machineCpu(), treeCpu()]);
  return { machine, tree, at: performance.now() };
}

/**
 * What else the machine did during a phase, in % of one CPU: `otherCpuPercent` is CPU used by processes other
 * than this bench, its server and its browser; `stealPercent` is time the hypervisor gave to other guests.
 */
function cpuShares(before, after) {
  const wall = (after.machine.total - before.machine.total) / os.cpus().length;
  if (!(wall > 0)) return { benchCpuPercent: NaN, otherCpuPercent: NaN, stealPercent: NaN, processes: 0 };
  const ours = after.tree.seconds - before.tree.seconds;
  const other = after.machine.busy - before.machine.busy - ours;
  return {
    benchCpuPercent: (100 * ours) / wall,
    otherCpuPercent: Math.max(0, (100 * other) / wall),
    stealPercent: (100 * (after.machine.steal - before.machine.steal)) / wall,
    processes: after.tree.count,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Browser
// ---------------------------------------------------------------------------------------------------------------

/**
 * In every page: stamps (performance.now(), ms since navigation start) the moment the first screen is there,
 * visible and usable, then the next animation frame (when it is on screen), and reports to Node through the
 * `__benchReady` binding. Signed out: the sign-in form's Username input (enabled; also notes when it has focus,
 * it is autofocused). Signed in: the shell's account name and its first enabled section button.
 */
const READY_SCRIPT = `
  (() => {
    if (window !== window.top || location.protocol !== 'http:') return;
    const visible = (el) => {
      if (!el) return false;
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && (el.checkVisibility ? el.checkVisibility() : true);
    };
    const signedOut = () => {
      const input = document.querySelector('form input[name="username"]');
      return visible(input) && !input.disabled ? input : null;
    };
    const signedIn = () => {
      const name = document.querySelector('[data-testid="signed-in-username"]');
      const nav = document.querySelector('nav[aria-label="Sections"] a');
      return visible(name) && visible(nav) ? nav : null;
    };
    const mark = { readyAt: null, frameAt: null, focusedAt: null, screen: null };
    window.__benchMark = mark;
    const check = () => {
      if (mark.readyAt === null) {
        const out = signedOut();
        const inn = out ? null : signedIn();
        if (!out && !inn) return;
        mark.readyAt = performance.now();
        mark.screen = out ? 'signedOut' : 'signedIn';
        requestAnimationFrame(() => {
          mark.frameAt = performance.now();
          window.__benchReady({ ...mark });
        });
      }
      if (mark.screen === 'signedOut' && mark.focusedAt === null) {
        const input = signedOut();
        if (input && document.activeElement === input) mark.focusedAt = performance.now();
      }
      if (mark.focusedAt !== null || (mark.screen === 'signedIn' && mark.readyAt !== null)) observer.disconnect();
    };
    const observer = new MutationObserver(check);
    observer.observe(document, { childList: true, subtree: true, attributes: true });
  })();
`;

/** In B's page: stamps every toast that appears (epoch ms, the clock Node uses) and the frame that shows it. */
const TOAST_SCRIPT = `
  (() => {
    if (window !== window.top || location.protocol !== 'http:') return;
    const seen = new WeakSet();
    const log = [];
    window.__benchToasts = log;
    new MutationObserver(() => {
      for (const el of document.querySelectorAll('[data-testid="toast"]')) {
        if (seen.has(el)) continue;
        seen.add(el);
        const entry = {
          at: performance.timeOrigin + performance.now(),
          frameAt: null,
          title: el.querySelector('.toast-title')?.textContent ?? '',
        };
        log.push(entry);
        window.__benchToast(log.length - 1);
        requestAnimationFrame(() => {
          entry.frameAt = performance.timeOrigin + performance.now();
        });
      }
    }).observe(document, { childList: true, subtree: true });
  })();
`;

const PAGE_TIMINGS = `
  (() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const js = performance
      .getEntriesByType('resource')
      .filter((e) => /\\.js(\\?|$)/.test(e.name))
      .map((e) => ({ transferSize: e.transferSize, encodedBodySize: e.encodedBodySize, decodedBodySize: e.decodedBodySize }));
    const api = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/')).length;
    return {
      responseEndMs: nav ? nav.responseEnd : null,
      domInteractiveMs: nav ? nav.domInteractive : null,
      domContentLoadedMs: nav ? nav.domContentLoadedEventEnd : null,
      loadEventMs: nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : null,
      firstContentfulPaintMs: fcp ? fcp.startTime : null,
      jsTransferBytes: js.reduce((s, e) => s + e.transferSize, 0),
      jsEncodedBytes: js.reduce((s, e) => s + e.encodedBodySize, 0),
      jsDecodedBytes: js.reduce((s, e) => s + e.decodedBodySize, 0),
      apiRequests: api,
    };
  })()
`;

async function launchBrowser() {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    // Our own handlers close it (and the server and the temp folder) on Ctrl-C.
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
    timeout: 60_000,
  });
  state.browser = browser;
  browser.on('disconnected', () => {
    if (state.browser === browser && !state.stopping) {
      process.emit('benchFatal', new BenchError('the browser went away during the run'));
    }
  });
  return browser;
}

/**
 * A fresh context (empty cache and storage; with `session`, that session stored before the page's scripts run)
 * and a page that records anything going wrong.
 */
async function openContext(browser, session) {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 820 },
    locale: 'en-US',
    timezoneId: 'UTC',
    serviceWorkers: 'block',
  });
  const problems = [];
  let onReady = () => undefined;
  const ready = new Promise((resolveReady) => (onReady = resolveReady));
  await context.exposeBinding('__benchReady', (_source, mark) =>
    onReady({ wallAt: performance.now(), mark }),
  );
  if (session) {
    const value = JSON.stringify({ userid: session.id, tokenContent: session.token });
    await context.addInitScript({
      content: `try { localStorage.setItem(${JSON.stringify(SESSION_STORAGE_KEY)}, ${JSON.stringify(value)}); } catch {}`,
    });
  }
  await context.addInitScript({ content: READY_SCRIPT });
  return { context, problems, ready };
}

function watchPage(page, problems) {
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
}

/** One load in a fresh context: navigation start -> the expected first screen, visible and enabled. */
async function measureLoad(browser, url, session) {
  const { context, problems, ready } = await openContext(browser, session);
  try {
    const page = await context.newPage();
    watchPage(page, problems);
    const started = performance.now();
    await page.goto(url, { waitUntil: 'commit', timeout: LOAD_TIMEOUT_MS });
    const { wallAt, mark } = await withTimeout(
      ready,
      LOAD_TIMEOUT_MS,
      'waiting for the page to become interactive',
    );
    const expected = session ? 'signedIn' : 'signedOut';
    if (mark.screen !== expected) {
      throw new BenchError(`the page showed the ${mark.screen} screen, expected ${expected}`);
    }
    // What the stamps claim, checked the way the e2e tests look at the page (not timed).
    if (session) {
      const name = await page.getByTestId('signed-in-username').textContent();
      if (name !== session.username)
        throw new BenchError(`signed in as ${name}, expected ${session.username}`);
    } else {
      await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 5000 });
      if (!(await page.getByLabel('Username', { exact: true }).isEnabled())) {
        throw new BenchError('the Username input is not enabled');
      }
    }
    const timings = await page.evaluate(PAGE_TIMINGS);
    if (!session && mark.focusedAt === null) {
      mark.focusedAt = await page.evaluate('window.__benchMark.focusedAt');
    }
    if (problems.length) throw new BenchError(`problems in the page:\n  ${problems.join('\n  ')}`);
    return {
      inPageMs: mark.readyAt,
      frameMs: mark.frameAt,
      focusedMs: mark.focusedAt,
      wallMs: wallAt - started,
      ...timings,
    };
  } finally {
    await context.close().catch(() => undefined);
  }
}

async function runLoads(options, browser, url, session, label) {
  for (let i = 0; i < options.warmup; i++) {
    progress(options, `  ${label}: warm-up load ${i + 1}/${options.warmup}`);
    await measureLoad(browser, url, session);
  }
  const before = await cpuSnapshot();
  const samples = [];
  for (let i = 0; i < options.loads; i++) {
    const sample = await measureLoad(browser, url, session);
    samples.push(sample);
    progress(
      options,
      `  ${label}: load ${i + 1}/${options.loads}: ${fmt.ms(sample.frameMs)} ms in page, ` +
        `${fmt.ms(sample.wallMs)} ms wall`,
    );
  }
  const after = await cpuSnapshot();
  const pick = (key) => summarize(samples.map((s) => s[key]).filter((v) => typeof v === 'number'));
  return {
    loads: samples.length,
    // Navigation start -> first frame showing the screen (the figure with the target).
    inPage: pick('frameMs'),
    // Navigation start -> the DOM had it (before that frame).
    domReady: pick('inPageMs'),
    // page.goto() called in Node -> Node told the frame is there (includes the CDP round trips).
    wall: pick('wallMs'),
    focused: pick('focusedMs'),
    firstContentfulPaint: pick('firstContentfulPaintMs'),
    domContentLoaded: pick('domContentLoadedMs'),
    jsTransferBytes: samples[0]?.jsTransferBytes ?? NaN,
    jsDecodedBytes: samples[0]?.jsDecodedBytes ?? NaN,
    apiRequests: samples[0]?.apiRequests ?? NaN,
    samples,
    cpu: cpuShares(before, after),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Invite request -> toast
// ---------------------------------------------------------------------------------------------------------------

/** A raw socket of user A, verified. Messages after that go to `onMessage`. */
async function openSocket(url, user) {
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: 10_000 });
  state.sockets.add(ws);
  const listeners = new Set();
  const socket = {
    ws,
    on: (fn) => listeners.add(fn),
    off: (fn) => listeners.delete(fn),
    send(payload) {
      ws.send(payload);
    },
    close() {
      state.sockets.delete(ws);
      ws.terminate();
    },
  };
  await withTimeout(
    new Promise((resolveOpen, reject) => {
      ws.once('error', reject);
      ws.once('close', (code) => reject(new BenchError(`A's socket closed before verifying (code ${code})`)));
      ws.once('open', () =>
        ws.send(JSON.stringify({ userId: user.id, tokenContent: user.token, message: 'auth', args: {} })),
      );
      ws.on('message', (data) => {
        const at = epochNow();
        let parsed;
        try {
          parsed = JSON.parse(data.toString());
        } catch {
          return;
        }
        if (parsed.message === 'authenticated') resolveOpen();
        else if (parsed.message === 'authfailed')
          reject(new BenchError(`A's socket: ${parsed.result?.reason}`));
        for (const fn of listeners) fn(parsed, at);
      });
    }),
    10_000,
    "verifying A's socket",
  );
  ws.on('close', (code) => {
    if (state.sockets.has(ws) && !state.stopping) {
      process.emit('benchFatal', new BenchError(`A's socket closed during the run (code ${code})`));
    }
  });
  return socket;
}

/**
 * Offset of the page's clock (performance.timeOrigin + performance.now()) from Node's, from the round trip with
 * the shortest time; both read the same system clock, so it should be well under a millisecond.
 */
async function clockOffset(page) {
  let best = { rttMs: Infinity, offsetMs: NaN };
  for (let i = 0; i < CLOCK_ROUNDS; i++) {
    const t0 = epochNow();
    const pageAt = await page.evaluate('performance.timeOrigin + performance.now()');
    const t1 = epochNow();
    if (t1 - t0 < best.rttMs) best = { rttMs: t1 - t0, offsetMs: pageAt - (t0 + t1) / 2 };
  }
  return best;
}

async function runInvites(options, browser, server, users) {
  const { context, problems, ready } = await openContext(browser, users.b);
  let onToast = () => undefined;
  await context.exposeBinding('__benchToast', (_source, index) => onToast(index));
  await context.addInitScript({ content: TOAST_SCRIPT });
  let socket = null;
  try {
    const page = await context.newPage();
    watchPage(page, problems);
    await page.goto(server.url.href, { waitUntil: 'commit', timeout: LOAD_TIMEOUT_MS });
    const { mark } = await withTimeout(ready, LOAD_TIMEOUT_MS, "waiting for B's page");
    if (mark.screen !== 'signedIn') throw new BenchError(`B's page showed the ${mark.screen} screen`);

    socket = await openSocket(`ws://${server.url.host}/`, users.a);
    const payload = JSON.stringify({
      userId: users.a.id,
      message: 'RequestInvite',
      args: { targetUserId: users.b.id },
    });
    const expectedTitle = `${users.a.username} asks to join you`;

    /** One request: resolves with the stamps, or with { offline } when B was not reachable yet. */
    const once = async () => {
      const toast = new Promise((resolveToast) => (onToast = resolveToast));
      let onAnswer;
      const answer = new Promise((resolveAnswer, reject) => {
        onAnswer = (message, at) => {
          if (message.message === 'sentinviterequest') resolveAnswer({ ackAt: at });
          else if (message.message === 'failedtorequestinvite') {
            if (message.result?.reason === 'OFFLINE') resolveAnswer({ offline: true });
            else reject(new BenchError(`the invite request was refused: ${JSON.stringify(message.result)}`));
          } else if (message.message === 'error') {
            reject(new BenchError(`A's socket got an error: ${JSON.stringify(message.result)}`));
          }
        };
        socket.on(onAnswer);
      });
      try {
        const sentAt = epochNow();
        socket.send(payload);
        const first = await withTimeout(
          Promise.race([answer.then((a) => ({ answer: a })), toast.then((index) => ({ index }))]),
          TOAST_TIMEOUT_MS,
          "waiting for the toast in B's page (or a refusal on A's socket)",
        );
        if (first.answer?.offline) return { offline: true };
        const index =
          first.index ?? (await withTimeout(toast, TOAST_TIMEOUT_MS, "waiting for the toast in B's page"));
        const { ackAt } =
          first.answer ?? (await withTimeout(answer, TOAST_TIMEOUT_MS, "waiting for A's ack"));
        // The frame stamp follows on the next animation frame.
        // Predicates are functions, not strings: Playwright evals string predicates in the page, which the UI's
        // CSP (script-src 'self', no 'unsafe-eval') rightly refuses. (In the page, globalThis is window.)
        await page.waitForFunction((i) => globalThis.__benchToasts[i].frameAt !== null, index, {
          timeout: TOAST_TIMEOUT_MS,
        });
        const entry = await page.evaluate(`window.__benchToasts[${index}]`);
        if (entry.title !== expectedTitle) {
          throw new BenchError(
            `unexpected toast ${JSON.stringify(entry.title)}, expected "${expectedTitle}"`,
          );
        }
        return { toastMs: entry.at - sentAt, frameMs: entry.frameAt - sentAt, ackMs: ackAt - sentAt };
      } finally {
        socket.off(onAnswer);
      }
    };

    /** Closes every toast and waits until none is left (each request then starts from the same screen). */
    const dismissAll = async () => {
      await page.evaluate(`for (const b of document.querySelectorAll('.toast-close')) b.click();`);
      await page.waitForFunction(() => !globalThis.document.querySelector('[data-testid="toast"]'), null, {
        timeout: TOAST_TIMEOUT_MS,
      });
    };

    // B's socket verifies a little after the shell shows: until then the host answers OFFLINE.
    const onlineBy = performance.now() + ONLINE_WAIT_MS;
    for (let done = 0; done < Math.max(1, options.warmup);) {
      const result = await once();
      if (result.offline) {
        if (performance.now() > onlineBy) {
          throw new BenchError(`B was still OFFLINE for invite requests after ${ONLINE_WAIT_MS / 1000} s`);
        }
        await sleep(100);
        continue;
      }
      done++;
      await dismissAll();
      progress(options, `  warm-up request: toast after ${fmt.ms(result.toastMs)} ms`);
    }
    const clock = await clockOffset(page);

    const before = await cpuSnapshot();
    const samples = [];
    for (let i = 0; i < options.invites; i++) {
      const [low, high] = INVITE_GAP_MS;
      await sleep(low + Math.random() * (high - low));
      const result = await once();
      if (result.offline) throw new BenchError('B went OFFLINE for invite requests during the run');
      samples.push(result);
      progress(
        options,
        `  request ${i + 1}/${options.invites}: toast in DOM ${fmt.ms(result.toastMs)} ms, ` +
          `on screen ${fmt.ms(result.frameMs)} ms, A's ack ${fmt.ms(result.ackMs)} ms`,
      );
      await dismissAll();
    }
    const after = await cpuSnapshot();
    if (problems.length) throw new BenchError(`problems in B's page:\n  ${problems.join('\n  ')}`);
    const pick = (key) => summarize(samples.map((s) => s[key]));
    return {
      requests: samples.length,
      toast: pick('toastMs'),
      frame: pick('frameMs'),
      ack: pick('ackMs'),
      clock,
      samples,
      cpu: cpuShares(before, after),
    };
  } finally {
    socket?.close();
    await context.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------------------------

function summarize(values) {
  const sorted = [...values].sort((x, y) => x - y);
  return {
    count: sorted.length,
    p50: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    min: sorted.length ? sorted[0] : NaN,
  };
}

const fmt = {
  int: (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a'),
  ms: (n) =>
    Number.isFinite(n)
      ? n < 10
        ? n.toFixed(2)
        : n < 100
          ? n.toFixed(1)
          : Math.round(n).toLocaleString('en-US')
      : 'n/a',
  kb: (bytes) => (Number.isFinite(bytes) ? `${(bytes / 1000).toFixed(1)} kB` : 'n/a'),
  pct: (n) => (Number.isFinite(n) ? `${Math.round(n)}%` : 'n/a'),
};

/** The figures with a target; a phase that was not run (--phases) leaves its rows out. */
function buildTargets(r) {
  const rows = [];
  const row = (name, value, shown, limit, target) =>
    rows.push({ name, value, limit, pass: value < limit, shown, target });
  for (const [key, label] of [
    ['signedOut', 'signed-out load'],
    ['signedIn', 'signed-in load'],
  ]) {
    const l = r.load?.[key];
    if (!l) continue;
    row(
      `${label} (in page)`,
      l.inPage.p95,
      `${fmt.ms(l.inPage.p50)} / ${fmt.ms(l.inPage.p95)} ms`,
      TARGETS.loadMs,
      `p95 < ${fmt.int(TARGETS.loadMs)} ms`,
    );
    row(
      `${label} (wall)`,
      l.wall.p95,
      `${fmt.ms(l.wall.p50)} / ${fmt.ms(l.wall.p95)} ms`,
      TARGETS.loadMs,
      `p95 < ${fmt.int(TARGETS.loadMs)} ms`,
    );
  }
  if (r.size) {
    row(
      'JS shipped, gzip -9',
      r.size.all.gzipBytes,
      fmt.kb(r.size.all.gzipBytes),
      TARGETS.jsGzipBytes,
      `< ${fmt.kb(TARGETS.jsGzipBytes)}`,
    );
  }
  if (r.invite) {
    const t = r.invite.toast;
    row(
      'requestinvite -> toast',
      t.p95,
      `${fmt.ms(t.p50)} / ${fmt.ms(t.p95)} / ${fmt.ms(t.max)} ms`,
      TARGETS.inviteToToastMs,
      `p95 < ${fmt.int(TARGETS.inviteToToastMs)} ms`,
    );
  }
  return rows;
}

function printTable(r) {
  const lines = [];
  const pad = (cells, widths) =>
    cells
      .map((cell, i) => String(cell).padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  lines.push('');
  lines.push(
    `Hypernex Companion UI bench: ${r.config.phases.join(', ')}` +
      (r.load ? `; ${r.config.loads} loads of each kind` : '') +
      (r.invite ? `; ${r.config.invites} invite requests` : '') +
      (r.load || r.invite ? `; ${r.config.warmup} warm-up each` : ''),
  );
  lines.push(
    `${r.env.cpuModel}, ${r.env.cpus} CPUs, Node ${r.env.node}${r.env.browser ? `, ${r.env.browser}` : ''}, ` +
      `load average at start ${r.env.loadAverage.map((n) => n.toFixed(2)).join(' ')}`,
  );
  if (r.server)
    lines.push(`server started in ${fmt.int(r.server.startupMs)} ms; seeded in ${fmt.int(r.seedMs)} ms`);
  lines.push('');
  const widths = [26, 28, 18, 4];
  lines.push(pad(['figure', 'result: p50 / p95 [/ max]', 'target', ''], widths));
  lines.push(pad(['-'.repeat(26), '-'.repeat(28), '-'.repeat(18), '-'.repeat(4)], widths));
  const info = (name, shown) => lines.push(pad([name, shown, '(no target)', ''], widths));
  const verdict = (name) => {
    const t = r.targets.find((x) => x.name === name);
    if (t) lines.push(pad([t.name, t.shown, t.target, t.pass ? 'ok' : 'MISS'], widths));
  };
  for (const [key, label] of [
    ['signedOut', 'signed-out load'],
    ['signedIn', 'signed-in load'],
  ]) {
    const l = r.load?.[key];
    if (!l) continue;
    verdict(`${label} (in page)`);
    verdict(`${label} (wall)`);
    info(`  DOM ready p50 / p95`, `${fmt.ms(l.domReady.p50)} / ${fmt.ms(l.domReady.p95)} ms`);
    info(`  first paint p50`, `${fmt.ms(l.firstContentfulPaint.p50)} ms`);
    if (key === 'signedOut') info(`  input focused p50`, `${fmt.ms(l.focused.p50)} ms`);
    info(`  JS over the wire`, `${fmt.kb(l.jsTransferBytes)} (${l.apiRequests} API calls)`);
  }
  if (r.size) {
    verdict('JS shipped, gzip -9');
    info('  JS shipped, raw', `${fmt.kb(r.size.all.rawBytes)} in ${r.size.all.count} file(s)`);
    info(
      '  loaded by index.html',
      `${fmt.kb(r.size.initial.gzipBytes)} gz, ${fmt.kb(r.size.initial.rawBytes)} raw`,
    );
    info('  CSS, gzip -9 / raw', `${fmt.kb(r.size.css.gzipBytes)} / ${fmt.kb(r.size.css.rawBytes)}`);
  }
  if (r.invite) {
    verdict('requestinvite -> toast');
    info(
      '  to first frame',
      `${fmt.ms(r.invite.frame.p50)} / ${fmt.ms(r.invite.frame.p95)} / ${fmt.ms(r.invite.frame.max)} ms`,
    );
    info(
      "  A's ack (durable)",
      `${fmt.ms(r.invite.ack.p50)} / ${fmt.ms(r.invite.ack.p95)} / ${fmt.ms(r.invite.ack.max)} ms`,
    );
    info(
      '  page clock - Node clock',
      `${r.invite.clock.offsetMs.toFixed(2)} ms (+/- ${(r.invite.clock.rttMs / 2).toFixed(2)})`,
    );
  }
  lines.push('');
  if (r.load) {
    lines.push(
      'load: navigation start -> first frame showing the sign-in form (Username input visible and enabled) or',
      'the shell (account name and a section button), each load in a fresh browser context; wall: page.goto()',
      'in Node -> Node told of that frame. With fewer than 20 loads, p95 is the slowest load.',
    );
  }
  if (r.invite) {
    lines.push(
      "requestinvite: A's send on a raw socket -> the toast element in B's DOM (MutationObserver; one clock).",
    );
  }
  const cpuRows = [
    ['signed-out loads', r.load?.signedOut?.cpu],
    ['signed-in loads', r.load?.signedIn?.cpu],
    ['invite requests', r.invite?.cpu],
  ].filter(([, cpu]) => cpu);
  if (cpuRows.length) {
    lines.push('');
    const pw = [20, 10, 10, 9, 6];
    lines.push(pad(['phase', 'bench CPU', 'processes', 'other CPU', 'steal'], pw));
    for (const [name, cpu] of cpuRows) {
      const cells = [name, fmt.pct(cpu.benchCpuPercent), cpu.processes];
      lines.push(pad([...cells, fmt.pct(cpu.otherCpuPercent), fmt.pct(cpu.stealPercent)], pw));
    }
    lines.push(
      'CPU in % of one core. bench CPU: this script, the server and Chromium; other CPU: everything else on the',
      'machine (e.g. a build or test run elsewhere); steal: time the hypervisor gave to other guests.',
    );
  }
  if (r.busyMachine) {
    lines.push(
      `WARNING: the machine was busy with other work (other CPU or steal above ${BUSY_PERCENT}% during a`,
      'phase): these times are longer than on a quiet machine. Run again when it is quiet.',
    );
  }
  if (r.uiBuildStale) {
    lines.push(
      'NOTE: files under renderer/ are newer than dist/renderer: these figures describe the last build ' +
        '(npm run build to refresh).',
    );
  }
  if (r.serverStderr) {
    lines.push('');
    lines.push('server stderr:');
    lines.push(r.serverStderr.trimEnd());
  }
  lines.push('');
  process.stdout.write(lines.join('\n'));
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
  const options = parseOptions();
  const onSignal = (signal) => {
    state.stopping = true;
    process.stderr.write(`\n${signal}: closing the browser, stopping the server, removing the temp folder\n`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Last resort if something throws past the handlers (playwright-core kills its browser on exit by itself).
  process.once('exit', () => {
    if (state.server) state.server.child.kill('SIGKILL');
    if (state.tempDir) rmSync(state.tempDir, RM_OPTIONS);
  });
  const fatal = new Promise((_, reject) => {
    process.on('benchFatal', reject);
    const timer = setTimeout(
      () => reject(new BenchError(`the run took longer than --timeout ${options.timeoutSeconds} s`)),
      options.timeoutSeconds * 1000,
    );
    timer.unref();
  });
  fatal.catch(() => undefined);
  const guard = (promise) => Promise.race([promise, fatal]);

  checkPrerequisites(options);
  const result = {
    config: {
      loads: options.loads,
      invites: options.invites,
      warmup: options.warmup,
      phases: options.phases,
    },
    env: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown CPU',
      loadAverage: os.loadavg(),
      browser: null,
    },
    targetsDefined: TARGETS,
    uiBuildStale: uiBuildLooksStale(),
  };

  if (options.phases.includes('size')) {
    progress(options, 'measuring the JS in dist/renderer/assets ...');
    result.size = await measureSize();
  }

  const needsServer = ['load', 'invite', 'social'].some((p) => options.phases.includes(p));
  let exit = null;
  if (needsServer) {
    state.tempDir = await mkdtemp(join(os.tmpdir(), 'hypernex-bench-ui-'));
    const dataDir = join(state.tempDir, 'data');
    const configPath = join(state.tempDir, 'config.json');
    await mkdir(dataDir);
    const overrides = { socket: { inviteRequestCooldownSeconds: 0 } };
    await writeFile(configPath, JSON.stringify(overrides));
    progress(options, `seeding ${Object.keys(USERNAMES).length} users in ${dataDir} ...`);
    const seeded = await guard(seed(dataDir, overrides));
    result.seedMs = seeded.seedMs;

    progress(options, 'starting the server and the browser ...');
    const server = await guard(startServer(dataDir, configPath));
    const home = await fetch(server.url.href, { signal: AbortSignal.timeout(10_000) });
    const homeText = await home.text();
    if (home.status !== 200 || !homeText.includes('<div id="root">')) {
      throw new BenchError(`the server did not serve the UI at / (HTTP ${home.status})`);
    }
    const browser = await guard(launchBrowser());
    result.env.browser = `Chromium ${browser.version()}`;
    result.server = { url: server.url.href, startupMs: server.startupMs };

    if (options.phases.includes('load')) {
      progress(options, `1) page loads, ${options.loads} signed out and ${options.loads} signed in ...`);
      result.load = {};
      result.load.signedOut = await guard(runLoads(options, browser, server.url.href, null, 'signed out'));
      result.load.signedIn = await guard(
        runLoads(options, browser, server.url.href, seeded.users.c, 'signed in'),
      );
    }
    if (options.phases.includes('invite')) {
      progress(options, `3) ${options.invites} invite requests, A's raw socket -> toast in B's page ...`);
      result.invite = await guard(runInvites(options, browser, server, seeded.users));
    }
    if (options.phases.includes('social')) {
      progress(
        options,
        "4) friend request and acceptance to the other side's screen; Friends with 200 friends ...",
      );
      const open = async (session) => {
        const { context } = await openContext(browser, session);
        const page = await context.newPage();
        page.setDefaultTimeout(10_000);
        return { page, close: () => context.close() };
      };
      result.social = await guard(runSocial({ url: server.url.href, rounds: 10, open, users: seeded.users }));
    }

    state.browser = null;
    await withTimeout(browser.close(), 15_000, 'closing the browser').catch(() => undefined);
    exit = await stopServer(state, server);
    result.serverStderr = server.stderr;
    await removeStateDir(state, 'tempDir');
  }

  result.targets = buildTargets(result);
  const phasesCpu = [result.load?.signedOut?.cpu, result.load?.signedIn?.cpu, result.invite?.cpu].filter(
    Boolean,
  );
  result.busyMachine = phasesCpu.some(
    (c) => c.otherCpuPercent > BUSY_PERCENT || c.stealPercent > BUSY_PERCENT,
  );
  result.valid = !exit || exit.code === 0;
  if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    printTable(result);
    if (result.social) printSocial(result.social);
  }
  if (exit && exit.code !== 0) {
    process.stderr.write(`the server exited with code ${exit.code} (signal ${exit.signal})\n`);
  }
  return result.valid ? 0 : 1;
}

function printSocial(social) {
  const stats = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    return { p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
  };
  const line = (label, values) => {
    const s = stats(values);
    const ok = s.p95 < SOCIAL_TARGETS.socialPushMs ? 'ok' : 'MISSED';
    process.stdout.write(
      `${label.padEnd(44)} p50 ${s.p50} ms  p95 ${s.p95} ms  max ${s.max} ms  (target p95 < ${SOCIAL_TARGETS.socialPushMs} ms: ${ok})\n`,
    );
  };
  process.stdout.write('\nsocial (issue 18)\n');
  line("friend request -> target's Friends screen", social.request);
  line("acceptance -> sender's Friends screen", social.accept);
  const ok = social.friendsRenderRequests <= SOCIAL_TARGETS.friendsRenderRequests ? 'ok' : 'MISSED';
  process.stdout.write(
    `Friends with ${MANY_FRIENDS} friends: ${social.friendsRenderRequests} API requests (${social.friendsRenderCalls.join(', ')}), ` +
      `rendered in ${Math.round(social.friendsRenderMs)} ms (target <= ${SOCIAL_TARGETS.friendsRenderRequests} requests: ${ok})\n`,
  );
}

main()
  .then(async (code) => {
    await cleanup();
    process.exitCode = code;
  })
  .catch(async (error) => {
    // After Ctrl-C, errors of the interrupted work (browser closed, server stopped) are expected.
    if (state.stopping) return;
    process.stderr.write(`bench failed: ${error instanceof BenchError ? error.message : error.stack}\n`);
    await cleanup();
    process.exitCode = 1;
  });
