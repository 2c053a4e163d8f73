import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import { BAN_UNTIL_LIFTED } from '../../server/protocol/audit.js';
import {
  addPeople,
  chooseTheme,
  expectNoProblems,
  launchBrowser,
  navLink,
  openSignedIn,
  OWNER,
  startHostWithOwner,
  storedSession,
  type Host,
  type Tab,
  seriousViolations,
} from './harness.js';

/** Issue 28: the audit log on the Moderation screen: filters, export, ban import. */
describe('audit log on the Moderation screen', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await addPeople(host, [['Eve', Rank.Registered]], 'Eve#Pass12');
  });
  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  it('filters the log, exports the bans, and imports them back, in both themes', async () => {
    const tab = await openSignedIn(browser, host, tabs, OWNER.username, OWNER.password);
    const { page } = tab;
    const session = (await storedSession(page))!;
    const api = (path: string, body: Record<string, unknown>) =>
      fetch(`${host.server.url}/api/v1/${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...session, ...body }),
      }).then((r) => r.json() as Promise<{ success: boolean }>);
    const eve = (await host.server.users.byUsername('Eve'))!;
    expect((await api('createInviteCode', { label: 'friends' })).success).toBe(true);
    expect(
      (
        await api('moderation', {
          action: 'banuser',
          targetUserId: eve.Id,
          banReason: '=spam',
          banDescription: '',
          timeEnd: BAN_UNTIL_LIFTED,
        })
      ).success,
    ).toBe(true);

    await navLink(page, 'Moderation').click();
    const log = page.locator('section[aria-labelledby="log-title"]');
    await log.getByTestId('log-row').nth(1).waitFor();
    expect(await log.getByTestId('log-row').first().textContent()).toContain('until lifted');

    await log.getByLabel('Action').selectOption({ label: 'All: Invite codes' });
    await log.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => log.getByTestId('log-row').count()).toBe(1);
    expect(await log.getByTestId('log-row').first().textContent()).toContain('Invite code made');

    for (const theme of ['light', 'dark'] as const) {
      await chooseTheme(page, theme);
      expect(await seriousViolations(page, 'section[aria-labelledby="log-title"]')).toEqual([]);
      await log.screenshot({ path: `/tmp/audit-log-${theme}.png` });
    }

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      log.getByRole('button', { name: 'Bans as CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^bans-.*\.csv$/);
    const file = await download.path();
    const csv = readFileSync(file, 'utf8');
    expect(csv).toContain(`"Eve","${eve.Id}","'=spam"`);

    // Lift the ban, then import the file back: the ban returns, logged as the owner's.
    expect((await api('moderation', { action: 'unbanuser', targetUserId: eve.Id })).success).toBe(true);
    await log
      .getByLabel('Bans file')
      .setInputFiles({ name: 'bans.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await log.getByLabel('Lenient: import what matches, list what was skipped').check();
    await log.getByRole('button', { name: 'Import bans' }).click();
    await log.getByTestId('import-result').getByText('Imported 1 ban, skipped 0.').waitFor();
    expect((await host.server.users.byUsername('Eve'))!.BanStatus).toMatchObject({
      isBanned: true,
      BanEnd: BAN_UNTIL_LIFTED,
      BanReason: '=spam',
    });
    await log.screenshot({ path: '/tmp/audit-log-imported.png' });
    expectNoProblems(tab);
  });
});
