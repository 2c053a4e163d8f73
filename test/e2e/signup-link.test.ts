import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  expectNoProblems,
  expectSignedInAs,
  launchBrowser,
  openTab,
  OWNER,
  startHost,
  storedSession,
  type Host,
  type Tab,
} from './harness.js';

/** Issue 28: the owner's first step after setup, and links that fill a form whenever they are opened. */
describe('first run and sign-up links in a real browser', () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];
  /** The sign-up link the owner made on first run. */
  let link = '';

  beforeAll(async () => {
    host = await startHost();
    browser = await launchBrowser();
  });
  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  async function open(): Promise<Tab> {
    const tab = await openTab(browser);
    tab.page.setDefaultTimeout(8000);
    tabs.push(tab);
    return tab;
  }

  it('fills a setup link opened in a page that is already open', async () => {
    const tab = await open();
    const { page } = tab;
    await page.goto(host.server.url);
    await page.getByRole('heading', { name: 'Set up this host' }).waitFor();
    expect(await page.getByLabel('Setup secret').inputValue()).toBe('');
    // The address changes without a reload: pasted into the bar, or a click on the printed link.
    await page.evaluate((secret) => {
      window.location.hash = `#setup=${secret}`;
    }, host.server.setupSecret!);
    await page.getByText('Filled in from the setup link.').waitFor();
    expect(await page.getByLabel('Setup secret').inputValue()).toBe(host.server.setupSecret);
    expect(new URL(page.url()).hash).toBe('');
    expectNoProblems(tab);
  });

  it('lands the new owner on Host with one next step: an address and a sign-up link', async () => {
    const tab = await open();
    const { page } = tab;
    await page.goto(`${host.server.url}/#setup=${host.server.setupSecret}`);
    await page.getByRole('heading', { name: 'Set up this host' }).waitFor();
    await page.getByLabel('Owner username').fill(OWNER.username);
    await page.getByLabel('Email', { exact: true }).fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Confirm password', { exact: true }).fill(OWNER.password);
    await page.getByRole('button', { name: 'Create owner account' }).click();
    await expectSignedInAs(page, OWNER.username, 'Owner');

    await page.getByRole('heading', { name: 'Host', level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/host/welcome');
    const next = page.getByTestId('first-run');
    await next.getByRole('heading', { name: 'Invite your community' }).waitFor();
    expect(await next.getByTestId('first-run-addresses').textContent()).toContain(host.server.url);
    await page.screenshot({ path: '/tmp/ui28-first-run.png', fullPage: true });

    await next.getByRole('button', { name: 'Make a sign-up link' }).click();
    const shown = next.getByTestId('signup-link').first();
    await shown.waitFor();
    link = (await shown.textContent()) ?? '';
    expect(link).toMatch(new RegExp(`^${host.server.url}/#signup=[A-Za-z0-9_-]+$`));
    // The code is listed with the others at once.
    await page.getByTestId('invite-code-row').filter({ hasText: 'First sign-up link' }).waitFor();
    await page.screenshot({ path: '/tmp/ui28-first-run-link.png', fullPage: true });

    // From now on the host only takes sign-ups with a code, so the link is what lets people in.
    const owner = (await storedSession(page))!;
    const answer = await fetch(`${host.server.url}/api/v1/hostSettings`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...owner, requireInviteCode: true }),
    });
    expect(((await answer.json()) as { success: boolean }).success).toBe(true);

    await next.getByRole('button', { name: 'Done' }).click();
    await next.waitFor({ state: 'detached' });
    expect(new URL(page.url()).hash).toBe('#/host');
    expectNoProblems(tab);
  });

  it('opens the sign-up form with the code of a sign-up link, and the account is made with it', async () => {
    expect(link).not.toBe('');
    const tab = await open();
    const { page } = tab;
    await page.goto(link);
    await page.getByRole('heading', { name: 'Create an account' }).waitFor();
    const code = decodeURIComponent(new URL(link).hash.slice('#signup='.length));
    expect(await page.getByLabel('Invite code').inputValue()).toBe(code);
    await page.getByText('Filled in from the sign-up link.').waitFor();
    // The code does not stay in the address bar or history.
    expect(new URL(page.url()).hash).toBe('');
    await page.screenshot({ path: '/tmp/ui28-signup-link.png', fullPage: true });

    await page.getByLabel('Username', { exact: true }).fill('Newcomer');
    await page.getByLabel('Email', { exact: true }).fill('newcomer@example.test');
    await page.getByLabel('Password', { exact: true }).fill('Newcomer#Pass1');
    await page.getByLabel('Confirm password', { exact: true }).fill('Newcomer#Pass1');
    await page.locator('form').getByRole('button', { name: 'Create account' }).click();
    await expectSignedInAs(page, 'Newcomer', 'Registered');
    expect(await host.server.users.byUsername('Newcomer')).toBeTruthy();
    expectNoProblems(tab);
  });

  it('reads a sign-up link opened in a page that is already open', async () => {
    const tab = await open();
    const { page } = tab;
    await page.goto(host.server.url);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.evaluate(() => {
      window.location.hash = '#signup=pasted-code';
    });
    await page.getByRole('heading', { name: 'Create an account' }).waitFor();
    expect(await page.getByLabel('Invite code').inputValue()).toBe('pasted-code');
    expect(new URL(page.url()).hash).toBe('');
    expectNoProblems(tab);
  });
});
