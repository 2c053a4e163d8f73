import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  expectNoProblems,
  launchBrowser,
  openTab,
  OWNER,
  signIn,
  startHostWithOwner,
  type Host,
  type Tab,
} from './harness.js';

describe('client builds and pronouns in a real browser', () => {
  let host: Host;
  let browser: Browser;
  let tab: Tab | undefined;
  let files: string;
  const PLAYER = { username: 'Player', password: 'Player#Pass1' };

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
    files = await mkdtemp(join(tmpdir(), 'hnx-e2e-builds-'));
    await writeFile(join(files, 'Hypernex-Windows.zip'), 'windows build bytes');
    await writeFile(join(files, 'Hypernex-Linux.tar.gz'), 'linux build bytes');
    await host.server.accounts.createUser({
      username: PLAYER.username,
      password: PLAYER.password,
      email: 'player@example.test',
    });
  });

  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await host?.stop();
    if (files) await rm(files, { recursive: true, force: true });
  });

  it('lets the owner publish a version with two files on the Host screen, in a LAN browser', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, OWNER.username, OWNER.password);
    await page.getByRole('link', { name: 'Host', exact: true }).click();
    const card = page.getByRole('region', { name: 'Client builds' });
    await card.waitFor();
    // Shared rules refuse a bad version before anything is sent.
    await card.getByLabel('Name', { exact: true }).fill('Hypernex.Unity');
    await card.getByLabel('Version', { exact: true }).fill('../1.0');
    await card.getByRole('button', { name: 'Publish' }).click();
    await card.getByText(/Version must start with a letter or digit/).waitFor();
    expect(await host.server.core.builds.list()).toEqual([]);

    await card.getByLabel('Version', { exact: true }).fill('2024.10.1b');
    await card
      .getByLabel('Files', { exact: true })
      .setInputFiles([join(files, 'Hypernex-Windows.zip'), join(files, 'Hypernex-Linux.tar.gz')]);
    await card.getByRole('button', { name: 'Publish' }).click();
    await card.getByText('Published Hypernex.Unity 2024.10.1b (2 files).').waitFor();
    await card
      .getByRole('list', { name: 'Published builds' })
      .getByText('Hypernex.Unity 2024.10.1b')
      .waitFor();
    await page.screenshot({ path: '/tmp/ui-host-builds.png', fullPage: true });

    const versions = await host.server.core.builds.versions('Hypernex.Unity');
    expect(versions.map((v) => v.Files.map((f) => f.FileName))).toEqual([
      ['Hypernex-Linux.tar.gz', 'Hypernex-Windows.zip'],
    ]);
    // The same version again is refused with the host's reason, nothing replaced.
    await card.getByLabel('Version', { exact: true }).fill('2024.10.1b');
    await card.getByLabel('Files', { exact: true }).setInputFiles([join(files, 'Hypernex-Windows.zip')]);
    await card.getByRole('button', { name: 'Publish' }).click();
    await card
      .getByText(/already published/)
      .first()
      .waitFor();

    // Require a token for downloads.
    await card.getByLabel(/Downloads need a signed-in account/).check();
    await expect.poll(() => host.server.core.builds.authForBuilds()).toBe(true);
    expectNoProblems(tab);
  });

  it('lets a player download a build from the Downloads screen while the host requires a token', async () => {
    await host.server.core.builds.setAuthForBuilds(true);
    tab = await openTab(browser, { acceptDownloads: true });
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, PLAYER.username, PLAYER.password);
    // Players see no Host screen in a browser.
    await page.getByRole('link', { name: 'Downloads' }).click();
    expect(await page.getByRole('link', { name: 'Host', exact: true }).count()).toBe(0);
    const card = page.getByRole('region', { name: 'Hypernex.Unity' });
    await card.getByText('Latest: 2024.10.1b').waitFor();
    await card.getByText('The Hypernex game client.').waitFor();
    await page.screenshot({ path: '/tmp/ui-downloads.png', fullPage: true });
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      card.getByRole('button', { name: 'Download Hypernex-Windows.zip' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('Hypernex-Windows.zip');
    const path = await download.path();
    expect(await readFile(path, 'utf8')).toBe('windows build bytes');
    expectNoProblems(tab);
  });

  it('sets and removes pronouns on the Account screen, answered in the real server shape', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, PLAYER.username, PLAYER.password);
    const card = page.getByRole('region', { name: 'Pronouns' });
    await card.getByTestId('current-pronouns').getByText('not set').waitFor();
    await card.getByLabel('Subject (they)').selectOption('1');
    await card.getByLabel('Object (them)').selectOption('1');
    await card.getByLabel('Reflexive (themselves)').selectOption('1');
    await card.getByLabel('Possessive (theirs)').selectOption('1');
    await card.getByLabel('Possessive before a noun (their)').selectOption('1');
    expect(await card.getByTestId('pronoun-preview').textContent()).toBe('She/Her/Herself');
    await card.getByRole('button', { name: 'Save pronouns' }).click();
    await card.getByText('Saved: She/Her/Herself').waitFor();
    await page.screenshot({ path: '/tmp/ui-pronouns.png', fullPage: true });
    const stored = (await host.server.users.byUsername(PLAYER.username))!.Bio.Pronouns;
    expect(stored).toEqual({
      NominativeCase: 'She',
      AccusativeCase: 'Her',
      ReflexivePronoun: 'Herself',
      IndependentGenitiveCase: 'Hers',
      DependentGenitiveCase: 'Her',
      Action: false,
      DisplayThree: true,
      Display: [0, 1, 2],
    });
    await card.getByRole('button', { name: 'Remove pronouns' }).click();
    await card.getByText('Pronouns removed.').waitFor();
    expect((await host.server.users.byUsername(PLAYER.username))!.Bio.Pronouns).toBeUndefined();
    expectNoProblems(tab);
  });
});
