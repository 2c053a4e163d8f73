import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { BenchError, ROOT, startHost, within } from '../harness/host.js';
import { post } from '../harness/http.js';
import { seed } from '../harness/seed.js';
import { socketDriver, userAuth } from '../harness/socket.js';
import { spread, summary } from '../harness/stats.js';

const UI = join(ROOT, 'dist', 'renderer');
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-sync', '--no-first-run'];
ARGS.push('--disable-background-networking', '--disable-component-update');
const VIEWPORT = { width: 1280, height: 820 };
const CONTEXT = { viewport: VIEWPORT, locale: 'en-US', timezoneId: 'UTC', serviceWorkers: 'block' };
const SESSION_KEY = 'hypernex-companion.session'; // renderer/shared/session.ts
const FRIENDS = 200;
const CONFIG = { socket: { inviteRequestCooldownSeconds: 0 } };
/** In each page: when the first screen (sign-in form or the shell) is visible and enabled, then its frame. */
const READY = `(() => {
  if (window !== window.top || location.protocol !== 'http:') return;
  const visible = (el) => el && el.getBoundingClientRect().width > 0 && (!el.checkVisibility || el.checkVisibility());
  const observer = new MutationObserver(() => {
    const input = document.querySelector('form input[name="username"]');
    const out = visible(input) && !input.disabled;
    const inn = visible(document.querySelector('[data-testid="signed-in-username"]')) && visible(document.querySelector('nav[aria-label="Sections"] a'));
    if (!out && !inn) return;
    observer.disconnect();
    requestAnimationFrame(() => window.__benchReady({ frameMs: performance.now(), screen: out ? 'signedOut' : 'signedIn' }));
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
})();`;
/** Stamps (epoch ms, the clock Node uses) every toast that appears and every watched selector's first match. */
const MARKS = `(() => {
  window.__toasts = []; window.__marks = {}; window.__watch = {};
  const seen = new WeakSet();
  new MutationObserver(() => {
    const at = performance.timeOrigin + performance.now();
    for (const el of document.querySelectorAll('[data-testid="toast"]')) {
      if (seen.has(el)) continue;
      seen.add(el);
      window.__toasts.push({ at, title: el.querySelector('.toast-title')?.textContent ?? '' });
    }
    for (const [key, selector] of Object.entries(window.__watch))
      if (window.__marks[key] === undefined && document.querySelector(selector)) window.__marks[key] = at;
  }).observe(document, { childList: true, subtree: true, attributes: true });
})();`;
const epoch = () => performance.timeOrigin + performance.now();

/** All the JS the UI ships (dist/renderer/assets), gzip -9. */
async function jsSize() {
  let bytes = 0;
  for (const name of await readdir(join(UI, 'assets')))
    if (name.endsWith('.js'))
      bytes += gzipSync(await readFile(join(UI, 'assets', name)), { level: 9 }).length;
  return bytes;
}

/** A fresh context (empty cache; `session` stored before the page's scripts run) and a page in it. */
async function open(browser, session, url) {
  const context = await browser.newContext(CONTEXT);
  const problems = [];
  let onReady;
  const ready = new Promise((resolveReady) => (onReady = resolveReady));
  await context.exposeBinding('__benchReady', (_, mark) => onReady({ ...mark, wallAt: performance.now() }));
  const value = JSON.stringify(JSON.stringify({ userid: session?.id, tokenContent: session?.token }));
  const store = session ? `try { localStorage.setItem('${SESSION_KEY}', ${value}); } catch {}` : '';
  for (const content of [store, READY, MARKS]) await context.addInitScript({ content });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const started = performance.now();
  await page.goto(url, { waitUntil: 'commit' });
  const mark = await within(20_000, ready, 'the page showed no first screen within 20 s');
  if (mark.screen !== (session ? 'signedIn' : 'signedOut'))
    throw new BenchError(`the page showed ${mark.screen}`);
  const check = () => {
    if (problems.length) throw new BenchError(`problems in the page: ${problems.join('; ')}`);
  };
  const wallMs = mark.wallAt - started;
  return { page, frameMs: mark.frameMs, wallMs, check, close: () => context.close() };
}

/** Runs `send` and resolves with the ms until `selector` first matched in the tab (stamped in the page). */
async function pushed(tab, key, selector, send) {
  await tab.page.evaluate(([k, s]) => (globalThis.__watch[k] = s), [key, selector]);
  const sentAt = epoch();
  await send();
  await tab.page.waitForFunction((k) => globalThis.__marks[k] !== undefined, key);
  return (await tab.page.evaluate((k) => globalThis.__marks[k], key)) - sentAt;
}

async function invites(ctx, browser, host, { a, b }) {
  const tab = await open(browser, b, host.url.href);
  const driver = socketDriver();
  const answers = [];
  const onMessage = (data) => {
    const [at, answer] = [epoch(), JSON.parse(data.toString())];
    if (answer.message !== 'friendstatus') answers.push([answer, at]);
  };
  const socket = await driver.open(host.wsUrl, { auth: userAuth(a), onMessage });
  const once = async () => {
    answers.length = 0;
    const before = await tab.page.evaluate(() => globalThis.__toasts.length);
    const sentAt = epoch();
    socket.send({ userId: a.id, message: 'RequestInvite', args: { targetUserId: b.id } });
    for (const end = sentAt + 5000; !answers.length; await sleep(2))
      if (epoch() > end) throw new BenchError("no answer on A's socket");
    const [answer, ackAt] = answers[0];
    if (answer.result?.reason === 'OFFLINE') return null;
    if (answer.message !== 'sentinviterequest') throw new BenchError(`refused: ${JSON.stringify(answer)}`);
    await tab.page.waitForFunction((n) => globalThis.__toasts.length > n, before, { timeout: 5000 });
    const toast = await tab.page.evaluate((n) => globalThis.__toasts[n], before);
    if (toast.title !== `${a.username} asks to join you`) throw new BenchError(`toast ${toast.title}`);
    const close = () => globalThis.document.querySelectorAll('.toast-close').forEach((x) => x.click());
    await tab.page.evaluate(close);
    await tab.page.waitForFunction(() => !globalThis.document.querySelector('[data-testid="toast"]'));
    return { toastMs: toast.at - sentAt, ackMs: ackAt - sentAt };
  };
  // B's socket verifies a little after the shell shows (OFFLINE until then): the first requests warm up.
  const [warm, until, samples] = [Math.max(1, ctx.options.warmup), performance.now() + 10_000, []];
  while (samples.length < warm + ctx.options.invites) {
    await sleep(50 + Math.random() * 200);
    const s = await once();
    if (s) samples.push(s);
    else if (samples.length || performance.now() > until) throw new BenchError('B was OFFLINE for invites');
  }
  samples.splice(0, warm);
  tab.check();
  driver.closeAll();
  await tab.close();
  return { toast: summary(samples.map((s) => s.toastMs)), ack: summary(samples.map((s) => s.ackMs)) };
}

async function social(browser, url, { d, e, f }) {
  const fay = await open(browser, f, `${url}#/account`);
  await fay.page.waitForLoadState('networkidle');
  const calls = [];
  fay.page.on('request', (r) => r.url().includes('/api/v1/') && calls.push(new URL(r.url()).pathname));
  const started = performance.now();
  await fay.page.locator('nav[aria-label="Sections"] a', { hasText: 'Friends' }).click();
  const rows = (n) => globalThis.document.querySelectorAll('[data-testid="friend-row"]').length === n;
  await fay.page.waitForFunction(rows, FRIENDS);
  const renderMs = performance.now() - started;
  await fay.page.waitForLoadState('networkidle');
  await fay.close();
  const [dan, eve] = [await open(browser, d, `${url}#/friends`), await open(browser, e, `${url}#/friends`)];
  for (const tab of [dan, eve])
    await tab.page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();
  const as = (u, other) => ({ userid: u.id, tokenContent: u.token, targetUserId: other.id });
  const row = (testid, u) => `[data-testid="${testid}"][data-username="${u.username}"]`;
  const [request, accept] = [[], []];
  for (let round = 0; round <= 10; round++) {
    const sent = () => post(url, 'sendFriendRequest', as(e, d));
    const r = await pushed(dan, `req${round}`, row('incoming-request', e), sent);
    const accepted = () => post(url, 'acceptFriendRequest', as(d, e));
    const a = await pushed(eve, `acc${round}`, row('friend-row', d), accepted);
    if (round > 0) [request[round - 1], accept[round - 1]] = [r, a];
    await post(url, 'removeFriend', as(e, d));
    const gone = (selector) => !globalThis.document.querySelector(selector);
    await dan.page.waitForFunction(gone, row('friend-row', e));
    await eve.page.waitForFunction(gone, row('friend-row', d));
  }
  await dan.close();
  await eve.close();
  return { calls, renderMs, request: summary(request), accept: summary(accept) };
}

/** BenchAnn and BenchBea (friends), BenchCal, BenchDan, BenchEve and BenchFay (FRIENDS friends); setup done. */
async function people(api) {
  const ids = Object.fromEntries([...'abcdef'].map((k) => [k, api.ids.id('user')]));
  const many = Array.from({ length: FRIENDS }, (_, i) =>
    api.newUser({ username: `fr${String(i).padStart(3, '0')}`, friends: [ids.f] }),
  );
  const friends = { a: [ids.b], b: [ids.a], f: many.map((u) => u.id) };
  const users = {};
  for (const [i, name] of 'Ann Bea Cal Dan Eve Fay'.split(' ').entries()) {
    const k = 'abcdef'[i];
    users[k] = await api.user({ id: ids[k], username: `Bench${name}`, friends: friends[k] });
  }
  for (const u of many) await api.put('users', u.record);
  await api.host.setup.markDone(); // the signed-out page is then the sign-in form, not the owner setup
  return { users };
}

export default {
  describe:
    'The served UI in Chromium: load to the first screen, signed out and in, each in a fresh context; the gzipped ' +
    "JS shipped; RequestInvite on A's raw socket to the toast in B's page; a friend request and its acceptance to " +
    `the other side's Friends screen; the API requests of Friends with ${FRIENDS} friends. Needs ${CHROMIUM}.`,
  options: {
    loads: { default: 10, help: 'measured loads of each kind' },
    invites: { default: 20, help: 'measured invite requests' },
    warmup: { default: 1, help: 'unreported loads of each kind and invite requests first' },
    phases: { default: 'load,size,invite,social', help: 'a subset of load,size,invite,social' },
  },
  seed(ctx) {
    if (!existsSync(join(UI, 'index.html'))) throw new BenchError('the built UI is missing: npm run build');
    if (!existsSync(CHROMIUM)) throw new BenchError(`no ${CHROMIUM}: apt-get install -y chromium`);
    return seed(ctx, people, CONFIG);
  },

  async load(ctx, { users }) {
    const o = ctx.options;
    const { phases } = o;
    const rows = [];
    if (phases.includes('size')) rows.push(['JS shipped, gzip -9', await jsSize(), 'kB', ['<', 250_000]]);
    if (!phases.some((p) => p !== 'size')) return { rows };
    const host = await startHost(ctx, { ui: true, config: CONFIG });
    const launch = { executablePath: CHROMIUM, args: ARGS, handleSIGINT: false, handleSIGTERM: false };
    const browser = await chromium.launch(launch);
    ctx.cleanupScenario = () => browser.close();
    if (phases.includes('load')) {
      for (const session of [null, users.c]) {
        const label = session ? 'signed in' : 'signed out';
        const samples = [];
        for (let i = 0; i < o.warmup + o.loads; i++) {
          ctx.progress(`${label}: load ${i + 1}`);
          const tab = await ctx.guard(open(browser, session, host.url.href));
          tab.check();
          if (i >= o.warmup) samples.push(tab);
          await tab.close();
        }
        const inPage = summary(samples.map((s) => s.frameMs));
        const wall = summary(samples.map((s) => s.wallMs));
        rows.push([`${label} load p95, in page`, inPage.p95, 'ms', ['<', 1000]]);
        rows.push([`${label} load p95, wall`, wall.p95, 'ms', ['<', 1000]]);
        rows.push([`${label} load p50 / p95 in page`, spread(inPage, ['p50', 'p95'], 1)]);
      }
    }
    if (phases.includes('invite')) {
      ctx.progress(`${o.invites} invite requests ...`);
      const r = await ctx.guard(invites(ctx, browser, host, users));
      rows.push(['requestinvite -> toast p95', r.toast.p95, 'ms', ['<', 100]]);
      rows.push(['requestinvite -> toast p50 / max', spread(r.toast, ['p50', 'max'], 1)]);
      rows.push(["A's durable answer p50 / p95", spread(r.ack, ['p50', 'p95'], 1)]);
    }
    if (phases.includes('social')) {
      ctx.progress('friend requests and acceptances; Friends with 200 friends ...');
      const r = await ctx.guard(social(browser, host.url.href, users));
      rows.push([`Friends with ${FRIENDS} friends: API requests`, r.calls.length, '', ['<', 3]]);
      rows.push([`Friends with ${FRIENDS} friends: rendered in`, r.renderMs, 'ms']);
      rows.push(["friend request -> target's screen p95", r.request.p95, 'ms', ['<', 200]]);
      rows.push(["acceptance -> sender's screen p95", r.accept.p95, 'ms', ['<', 200]]);
      rows.push(['request / acceptance p50', spread({ a: r.request.p50, b: r.accept.p50 }, ['a', 'b'], 1)]);
    }
    await browser.close();
    return {
      title: `Chromium ${browser.version()}, ${o.loads} loads of each kind, ${o.invites} invites`,
      rows,
    };
  },
};
