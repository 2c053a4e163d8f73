import { createHash } from 'node:crypto';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Publicity, Rank } from '../../server/protocol/enums.js';
import {
  chooseTheme,
  expectNoProblems,
  focusRing,
  launchBrowser,
  navLink,
  openTab,
  signIn,
  startHostWithOwner,
  type Host,
  type Tab,
  makeMember,
} from './harness.js';

const PASSWORD = 'Member#Pass1';
const THEMES = ['light', 'dark'] as const;
type Theme = (typeof THEMES)[number];

/** The focused control shows the theme's ring: a solid outline, at least 2 px, in the ring colour. */
async function expectRing(page: Page, theme: Theme): Promise<void> {
  expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
  const ring = await focusRing(page);
  expect(ring.style, ring.what).toBe('solid');
  expect(ring.width, ring.what).toBeGreaterThanOrEqual(2);
  expect(ring.color, ring.what).toBe(ring.expected);
}

const isFocused = (target: Locator) =>
  target.evaluate((el) => el === document.activeElement).catch(() => false);

/**
 * Presses Tab (or Shift+Tab) until `target` (found by role and accessible name) has focus, at most 80 times, then
 * checks its focus ring.
 */
async function tabTo(page: Page, target: Locator, theme: Theme, key = 'Tab'): Promise<void> {
  await target.waitFor();
  for (let i = 0; i < 80 && !(await isFocused(target)); i++) await page.keyboard.press(key);
  if (!(await isFocused(target))) {
    const at = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 200));
    throw new Error(`${key} never reached ${target.toString()} (focus is on ${at})`);
  }
  await expectRing(page, theme);
}

/** Blurs whatever has focus, as when a keyboard user starts from the top of the page. */
async function fromTheTop(page: Page): Promise<void> {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
}

/** Goes to a section with the keyboard: Tab to its link in the top bar, then Enter. */
async function openSection(page: Page, theme: Theme, name: string, heading: string): Promise<void> {
  await fromTheTop(page);
  await tabTo(page, navLink(page, name), theme);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

/** Bytes that differ per seed. */
function bytes(size: number, seed: string): Buffer {
  const out = Buffer.alloc(size);
  let block = createHash('sha256').update(seed).digest();
  for (let i = 0; i < size; i += block.length) {
    block.copy(out, i);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** Issue 28: the main tasks done with the keyboard alone, the focused control ringed in both themes. */
describe('keyboard-only flows in a real browser', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
  });

  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });

  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  const makeUser = (username: string, rank?: Rank) => makeMember(host, username, PASSWORD, rank);

  /** A tab in `theme`; signed in as `username` (set up with the harness) unless none is given. */
  async function open(theme: Theme, username?: string): Promise<Tab> {
    const tab = await openTab(browser);
    tab.page.setDefaultTimeout(8000);
    tabs.push(tab);
    await tab.page.goto(host.server.url);
    if (username) {
      await signIn(tab.page, username, PASSWORD);
      await tab.page.getByTestId('signed-in-username').waitFor();
    } else {
      await tab.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    }
    await chooseTheme(tab.page, theme);
    return tab;
  }

  for (const theme of THEMES) {
    const suffix = theme === 'light' ? 'L' : 'D';

    it(`signs in with the keyboard only, in the ${theme} theme`, async () => {
      await makeUser(`Keys${suffix}`);
      const tab = await open(theme);
      const { page } = tab;
      const form = page.locator('form', { has: page.getByRole('heading', { name: 'Sign in' }) });

      await fromTheTop(page);
      await tabTo(page, form.getByRole('textbox', { name: 'Username', exact: true }), theme);
      await page.keyboard.type(`Keys${suffix}`);
      await tabTo(page, form.getByLabel('Password', { exact: true }), theme);
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press('Enter');

      const name = page.getByTestId('signed-in-username');
      await name.waitFor();
      expect(await name.textContent()).toBe(`Keys${suffix}`);
      expectNoProblems(tab);
    });

    it(`uploads an avatar with the keyboard only, in the ${theme} theme`, async () => {
      const username = `Maker${suffix}`;
      const { user, token } = await makeUser(username);
      const tab = await open(theme, username);
      const { page } = tab;
      await openSection(page, theme, 'Uploads', 'Uploads');

      // The pick button opens the browser's own file chooser on Enter (Space in the other theme).
      // Listening first, well before the key press: Playwright catches the chooser only once its interception
      // is switched on, which takes a few round trips to the browser.
      const chooserOpened = page.waitForEvent('filechooser');
      const pick = page.getByRole('button', { name: 'Choose files' });
      await tabTo(page, pick, theme);
      await page.keyboard.press(theme === 'light' ? 'Enter' : 'Space');
      const chooser = await chooserOpened;
      const file = `robot-${theme}.hna`;
      await chooser.setFiles({
        name: file,
        mimeType: 'application/octet-stream',
        buffer: bytes(20_000, file),
      });

      const form = page.getByRole('form', { name: `Details of ${file}` });
      await tabTo(page, form.getByRole('textbox', { name: 'Name', exact: true }), theme);
      await page.keyboard.type(`Robot ${theme}`);
      await tabTo(page, form.getByRole('textbox', { name: 'Tags' }), theme);
      await page.keyboard.type('robot, keys');
      // Radios: Tab lands on the checked one, the arrow keys choose.
      await tabTo(page, form.getByRole('radio', { name: 'Anyone' }), theme);
      await page.keyboard.press('ArrowRight');
      expect(await form.getByRole('radio', { name: 'Only me' }).isChecked()).toBe(true);
      await expectRing(page, theme);
      await tabTo(page, form.getByRole('button', { name: 'Upload avatar' }), theme);
      await page.keyboard.press('Enter');

      await page
        .getByTestId('upload-job')
        .filter({ hasText: file })
        .getByTestId('job-state')
        .filter({ hasText: 'Uploaded' })
        .waitFor({ timeout: 15_000 });
      const response = await fetch(`${host.server.url}/api/v1/getMyContent`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ userid: user.Id, tokenContent: token.content }),
      });
      const content = (await response.json()) as {
        result: { Avatars: Array<{ Name: string; Tags: string[]; Publicity: number }> };
      };
      expect(content.result.Avatars).toHaveLength(1);
      expect(content.result.Avatars[0]).toMatchObject({
        Name: `Robot ${theme}`,
        Tags: ['robot', 'keys'],
        Publicity: Publicity.OwnerOnly,
      });
      expectNoProblems(tab);
    });

    it(`warns a user from the Moderation screen with the keyboard only, in the ${theme} theme`, async () => {
      const moderator = `Mod${suffix}`;
      const target = `Rowdy${suffix}`;
      await makeUser(moderator, Rank.Moderator);
      const { user: rowdy } = await makeUser(target);
      const tab = await open(theme, moderator);
      const { page } = tab;
      await openSection(page, theme, 'Moderation', 'Moderation');

      await tabTo(page, page.getByRole('textbox', { name: 'Name or user id' }), theme);
      await page.keyboard.type(target);
      await page.keyboard.press('Enter');
      await page.locator('#mod-user-title', { hasText: target }).waitFor();

      const panel = page.getByTestId('mod-panel');
      await tabTo(page, panel.getByRole('tab', { name: 'Warn' }), theme);
      await page.keyboard.press(theme === 'light' ? 'Enter' : 'Space');
      await panel.getByRole('form', { name: `Warn ${target}` }).waitFor();
      expect(await panel.getByRole('tab', { name: 'Warn' }).getAttribute('aria-selected')).toBe('true');

      await tabTo(page, panel.getByRole('textbox', { name: 'Reason' }), theme);
      await page.keyboard.type('Shouting in world chat');
      await tabTo(page, panel.getByRole('button', { name: `Warn ${target}…` }), theme);
      await page.keyboard.press('Enter');

      // The question opens with Cancel focused; Tab reaches the confirming button.
      const dialog = page.getByRole('dialog', { name: `Warn ${target}?` });
      await dialog.waitFor();
      expect(await isFocused(dialog.getByRole('button', { name: 'Cancel' }))).toBe(true);
      await expectRing(page, theme);
      await tabTo(page, dialog.getByRole('button', { name: `Warn ${target}` }), theme);
      await page.keyboard.press('Enter');

      await panel
        .getByTestId('mod-done')
        .filter({ hasText: `Warned ${target}` })
        .waitFor();
      await dialog.waitFor({ state: 'detached' });
      expect((await host.server.users.get(rowdy.Id))?.WarnStatus).toMatchObject({
        isWarned: true,
        WarnReason: 'Shouting in world chat',
      });
      // The form starts afresh, and focus is not dropped on the page: it goes back to the chosen tab, ringed.
      await expect.poll(() => isFocused(panel.getByRole('tab', { name: 'Warn' }))).toBe(true);
      await expectRing(page, theme);
      await tabTo(page, panel.getByRole('textbox', { name: 'Reason' }), theme);
      expectNoProblems(tab);
    });

    it(`answers an invite request with the keyboard only, in the ${theme} theme`, async () => {
      const me = `Host${suffix}`;
      const friend = `Pal${suffix}`;
      const { user: meUser } = await makeUser(me);
      const { user: palUser } = await makeUser(friend);
      const pal = (await host.server.users.get(palUser.Id))!;
      await host.server.social.act('sendFriendRequest', pal, meUser.Id);
      await host.server.social.act(
        'acceptFriendRequest',
        (await host.server.users.get(meUser.Id))!,
        palUser.Id,
      );

      const tab = await open(theme, me);
      const { page } = tab;
      await openSection(page, theme, 'Invites', 'Invite requests');
      await page.locator('[data-testid="socket-health"][data-health="connected"]').waitFor();

      // The friend asks to join, through the host's invite service (what their socket message does).
      const outcome = await host.server.invites.request(palUser.Id, meUser.Id);
      expect(outcome.ok).toBe(true);
      const row = page.getByTestId('invite-row').filter({ hasText: friend });
      await row.waitFor();

      const answer =
        theme === 'light'
          ? row.getByRole('button', { name: 'Mark answered' })
          : row.getByRole('button', { name: `Dismiss the request from ${friend}` });
      await tabTo(page, answer, theme);
      await page.keyboard.press(theme === 'light' ? 'Enter' : 'Space');

      await page.getByText('Nothing waiting.').waitFor();
      const state = theme === 'light' ? 'answered' : 'dismissed';
      await expect
        .poll(async () => (await host.server.invites.list(meUser.Id)).map((r) => r.state))
        .toEqual([state]);
      // The answered row left the list; focus did not fall to the top of the page with it but went to the
      // list's heading, and the next Tab goes on from there.
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('invite-list-title');
      await tabTo(page, page.getByRole('button', { name: /^Open/ }), theme);
      expect(
        await page.evaluate(() => document.activeElement?.closest('[aria-label="Which requests"]')),
      ).not.toBe(null);
      expectNoProblems(tab);
    });
  }
});
