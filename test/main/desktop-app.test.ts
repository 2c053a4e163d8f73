import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createNetServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import type { HostState } from '../../server/protocol/host-bridge.js';
import { startDesktopApp, type DesktopApp, type DesktopAppOptions } from '../../main/desktop-app.js';
import { inProcessHost } from '../../main/in-process-host.js';
import { HOST_SETTINGS_FILE_NAME } from '../../main/host-settings-file.js';
import { PREFERENCES_FILE_NAME } from '../../main/desktop-preferences.js';
import { HOST_CHANNELS, HOST_NAVIGATE_EVENT, HOST_STATE_EVENT } from '../../main/ipc-channels.js';
import { fake, ipcEvent, type FakeBrowserWindow } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()));

const SERVER_CONFIG = { uiDir: null, passwordHash: { memoryCost: 1024, timeCost: 1 }, fsync: false };

let dir: string;
let desktop: DesktopApp | null;

async function launch(
  settings: Record<string, unknown> = {},
  extra: Partial<DesktopAppOptions> = {},
): Promise<DesktopApp> {
  await writeFile(
    join(dir, HOST_SETTINGS_FILE_NAME),
    JSON.stringify({ host: '127.0.0.1', port: 0, dataDir: join(dir, 'data'), ...settings }),
  );
  const app = await startDesktopApp({
    userDataDir: dir,
    preloadPath: '/app/preload.js',
    serverConfig: SERVER_CONFIG,
    logger: pino({ level: 'silent' }),
    // In this process for speed; test/main/desktop-host-process.test.ts runs the default, a separate process.
    startHost: inProcessHost({ logger: pino({ level: 'silent' }) }),
    platform: 'linux',
    argv: [],
    autostartDir: join(dir, 'autostart'),
    ...extra,
  });
  if (!app) throw new Error('expected the single-instance lock');
  desktop = app;
  return app;
}

function theWindow(): FakeBrowserWindow {
  const window = fake.windows.at(-1);
  if (!window) throw new Error('no window was created');
  return window;
}

/** An IPC call as the app page in the window would make it. */
function fromPage(window: FakeBrowserWindow): unknown {
  return ipcEvent(window.webContents, window.webContents.url);
}

function occupyPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createNetServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 });
    });
  });
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hnx-desktop-'));
  desktop = null;
  fake.windows.length = 0;
  fake.trays.length = 0;
  fake.notifications.length = 0;
  fake.handlers.clear();
  fake.app.removeAllListeners();
  fake.app.quit.mockClear();
  fake.dialog.showMessageBox.mockReset();
  fake.shell.openExternal.mockClear();
});

afterEach(async () => {
  await desktop?.shutdown();
  await rm(dir, { recursive: true, force: true });
});

describe('desktop app', () => {
  it('starts the host, then opens one sandboxed window on the host URL', async () => {
    const app = await launch();
    const state = app.controller.state();
    expect(state.running).toBe(true);
    expect(fake.app.enableSandbox).toHaveBeenCalled();
    const window = theWindow();
    expect(fake.windows).toHaveLength(1);
    expect(window.options.webPreferences).toMatchObject({
      preload: '/app/preload.js',
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
    });
    expect(window.loaded).toEqual([`${state.url}/`]);
    const res = await fetch(`${state.url}/api/v1/isInviteCodeRequired`);
    expect(((await res.json()) as { success: boolean }).success).toBe(true);
  });

  it('answers the page with the host state, setup secret included', async () => {
    const app = await launch();
    const window = theWindow();
    const state = (await fake.invoke(HOST_CHANNELS.getState, fromPage(window))) as HostState;
    expect(state).toMatchObject({ running: true, url: app.controller.state().url, error: null });
    expect(state.setupSecret).toBe(app.controller.host()?.setupSecret());
    expect(state.setupSecret).not.toBeNull();
  });

  it('refuses IPC from another origin, another webContents, or a frameless sender', async () => {
    await launch();
    const window = theWindow();
    const calls = [
      ipcEvent(window.webContents, 'https://evil.example/'),
      ipcEvent(window.webContents, 'http://127.0.0.1:1/'),
      ipcEvent({ other: true }, window.webContents.url),
      ipcEvent(window.webContents, null),
    ];
    for (const event of calls) {
      await expect(fake.invoke(HOST_CHANNELS.getState, event)).rejects.toThrow('refused');
      await expect(fake.invoke(HOST_CHANNELS.stop, event)).rejects.toThrow('refused');
    }
  });

  it('keeps the window on the host origin', async () => {
    await launch();
    const contents = theWindow().webContents;
    expect(contents.navigate('will-navigate', 'https://evil.example/')).toBe(true);
    expect(fake.shell.openExternal).toHaveBeenCalledWith('https://evil.example/');
    expect(contents.navigate('will-navigate', `${contents.url}#/uploads`)).toBe(false);
    expect(contents.open('https://evil.example/')).toEqual({ action: 'deny' });
  });

  it('denies permission requests from the page', async () => {
    await launch();
    let granted: boolean | null = null;
    fake.permissionRequestHandler?.(null, 'media', (value) => (granted = value), {
      requestingUrl: theWindow().webContents.url,
    });
    expect(granted).toBe(false);
  });

  it('pushes state changes to the page and keeps obeying it while stopped', async () => {
    await launch();
    const window = theWindow();
    const stopped = (await fake.invoke(HOST_CHANNELS.stop, fromPage(window))) as HostState;
    expect(stopped.running).toBe(false);
    expect(window.webContents.sent.at(-1)).toEqual({ channel: HOST_STATE_EVENT, args: [stopped] });

    const started = (await fake.invoke(HOST_CHANNELS.start, fromPage(window))) as HostState;
    expect(started.running).toBe(true);
    expect(window.webContents.sent.at(-1)?.args[0]).toMatchObject({ running: true, url: started.url });
  });

  it('pushes the state when a client connects, without a host state change', async () => {
    const app = await launch({}, { clientsRefreshMs: 20 });
    const window = theWindow();
    const pushed = (): HostState[] =>
      window.webContents.sent
        .filter((m) => m.channel === HOST_STATE_EVENT)
        .map((m) => m.args[0] as HostState);
    const socket = new WebSocket(app.controller.state().url!.replace('http', 'ws'));
    try {
      await new Promise((resolve) => socket.once('open', resolve));
      await vi.waitFor(() => expect(pushed().at(-1)?.clients.connections).toBe(1));
      const count = pushed().length;
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Nothing changed meanwhile, so nothing more was pushed.
      expect(pushed()).toHaveLength(count);
    } finally {
      socket.close();
    }
    await vi.waitFor(() => expect(pushed().at(-1)?.clients.connections).toBe(0));
  });

  it('saves settings from the page, restarts the host and follows it to its new data folder', async () => {
    const app = await launch();
    const window = theWindow();
    const otherData = join(dir, 'other-data');
    const state = (await fake.invoke(HOST_CHANNELS.updateSettings, fromPage(window), {
      dataDir: otherData,
    })) as HostState;
    expect(state).toMatchObject({ running: true, settings: { dataDir: otherData } });
    expect(JSON.parse(await readFile(join(dir, HOST_SETTINGS_FILE_NAME), 'utf8'))).toMatchObject({
      dataDir: otherData,
    });
    await nextTurn();
    expect(window.loaded.at(-1)).toBe(`${state.url}/`);
    expect(window.loaded).toHaveLength(2);
    expect(app.controller.host()?.dataDir).toBe(otherData);
  });

  it('refuses bad settings from the page and keeps the saved file', async () => {
    await launch();
    const before = await readFile(join(dir, HOST_SETTINGS_FILE_NAME), 'utf8');
    await expect(
      fake.invoke(HOST_CHANNELS.updateSettings, fromPage(theWindow()), { dataDir: 'relative' }),
    ).rejects.toThrow('absolute');
    await expect(
      fake.invoke(HOST_CHANNELS.updateSettings, fromPage(theWindow()), { port: 65536 }),
    ).rejects.toThrow('port');
    expect(await readFile(join(dir, HOST_SETTINGS_FILE_NAME), 'utf8')).toBe(before);
  });

  it('shows native notifications the page asks for', async () => {
    await launch();
    fake.notifications.length = 0;
    await fake.invoke(HOST_CHANNELS.notify, fromPage(theWindow()), {
      title: 'Invite request',
      body: 'Ann asks to join',
    });
    expect(fake.notifications).toMatchObject([
      { options: { title: 'Invite request', body: 'Ann asks to join' }, shown: true },
    ]);
  });

  it('offers a free port when the saved one is busy, and saves the port it moved to', async () => {
    const busy = await occupyPort();
    try {
      // Buttons are Retry, Use a free port, Quit.
      fake.dialog.showMessageBox.mockResolvedValueOnce({ response: 1 });
      const app = await launch({ port: busy.port });
      const box = fake.dialog.showMessageBox.mock.calls[0]?.at(-1) as { detail: string; buttons: string[] };
      expect(box.detail).toContain(`port ${busy.port} is in use`);
      expect(box.buttons).toEqual(['Retry', 'Use a free port', 'Quit']);
      const state = app.controller.state();
      expect(state.running).toBe(true);
      expect(state.settings.port).not.toBe(busy.port);
      expect(state.url).toBe(`http://127.0.0.1:${state.settings.port}`);
      const saved = JSON.parse(await readFile(join(dir, HOST_SETTINGS_FILE_NAME), 'utf8')) as {
        port: number;
      };
      expect(saved.port).toBe(state.settings.port);
      expect(theWindow().loaded).toEqual([`${state.url}/`]);
    } finally {
      busy.server.close();
    }
  });

  it('quits without a window when the user gives up on a host that cannot start', async () => {
    const busy = await occupyPort();
    try {
      fake.dialog.showMessageBox.mockResolvedValueOnce({ response: 2 });
      await launch({ port: busy.port });
      expect(fake.app.quit).toHaveBeenCalled();
      expect(fake.windows).toHaveLength(0);
    } finally {
      busy.server.close();
    }
  });

  it('does not start the host on a settings file with an unknown key, names it, and starts once it is fixed', async () => {
    const path = join(dir, HOST_SETTINGS_FILE_NAME);
    const good = { host: '127.0.0.1', port: 0, dataDir: join(dir, 'data') };
    // The user fixes the file while the dialog is up, then chooses Retry.
    fake.dialog.showMessageBox.mockImplementationOnce(async () => {
      await writeFile(path, JSON.stringify(good));
      return { response: 0 };
    });
    const app = await launch({ theme: 'dark' });
    expect(fake.dialog.showMessageBox).toHaveBeenCalledOnce();
    const box = fake.dialog.showMessageBox.mock.calls[0]?.at(-1) as { detail: string; buttons: string[] };
    expect(box.detail).toContain(`${path}: unknown key "theme"`);
    expect(box.buttons).toEqual(['Retry', 'Use the default settings', 'Quit']);
    const state = app.controller.state();
    expect(state).toMatchObject({ running: true, error: null, settings: good });
    expect(theWindow().loaded).toEqual([`${state.url}/`]);
  });

  it('offers to start a stopped host when the page cannot load, then reloads it', async () => {
    const app = await launch();
    const window = theWindow();
    await fake.invoke(HOST_CHANNELS.stop, fromPage(window));
    fake.dialog.showMessageBox.mockResolvedValueOnce({ response: 0 });
    // What a reload of the page gets from a stopped host.
    window.webContents.emit(
      'did-fail-load',
      {},
      -102,
      'ERR_CONNECTION_REFUSED',
      window.webContents.url,
      true,
    );
    await vi.waitFor(() => expect(window.loaded).toHaveLength(2));
    expect(fake.dialog.showMessageBox).toHaveBeenCalledOnce();
    expect(app.controller.state().running).toBe(true);
    expect(window.loaded.at(-1)).toBe(`${app.controller.state().url}/`);
  });

  it('ignores aborted loads and subframe failures', async () => {
    await launch();
    const contents = theWindow().webContents;
    contents.emit('did-fail-load', {}, -3, 'ERR_ABORTED', contents.url, true);
    contents.emit('did-fail-load', {}, -102, 'ERR_CONNECTION_REFUSED', 'https://x.example/', false);
    await nextTurn();
    expect(fake.dialog.showMessageBox).not.toHaveBeenCalled();
  });

  it('opens the data folder, creating it if needed', async () => {
    const otherData = join(dir, 'not-yet');
    await launch();
    await fake.invoke(HOST_CHANNELS.updateSettings, fromPage(theWindow()), { dataDir: otherData });
    await nextTurn();
    await fake.invoke(HOST_CHANNELS.openDataFolder, fromPage(theWindow()));
    expect(fake.shell.openPath).toHaveBeenLastCalledWith(otherData);
  });

  it('closes the host before quitting', async () => {
    const app = await launch();
    const url = app.controller.state().url;
    const event = { preventDefault: vi.fn() };
    fake.app.emit('will-quit', event);
    expect(event.preventDefault).toHaveBeenCalled();
    await app.shutdown();
    await nextTurn();
    expect(fake.app.quit).toHaveBeenCalled();
    await expect(fetch(`${url}/api/v1/isInviteCodeRequired`)).rejects.toThrow();
    expect(fake.handlers.size).toBe(0);
  });

  it('hides to the tray when the window is closed, says so once, and keeps serving', async () => {
    const app = await launch();
    const window = theWindow();
    window.show();
    fake.notifications.length = 0;
    expect(window.close()).toBe(false);
    expect(window.visible).toBe(false);
    expect(window.destroyed).toBe(false);
    expect(fake.notifications.map((n) => n.options.title)).toEqual(['Hypernex Companion is still running']);
    expect((await fetch(`${app.controller.state().url}/api/v1/isInviteCodeRequired`)).ok).toBe(true);
    // The second time, silently; the choice is remembered across starts.
    window.close();
    expect(fake.notifications).toHaveLength(1);
    await vi.waitFor(async () =>
      expect(JSON.parse(await readFile(join(dir, 'preferences.json'), 'utf8'))).toMatchObject({
        closeToTrayExplained: true,
      }),
    );
    // The tray brings it back.
    app.trayActions.openWindow();
    expect(window.visible).toBe(true);
  });

  it('closes the window for real once the user quits', async () => {
    await launch();
    fake.app.emit('before-quit');
    expect(theWindow().close()).toBe(true);
  });

  it('shows the host state in the tray and keeps it current', async () => {
    const app = await launch();
    const tray = fake.trays.at(-1)!;
    expect(app.tray()).not.toBeNull();
    expect(tray.tooltip).toBe('Hypernex Companion: host running, 0 users connected');
    expect(tray.menu.map((m) => m.label)).toContain('Stop host');
    // Updates are off in development: no menu item for them.
    expect(tray.menu.map((m) => m.label)).not.toContain('Check for updates');
    app.trayActions.stop();
    await vi.waitFor(() => expect(tray.tooltip).toBe('Hypernex Companion: host stopped'));
    expect(tray.menu.map((m) => m.label)).toContain('Start host');
    app.trayActions.setPreference('startWithComputer', true);
    expect(app.preferences().startWithComputer).toBe(true);
    await vi.waitFor(async () =>
      expect(await readFile(join(dir, 'autostart', 'hypernex-companion.desktop'), 'utf8')).toContain(
        '--hidden',
      ),
    );
    app.trayActions.quit();
    expect(fake.app.quit).toHaveBeenCalled();
  });

  it('sets an application menu without DevTools when packaged', async () => {
    await launch({}, { packaged: true });
    const roles = JSON.stringify(fake.applicationMenu);
    expect(roles).not.toContain('toggleDevTools');
  });

  it('starts hidden with the host running when launched by the login item', async () => {
    const app = await launch({}, { argv: ['electron', '.', '--hidden'] });
    expect(app.controller.state().running).toBe(true);
    const window = theWindow();
    window.emit('ready-to-show');
    expect(window.visible).toBe(false);
    expect(window.loaded).toHaveLength(1);
  });

  it('notifies the desktop user of invite requests, opens the invites screen and dismisses on request', async () => {
    const app = await launch({}, { platform: 'darwin' });
    const window = theWindow();
    fake.notifications.length = 0;
    const notice = {
      kind: 'invite-request' as const,
      userId: 'user_me',
      requestId: 'invreq_1',
      fromUserId: 'user_ann',
      fromUsername: 'ann',
    };
    app.showNotice(notice);
    const shown = fake.notifications.at(-1)!;
    expect(shown.options).toEqual({
      title: 'ann asks to join you',
      body: 'ann sent you an invite request.',
      actions: [
        { type: 'button', text: 'Open' },
        { type: 'button', text: 'Dismiss' },
      ],
    });
    window.hide();
    shown.emitter.emit('click');
    expect(window.visible).toBe(true);
    expect(window.webContents.sent.at(-1)).toEqual({ channel: HOST_NAVIGATE_EVENT, args: ['invites'] });

    // Turned off in the tray: nothing shown.
    app.trayActions.setPreference('notifyInviteRequests', false);
    app.showNotice(notice);
    expect(fake.notifications).toHaveLength(1);
  });

  it('keeps a preference changed just before quitting', async () => {
    const app = await launch();
    app.trayActions.setPreference('notifyInviteRequests', false);
    app.trayActions.setPreference('notifyFriendRequests', false);
    await app.shutdown();
    const saved = JSON.parse(await readFile(join(dir, PREFERENCES_FILE_NAME), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(saved).toMatchObject({ notifyInviteRequests: false, notifyFriendRequests: false });
  });

  it('takes the signed-in user from the page and refuses a malformed one', async () => {
    const app = await launch();
    await fake.invoke(HOST_CHANNELS.setDesktopUser, fromPage(theWindow()), {
      userId: 'user_1',
      tokenContent: 't',
    });
    expect(app.controller.desktopUserId()).toBe('user_1');
    await expect(
      fake.invoke(HOST_CHANNELS.setDesktopUser, fromPage(theWindow()), { userId: 1 }),
    ).rejects.toThrow('userId');
    await fake.invoke(HOST_CHANNELS.setDesktopUser, fromPage(theWindow()), null);
    expect(app.controller.desktopUserId()).toBeNull();
  });

  it('refuses a data folder full of other files, with the reason, and keeps the saved settings', async () => {
    await launch();
    const before = await readFile(join(dir, HOST_SETTINGS_FILE_NAME), 'utf8');
    const foreign = join(dir, 'documents');
    await mkdir(foreign);
    await writeFile(join(foreign, 'thesis.docx'), 'x');
    await expect(
      fake.invoke(HOST_CHANNELS.updateSettings, fromPage(theWindow()), { dataDir: foreign }),
    ).rejects.toThrow(/cannot be used as a data folder: it already holds other files \(thesis\.docx\)/);
    expect(await readFile(join(dir, HOST_SETTINGS_FILE_NAME), 'utf8')).toBe(before);
  });

  it('steps aside when another instance holds the lock', async () => {
    fake.app.requestSingleInstanceLock.mockReturnValueOnce(false);
    await expect(startDesktopApp({ userDataDir: dir })).resolves.toBeNull();
    expect(fake.app.quit).toHaveBeenCalled();
    expect(fake.windows).toHaveLength(0);
  });
});
