import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebhookReceiver } from '../server/webhook-receiver.js';
import {
  chooseTheme,
  expectNoProblems,
  launchBrowser,
  navLink,
  openSignedIn,
  OWNER,
  startHostWithOwner,
  type Host,
  type Tab,
  seriousViolations,
} from './harness.js';

/** Issue 28: the webhook card on the Host screen, against a real receiver on this machine. */
describe('webhook notifications on the Host screen', { timeout: 60_000 }, () => {
  let host: Host;
  let browser: Browser;
  let receiver: WebhookReceiver;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    receiver = await new WebhookReceiver().start();
  });
  afterEach(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
    await receiver?.stop();
  });

  it('saves a URL shown masked, sends a test the receiver gets and shows it delivered, in both themes', async () => {
    const tab = await openSignedIn(browser, host, tabs, OWNER.username, OWNER.password);
    const { page } = tab;
    await navLink(page, 'Host').click();
    const card = page.getByTestId('webhook-card');
    await card.getByTestId('webhook-last-delivery').waitFor();
    expect(await card.getByTestId('webhook-state').textContent()).toBe('Off');
    expect(await card.getByRole('button', { name: 'Send test' }).isDisabled()).toBe(true);

    // The same URL rule as the host's, before anything is sent.
    const field = card.getByLabel('Webhook URL');
    await field.fill('ftp://example.com/hook');
    await card.getByRole('button', { name: 'Save' }).click();
    await card.getByText('The URL must start with https:// or http://.').waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await card.screenshot({ path: '/tmp/webhook-card-refused.png' });

    await field.fill(receiver.url());
    await card.getByRole('button', { name: 'Save' }).click();
    await card.getByTestId('webhook-notice').filter({ hasText: 'Saved.' }).waitFor();
    expect(await card.getByTestId('webhook-masked-url').textContent()).toBe(
      `http://127.0.0.1:${receiver.port}/…XYZ9`,
    );
    expect(await card.getByTestId('webhook-state').textContent()).toBe('On');
    expect(await card.getByLabel('New webhook URL').inputValue()).toBe('');
    expect(await page.content()).not.toContain('a-secret-token');

    await card.getByRole('button', { name: 'Send test' }).click();
    await card.locator('[data-testid="webhook-last-delivery"][data-state="delivered"]').waitFor();
    expect(await card.getByTestId('webhook-last-delivery').textContent()).toMatch(
      /Last message delivered.*Test message.*HTTP 204/,
    );
    expect(receiver.posts).toHaveLength(1);
    expect(receiver.posts[0]!.body.embeds[0]!.title).toBe('Webhook test');
    expect(receiver.posts[0]!.body.content).toContain(OWNER.username);

    for (const theme of ['dark', 'light'] as const) {
      await chooseTheme(page, theme);
      await card.screenshot({ path: `/tmp/webhook-card-${theme}.png` });
      expect(await seriousViolations(page, '[data-testid="webhook-card"]'), theme).toEqual([]);
    }
    expectNoProblems(tab);
  });

  it('shows a failed test with its reason, and removes the URL after a confirmation', async () => {
    const tab = await openSignedIn(browser, host, tabs, OWNER.username, OWNER.password, '#/host');
    const { page } = tab;
    const card = page.getByTestId('webhook-card');
    await card.getByTestId('webhook-masked-url').waitFor();
    const port = receiver.port;
    await receiver.stop();
    try {
      await card.getByRole('button', { name: 'Send test' }).click();
      const failed = card.locator('[data-testid="webhook-last-delivery"][data-state="failed"]');
      await failed.waitFor();
      expect(await failed.textContent()).toMatch(/Last message not delivered.*connection refused/);
      await chooseTheme(page, 'dark');
      await card.screenshot({ path: '/tmp/webhook-card-failed-dark.png' });
      expect(await seriousViolations(page, '[data-testid="webhook-card"]')).toEqual([]);
    } finally {
      await receiver.start(port);
    }

    await card.getByRole('button', { name: 'Remove URL' }).click();
    await page
      .getByRole('dialog', { name: 'Remove the webhook URL?' })
      .getByRole('button', { name: 'Remove' })
      .click();
    await card.getByTestId('webhook-notice').filter({ hasText: 'Removed' }).waitFor();
    expect(await card.getByTestId('webhook-state').textContent()).toBe('Off');
    expect(await card.getByTestId('webhook-masked-url').count()).toBe(0);
    expect((await host.server.core.webhooks.view()).configured).toBe(false);
    expectNoProblems(tab);
  });
});
