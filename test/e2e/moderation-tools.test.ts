import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import {
  chooseTheme,
  launchBrowser,
  navLink,
  startHostWithOwner,
  type Host,
  type Tab,
  seriousViolations,
  makeMember,
  openSignedIn,
  promote,
} from './harness.js';

const PASSWORD = 'Member#Pass1';

/** Issue 28: live rank pushes, the Content tab, the remove-all job seen by another moderator, private notes. */
describe('moderation tools in a real browser', { timeout: 90_000 }, () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await makeUser('ModMia', Rank.Moderator);
    await makeUser('AdaAdmin', Rank.Admin);
    await makeUser('Pia');
    await makeUser('Cleo');
  });
  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  const makeUser = async (username: string, rank?: Rank) =>
    (await makeMember(host, username, PASSWORD, rank)).user;

  /** Uploads through the API as `username` (a real multipart upload). */
  async function uploadAs(username: string, name: string, meta?: { avatarMeta: string }) {
    const base = `${host.server.url}/api/v1/`;
    const login = (await (
      await fetch(`${base}login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username, password: PASSWORD }),
      })
    ).json()) as { result: { token: { content: string } } };
    const user = (await host.server.users.byUsername(username))!;
    const form = new FormData();
    form.append('userid', user.Id);
    form.append('tokenContent', login.result.token.content);
    if (meta) form.append('avatarMeta', meta.avatarMeta);
    form.append('file', new Blob([`bytes of ${name}`]), name);
    const answer = (await (await fetch(`${base}upload`, { method: 'POST', body: form })).json()) as {
      success: boolean;
    };
    expect(answer.success).toBe(true);
  }

  const avatarMeta = (Name: string) =>
    JSON.stringify({
      Id: '',
      OwnerId: '',
      Publicity: 0,
      Name,
      Description: '',
      Tags: [],
      ImageURL: '',
      BuildPlatform: 0,
    });

  const open = (username: string): Promise<Tab> => openSignedIn(browser, host, tabs, username, PASSWORD);

  async function openUser(page: Page, username: string): Promise<void> {
    await navLink(page, 'Moderation').click();
    await page.getByRole('heading', { name: 'Moderation', level: 1 }).waitFor();
    await page.getByLabel('Name or user id').fill(username);
    await page.getByRole('search').getByRole('button', { name: 'Search' }).click();
    await page.locator('#mod-user-title', { hasText: username }).waitFor();
  }

  it("shows the Moderation screen in a promoted user's open window within 2 s, without a reload", async () => {
    const pia = await open('Pia');
    // On a screen that shows the live-updates indicator, once its socket is verified.
    await navLink(pia.page, 'Invites').click();
    await pia.page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();
    expect(await navLink(pia.page, 'Moderation').count()).toBe(0);
    const user = (await host.server.users.byUsername('Pia'))!;
    const started = Date.now();
    await promote(host, user.Id, Rank.Moderator);
    await navLink(pia.page, 'Moderation').waitFor({ timeout: 2000 });
    expect(Date.now() - started).toBeLessThan(2000);
    // And it goes again when the rank is taken away.
    await promote(host, user.Id, Rank.Registered);
    await navLink(pia.page, 'Moderation').waitFor({ state: 'detached', timeout: 2000 });
  });

  it("lists a user's content with sizes and dates, and removes one item", async () => {
    await uploadAs('Cleo', 'bot.hna', { avatarMeta: avatarMeta('Robo') });
    await uploadAs('Cleo', 'photo.png');
    await uploadAs('Cleo', 'poster.png');
    const { page } = await open('ModMia');
    await openUser(page, 'Cleo');
    const panel = page.getByTestId('mod-panel');
    await panel.getByRole('tab', { name: 'Content' }).click();
    const rows = panel.getByTestId('content-row');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(3);
    const text = await panel.getByTestId('content-tab').textContent();
    expect(text).toContain('Robo');
    expect(text).toContain('photo.png');
    await page.evaluate(() => window.scrollTo(0, 0));
    for (const theme of ['dark', 'light'] as const) {
      await chooseTheme(page, theme);
      await panel.screenshot({ path: `/tmp/ui-mod-content-${theme}.png` });
      expect(await seriousViolations(page, '[data-testid="mod-panel"]'), theme).toEqual([]);
    }
    await panel.getByRole('button', { name: 'Remove file photo.png' }).click();
    const dialog = page.getByRole('dialog', { name: "Remove Cleo's file?" });
    await dialog.getByRole('button', { name: 'Remove file' }).click();
    await panel.getByTestId('mod-done').waitFor();
    await panel.getByRole('tab', { name: 'Content' }).click();
    await expect.poll(() => panel.getByTestId('content-row').count()).toBe(2);
    expect(await panel.getByTestId('content-tab').textContent()).not.toContain('photo.png');
  });

  it("starts removing all content and a second moderator's window sees the progress live", async () => {
    const watcher = await open('AdaAdmin');
    await openUser(watcher.page, 'Cleo');
    const watched = watcher.page.getByTestId('mod-panel');
    await watched.getByRole('tab', { name: 'Content' }).click();
    await watched.getByTestId('content-row').first().waitFor();

    const { page } = await open('ModMia');
    await openUser(page, 'Cleo');
    const panel = page.getByTestId('mod-panel');
    await panel.getByRole('tab', { name: 'Content' }).click();
    await panel.getByTestId('content-row').first().waitFor();
    await panel.getByRole('button', { name: 'Remove all content…' }).click();
    await page
      .getByRole('dialog', { name: "Remove all of Cleo's content?" })
      .getByRole('button', { name: 'Remove everything' })
      .click();

    // The other moderator's window, untouched, shows the job and its end.
    const status = watched.getByTestId('content-job-status');
    await expect
      .poll(() => status.textContent(), { timeout: 5000 })
      .toContain('All content removed: 2 items');
    await expect.poll(() => watched.getByTestId('content-row').count()).toBe(0);
    expect(await status.textContent()).toContain('Started by ModMia');
    for (const theme of ['dark', 'light'] as const) {
      await chooseTheme(watcher.page, theme);
      await watched.screenshot({ path: `/tmp/ui-mod-content-job-${theme}.png` });
      expect(await seriousViolations(watcher.page, '[data-testid="mod-panel"]'), theme).toEqual([]);
    }
  });

  it('adds a private note the next moderator reads', async () => {
    const { page } = await open('ModMia');
    await openUser(page, 'Cleo');
    const notes = page.getByTestId('user-notes');
    await notes.getByLabel('New note').fill('Uploaded a copyrighted avatar.\nAsked to stop.');
    await notes.getByRole('button', { name: 'Add note' }).click();
    await notes.getByTestId('user-note').first().waitFor();
    expect(await notes.getByTestId('user-note').first().textContent()).toContain(
      'Uploaded a copyrighted avatar.',
    );
    for (const theme of ['dark', 'light'] as const) {
      await chooseTheme(page, theme);
      await notes.screenshot({ path: `/tmp/ui-mod-notes-${theme}.png` });
      expect(await seriousViolations(page, '[data-testid="user-notes"]'), theme).toEqual([]);
    }
    const admin = await open('AdaAdmin');
    await openUser(admin.page, 'Cleo');
    await admin.page.getByTestId('user-note').first().waitFor();
    expect(await admin.page.getByTestId('user-notes').textContent()).toContain('ModMia');
  });
});
