// Main's decisions as plain functions: the tray menu, notifications, updates, start with the computer, the
// application menu, preferences, fuses, and the data-folder check of the settings.
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HostState } from '../../server/protocol/host-bridge.js';
import { applicationMenuTemplate, menuRoles } from '../../main/app-menu.js';
import {
  createPreferencesFile,
  DEFAULT_PREFERENCES,
  parsePreferences,
} from '../../main/desktop-preferences.js';
import { noticeOutcome, noticeView, supportsNotificationActions } from '../../main/desktop-notifications.js';
import { checkDataFolder } from '../../main/host-ipc.js';
import type { HostNotice } from '../../main/host-messages.js';
import { IpcArgumentError, parseDesktopUser } from '../../main/ipc-validation.js';
import {
  applyStartWithComputer,
  AUTOSTART_FILE_NAME,
  autostartEntry,
  HIDDEN_ARG,
  startedHidden,
} from '../../main/login-item.js';
import { trayIconPng } from '../../main/tray-icon.js';
import { trayMenuTemplate, trayStatus, trayTooltip, type TrayActions } from '../../main/tray.js';
import { createUpdates, updateBlocker, type AutoUpdaterLike } from '../../main/updates.js';
import type { MenuItemTemplate } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()));

const RUNNING: HostState = {
  running: true,
  url: 'http://127.0.0.1:5180',
  lanUrls: ['http://192.168.1.20:5180'],
  settings: { host: '0.0.0.0', port: 5180, dataDir: '/data' },
  setupSecret: null,
  error: null,
  clients: {
    connections: 3,
    users: [
      { userId: 'user_a', username: 'ann', sockets: 2 },
      { userId: 'user_b', username: 'bob', sockets: 1 },
    ],
  },
};
const STOPPED: HostState = {
  ...RUNNING,
  running: false,
  url: null,
  lanUrls: [],
  clients: { connections: 0, users: [] },
};
const FAILED: HostState = { ...STOPPED, error: 'port 5180 is in use' };

function actions() {
  return {
    openWindow: vi.fn<() => void>(),
    start: vi.fn<() => void>(),
    stop: vi.fn<() => void>(),
    copy: vi.fn<(text: string) => void>(),
    checkForUpdates: vi.fn<() => void>(),
    setPreference: vi.fn<TrayActions['setPreference']>(),
    quit: vi.fn<() => void>(),
  } satisfies TrayActions;
}

function item(menu: readonly MenuItemTemplate[], label: string | RegExp): MenuItemTemplate {
  for (const entry of menu) {
    if (
      entry.label !== undefined &&
      (typeof label === 'string' ? entry.label === label : label.test(entry.label))
    )
      return entry;
    const inner = entry.submenu ? itemOrNull(entry.submenu, label) : null;
    if (inner) return inner;
  }
  throw new Error(`no menu item ${String(label)}`);
}

function itemOrNull(menu: readonly MenuItemTemplate[], label: string | RegExp): MenuItemTemplate | null {
  try {
    return item(menu, label);
  } catch {
    return null;
  }
}

const labels = (menu: readonly MenuItemTemplate[]): string[] =>
  menu.filter((entry) => entry.label !== undefined).map((entry) => entry.label!);

describe('tray', () => {
  it('shows a running host with its connected users and the LAN address to copy', () => {
    const act = actions();
    const menu = trayMenuTemplate(RUNNING, DEFAULT_PREFERENCES, act) as MenuItemTemplate[];
    expect(labels(menu).slice(0, 2)).toEqual([
      'Host running · 2 users connected',
      'Copy address http://192.168.1.20:5180',
    ]);
    item(menu, 'Copy address http://192.168.1.20:5180').click?.({ checked: false });
    expect(act.copy).toHaveBeenCalledWith('http://192.168.1.20:5180');
    item(menu, 'Stop host').click?.({ checked: false });
    expect(act.stop).toHaveBeenCalled();
    expect(itemOrNull(menu, 'Start host')).toBeNull();
    item(menu, 'Open Hypernex Companion').click?.({ checked: false });
    expect(act.openWindow).toHaveBeenCalled();
    item(menu, 'Quit').click?.({ checked: false });
    expect(act.quit).toHaveBeenCalled();
    expect(trayStatus(RUNNING)).toBe('running');
    expect(trayTooltip(RUNNING)).toBe('Hypernex Companion: host running, 2 users connected');
  });

  it('offers the local address when the host is bound to this machine only', () => {
    const local = {
      ...RUNNING,
      lanUrls: [],
      clients: { connections: 1, users: [RUNNING.clients.users[0]!] },
    };
    const menu = trayMenuTemplate(local, DEFAULT_PREFERENCES, actions()) as MenuItemTemplate[];
    expect(labels(menu).slice(0, 2)).toEqual([
      'Host running · 1 user connected',
      'Copy address http://127.0.0.1:5180',
    ]);
  });

  it('shows a stopped host with Start and no address, and an error with its reason', () => {
    const act = actions();
    const stopped = trayMenuTemplate(STOPPED, DEFAULT_PREFERENCES, act) as MenuItemTemplate[];
    expect(labels(stopped)[0]).toBe('Host stopped');
    expect(itemOrNull(stopped, /^Copy address/)).toBeNull();
    item(stopped, 'Start host').click?.({ checked: false });
    expect(act.start).toHaveBeenCalled();
    expect(trayStatus(STOPPED)).toBe('stopped');

    const failed = trayMenuTemplate(FAILED, DEFAULT_PREFERENCES, act) as MenuItemTemplate[];
    expect(labels(failed).slice(0, 2)).toEqual(['Host not running', 'port 5180 is in use']);
    expect(trayStatus(FAILED)).toBe('error');
    expect(trayTooltip(FAILED)).toContain('port 5180 is in use');
  });

  it('has checkboxes for start with my computer and each kind of notification', () => {
    const act = actions();
    const prefs = { ...DEFAULT_PREFERENCES, notifyFriendRequests: false };
    const menu = trayMenuTemplate(RUNNING, prefs, act) as MenuItemTemplate[];
    expect(item(menu, 'Start with my computer')).toMatchObject({ type: 'checkbox', checked: false });
    expect(item(menu, 'Invite requests')).toMatchObject({ type: 'checkbox', checked: true });
    expect(item(menu, 'Friend requests')).toMatchObject({ type: 'checkbox', checked: false });
    item(menu, 'Start with my computer').click?.({ checked: true });
    item(menu, 'Friend requests').click?.({ checked: true });
    expect(act.setPreference.mock.calls).toEqual([
      ['startWithComputer', true],
      ['notifyFriendRequests', true],
    ]);
  });

  it('offers "Check for updates" only where updates are on', () => {
    const act = actions();
    const withUpdates = trayMenuTemplate(RUNNING, DEFAULT_PREFERENCES, act) as MenuItemTemplate[];
    item(withUpdates, 'Check for updates').click?.({ checked: false });
    expect(act.checkForUpdates).toHaveBeenCalled();
    const without = trayMenuTemplate(RUNNING, DEFAULT_PREFERENCES, { ...act, checkForUpdates: null });
    expect(itemOrNull(without as MenuItemTemplate[], 'Check for updates')).toBeNull();
  });

  it('draws a PNG icon per state, at 1x and 2x', () => {
    const running = trayIconPng('running', 16);
    expect(running.subarray(1, 4).toString('ascii')).toBe('PNG');
    expect(running.readUInt32BE(16)).toBe(16);
    expect(trayIconPng('error', 32).readUInt32BE(16)).toBe(32);
    expect(trayIconPng('stopped').equals(running)).toBe(false);
  });
});

describe('notifications', () => {
  const invite: HostNotice = {
    kind: 'invite-request',
    userId: 'user_me',
    requestId: 'invreq_1',
    fromUserId: 'user_a',
    fromUsername: 'ann',
  };
  const friend: HostNotice = {
    kind: 'friend-request',
    userId: 'user_me',
    fromUserId: 'user_a',
    fromUsername: 'ann',
  };

  it('words invite and friend requests and names the screen they open', () => {
    expect(noticeView(invite, DEFAULT_PREFERENCES)).toEqual({
      title: 'ann asks to join you',
      body: 'ann sent you an invite request.',
      section: 'invites',
      actions: ['Open', 'Dismiss'],
    });
    expect(noticeView(friend, DEFAULT_PREFERENCES)).toMatchObject({
      title: 'ann wants to be friends',
      section: 'friends',
    });
  });

  it('shows nothing for a kind the user turned off', () => {
    expect(noticeView(invite, { ...DEFAULT_PREFERENCES, notifyInviteRequests: false })).toBeNull();
    expect(noticeView(friend, { ...DEFAULT_PREFERENCES, notifyFriendRequests: false })).toBeNull();
    expect(noticeView(friend, { ...DEFAULT_PREFERENCES, notifyInviteRequests: false })).not.toBeNull();
  });

  it('opens the screen on a click or "Open", and dismisses the invite request on "Dismiss"', () => {
    const view = noticeView(invite, DEFAULT_PREFERENCES)!;
    expect(noticeOutcome(invite, view, null)).toEqual({ do: 'open', section: 'invites' });
    expect(noticeOutcome(invite, view, 0)).toEqual({ do: 'open', section: 'invites' });
    expect(noticeOutcome(invite, view, 1)).toEqual({
      do: 'dismiss-invite',
      userId: 'user_me',
      requestId: 'invreq_1',
    });
    expect(noticeOutcome(invite, view, 7)).toEqual({ do: 'nothing' });
  });

  it('uses buttons where the platform has them', () => {
    expect(supportsNotificationActions('darwin')).toBe(true);
    expect(supportsNotificationActions('win32')).toBe(true);
    expect(supportsNotificationActions('linux')).toBe(false);
  });
});

class FakeUpdater implements AutoUpdaterLike {
  autoDownload = true;
  autoInstallOnAppQuit = false;
  readonly listeners = new Map<string, ((...args: never[]) => void)[]>();
  checks = 0;
  downloads = 0;
  found: string | null = '2.0.0';
  on(event: string, listener: (...args: never[]) => void): this {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
    return this;
  }
  emit(event: string, ...args: unknown[]): void {
    for (const listener of this.listeners.get(event) ?? []) (listener as (...a: unknown[]) => void)(...args);
  }
  async checkForUpdates(): Promise<unknown> {
    this.checks++;
    if (this.found) this.emit('update-available', { version: this.found });
    return this.found ? { updateInfo: { version: this.found } } : null;
  }
  async downloadUpdate(): Promise<unknown> {
    this.downloads++;
    this.emit('update-downloaded', { version: this.found });
    return [];
  }
}

describe('updates', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('are off in development and when disabled, and wait while an upload runs', () => {
    expect(updateBlocker({ packaged: false, env: {}, uploadsInProgress: 0 })).toMatch(/development/);
    expect(
      updateBlocker({ packaged: true, env: { HYPERNEX_DISABLE_UPDATES: '1' }, uploadsInProgress: 0 }),
    ).toMatch(/off/);
    expect(updateBlocker({ packaged: true, env: {}, uploadsInProgress: 2 })).toBe('an upload is running');
    expect(updateBlocker({ packaged: true, env: {}, uploadsInProgress: 0 })).toBeNull();
  });

  it('never loads the updater in development', async () => {
    const loadUpdater = vi.fn(async () => new FakeUpdater());
    const updates = createUpdates({
      packaged: false,
      loadUpdater,
      uploadsInProgress: async () => 0,
      tell: vi.fn(),
      log: pino({ level: 'silent' }),
    });
    expect(updates.enabled).toBe(false);
    expect(await updates.check('start')).toMatch(/development/);
    expect(loadUpdater).not.toHaveBeenCalled();
  });

  it('checks, downloads when no upload runs, and says the update installs on quit', async () => {
    const updater = new FakeUpdater();
    const tell = vi.fn();
    const updates = createUpdates({
      packaged: true,
      env: {},
      loadUpdater: async () => updater,
      uploadsInProgress: async () => 0,
      tell,
      log: pino({ level: 'silent' }),
    });
    expect(updates.enabled).toBe(true);
    expect(await updates.check('tray')).toBe('Found version 2.0.0.');
    await vi.waitFor(() => expect(updater.downloads).toBe(1));
    expect(updater.autoDownload).toBe(false);
    expect(updater.autoInstallOnAppQuit).toBe(true);
    expect(tell).toHaveBeenCalledWith(
      'Update ready',
      'Hypernex Companion 2.0.0 will be installed when you quit.',
    );
  });

  it('neither checks nor downloads while an upload runs, and tries again later', async () => {
    vi.useFakeTimers();
    const updater = new FakeUpdater();
    let uploads = 1;
    const updates = createUpdates({
      packaged: true,
      env: {},
      loadUpdater: async () => updater,
      uploadsInProgress: async () => uploads,
      tell: vi.fn(),
      log: pino({ level: 'silent' }),
      retryMs: 1000,
    });
    expect(await updates.check('start')).toBe('No update check now: an upload is running.');
    expect(updater.checks).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(updater.checks).toBe(0);
    uploads = 0;
    await vi.advanceTimersByTimeAsync(1000);
    expect(updater.checks).toBe(1);
    expect(updater.downloads).toBe(1);
    updates.dispose();
  });

  it('holds a found update back while an upload runs, then downloads it', async () => {
    vi.useFakeTimers();
    const updater = new FakeUpdater();
    let uploads = 0;
    updater.checkForUpdates = async function (this: FakeUpdater) {
      this.checks++;
      uploads = 1; // an upload begins right after the check
      this.emit('update-available', { version: '3.0.0' });
      return { updateInfo: { version: '3.0.0' } };
    };
    const updates = createUpdates({
      packaged: true,
      env: {},
      loadUpdater: async () => updater,
      uploadsInProgress: async () => uploads,
      tell: vi.fn(),
      log: pino({ level: 'silent' }),
      retryMs: 1000,
    });
    await updates.check('start');
    await vi.advanceTimersByTimeAsync(0);
    expect(updater.downloads).toBe(0);
    uploads = 0;
    await vi.advanceTimersByTimeAsync(1000);
    expect(updater.downloads).toBe(1);
    updates.dispose();
  });
});

describe('start with my computer', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hnx-login-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const loginApp = () => ({
    setLoginItemSettings: vi.fn(),
    getLoginItemSettings: vi.fn(() => ({ wasOpenedAtLogin: false })),
  });

  it('uses login items on Windows and macOS, with the hidden flag', async () => {
    const app = loginApp();
    await applyStartWithComputer(app, true, { platform: 'win32', executable: 'C:\\app.exe' });
    await applyStartWithComputer(app, false, { platform: 'darwin', executable: '/Applications/x' });
    expect(app.setLoginItemSettings.mock.calls).toEqual([
      [{ openAtLogin: true, openAsHidden: true, args: [HIDDEN_ARG] }],
      [{ openAtLogin: false, openAsHidden: false, args: [] }],
    ]);
  });

  it('writes and removes an XDG autostart entry on Linux', async () => {
    const app = loginApp();
    const autostartDir = join(dir, 'autostart');
    await applyStartWithComputer(app, true, {
      platform: 'linux',
      executable: '/opt/Hypernex Companion.AppImage',
      autostartDir,
    });
    const entry = await readFile(join(autostartDir, AUTOSTART_FILE_NAME), 'utf8');
    expect(entry).toBe(autostartEntry('/opt/Hypernex Companion.AppImage'));
    expect(entry).toContain('Exec="/opt/Hypernex Companion.AppImage" --hidden');
    await applyStartWithComputer(app, false, { platform: 'linux', executable: '/x', autostartDir });
    await expect(readFile(join(autostartDir, AUTOSTART_FILE_NAME))).rejects.toThrow();
    expect(app.setLoginItemSettings).not.toHaveBeenCalled();
  });

  it('knows a start from the login item', () => {
    const app = loginApp();
    expect(startedHidden(['electron', '.', HIDDEN_ARG], app, 'linux')).toBe(true);
    expect(startedHidden(['electron', '.'], app, 'linux')).toBe(false);
    app.getLoginItemSettings.mockReturnValue({ wasOpenedAtLogin: true });
    expect(startedHidden(['electron', '.'], app, 'darwin')).toBe(true);
  });
});

describe('application menu', () => {
  it('has no DevTools or reload in packaged builds, and keeps them in development', () => {
    const packaged = menuRoles(applicationMenuTemplate({ packaged: true, platform: 'linux' }));
    expect(packaged).not.toContain('toggleDevTools');
    expect(packaged).not.toContain('reload');
    expect(packaged).toContain('editMenu');
    const dev = menuRoles(applicationMenuTemplate({ packaged: false, platform: 'darwin' }));
    expect(dev).toContain('toggleDevTools');
    expect(dev).toContain('appMenu');
  });
});

describe('preferences', () => {
  it('keeps known booleans and ignores anything else', () => {
    expect(parsePreferences({ startWithComputer: true, notifyInviteRequests: 'no', extra: 1 })).toEqual({
      ...DEFAULT_PREFERENCES,
      startWithComputer: true,
    });
    expect(parsePreferences('torn')).toEqual(DEFAULT_PREFERENCES);
  });

  it('saves and reads back, and falls back to the defaults on a broken file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hnx-prefs-'));
    try {
      const file = createPreferencesFile(join(dir, 'preferences.json'));
      expect(await file.load()).toEqual(DEFAULT_PREFERENCES);
      await file.save({ ...DEFAULT_PREFERENCES, closeToTrayExplained: true });
      expect((await file.load()).closeToTrayExplained).toBe(true);
      await writeFile(file.path, '{not json');
      expect(await file.load()).toEqual(DEFAULT_PREFERENCES);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('settings validation', () => {
  it('accepts a missing, empty or existing data folder and refuses a folder of other files, saying why', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hnx-folder-'));
    try {
      await expect(checkDataFolder(join(dir, 'new'))).resolves.toBeUndefined();
      await mkdir(join(dir, 'empty'));
      await expect(checkDataFolder(join(dir, 'empty'))).resolves.toBeUndefined();
      await mkdir(join(dir, 'ours'));
      await writeFile(join(dir, 'ours', 'meta.json'), '{}');
      await expect(checkDataFolder(join(dir, 'ours'))).resolves.toBeUndefined();
      await mkdir(join(dir, 'home'));
      await writeFile(join(dir, 'home', 'notes.txt'), 'mine');
      const refusal = checkDataFolder(join(dir, 'home'));
      await expect(refusal).rejects.toThrow(IpcArgumentError);
      await expect(refusal).rejects.toThrow(
        /cannot be used as a data folder: it already holds other files \(notes\.txt\)/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('takes the desktop user as {userId, tokenContent} or null', () => {
    expect(parseDesktopUser(null)).toBeNull();
    expect(parseDesktopUser({ userId: 'user_1', tokenContent: 't' })).toEqual({
      userId: 'user_1',
      tokenContent: 't',
    });
    for (const bad of [
      { userId: 'u' },
      { userId: 1, tokenContent: 't' },
      { userId: 'u', tokenContent: 't', x: 1 },
      'u',
    ])
      expect(() => parseDesktopUser(bad), JSON.stringify(bad)).toThrow(IpcArgumentError);
  });
});

describe('electron fuses (afterPack)', () => {
  const require = createRequire(import.meta.url);
  const hook = require('../../scripts/after-pack.cjs') as {
    fuseConfig(platform: string, arch: string): Record<string, unknown>;
    executablePath(context: unknown): string;
  };
  const { FuseV1Options } = require('@electron/fuses') as { FuseV1Options: Record<string, number> };

  it('turns RunAsNode, NODE_OPTIONS and --inspect off, cookie encryption and ASAR-only loading on', () => {
    const fuses = hook.fuseConfig('win32', 'x64');
    expect(fuses[FuseV1Options.RunAsNode!]).toBe(false);
    expect(fuses[FuseV1Options.EnableCookieEncryption!]).toBe(true);
    expect(fuses[FuseV1Options.EnableNodeOptionsEnvironmentVariable!]).toBe(false);
    expect(fuses[FuseV1Options.EnableNodeCliInspectArguments!]).toBe(false);
    expect(fuses[FuseV1Options.EnableEmbeddedAsarIntegrityValidation!]).toBe(true);
    expect(fuses[FuseV1Options.OnlyLoadAppFromAsar!]).toBe(true);
    expect(hook.fuseConfig('darwin', 'arm64').resetAdHocDarwinSignature).toBe(true);
    // Electron checks ASAR integrity on macOS and Windows only.
    expect(hook.fuseConfig('linux', 'x64')[FuseV1Options.EnableEmbeddedAsarIntegrityValidation!]).toBe(false);
  });

  it('finds the executable electron-builder produced', () => {
    const packager = {
      appInfo: { productFilename: 'Hypernex Companion' },
      executableName: 'hypernex-companion',
    };
    expect(hook.executablePath({ appOutDir: '/out', electronPlatformName: 'linux', packager })).toBe(
      join('/out', 'hypernex-companion'),
    );
    expect(hook.executablePath({ appOutDir: '/out', electronPlatformName: 'win32', packager })).toBe(
      join('/out', 'Hypernex Companion.exe'),
    );
    expect(hook.executablePath({ appOutDir: '/out', electronPlatformName: 'darwin', packager })).toBe(
      join('/out', 'Hypernex Companion.app'),
    );
  });
});
