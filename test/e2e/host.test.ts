import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HostSettings, HostState } from '../../server/protocol/host-bridge.js';
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

/**
 * Electron cannot run here, so the page gets a stand-in `window.hypernexHost` (the preload's shape) whose every
 * call is forwarded to `FakeHost` below through an exposed function: the panel is tested in real Chromium, with
 * the same calls it would make over IPC.
 */
const BRIDGE_SCRIPT = `
  (() => {
    const listeners = new Set();
    const call = (method, arg) => window.__hostCall(method, arg === undefined ? null : arg);
    window.__hostPush = (state) => { for (const listener of listeners) listener(state); };
    window.hypernexHost = {
      getState: () => call('getState'),
      start: () => call('start'),
      stop: () => call('stop'),
      updateSettings: (settings) => call('updateSettings', settings),
      openDataFolder: () => call('openDataFolder'),
      openExternal: (url) => call('openExternal', url),
      notify: (notification) => call('notify', notification),
      setDesktopUser: async () => undefined,
      onNavigate: () => () => undefined,
      onStateChanged(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
  })();
`;

class FakeHost {
  calls: { method: string; arg: unknown }[] = [];
  state: HostState;

  constructor(url: string) {
    const port = Number(new URL(url).port);
    this.state = {
      running: true,
      url,
      lanUrls: [`http://192.168.1.20:${port}`, `http://10.0.0.7:${port}`],
      settings: { host: '0.0.0.0', port, dataDir: '/srv/hypernex/data' },
      setupSecret: null,
      error: null,
      clients: {
        connections: 4,
        users: [
          { userId: 'user_aaaaaaaa-0000-4000-8000-000000000001', username: 'Ann', sockets: 2 },
          { userId: 'user_aaaaaaaa-0000-4000-8000-000000000002', username: 'Bea', sockets: 1 },
        ],
      },
    };
  }

  handle(method: string, arg: unknown): unknown {
    this.calls.push({ method, arg });
    switch (method) {
      case 'getState':
        return this.state;
      case 'start':
        this.state = { ...this.state, running: true };
        return this.state;
      case 'stop':
        this.state = { ...this.state, running: false, lanUrls: [], clients: { connections: 0, users: [] } };
        return this.state;
      case 'updateSettings':
        this.state = {
          ...this.state,
          settings: { ...this.state.settings, ...(arg as Partial<HostSettings>) },
        };
        return this.state;
      default:
        return null;
    }
  }

  methods(): string[] {
    return this.calls.map((c) => c.method).filter((m) => m !== 'getState');
  }
}

/** The section links of the top bar not wholly inside it (scrolled out of its visible width). */
function sectionsOutOfView(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const nav = document.querySelector('.topnav')!.getBoundingClientRect();
    return [...document.querySelectorAll('.topnav .topnav-item')]
      .filter((item) => {
        const box = item.getBoundingClientRect();
        return box.left < nav.left - 0.5 || box.right > nav.right + 0.5;
      })
      .map((item) => item.textContent ?? '');
  });
}

describe('host panel in a real browser with a stand-in desktop bridge', () => {
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

  async function openPanel(): Promise<{ page: Page; fake: FakeHost }> {
    tab = await openTab(browser);
    const { page } = tab;
    page.setDefaultTimeout(8000);
    const fake = new FakeHost(host.server.url);
    await page.exposeFunction('__hostCall', (method: string, arg: unknown) => fake.handle(method, arg));
    await page.addInitScript({ content: BRIDGE_SCRIPT });
    await page.goto(host.server.url);
    await signIn(page, OWNER.username, OWNER.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Host' }).click();
    await page.getByRole('heading', { name: 'Host', level: 1 }).waitFor();
    return { page, fake };
  }

  it('shows addresses to share, connected clients live, and starts and stops the host', async () => {
    const { page, fake } = await openPanel();
    expect(await page.getByTestId('host-running').textContent()).toBe('Running');
    const addresses = await page.getByTestId('lan-addresses').textContent();
    expect(addresses).toContain(fake.state.lanUrls[0]);
    expect(addresses).toContain(fake.state.lanUrls[1]);
    expect(await page.getByRole('button', { name: `Copy: ${fake.state.lanUrls[0]}` }).count()).toBe(1);
    expect(await page.getByTestId('host-connections').textContent()).toBe('4 connections');
    const ann = page.locator('[data-testid="host-client"][data-username="Ann"]');
    expect(await ann.textContent()).toContain('2 connections');
    expect(await page.getByText('1 more not signed in (yet).').count()).toBe(1);
    expect(await page.getByTestId('host-data-dir').textContent()).toBe('/srv/hypernex/data');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: '/tmp/ui-host.png', fullPage: true });

    // Main pushes a new state when someone connects: the list follows without a reload.
    await page.evaluate(
      (state) => {
        (window as unknown as { __hostPush(s: unknown): void }).__hostPush(state);
      },
      {
        ...fake.state,
        clients: {
          connections: 5,
          users: [...fake.state.clients.users, { userId: 'user_cal', username: 'Cal', sockets: 2 }],
        },
      },
    );
    await page.locator('[data-testid="host-client"][data-username="Cal"]').waitFor();
    expect(await page.getByTestId('host-connections').textContent()).toBe('5 connections');

    await page.getByRole('button', { name: 'Open folder' }).click();
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Stop the host?' });
    expect(await dialog.textContent()).toContain('3 connected users are disconnected');
    await dialog.getByRole('button', { name: 'Stop the host' }).click();
    await page.getByTestId('host-running').filter({ hasText: 'Stopped' }).waitFor();
    expect(await page.getByText('Start the host to get addresses others can use.').count()).toBe(1);
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.getByTestId('host-running').filter({ hasText: 'Running' }).waitFor();
    expect(fake.methods()).toEqual(['openDataFolder', 'stop', 'start']);
    expectNoProblems(tab!);
  });

  it('validates settings before sending, then saves only what changed and says the host restarts', async () => {
    const { page, fake } = await openPanel();
    const form = page.getByRole('form', { name: 'Host settings' });

    await form.getByLabel('Port').fill('70000');
    await form.getByLabel('Data folder').fill('relative/data');
    await form.getByRole('button', { name: 'Save and restart…' }).click();
    await form.getByText('Ports go up to 65535').waitFor();
    expect(await form.getByText('Use a full path').count()).toBe(1);
    await form.getByRole('radio', { name: /One address/ }).check();
    await form.getByLabel('Address to bind').fill('not an address!');
    await form.getByRole('button', { name: 'Save and restart…' }).click();
    await form.getByText('Must be an IP address').waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: '/tmp/ui-host-settings-errors.png', fullPage: true });
    expect(fake.methods()).toEqual([]);

    await form.getByRole('radio', { name: /This computer only/ }).check();
    await form.getByLabel('Port').fill('5181');
    await form.getByLabel('Data folder').fill('/srv/hypernex/data');
    await form.getByRole('button', { name: 'Save and restart…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save and restart the host?' });
    expect(await dialog.textContent()).toContain('people must use the new port');
    await dialog.getByRole('button', { name: 'Save and restart' }).click();
    await page.getByTestId('host-saved').waitFor();
    expect(fake.calls.filter((c) => c.method === 'updateSettings').map((c) => c.arg)).toEqual([
      { host: '127.0.0.1', port: 5181 },
    ]);
    expect(await page.getByText('127.0.0.1:5181').count()).toBe(1);
    expectNoProblems(tab!);
  });

  it('offers the Host screen without the desktop-only controls in a LAN browser, where there is no bridge', async () => {
    tab = await openTab(browser);
    await tab.page.goto(host.server.url);
    await signIn(tab.page, OWNER.username, OWNER.password);
    await tab.page.getByTestId('signed-in-username').waitFor();
    const nav = tab.page.getByRole('navigation', { name: 'Sections' });
    expect(await nav.getByRole('link', { name: 'Friends' }).count()).toBe(1);
    // The owner and admins administer the host from any browser (issue 18); start/stop and the listening
    // settings stay in the desktop window.
    await nav.getByRole('link', { name: 'Host' }).click();
    await tab.page.getByTestId('host-status').waitFor();
    // Where the community lives: this host's own folder (the embedded store), one host.
    const community = tab.page.getByRole('region', { name: 'Community' });
    await community.getByText("This host's data folder").waitFor();
    expect(await community.getByTestId('host-count').textContent()).toBe('1 host');
    await tab.page.getByRole('region', { name: 'Invite codes' }).waitFor();
    // The owner's seven sections all show, none scrolled out of the bar, at the desktop window's width and on
    // common laptop screens.
    for (const width of [1200, 1366, 1440, 1600]) {
      await tab.page.setViewportSize({ width, height: 800 });
      expect(await sectionsOutOfView(tab.page), `${width} px`).toEqual([]);
    }
    await tab.page.getByRole('region', { name: 'Game-server tokens' }).waitFor();
    await tab.page.getByRole('region', { name: 'Client builds' }).waitFor();
    expect(await tab.page.getByRole('heading', { name: 'Settings' }).count()).toBe(0);
    expect(await tab.page.getByRole('button', { name: 'Stop' }).count()).toBe(0);
    expectNoProblems(tab);
  });

  it('is not offered to a player in a LAN browser', async () => {
    await host.server.accounts.createUser({
      username: 'LanPlayer',
      password: 'Player#Pass1',
      email: 'lanplayer@example.test',
    });
    tab = await openTab(browser);
    await tab.page.goto(host.server.url);
    await signIn(tab.page, 'LanPlayer', 'Player#Pass1');
    await tab.page.getByTestId('signed-in-username').waitFor();
    const nav = tab.page.getByRole('navigation', { name: 'Sections' });
    expect(await nav.getByRole('link', { name: 'Downloads' }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Host' }).count()).toBe(0);
    expectNoProblems(tab);
  });
});
