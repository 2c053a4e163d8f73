import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import {
  expectNoProblems,
  expectSignedInAs,
  fitsViewport,
  launchBrowser,
  OWNER,
  signIn,
  startHostWithOwner,
  type Host,
  type Tab,
  makeMember,
  openSignedIn,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

describe('moderation in a real browser', () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await makeUser('ModMia', Rank.Moderator);
    await makeUser('Tara');
    await makeUser('AdaAdmin', Rank.Admin);
    await makeUser('Uma');
  });

  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });

  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  /** An account made through the service, promoted by the owner through the moderation service. */
  const makeUser = async (username: string, rank?: Rank) =>
    (await makeMember(host, username, PASSWORD, rank)).user;

  const open = (username: string, password = PASSWORD): Promise<Tab> =>
    openSignedIn(browser, host, tabs, username, password);

  /** A full-page screenshot from the top, so the sticky header is where a person sees it. */
  async function shot(page: Page, path: string): Promise<void> {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path, fullPage: true });
  }

  async function openModeration(page: Page): Promise<void> {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Moderation' })
      .click();
    await page.getByRole('heading', { name: 'Moderation', level: 1 }).waitFor();
  }

  async function findUser(page: Page, query: string): Promise<void> {
    await page.getByLabel('Name or user id').fill(query);
    await page.getByRole('search').getByRole('button', { name: 'Search' }).click();
    await page.locator('#mod-user-title', { hasText: query }).waitFor();
  }

  it('bans with a preset; the target is signed out live, then sees the ban screen; the log shows it', async () => {
    const target = await open('Tara');
    await expectSignedInAs(target.page, 'Tara', 'Registered');
    // The target's page waits on another section, with its socket verified.
    await target.page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Invites' })
      .click();
    await target.page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();

    const mod = await open('ModMia');
    const { page } = mod;
    await openModeration(page);
    await findUser(page, 'Tara');
    const panel = page.getByTestId('mod-panel');
    expect(await panel.getByTestId('mod-ban-state').textContent()).toContain('Not banned');

    await panel.getByLabel('Reason').fill('Spamming invite requests');
    await panel.getByRole('radio', { name: '7 days' }).check();
    const ends = await panel.getByTestId('ban-ends').textContent();
    expect(ends).toMatch(/^Ends .+ \(in 7 days\)$/);
    await shot(page, '/tmp/ui-moderation.png');

    await panel.getByRole('button', { name: 'Ban Tara…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Ban Tara?' });
    await dialog.waitFor();
    const effect = await dialog.textContent();
    expect(effect).toContain('Tara is signed out everywhere at once and cannot sign in until');
    expect(effect).toContain('in 7 days');
    await page.screenshot({ path: '/tmp/ui-moderation-confirm.png' });
    await dialog.getByRole('button', { name: 'Ban Tara' }).click();

    await panel.getByTestId('mod-done').waitFor();
    expect(await panel.getByTestId('mod-done').textContent()).toContain('Banned Tara until');
    expect(await panel.getByTestId('mod-ban-state').textContent()).toContain('Banned until');
    expect(await panel.getByRole('button', { name: 'Unban' }).count()).toBe(1);
    // The form starts afresh for the next action, without complaining about the fields it just emptied.
    expect(await panel.getByLabel('Reason').inputValue()).toBe('');
    expect(await panel.getByText('A reason is required').count()).toBe(0);

    // Live: the host closes the target's socket and their page returns to sign-in saying why.
    await target.page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 5000 });
    expect(await target.page.getByText('A moderator banned this account').count()).toBe(1);
    await target.page.screenshot({ path: '/tmp/ui-moderation-signed-out-live.png' });
    await signIn(target.page, 'Tara', PASSWORD);
    await target.page.getByRole('heading', { name: 'Tara is banned' }).waitFor();
    expect(await target.page.getByText('Spamming invite requests').count()).toBe(1);
    await target.page.screenshot({ path: '/tmp/ui-moderation-banned-target.png' });

    // The log (newest first) shows the ban, by whom, with its reason; the action filter keeps only bans.
    const log = page.getByTestId('mod-log');
    const first = log.getByTestId('log-row').first();
    await first.locator('[data-action="banuser"]').waitFor();
    const line = await first.textContent();
    expect(line).toContain('Tara');
    expect(line).toContain('by ModMia');
    expect(line).toContain('Spamming invite requests');
    await page.getByLabel('Action', { exact: true }).selectOption('banuser');
    await page.getByRole('form', { name: 'Filter the log' }).getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1–1 of 1, newest first').waitFor();
    expect(await log.getByTestId('log-row').count()).toBe(1);
    await shot(page, '/tmp/ui-moderation-log.png');

    expect(await fitsViewport(page)).toBe(true);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await fitsViewport(page)).toBe(true);
    await shot(page, '/tmp/ui-moderation-narrow.png');
    expectNoProblems(mod);
    expectNoProblems(target);
  });

  it('offers no actions on an admin, saying why', async () => {
    const mod = await open('ModMia');
    const { page } = mod;
    await openModeration(page);
    await findUser(page, 'AdaAdmin');
    const panel = page.getByTestId('mod-panel');
    expect(await panel.getByTestId('mod-refusal').textContent()).toContain(
      'AdaAdmin is Admin, ranked above you',
    );
    expect(await panel.getByRole('tab').count()).toBe(0);
    expect(
      await panel.getByRole('button', { name: /Ban|Warn|Unban|Lift|Change rank|Add badge/ }).count(),
    ).toBe(0);
    await shot(page, '/tmp/ui-moderation-admin.png');
    expectNoProblems(mod);
  });

  it('shows a server refusal next to the action when the target outranked the moderator meanwhile', async () => {
    const mod = await open('ModMia');
    const { page } = mod;
    await openModeration(page);
    await findUser(page, 'Uma');
    const panel = page.getByTestId('mod-panel');
    await panel.getByRole('tab', { name: 'Warn' }).click();
    await panel.getByLabel('Reason').fill('Rude in world chat');

    // Behind the panel's back, the owner makes Uma an admin.
    const owner = (await host.server.users.byUsername(OWNER.username))!;
    const uma = (await host.server.users.byUsername('Uma'))!;
    await host.server.moderation.act(owner, 'setrank', uma.Id, { newRank: Rank.Admin });

    await panel.getByRole('button', { name: 'Warn Uma…' }).click();
    await page.getByRole('dialog', { name: 'Warn Uma?' }).getByRole('button', { name: 'Warn Uma' }).click();
    const refusal = panel.getByRole('form', { name: 'Warn Uma' }).getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('You can only act on users ranked below you');
    expect((await host.server.users.byUsername('Uma'))?.WarnStatus.isWarned).toBe(false);
    expectNoProblems(mod);
  });

  it('offers only ranks below your own and refuses a past custom ban end before sending', async () => {
    const mod = await open('ModMia');
    const { page } = mod;
    await openModeration(page);
    const fresh = await makeUser('Vic');
    await findUser(page, 'Vic');
    const panel = page.getByTestId('mod-panel');

    await panel.getByRole('tab', { name: 'Rank' }).click();
    const options = await panel.getByLabel('New rank').locator('option').allTextContents();
    expect(options).toEqual(['Guest', 'Email not confirmed', 'Verified']);

    await panel.getByRole('tab', { name: /^Ban/ }).click();
    await panel.getByLabel('Reason').fill('Testing');
    await panel.getByRole('radio', { name: 'Custom date' }).check();
    await panel.getByLabel(/Ends at/).fill('2020-01-01T10:00');
    const sent: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/moderation')) sent.push(request.url());
    });
    await panel.getByRole('button', { name: 'Ban Vic…' }).click();
    expect(await panel.getByTestId('ban-ends').textContent()).toBe('The end must be in the future');
    expect(sent).toEqual([]);
    expect((await host.server.users.get(fresh.Id))?.BanStatus.isBanned).toBe(false);
    expectNoProblems(mod);
  });

  it('pages through a long log', async () => {
    const owner = (await host.server.users.byUsername(OWNER.username))!;
    const wes = await makeUser('Wes');
    for (let i = 0; i < 23; i++) {
      await host.server.moderation.act(owner, 'addbadge', wes.Id, { badgeName: `badge ${i}` });
    }
    const mod = await open('ModMia');
    const { page } = mod;
    await openModeration(page);
    await page.getByRole('form', { name: 'Filter the log' }).getByLabel('Target').fill('Wes');
    await page.getByRole('form', { name: 'Filter the log' }).getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1–20 of 23, newest first').waitFor();
    expect(await page.getByTestId('mod-log').getByText('“badge 22”').count()).toBe(1);
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('21–23 of 23, newest first').waitFor();
    expect(await page.getByTestId('mod-log').getByText('“badge 0”').count()).toBe(1);
    expectNoProblems(mod);
  });
});
