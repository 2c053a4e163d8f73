import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type Page,
} from 'playwright-core';
import { expect } from 'vitest';
import { createServer, type HostServer } from '../../server/host.js';
import type { Rank } from '../../server/protocol/enums.js';

/** The built UI the server serves; the e2e tests exercise exactly what ships. */
export const UI_DIR = fileURLToPath(new URL('../../dist/renderer/', import.meta.url));
export const CHROMIUM = '/usr/bin/chromium';

export const OWNER = { username: 'HostOwner', email: 'owner@example.test', password: 'Owner#Pass1' };

export function requireBuiltUi(): void {
  if (!existsSync(join(UI_DIR, 'index.html'))) {
    throw new Error(`The built UI is missing (${join(UI_DIR, 'index.html')}). Run \`npm run build\` first.`);
  }
}

export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}. Install it with \`apt-get install -y chromium\` ` +
        '(Debian/Ubuntu, as root) and run the tests again.',
    );
  }
}

export interface Host {
  server: HostServer;
  stop(): Promise<void>;
}

/** A real host on a free port over a fresh temp data folder, serving the built UI. */
export async function startHost(): Promise<Host> {
  requireBuiltUi();
  const dataDir = await mkdtemp(join(tmpdir(), 'hypernex-e2e-'));
  const server = await createServer({
    dataDir,
    host: '127.0.0.1',
    port: 0,
    uiDir: UI_DIR,
    // Cheap hashing: the tests are about the UI, not the hash cost.
    passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
  });
  return {
    server,
    async stop() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A host whose owner exists already, created through the same setup path the UI uses. */
export async function startHostWithOwner(): Promise<Host> {
  const host = await startHost();
  const secret = host.server.setupSecret;
  if (!secret) throw new Error('a fresh host should need owner setup');
  await host.server.setup.setupOwner({ setupSecret: secret, ...OWNER });
  return host;
}

export async function launchBrowser(): Promise<Browser> {
  requireChromium();
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Console errors, uncaught exceptions and CSP violations seen so far: every test expects none. */
  problems: string[];
  close(): Promise<void>;
}

/** A fresh browser profile (empty localStorage) with one page that records anything going wrong. */
export async function openTab(browser: Browser, options: BrowserContextOptions = {}): Promise<Tab> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 820 },
    locale: 'en-US',
    timezoneId: 'UTC',
    ...options,
  });
  const problems: string[] = [];
  // Chromium reports a refused eval or script only as a `securitypolicyviolation` event (the console stays
  // quiet when the page catches the error), so the page hands each one to the test.
  await context.exposeBinding('__reportCspViolation', (_source, text: string) => {
    problems.push(`CSP violation: ${text}`);
  });
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (e) => {
      window.__reportCspViolation(e.violatedDirective + ' ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber);
    });`,
  });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return {
    context,
    page,
    problems,
    close: () => context.close(),
  };
}

export function expectNoProblems(tab: Tab): void {
  expect(tab.problems).toEqual([]);
}

export async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Username', { exact: true }).fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.locator('form').getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** Accounts made through the host's own service (no browser), each with `password` and a rank. */
export async function addPeople(host: Host, people: Array<[string, Rank]>, password: string): Promise<void> {
  for (const [username, rank] of people) {
    await host.server.accounts.createUser(
      { username, password, email: `${username.toLowerCase()}@example.test` },
      { rank },
    );
  }
}

/** The owner sets `userId`'s rank through the moderation service (as the panel would: the action is logged). */
export async function promote(host: Host, userId: string, rank: Rank): Promise<void> {
  const owner = (await host.server.users.byUsername(OWNER.username))!;
  await host.server.moderation.act(owner, 'setrank', userId, { newRank: rank });
}

/** An account made through the host's own service, then (`rank`) promoted by the owner: see `promote`. */
export async function makeMember(host: Host, username: string, password: string, rank?: Rank) {
  const made = await host.server.accounts.createUser({
    username,
    password,
    email: `${username.toLowerCase()}@example.test`,
  });
  if (rank !== undefined) await promote(host, made.user.Id, rank);
  return made;
}

/** A new tab at `host`'s page `hash`, signed in; it goes into `tabs` (closed after each test). */
export async function openSignedIn(
  browser: Browser,
  host: Host,
  tabs: Tab[],
  username: string,
  password: string,
  hash = '',
): Promise<Tab> {
  const tab = await openTab(browser);
  tab.page.setDefaultTimeout(8000);
  tabs.push(tab);
  await tab.page.goto(`${host.server.url}/${hash}`);
  await signIn(tab.page, username, password);
  await tab.page.getByTestId('signed-in-username').waitFor();
  return tab;
}

export async function expectSignedInAs(page: Page, username: string, rank: string): Promise<void> {
  const name = page.getByTestId('signed-in-username');
  await name.waitFor();
  expect(await name.textContent()).toBe(username);
  expect(await page.getByTestId('signed-in-rank').textContent()).toBe(rank);
}

export async function storedSession(page: Page): Promise<{ userid: string; tokenContent: string } | null> {
  const raw = await page.evaluate(() => localStorage.getItem('hypernex-companion.session'));
  return raw === null ? null : (JSON.parse(raw) as { userid: string; tokenContent: string });
}

/** Asks the host directly, bypassing the UI, whether a token still works. */
export async function isTokenValid(baseUrl: string, userid: string, tokenContent: string): Promise<boolean> {
  const response = await fetch(`${baseUrl}/api/v1/isValidToken`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ userid, tokenContent }),
  });
  const body = (await response.json()) as { result?: { isValidToken?: boolean } };
  return body.result?.isValidToken === true;
}

/** True when nothing on the page is wider than the viewport (no sideways scrolling on phones). */
export async function fitsViewport(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

const AXE_PATH = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/**
 * Runs axe-core in the page (or only inside `selector`, the part a test is about) and returns the serious and
 * critical violations, described.
 */
export async function seriousViolations(page: Page, selector?: string): Promise<string[]> {
  // Colours measured half-way through a transition (a theme just switched) are neither theme's.
  await page.evaluate(() =>
    Promise.all(document.getAnimations().map((a) => a.finished.catch(() => undefined))),
  );
  // The page's CSP refuses injected script tags; evaluating the source through the debugger protocol is not.
  await page.evaluate(readFileSync(AXE_PATH, 'utf8'));
  return page.evaluate(async (within) => {
    const axe = (
      window as unknown as {
        axe: {
          run(ctx: Document | string): Promise<{
            violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }>;
          }>;
        };
      }
    ).axe;
    const { violations } = await axe.run(within ?? document);
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`);
  }, selector);
}

/** How the focused element is outlined, and the ring colour the page's theme asks for. */
export interface FocusRing {
  /** The element, for messages: its tag and name. */
  what: string;
  style: string;
  width: number;
  color: string;
  /** The theme's ring colour, resolved by the page. */
  expected: string;
}

export async function focusRing(page: Page): Promise<FocusRing> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    const style = getComputedStyle(el);
    const probe = document.createElement('div');
    probe.style.color = 'var(--focus-ring)';
    document.body.append(probe);
    const expected = getComputedStyle(probe).color;
    probe.remove();
    return {
      what: `${el.tagName} ${el.getAttribute('aria-label') ?? el.getAttribute('name') ?? el.textContent ?? ''}`,
      style: style.outlineStyle,
      width: parseFloat(style.outlineWidth),
      color: style.outlineColor,
      expected,
    };
  });
}

/** Sets the theme with the top bar's toggle (System → Light → Dark) and waits for the page to show it. */
export async function chooseTheme(page: Page, theme: 'light' | 'dark'): Promise<void> {
  const toggle = page.getByTestId('theme-toggle').first();
  for (let i = 0; i < 3 && (await toggle.getAttribute('data-choice')) !== theme; i++) await toggle.click();
  expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
}

/** The section link in the top bar (its name may carry a count, e.g. "Invites 2"). */
export function navLink(page: Page, name: string) {
  return page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: new RegExp(`^${name}`) });
}
