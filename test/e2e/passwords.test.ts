import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import {
  addPeople,
  expectNoProblems,
  isTokenValid,
  launchBrowser,
  navLink,
  openSignedIn,
  OWNER,
  signIn,
  startHostWithOwner,
  storedSession,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

/** Issue 18, item 4: changing your own password, and the owner or an admin setting one for a lower-ranked user. */
describe('password help in a real browser', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await addPeople(
      host,
      [
        ['Cato', Rank.Registered],
        ['Dana', Rank.Registered],
        ['Modi', Rank.Moderator],
      ],
      PASSWORD,
    );
  });
  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  const open = (username: string, password = PASSWORD, hash = ''): Promise<Tab> =>
    openSignedIn(browser, host, tabs, username, password, hash);

  it('changes your own password only with the current one, keeps this window signed in and ends the others', async () => {
    const mine = await open('Cato');
    const other = await open('Cato');
    await other.page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();
    const { page } = mine;
    const before = (await storedSession(page))!;
    await navLink(page, 'Account').click();
    const form = page.getByRole('form', { name: 'Change your password' });

    // Checked before sending: mismatch and weak password, all at once.
    await form.getByLabel('New password', { exact: true }).fill('short');
    await form.getByLabel('Confirm new password', { exact: true }).fill('other');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByText('Enter your current password').waitFor();
    await form.getByText('Password must be at least 8 characters').waitFor();

    // The host refuses a wrong current password, next to its field.
    await form.getByLabel('Current password', { exact: true }).fill('Wrong#Pass9');
    await form.getByLabel('New password', { exact: true }).fill('Newer#Pass2');
    await form.getByLabel('Confirm new password', { exact: true }).fill('Newer#Pass2');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByText('Not your current password').waitFor();
    expect(await form.getByLabel('Current password', { exact: true }).getAttribute('aria-invalid')).toBe(
      'true',
    );
    expect(await isTokenValid(host.server.url, before.userid, before.tokenContent)).toBe(true);

    await form.getByLabel('Current password', { exact: true }).fill(PASSWORD);
    await form.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Password changed').waitFor();
    await page.screenshot({ path: '/tmp/ui18-password-changed.png' });
    // Still signed in here, on a new session; the old token and the other window's session are over.
    await page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    const after = (await storedSession(page))!;
    expect(after.tokenContent).not.toBe(before.tokenContent);
    expect(await isTokenValid(host.server.url, after.userid, after.tokenContent)).toBe(true);
    expect(await isTokenValid(host.server.url, before.userid, before.tokenContent)).toBe(false);
    await page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();
    await other.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signIn(other.page, 'Cato', 'Newer#Pass2');
    await other.page.getByTestId('signed-in-username').waitFor();
    expectNoProblems(mine);
  });

  it('lets the owner set a new password for a user from Moderation, signing them out; a moderator cannot', async () => {
    const dana = await open('Dana');
    await dana.page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();
    const danaId = (await host.server.users.byUsername('Dana'))!.Id;

    const modi = await open('Modi', PASSWORD, `#/moderation/${danaId}`);
    await modi.page.getByTestId('mod-panel').waitFor();
    await modi.page.getByRole('tab', { name: 'Ban' }).waitFor();
    expect(await modi.page.getByRole('tab', { name: 'Password' }).count()).toBe(0);

    const owner = await open(OWNER.username, OWNER.password, `#/moderation/${danaId}`);
    const { page } = owner;
    const panel = page.getByTestId('mod-panel');
    await panel.getByRole('tab', { name: 'Password' }).click();
    const form = panel.getByRole('form', { name: "Reset Dana's password" });
    await form.getByLabel('New password', { exact: true }).fill('Fresh#Pass3');
    await form.getByLabel('Confirm new password', { exact: true }).fill('Fresh#Pass4');
    await form.getByRole('button', { name: 'Reset password…' }).click();
    await form.getByText('Passwords do not match').waitFor();
    await form.getByLabel('Confirm new password', { exact: true }).fill('Fresh#Pass3');
    await form.getByRole('button', { name: 'Reset password…' }).click();
    const dialog = page.getByRole('dialog', { name: "Reset Dana's password?" });
    await dialog.getByText('tell them the password yourself').waitFor();
    await page.screenshot({ path: '/tmp/ui18-password-reset-confirm.png' });
    await dialog.getByRole('button', { name: 'Reset password' }).click();
    await panel.getByTestId('mod-done').filter({ hasText: 'Set a new password for Dana' }).waitFor();

    // Dana's open window is signed out at once; the new password works.
    await dana.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signIn(dana.page, 'Dana', 'Fresh#Pass3');
    await dana.page.getByTestId('signed-in-username').waitFor();
    expectNoProblems(owner);
    expectNoProblems(modi);
  });
});
