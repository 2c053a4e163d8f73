import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  chooseTheme,
  expectNoProblems,
  focusRing,
  launchBrowser,
  openTab,
  startHostWithOwner,
  type FocusRing,
  type Host,
  type Tab,
} from './harness.js';

/**
 * Presses Tab until `matches` holds for the focused element (at most 80 times: from wherever focus was, round the
 * whole page), then reads its outline.
 */
async function tabTo(page: Page, matches: string): Promise<FocusRing> {
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((selector) => document.activeElement?.matches(selector) === true, matches)) break;
  }
  const reached = await page.evaluate(
    (selector) => document.activeElement?.matches(selector) === true,
    matches,
  );
  if (!reached) throw new Error(`Tab never reached ${matches}`);
  return focusRing(page);
}

/** Relative luminance contrast of two `rgb(...)` colours (WCAG). */
function contrast(a: string, b: string): number {
  const lum = (rgb: string): number => {
    const [r, g, bl] = (rgb.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (bl ?? 0);
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** Issue 28: every control shows keyboard focus, in both themes, whatever its own style. */
describe('keyboard focus in a real browser', () => {
  let host: Host;
  let browser: Browser;
  let tab: Tab | undefined;

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
  });
  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  for (const theme of ['light', 'dark'] as const) {
    it(`rings an input and a primary button reached with Tab, in the ${theme} theme`, async () => {
      tab = await openTab(browser);
      const { page } = tab;
      await page.goto(host.server.url);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await chooseTheme(page, theme);
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);

      // From the top of the page, as a keyboard user comes in.
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      const input = await tabTo(page, 'input[name="username"]');
      const button = await tabTo(page, 'form button[type="submit"].primary');
      for (const ring of [input, button]) {
        expect(ring.style, ring.what).toBe('solid');
        expect(ring.width, ring.what).toBeGreaterThanOrEqual(2);
        expect(ring.color, ring.what).toBe(ring.expected);
        // A ring one can see: at least 3:1 against the page (WCAG 1.4.11).
        expect(contrast(ring.color, background)).toBeGreaterThanOrEqual(3);
      }
      await page.screenshot({ path: `/tmp/ui28-focus-${theme}.png` });
      expectNoProblems(tab);
    });
  }

  it('rings a section link in the top bar, inside its scrolling strip', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(`${host.server.url}/#/host`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Username', { exact: true }).fill('HostOwner');
    await page.getByLabel('Password', { exact: true }).fill('Owner#Pass1');
    await page.locator('form').getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByTestId('signed-in-username').waitFor();
    await chooseTheme(page, 'dark');
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const link = await tabTo(page, '.topnav-item');
    expect(link.style).toBe('solid');
    expect(link.color).toBe(link.expected);
    // Drawn inside the link: the strip scrolls sideways and would cut off a ring outside it.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineOffset)).toBe('-3px');
    await page.screenshot({ path: '/tmp/ui28-focus-nav.png' });
    expectNoProblems(tab);
  });
});
