import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  expectNoProblems,
  expectSignedInAs,
  fitsViewport,
  launchBrowser,
  openTab,
  OWNER,
  startHost,
  storedSession,
  type Host,
  type Tab,
} from './harness.js';

describe('first-run owner setup in a real browser', () => {
  let host: Host;
  let browser: Browser;
  let tab: Tab | undefined;

  beforeAll(async () => {
    host = await startHost();
    browser = await launchBrowser();
  });

  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  it('shows the setup form to a visitor without the link and explains where the secret comes from', async () => {
    tab = await openTab(browser, { viewport: { width: 360, height: 800 } });
    const { page } = tab;
    await page.goto(host.server.url);
    await page.getByRole('heading', { name: 'Set up this host' }).waitFor();
    expect(await page.getByLabel('Setup secret').inputValue()).toBe('');
    const intro = await page.locator('.form-intro').textContent();
    expect(intro).toContain('The host prints it');
    expect(intro).toContain('desktop app shows it');
    expect(await fitsViewport(page)).toBe(true);
    await page.screenshot({ path: '/tmp/ui-setup-mobile.png', fullPage: true });
    expectNoProblems(tab);
  });

  it('refuses a wrong setup secret with a field error and creates nothing', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(`${host.server.url}/#setup=not-the-secret`);
    await page.getByRole('heading', { name: 'Set up this host' }).waitFor();
    await page.getByLabel('Owner username').fill(OWNER.username);
    await page.getByLabel('Email', { exact: true }).fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Confirm password', { exact: true }).fill(OWNER.password);
    await page.getByRole('button', { name: 'Create owner account' }).click();

    const secret = page.getByLabel('Setup secret');
    await expect.poll(() => secret.getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('.field-message.is-error').first().textContent()).toBe(
      'Does not match the secret the host shows',
    );
    expect(await host.server.users.count()).toBe(0);
    expectNoProblems(tab);
  });

  it('creates the owner from the #setup= link, clears the link and lands signed in', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    const secret = host.server.setupSecret;
    expect(secret).toBeTruthy();
    await page.goto(`${host.server.url}/#setup=${secret}`);
    await page.getByRole('heading', { name: 'Set up this host' }).waitFor();

    // The secret must not linger in the address bar or history.
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.getByLabel('Setup secret').inputValue()).toBe(secret);
    expect(await page.getByText('Filled in from the setup link.').count()).toBe(1);

    await page.getByLabel('Owner username').fill(OWNER.username);
    await page.getByLabel('Email', { exact: true }).fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Confirm password', { exact: true }).fill(OWNER.password);
    await page.screenshot({ path: '/tmp/ui-setup.png', fullPage: true });
    await page.getByRole('button', { name: 'Create owner account' }).click();

    await expectSignedInAs(page, OWNER.username, 'Owner');
    await page.screenshot({ path: '/tmp/ui-signed-in.png', fullPage: true });

    const owner = await host.server.users.byUsername(OWNER.username);
    expect(owner?.Rank).toBe(6);
    expect(host.server.setupSecret).toBeNull();
    expect((await storedSession(page))?.userid).toBe(owner?.Id);
    expectNoProblems(tab);
  });

  it('sends a spent setup link to sign-in with an explanation', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(`${host.server.url}/#setup=whatever`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByText('This host already has an owner').count()).toBe(1);
    expect(new URL(page.url()).hash).toBe('');
    expectNoProblems(tab);
  });
});
