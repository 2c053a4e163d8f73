import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectNoProblems,
  fitsViewport,
  launchBrowser,
  openTab,
  signIn,
  startHostWithOwner,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

// Both pages run on this machine's clock, so a timestamp taken in one and in the other can be compared.
const RECORD_INVITE_SEND = `
  (() => {
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
      if (typeof data === 'string' && data.includes('RequestInvite')) window.__inviteSentAt = Date.now();
      return send.call(this, data);
    };
  })();
`;
const RECORD_TOAST_SHOWN = `
  (() => {
    new MutationObserver(() => {
      if (window.__toastAt === undefined && document.querySelector('[data-testid="toast"]')) {
        window.__toastAt = Date.now();
      }
    }).observe(document, { childList: true, subtree: true });
  })();
`;

async function stamp(page: Page, name: '__inviteSentAt' | '__toastAt'): Promise<number> {
  return page.evaluate((key) => (window as unknown as Record<string, number>)[key] ?? NaN, name);
}

async function shot(page: Page, path: string): Promise<void> {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path, fullPage: true });
}

function section(page: Page, name: string) {
  return page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: new RegExp(`^${name}`) });
}

describe('friends and invite requests in a real browser', () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    for (const username of ['Ann', 'Bea']) {
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

  async function open(username: string, initScript?: string): Promise<Tab> {
    const tab = await openTab(browser);
    tab.page.setDefaultTimeout(8000);
    if (initScript) await tab.page.addInitScript({ content: initScript });
    tabs.push(tab);
    await tab.page.goto(host.server.url);
    await signIn(tab.page, username, PASSWORD);
    await tab.page.getByTestId('signed-in-username').waitFor();
    return tab;
  }

  /** Another tab of the same browser profile: already signed in through the shared storage. */
  async function secondTab(context: BrowserContext, problems: string[]): Promise<Page> {
    const page = await context.newPage();
    page.setDefaultTimeout(8000);
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    await page.goto(host.server.url);
    await page.getByTestId('signed-in-username').waitFor();
    return page;
  }

  it("befriends through the UI, requests an invite live, and keeps both of B's tabs in step", async () => {
    const a = await open('Ann', RECORD_INVITE_SEND);
    const b = await open('Bea', RECORD_TOAST_SHOWN);

    // A asks B to be friends by username.
    await section(a.page, 'Friends').click();
    await a.page.getByRole('form', { name: 'Add a friend' }).getByLabel('Username').fill('Bea');
    await a.page.getByRole('button', { name: 'Send friend request' }).click();
    await a.page.getByText('Friend request sent to Bea.').waitFor();
    expect(await a.page.getByText('Username must be').count()).toBe(0);
    await a.page.locator('[data-testid="outgoing-request"][data-username="Bea"]').waitFor();

    // B accepts in the Friends screen.
    await section(b.page, 'Friends').click();
    const incoming = b.page.locator('[data-testid="incoming-request"][data-username="Ann"]');
    await incoming.getByRole('button', { name: 'Accept' }).click();
    await b.page.getByText('You and Ann are friends now.').waitFor();
    await b.page.locator('[data-testid="friend-row"][data-username="Ann"]').waitFor();

    // B's second tab waits on the Invites list; B's first tab is on another section.
    const bProblems: string[] = [];
    const b2 = await secondTab(b.context, bProblems);
    await section(b2, 'Invites').click();
    await b2.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();
    await section(b.page, 'Account').click();

    // A sees B online (B has sockets open) and asks for an invite.
    await a.page.getByRole('button', { name: 'Refresh' }).click();
    const beaRow = a.page.locator('[data-testid="friend-row"][data-username="Bea"]');
    await beaRow.getByTestId('friend-status').filter({ hasText: 'Online' }).waitFor();
    await a.page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();
    await beaRow.getByRole('button', { name: 'Request invite' }).click();
    // B's second tab has the Invites list open, so the request may read "seen" at once (issue 18).
    await beaRow
      .getByTestId('invite-result')
      .filter({ hasText: /Invite request sent|has seen your invite request/ })
      .waitFor();

    // B: a toast wherever B is, and the request in the second tab's list.
    const toast = b.page.getByTestId('toast').filter({ hasText: 'Ann asks to join you' });
    await toast.waitFor();
    const latency = (await stamp(b.page, '__toastAt')) - (await stamp(a.page, '__inviteSentAt'));
    console.log(`invite request: socket send to toast visible in ${latency} ms`);
    expect(Number.isFinite(latency)).toBe(true);
    await b.page.screenshot({ path: '/tmp/ui-invites-toast.png' });

    const row = b2.getByTestId('invite-row').filter({ hasText: 'Ann' });
    await row.waitFor();
    // Shown in a visible list, so it is marked seen, and the other tab learns it too.
    await b2.locator('[data-testid="invite-row"][data-state="seen"]').waitFor();
    expect(await row.textContent()).toContain('Ann asked to join you');
    expect(await row.getByRole('button', { name: 'Send invite' }).isDisabled()).toBe(true);
    await shot(b2, '/tmp/ui-invites.png');

    await beaRow.scrollIntoViewIfNeeded();
    await shot(a.page, '/tmp/ui-friends.png');

    // Asking again at once hits the host's cooldown, said in words with the wait.
    await a.page.waitForTimeout(300);
    expect(await beaRow.getByRole('button', { name: 'Request invite' }).isDisabled()).toBe(false);
    await beaRow.getByRole('button', { name: 'Request invite' }).click();
    const cooldown = beaRow.getByTestId('invite-result').filter({ hasText: 'You can ask again in' });
    await cooldown.waitFor();
    expect(await cooldown.textContent()).toMatch(
      /you asked Bea a moment ago\. You can ask again in \d+ seconds\./,
    );
    expect(await beaRow.getByRole('button', { name: 'Request invite' }).isDisabled()).toBe(true);
    await shot(a.page, '/tmp/ui-friends-cooldown.png');

    // B dismisses from the first tab; the second tab follows live.
    await section(b.page, 'Invites').click();
    const first = b.page.getByTestId('invite-row').filter({ hasText: 'Ann' });
    await first.getByRole('button', { name: 'Dismiss the request from Ann' }).click();
    await b.page.getByText('Nothing waiting.').waitFor();
    await b2.getByText('Nothing waiting.').waitFor();
    await b2.getByRole('button', { name: /^All/ }).click();
    await b2.locator('[data-testid="invite-row"][data-state="dismissed"]').waitFor();
    expect(await b2.getByTestId('invite-state').first().textContent()).toBe('Dismissed');
    expect(await b.page.getByTestId('toast').count()).toBe(0);
    await shot(b2, '/tmp/ui-invites-dismissed.png');
    await a.page.setViewportSize({ width: 390, height: 844 });
    expect(await fitsViewport(a.page)).toBe(true);
    await shot(a.page, '/tmp/ui-friends-narrow.png');

    const stored = await host.server.invites.list((await host.server.users.byUsername('Bea'))!.Id);
    expect(stored.map((r) => r.state)).toEqual(['dismissed']);

    expectNoProblems(a);
    expectNoProblems(b);
    expect(bProblems).toEqual([]);
  });

  it('removes and blocks with a confirmation, and unblocks', async () => {
    const a = await open('Ann');
    await section(a.page, 'Friends').click();
    const beaRow = a.page.locator('[data-testid="friend-row"][data-username="Bea"]');
    await beaRow.getByRole('button', { name: 'Block Bea' }).click();
    const dialog = a.page.getByRole('dialog', { name: 'Block Bea?' });
    expect(await dialog.textContent()).toContain('cannot send you friend or invite requests');
    await dialog.getByRole('button', { name: 'Block' }).click();
    await a.page.getByText('Blocked Bea.').waitFor();
    await a.page.locator('[data-testid="blocked-row"][data-username="Bea"]').waitFor();
    expect(await beaRow.count()).toBe(0);
    expect((await host.server.users.byUsername('Ann'))?.BlockedUsers).toHaveLength(1);

    await a.page
      .locator('[data-testid="blocked-row"][data-username="Bea"]')
      .getByRole('button', { name: 'Unblock' })
      .click();
    await a.page.getByText('Unblocked Bea.').waitFor();
    expect((await host.server.users.byUsername('Ann'))?.BlockedUsers).toEqual([]);

    // An unknown name is a field error, not a request.
    await a.page.getByRole('form', { name: 'Add a friend' }).getByLabel('Username').fill('Nobody1');
    await a.page.getByRole('button', { name: 'Send friend request' }).click();
    await a.page.getByText('No account has that username', { exact: true }).waitFor();
    expectNoProblems(a);
  });
});
