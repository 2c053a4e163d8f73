import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UsersRepo } from '../../server/store/users.js';
import {
  expectNoProblems,
  launchBrowser,
  navLink,
  openTab,
  OWNER,
  signIn,
  startHostWithOwner,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

/** Records native notifications and tones the page makes, keeping the browser's own permission logic. */
const SPY_SCRIPT = `
  (() => {
    window.__notes = [];
    window.__tones = 0;
    const Real = window.Notification;
    if (Real) {
      const Spy = function (title, options) {
        window.__notes.push(title);
        return new Real(title, options);
      };
      Object.defineProperty(Spy, 'permission', { get: () => Real.permission });
      Spy.requestPermission = (...args) => Real.requestPermission(...args);
      window.Notification = Spy;
    }
    const make = AudioContext.prototype.createOscillator;
    AudioContext.prototype.createOscillator = function () {
      window.__tones++;
      return make.call(this);
    };
  })();
`;

/** Issue 18, item 8: the smaller things, each in a real browser. */
describe('the smaller things of issue 18', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];
  const tokens = new Map<string, { id: string; token: string }>();

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    for (const username of ['Wren', 'Finn', 'Gale']) {
      const { user, token } = await host.server.accounts.createUser({
        username,
        password: PASSWORD,
        email: `${username.toLowerCase()}@example.test`,
      });
      tokens.set(username, { id: user.Id, token: token.content });
    }
  });
  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  async function open(
    username: string | null,
    options: Parameters<typeof openTab>[1] = {},
    hash = '',
    password = PASSWORD,
  ): Promise<Tab> {
    const tab = await openTab(browser, options);
    tab.page.setDefaultTimeout(8000);
    tabs.push(tab);
    await tab.page.goto(`${host.server.url}/${hash}`);
    if (username) {
      await signIn(tab.page, username, password);
      await tab.page.getByTestId('signed-in-username').waitFor();
    }
    return tab;
  }

  const warn = (userId: string, timeWarned: number) =>
    host.server.store.tx((t) =>
      UsersRepo.in(t).update(userId, (d) => {
        d.WarnStatus = { isWarned: true, TimeWarned: timeWarned, WarnReason: 'Spam', WarnDescription: '' };
        d.WarnCount = 1;
      }),
    );

  it('reads a past warning in the past tense, also when the host stamped it a moment ahead of this clock', async () => {
    const wren = tokens.get('Wren')!;
    await warn(wren.id, Math.floor(Date.now() / 1000) + 3);
    const owner = await open(OWNER.username, {}, `#/moderation/${wren.id}`, OWNER.password);
    const state = owner.page.getByTestId('mod-warn-state');
    await state.waitFor();
    expect(await state.textContent()).toMatch(/^Warned (just now|\d+ seconds ago)/);
    // It keeps counting: a few seconds later it says how many, never "in".
    await state.filter({ hasText: /^Warned \d+ seconds ago/ }).waitFor({ timeout: 15_000 });
    expect(await state.textContent()).not.toMatch(/Warned in/);

    await warn(wren.id, Math.floor(Date.now() / 1000) - 120);
    await owner.page.reload();
    await state.filter({ hasText: /^Warned 2 minutes ago/ }).waitFor();
    expectNoProblems(owner);
  });

  it('shows every sign-up problem at once, the host’s included', async () => {
    const visitor = await open(null);
    const { page } = visitor;
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByLabel('Username', { exact: true }).fill('finn');
    await page.getByLabel('Email', { exact: true }).fill('finn@example.test');
    await page.getByLabel('Password', { exact: true }).fill('Strong#Pass2');
    await page.getByLabel('Confirm password', { exact: true }).fill('Strong#Pass2');
    await page.getByRole('button', { name: 'Create account', exact: true }).last().click();
    await page.getByText('Username is taken').waitFor();
    await page.getByText('Email is already used by another account').waitFor();
    expect(await page.getByLabel('Username', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Email', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expectNoProblems(visitor);
  });

  it('keeps a field focused for its error below the sticky top bar', async () => {
    const gale = await open('Gale', { viewport: { width: 1280, height: 600 } });
    const { page } = gale;
    await navLink(page, 'Account').click();
    const form = page.getByRole('form', { name: 'Change your password' });
    const submit = form.getByRole('button', { name: 'Change password' });
    const current = form.getByLabel('Current password', { exact: true });
    // Scrolled so the field to fix is in the window but under the bar (as after filling the fields below it).
    await current.evaluate((el) => {
      window.scrollTo(0, window.scrollY + el.getBoundingClientRect().top - 20);
    });
    await submit.click();
    await expect.poll(() => current.evaluate((el) => el === document.activeElement)).toBe(true);
    const topbarBottom = await page.locator('.topbar').evaluate((el) => el.getBoundingClientRect().bottom);
    // The label sits above the field; both are below the bar.
    const labelTop = await form
      .locator('label', { hasText: 'Current password' })
      .evaluate((el) => el.getBoundingClientRect().top);
    expect(labelTop).toBeGreaterThanOrEqual(topbarBottom);
    expectNoProblems(gale);
  });

  it('follows the system theme until the toggle chooses one, which stays across reloads', async () => {
    const tab = await open('Gale', { colorScheme: 'dark' });
    const { page } = tab;
    const theme = () => page.evaluate(() => document.documentElement.dataset.theme);
    expect(await theme()).toBe('dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await expect.poll(theme).toBe('light');
    const toggle = page.getByTestId('theme-toggle');
    expect(await toggle.getAttribute('data-choice')).toBe('system');
    await toggle.click(); // System → Light
    await toggle.click(); // Light → Dark
    expect(await theme()).toBe('dark');
    await page.reload();
    await page.getByTestId('signed-in-username').waitFor();
    expect(await theme()).toBe('dark');
    expect(await page.getByTestId('theme-toggle').getAttribute('data-choice')).toBe('dark');
    // Colours really change: the page background is light in the light theme.
    await page.getByTestId('theme-toggle').click(); // Dark → System (light here)
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(background).toBe('rgb(244, 245, 250)');
    expectNoProblems(tab);
  });

  it('asks for notification permission from a click, then notifies and sounds for a friend request', async () => {
    const gale = tokens.get('Gale')!;
    const tab = await openTab(browser);
    tab.page.setDefaultTimeout(8000);
    tabs.push(tab);
    const { page, context } = tab;
    await page.addInitScript({ content: SPY_SCRIPT });
    await page.goto(host.server.url);
    await signIn(page, 'Finn', PASSWORD);
    await page.getByTestId('signed-in-username').waitFor();
    await navLink(page, 'Account').click();
    expect(await page.getByTestId('notification-state').textContent()).toBe('Off');
    // The person allows it in the browser's question, which only a click may raise.
    await context.grantPermissions(['notifications'], { origin: host.server.url });
    await page.getByRole('button', { name: 'Turn on notifications' }).click();
    await page.getByTestId('notification-state').filter({ hasText: 'On' }).waitFor();
    await page.getByRole('checkbox', { name: 'Play a sound for invite and friend requests' }).check();
    expect(await page.evaluate(() => localStorage.getItem('hnx.alerts.sound'))).toBe('on');
    const tonesBefore = await page.evaluate(() => (window as unknown as { __tones: number }).__tones);
    await page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();

    const response = await fetch(`${host.server.url}/api/v1/sendFriendRequest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        userid: gale.id,
        tokenContent: gale.token,
        targetUserId: tokens.get('Finn')!.id,
      }),
    });
    expect(((await response.json()) as { success: boolean }).success).toBe(true);
    await page.getByText('Gale sent you a friend request').waitFor();
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { __notes: string[] }).__notes))
      .toEqual(['Gale sent you a friend request']);
    expect(await page.evaluate(() => (window as unknown as { __tones: number }).__tones)).toBeGreaterThan(
      tonesBefore,
    );
    await page.screenshot({ path: '/tmp/ui18-notifications.png', fullPage: true });
    expectNoProblems(tab);
  });
});
