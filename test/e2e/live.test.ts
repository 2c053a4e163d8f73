import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../../server/host.js';
import {
  expectNoProblems,
  launchBrowser,
  openTab,
  OWNER,
  seriousViolations,
  signIn,
  startHostWithOwner,
  UI_DIR,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

function nav(page: Page, name: string) {
  return page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: new RegExp(`^${name}`) });
}

/** Issue 18 in a real browser: live social events on both sides, routing, connection state, accessibility. */
describe('every window live and honest', () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    for (const username of ['Cat', 'Dan']) {
      await host.server.accounts.createUser({
        username,
        password: PASSWORD,
        email: `${username.toLowerCase()}@example.test`,
      });
    }
  });
  afterAll(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
    await browser?.close();
    await host?.stop();
  });

  async function open(
    username: string,
    password = PASSWORD,
    url = host.server.url,
    options: Parameters<typeof openTab>[1] = {},
  ): Promise<Tab> {
    const tab = await openTab(browser, options);
    tab.page.setDefaultTimeout(8000);
    tabs.push(tab);
    await tab.page.goto(url);
    await signIn(tab.page, username, password);
    await tab.page.getByTestId('signed-in-username').waitFor();
    return tab;
  }

  it('pushes friend requests, acceptances and removals to both screens without reload, in two requests', async () => {
    const cat = await open('Cat');
    const dan = await open('Dan');
    await nav(dan.page, 'Friends').click();
    await dan.page.getByText('No friends yet').waitFor();
    await dan.page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();

    // The Friends screen renders with at most two API calls (getUser, getUsers).
    const calls: string[] = [];
    cat.page.on('request', (r) => {
      if (r.url().includes('/api/v1/')) calls.push(r.url());
    });
    await nav(cat.page, 'Friends').click();
    await cat.page.getByRole('heading', { name: 'Add a friend' }).waitFor();
    await cat.page.waitForLoadState('networkidle');
    expect(calls.length, calls.join('\n')).toBeLessThanOrEqual(2);

    await cat.page.getByRole('form', { name: 'Add a friend' }).getByLabel('Username').fill('Dan');
    await cat.page.getByRole('button', { name: 'Send friend request' }).click();
    // Arrives on Dan's open screen: no reload, no Refresh.
    const incoming = dan.page.locator('[data-testid="incoming-request"][data-username="Cat"]');
    await incoming.waitFor();
    await incoming.getByRole('button', { name: 'Accept' }).click();
    // The acceptance arrives on Cat's screen.
    await cat.page.locator('[data-testid="friend-row"][data-username="Dan"]').waitFor();
    await cat.page.screenshot({ path: '/tmp/ui18-friends-accepted.png', fullPage: true });
    expect(await cat.page.locator('[data-testid="outgoing-request"]').count()).toBe(0);

    // Cat asks Dan for an invite; Dan dismisses it; Cat's row and sent list say so.
    const danRow = cat.page.locator('[data-testid="friend-row"][data-username="Dan"]');
    await danRow.getByRole('button', { name: 'Request invite' }).click();
    await danRow.getByTestId('invite-result').filter({ hasText: 'not opened yet' }).waitFor();
    await nav(dan.page, 'Invites').click();
    const row = dan.page.getByTestId('invite-row').filter({ hasText: 'Cat' });
    await row.getByRole('button', { name: /Dismiss/ }).click();
    // The row is gone from the page on reload of Friends, so read it through the sent list too.
    await danRow
      .getByTestId('invite-result')
      .filter({ hasText: 'Dan dismissed your invite request.' })
      .waitFor();
    await nav(cat.page, 'Invites').click();
    await cat.page
      .getByTestId('sent-invite-row')
      .filter({ hasText: 'Dan' })
      .locator('[data-state="dismissed"]')
      .waitFor();
    await cat.page.screenshot({ path: '/tmp/ui18-sent-requests.png', fullPage: true });

    // Dan removes Cat: Cat's Friends screen empties by itself.
    await nav(cat.page, 'Friends').click();
    await cat.page.locator('[data-testid="friend-row"][data-username="Dan"]').waitFor();
    await nav(dan.page, 'Friends').click();
    await dan.page.getByRole('button', { name: 'Remove Cat' }).click();
    await dan.page.getByRole('button', { name: 'Remove friend' }).click();
    await cat.page.getByText('No friends yet').waitFor();
    expectNoProblems(cat);
    expectNoProblems(dan);
  });

  it('keeps the screen in the address: reload, Back and Forward, and a deep link to a user in Moderation', async () => {
    const owner = await open(OWNER.username, OWNER.password);
    const { page } = owner;
    await nav(page, 'Friends').click();
    expect(new URL(page.url()).hash).toBe('#/friends');
    await page.reload();
    await page.getByRole('heading', { name: 'Friends', level: 1 }).waitFor();
    await nav(page, 'Invites').click();
    await page.getByRole('heading', { name: 'Invite requests', level: 1 }).waitFor();
    await page.goBack();
    await page.getByRole('heading', { name: 'Friends', level: 1 }).waitFor();
    await page.goForward();
    await page.getByRole('heading', { name: 'Invite requests', level: 1 }).waitFor();
    expect(await page.title()).toBe('Invites · Hypernex Companion');

    const dan = (await host.server.users.byUsername('Dan'))!;
    await page.goto(`${host.server.url}/#/moderation/${dan.Id}`);
    await page.getByRole('heading', { name: 'Moderation', level: 1 }).waitFor();
    await page
      .getByTestId('user-panel')
      .or(page.getByRole('region', { name: /Dan/ }))
      .first()
      .waitFor();
    expect(await page.getByText('Dan', { exact: true }).count()).toBeGreaterThan(0);
    await page.screenshot({ path: '/tmp/ui18-moderation-deeplink.png', fullPage: true });
    expectNoProblems(owner);
  });

  it('has no serious accessibility violations on any screen, in both themes (axe-core)', async () => {
    const found: string[] = [];
    const dan = (await host.server.users.byUsername('Dan'))!;
    for (const theme of ['dark', 'light'] as const) {
      const scan = async (page: Page, what: string): Promise<void> => {
        await page.waitForLoadState('networkidle');
        await page.waitForTimeout(300);
        expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
        for (const v of await seriousViolations(page)) found.push(`${theme} · ${what}: ${v}`);
      };
      // Signed out: the system's theme is followed from the first screen.
      const visitor = await openTab(browser, { colorScheme: theme });
      tabs.push(visitor);
      await visitor.page.goto(host.server.url);
      await visitor.page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await scan(visitor.page, 'Sign in');
      await visitor.page.getByRole('button', { name: 'Create account' }).click();
      await visitor.page.getByRole('heading', { name: 'Create an account' }).waitFor();
      await scan(visitor.page, 'Create account');

      const owner = await open(OWNER.username, OWNER.password, host.server.url, { colorScheme: theme });
      const { page } = owner;
      for (const name of ['Account', 'Uploads', 'Moderation', 'Invites', 'Friends', 'Downloads', 'Host']) {
        await nav(page, name).click();
        await page
          .locator(`nav[aria-label="Sections"] a[aria-current="page"]`)
          .filter({ hasText: name })
          .waitFor();
        await scan(page, name);
      }
      // The busier states: a user open in Moderation with the password form, the upload details form.
      await page.goto(`${host.server.url}/#/moderation/${dan.Id}`);
      await page.getByTestId('mod-panel').getByRole('tab', { name: 'Password' }).click();
      await scan(page, 'Moderation, a user open');
      await nav(page, 'Uploads').click();
      await page
        .getByTestId('upload-input')
        .setInputFiles([
          { name: 'scan.hna', mimeType: 'application/octet-stream', buffer: Buffer.alloc(2048, 7) },
        ]);
      await page.getByRole('form', { name: 'Details of scan.hna' }).waitFor();
      await scan(page, 'Upload form');
    }
    expect(found).toEqual([]);
  });

  it('shows the connection in the shell on every screen, and reconnects when the host returns', async () => {
    // A host of its own, stopped and started again on the same folder and port.
    const first = await startHostWithOwner();
    const { dataDir, port } = { dataDir: first.server.config.dataDir, port: first.server.port };
    const tab = await open(OWNER.username, OWNER.password, first.server.url);
    const { page } = tab;
    await nav(page, 'Downloads').click();
    await page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();
    await first.server.close();
    await page.getByTestId('host-down-banner').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('shell-connection').getAttribute('data-health')).not.toBe('connected');
    await page.screenshot({ path: '/tmp/ui18-host-down.png' });
    const again = await createServer({
      dataDir,
      host: '127.0.0.1',
      port,
      uiDir: UI_DIR,
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
    });
    try {
      await page.getByRole('button', { name: 'Try now' }).click();
      await page
        .locator('[data-testid="shell-connection"][data-health="connected"]')
        .waitFor({ timeout: 15_000 });
      expect(await page.getByTestId('host-down-banner').count()).toBe(0);
    } finally {
      await tab.close();
      await again.close();
      await first.stop().catch(() => undefined);
    }
  });
});
