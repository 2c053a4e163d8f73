import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addPeople,
  expectNoProblems,
  launchBrowser,
  navLink,
  openSignedIn,
  startHostWithOwner,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

async function sendRequest(page: Page, username: string): Promise<void> {
  await page.getByRole('form', { name: 'Add a friend' }).getByLabel('Username').fill(username);
  await page.getByRole('button', { name: 'Send friend request' }).click();
}

/** Issue 28: the sender hears what became of a friend request, can take it back, and the tab counts them. */
describe('friend requests, from both sides, in a real browser', () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await addPeople(
      host,
      [
        ['Ann', 2],
        ['Bea', 2],
      ],
      PASSWORD,
    );
  });
  afterAll(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
    await browser?.close();
    await host?.stop();
  });

  it('follows the answer, says a decline, withdraws, and counts what waits on the Friends tab', async () => {
    const ann = await openSignedIn(browser, host, tabs, 'Ann', PASSWORD, '#/friends');
    const bea = await openSignedIn(browser, host, tabs, 'Bea', PASSWORD, '#/account');
    for (const { page } of [ann, bea]) {
      await page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();
    }
    const outcome = ann.page.getByTestId('friend-request-outcome');
    const beaFriends = navLink(bea.page, 'Friends');
    expect(await beaFriends.textContent()).toBe('Friends');

    // Sent: it waits, and Bea's tab counts it wherever Bea is.
    await sendRequest(ann.page, 'Bea');
    await outcome.filter({ hasText: 'Friend request sent to Bea. It waits' }).waitFor();
    await bea.page.getByTestId('friends-pending').filter({ hasText: '1' }).waitFor();
    // A number to see, words for screen readers.
    expect(await beaFriends.textContent()).toMatch(/^Friends\s*1\s+request waiting$/);
    await bea.page.screenshot({ path: '/tmp/ui28-friends-count.png' });

    // Declined: Ann's message changes, and the request says so instead of vanishing.
    await beaFriends.click();
    await bea.page
      .locator('[data-testid="incoming-request"][data-username="Ann"]')
      .getByRole('button', { name: 'Decline' })
      .click();
    await outcome.filter({ hasText: 'Bea declined your friend request.' }).waitFor();
    const answered = ann.page.locator('[data-testid="answered-request"][data-username="Bea"]');
    expect(await answered.getAttribute('data-outcome')).toBe('declined');
    expect(await answered.textContent()).toContain('Declined');
    await bea.page.getByTestId('friends-pending').waitFor({ state: 'detached' });
    await ann.page.screenshot({ path: '/tmp/ui28-friends-declined.png', fullPage: true });
    await answered.getByRole('button', { name: /^Clear/ }).click();
    await answered.waitFor({ state: 'detached' });

    // Withdrawn: gone from both sides at once, the count too.
    await sendRequest(ann.page, 'Bea');
    await outcome.filter({ hasText: 'It waits' }).waitFor();
    await bea.page.locator('[data-testid="incoming-request"][data-username="Ann"]').waitFor();
    expect(await bea.page.getByTestId('friends-pending').textContent()).toContain('1');
    await ann.page.getByRole('button', { name: 'Withdraw your friend request to Bea' }).click();
    await outcome.filter({ hasText: 'You withdrew your friend request to Bea.' }).waitFor();
    await ann.page.locator('[data-testid="outgoing-request"]').waitFor({ state: 'detached' });
    await bea.page.locator('[data-testid="incoming-request"]').waitFor({ state: 'detached' });
    await bea.page.getByTestId('friends-pending').waitFor({ state: 'detached' });
    expect((await host.server.users.byUsername('Bea'))?.FriendRequests).toEqual([]);
    expect((await host.server.users.byUsername('Ann'))?.OutgoingFriendRequests).toEqual([]);

    // Accepted: the message follows.
    await sendRequest(ann.page, 'Bea');
    await outcome.filter({ hasText: 'It waits' }).waitFor();
    await bea.page
      .locator('[data-testid="incoming-request"][data-username="Ann"]')
      .getByRole('button', { name: 'Accept' })
      .click();
    await outcome.filter({ hasText: 'Bea accepted your friend request: you are friends now.' }).waitFor();
    await ann.page.locator('[data-testid="friend-row"][data-username="Bea"]').waitFor();
    await ann.page.screenshot({ path: '/tmp/ui28-friends-accepted.png', fullPage: true });
    expectNoProblems(ann);
    expectNoProblems(bea);
  });

  it('tells the sender of an answered invite request what they can do from a browser', async () => {
    // Ann and Bea are friends (the test above); Bea is online in a tab of her own.
    const ann = await openSignedIn(browser, host, tabs, 'Ann', PASSWORD, '#/friends');
    const bea = await openSignedIn(browser, host, tabs, 'Bea', PASSWORD, '#/invites');
    await bea.page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();
    const row = ann.page.locator('[data-testid="friend-row"][data-username="Bea"]');
    await row.getByTestId('friend-status').filter({ hasText: 'Online' }).waitFor();
    await ann.page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();
    await row.getByRole('button', { name: 'Request invite' }).click();

    await bea.page
      .getByTestId('invite-row')
      .filter({ hasText: 'Ann' })
      .getByRole('button', { name: 'Mark answered' })
      .click();
    const result = row.getByTestId('invite-result');
    await result.filter({ hasText: 'Bea answered your invite request.' }).waitFor();
    const text = (await result.textContent()) ?? '';
    expect(text).toContain('Invites arrive in the Hypernex game, not in this browser');
    expect(text).not.toContain('look for their invite');
    expectNoProblems(ann);
    expectNoProblems(bea);
  });
});
