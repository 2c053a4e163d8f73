import { Readable } from 'node:stream';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addPeople,
  expectNoProblems,
  launchBrowser,
  openSignedIn,
  OWNER,
  startHostWithOwner,
  type Host,
  type Tab,
} from './harness.js';

const PASSWORD = 'Player#Pass1';

/** Issue 28: the Downloads list follows what is published while it is open, and sizes read the same everywhere. */
describe('downloads in a real browser', () => {
  let host: Host;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    await addPeople(host, [['Player', 2]], PASSWORD);
  });
  afterAll(async () => {
    for (const tab of tabs.splice(0)) await tab.close();
    await browser?.close();
    await host?.stop();
  });

  it('shows a version published elsewhere without a reload, its 2,000,000 bytes as 2.0 MB on every screen', async () => {
    const player = await openSignedIn(browser, host, tabs, 'Player', PASSWORD, '#/downloads');
    await player.page.getByText('No downloads yet.').waitFor();

    // Published from the host machine (as the CLI does), not from this browser.
    const owner = await host.server.users.byUsername(OWNER.username);
    const publication = await host.server.core.builds.begin('Hypernex.Launcher', '1.2.0');
    await publication.addFile('Hypernex-Launcher.zip', Readable.from([Buffer.alloc(2_000_000, 7)]));
    await publication.commit(owner!.Id);

    const card = player.page.getByTestId('build-card').filter({ hasText: 'Hypernex.Launcher' });
    await card.waitFor({ timeout: 15_000 });
    expect(await card.textContent()).toContain('Latest: 1.2.0');
    expect(await card.getByRole('list').textContent()).toContain('2.0 MB');
    await player.page.screenshot({ path: '/tmp/ui28-downloads-live.png', fullPage: true });

    // The owner's Host screen lists the same version with the same size.
    const admin = await openSignedIn(browser, host, tabs, OWNER.username, OWNER.password, '#/host');
    const published = admin.page.getByRole('list', { name: 'Published builds' });
    await published.getByText('Hypernex.Launcher 1.2.0').waitFor();
    expect(await published.textContent()).toContain('2.0 MB');
    expect(await published.textContent()).not.toContain('1.9 MB');
    expectNoProblems(player);
    expectNoProblems(admin);
  });
});
