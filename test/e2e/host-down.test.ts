import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectNoProblems,
  fitsViewport,
  launchBrowser,
  openTab,
  OWNER,
  signIn,
  startHostWithOwner,
  type Host,
} from './harness.js';

/** Where the banner is on screen, and whether its words can be read there. */
async function bannerInView(
  page: Page,
): Promise<{ top: number; bottom: number; height: number; text: string }> {
  return page.getByTestId('host-down-banner').evaluate((el) => {
    const box = el.getBoundingClientRect();
    return { top: box.top, bottom: box.bottom, height: window.innerHeight, text: el.textContent ?? '' };
  });
}

/** Issue 28: a host that went away is said on screen wherever the page is scrolled, at every width. */
describe('the host-down banner in a real browser', () => {
  let host: Host;
  let browser: Browser;

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop().catch(() => undefined);
  });

  it('stays in view, announced, when the page is scrolled down, at 800 px and on a phone', async () => {
    const tab = await openTab(browser, { viewport: { width: 800, height: 600 } });
    const { page } = tab;
    try {
      page.setDefaultTimeout(8000);
      await page.goto(`${host.server.url}/#/account`);
      await signIn(page, OWNER.username, OWNER.password);
      await page.getByTestId('signed-in-username').waitFor();
      await page.locator('[data-testid="shell-connection"][data-health="connected"]').waitFor();

      await host.server.close();
      await page.getByTestId('host-down-banner').waitFor({ timeout: 15_000 });
      // Scrolled to the bottom of a page taller than the window.
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(200);
      const at800 = await bannerInView(page);
      expect(at800.top).toBeGreaterThanOrEqual(0);
      expect(at800.bottom).toBeLessThanOrEqual(at800.height);
      expect(at800.text).toContain('The host cannot be reached.');
      // A polite live region says it to screen readers.
      expect(await page.getByRole('status').filter({ hasText: 'The host cannot be reached.' }).count()).toBe(
        1,
      );
      // The top bar says it in a word too, not only with a coloured dot.
      const word = page.getByTestId('shell-connection').locator('.shell-connection-word');
      expect(await word.evaluate((el) => el.getBoundingClientRect().width)).toBeGreaterThan(20);
      expect(await word.textContent()).toMatch(/Host (unreachable|offline)/);
      await page.screenshot({ path: '/tmp/ui28-host-down-800.png' });

      // A phone: still there, still readable, nothing wider than the screen.
      await page.setViewportSize({ width: 360, height: 700 });
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      const phone = await bannerInView(page);
      expect(phone.top).toBeGreaterThanOrEqual(0);
      expect(phone.bottom).toBeLessThanOrEqual(phone.height);
      expect(
        await page.getByTestId('host-down-banner').getByText('The host cannot be reached.').isVisible(),
      ).toBe(true);
      expect(await page.getByRole('button', { name: 'Try now' }).isVisible()).toBe(true);
      expect(await fitsViewport(page)).toBe(true);
      await page.screenshot({ path: '/tmp/ui28-host-down-phone.png' });
      // The host is gone, so failed requests are expected in the console; nothing else may go wrong.
      tab.problems.splice(
        0,
        tab.problems.length,
        ...tab.problems.filter((p) => !/ERR_CONNECTION_REFUSED|Failed to load resource/.test(p)),
      );
      expectNoProblems(tab);
    } finally {
      await tab.close();
    }
  });
});
