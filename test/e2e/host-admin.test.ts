import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import {
  addPeople,
  chooseTheme,
  expectNoProblems,
  launchBrowser,
  navLink,
  openSignedIn,
  seriousViolations,
  startHostWithOwner,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

/** Issue 18, item 3: the Host screen for the owner and admins in a LAN browser, where there is no desktop bridge. */
describe('host administration in a browser', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await addPeople(
      host,
      [
        ['Adah', Rank.Admin],
        ['Mona', Rank.Moderator],
        ['Bobo', Rank.Registered],
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

  const open = (username: string, hash = ''): Promise<Tab> =>
    openSignedIn(browser, host, tabs, username, PASSWORD, hash);

  async function api<R>(path: string, body?: object): Promise<{ success: boolean; result: R }> {
    const response = await fetch(`${host.server.url}/api/v1/${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { 'Content-Type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await response.json()) as { success: boolean; result: R };
  }

  it('gives an admin the status, LAN warning, connected users, invite codes, game-server tokens and sign-up setting', async () => {
    const ada = await open('Adah');
    const { page } = ada;
    // Someone else connected, to show up in the list.
    await open('Bobo');
    await navLink(page, 'Host').click();
    await page.getByRole('heading', { name: 'Host', level: 1 }).waitFor();

    // Bound to 127.0.0.1: the screen says other machines cannot connect, and how to open it.
    const warning = page.getByTestId('host-local-only');
    await warning.waitFor();
    expect(await warning.textContent()).toMatch(/bound to 127\.0\.0\.1.*--host 0\.0\.0\.0/);
    await page.getByText('None: the host only listens on this computer.').waitFor();
    await page.getByRole('button', { name: 'Refresh the host status' }).click();
    await page.locator('[data-testid="host-client"][data-username="Bobo"]').waitFor();
    await page.locator('[data-testid="host-client"][data-username="Adah"]').waitFor();
    // What only the desktop window can do is not offered here.
    for (const name of ['Start', 'Stop', 'Open folder']) {
      expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
    }
    expect(await page.getByRole('form', { name: 'Host settings' }).count()).toBe(0);

    // An invite code for two sign-ups that expires in a day, shown once.
    const codes = page.getByTestId('invite-codes');
    await codes.getByLabel('Label (optional)').fill('LAN party');
    await codes.getByRole('radio', { name: 'A number' }).check();
    await codes.getByLabel('Number of sign-ups').fill('1');
    await codes.getByRole('button', { name: 'Create invite code' }).click();
    await codes.getByText('For one sign-up choose “Once”').waitFor();
    await codes.getByLabel('Number of sign-ups').fill('2');
    await codes.getByLabel('Expires').selectOption({ label: 'In 1 day' });
    await codes.getByRole('button', { name: 'Create invite code' }).click();
    const shown = codes.getByTestId('new-invite-code');
    await shown.waitFor();
    const code = (await shown.textContent())!.trim();
    const row = codes.getByTestId('invite-code-row').filter({ hasText: 'LAN party' });
    await row
      .filter({ hasText: 'Used 0 of 2 times' })
      .filter({ hasText: /expires (tomorrow|in 1 day)/ })
      .waitFor();

    // Codes become required; the code lets two people in, not a third.
    await codes.getByRole('checkbox', { name: 'New accounts need an invite code' }).check();
    await expect
      .poll(async () => (await api<{ inviteCodeRequired: boolean }>('isInviteCodeRequired')).result)
      .toEqual({ inviteCodeRequired: true });
    const signUp = (username: string) =>
      api('createUser', {
        username,
        password: PASSWORD,
        email: `${username}@example.test`,
        inviteCode: code,
      });
    expect((await signUp('Guest1')).success).toBe(true);
    expect((await signUp('Guest2')).success).toBe(true);
    expect((await signUp('Guest3')).success).toBe(false);
    await page.reload();
    await row.filter({ hasText: 'Used 2 of 2 times' }).waitFor();
    expect(await row.getAttribute('data-state')).toBe('usedUp');
    expect(await row.getByRole('button', { name: /Revoke/ }).count()).toBe(0);

    // A second code, revoked after a confirmation: it no longer works.
    await codes.getByLabel('Label (optional)').fill('Spare');
    await codes.getByRole('radio', { name: 'No limit' }).check();
    await codes.getByLabel('Expires').selectOption({ label: 'Never' });
    await codes.getByRole('button', { name: 'Create invite code' }).click();
    const spare = (await codes.getByTestId('new-invite-code').textContent())!;
    const spareRow = codes.getByTestId('invite-code-row').filter({ hasText: 'Spare' });
    await spareRow.filter({ hasText: 'Unused, no limit · never expires' }).waitFor();
    await spareRow.getByRole('button', { name: 'Revoke the invite code “Spare”' }).click();
    await page
      .getByRole('dialog', { name: 'Revoke “Spare”?' })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await codes
      .locator('[data-testid="invite-code-row"][data-state="revoked"]')
      .filter({ hasText: 'Spare' })
      .waitFor();
    expect(
      (
        await api('createUser', {
          username: 'Guest4',
          password: PASSWORD,
          email: 'g4@example.test',
          inviteCode: spare.trim(),
        })
      ).success,
    ).toBe(false);

    // A game-server token, shown once, that the host accepts until it is revoked.
    const tokens = page.getByTestId('game-server-tokens');
    await tokens.getByRole('button', { name: 'Add token' }).click();
    await tokens.getByText('Name the game server, e.g. “Basement PC”').waitFor();
    await tokens.getByLabel('Game server name').fill('Basement PC');
    await tokens.getByRole('button', { name: 'Add token' }).click();
    const token = (await tokens.getByTestId('new-game-server-token').textContent())!.trim();
    expect(await host.server.gameServerTokens.verify(token)).not.toBeNull();
    await tokens.getByTestId('game-server-token-row').filter({ hasText: 'Basement PC' }).waitFor();
    for (const theme of ['dark', 'light'] as const) {
      await chooseTheme(page, theme);
      await page.screenshot({ path: `/tmp/ui18-host-admin-${theme}.png`, fullPage: true });
      expect(await seriousViolations(page), theme).toEqual([]);
    }
    await tokens.getByRole('button', { name: 'Revoke the token “Basement PC”' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await tokens.getByText(/No tokens made here/).waitFor();
    expect(await host.server.gameServerTokens.verify(token)).toBeNull();
    expectNoProblems(ada);
  });

  it('keeps the Host screen from a moderator, even by its address', async () => {
    const mo = await open('Mona', '#/host');
    const { page } = mo;
    expect(await navLink(page, 'Moderation').count()).toBe(1);
    expect(await navLink(page, 'Host').count()).toBe(0);
    await expect.poll(() => new URL(page.url()).hash).not.toBe('#/host');
    expect(await page.getByTestId('invite-codes').count()).toBe(0);
    expectNoProblems(mo);
  });
});
