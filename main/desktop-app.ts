// The desktop shell, put together: one instance, the embedded host on the saved settings (in a utility process),
// one locked-down window on the host's own URL, a tray, native notifications and updates. Each part is a module of
// its own (app-window.ts, native-notifications.ts, host-recovery.ts, tray.ts, updates.ts...); this file wires them.
// It runs in the Electron main process, which loads nothing of the server (test/main/import-graph.test.ts).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, Menu, session, shell as electronShell, type BrowserWindow } from 'electron';
import pino, { type Logger } from 'pino';
import type { ConfigOverrides } from '../server/config.js';
import type { HostState } from '../server/protocol/host-bridge.js';
import { BUILT_UI_DIR } from '../shared/built-paths.js';
import { applicationMenuTemplate } from './app-menu.js';
import { createAppWindow, type AppWindow } from './app-window.js';
import {
  createPreferencesFile,
  openPreferences,
  PREFERENCES_FILE_NAME,
  type DesktopPreferences,
  type Preferences,
} from './desktop-preferences.js';
import { createHostController, type HostController, type StartHost } from './host-controller.js';
import { registerHostIpc } from './host-ipc.js';
import type { HostNotice } from './host-messages.js';
import { processHostStarter } from './host-process.js';
import { recoverHost } from './host-recovery.js';
import {
  createHostSettingsFile,
  defaultHostSettings,
  HOST_SETTINGS_FILE_NAME,
} from './host-settings-file.js';
import { applyStartWithComputer, startedHidden } from './login-item.js';
import { createNativeNotifications, type NativeNotifications } from './native-notifications.js';
import { copyToClipboard, createAppTray, type AppTray, type TrayActions } from './tray.js';
import { createUpdates, type AutoUpdaterLike, type Updates } from './updates.js';
import { forkUtilityHost } from './utility-host.js';
import { denyPermissions, guardWebContents, isHttpUrl } from './window-security.js';

export const PRELOAD_PATH = fileURLToPath(new URL('./preload/preload.js', import.meta.url));

export interface DesktopAppOptions {
  /** Folder of host-settings.json and logs (default: Electron's userData). */
  userDataDir?: string;
  preloadPath?: string;
  /** Server settings besides host/port/dataDir (default: serve the built UI). */
  serverConfig?: Omit<ConfigOverrides, 'host' | 'port' | 'dataDir'>;
  logger?: Logger;
  /** How often to look for connected-client changes to push to the page (default 2 s). */
  clientsRefreshMs?: number;
  /** How the host is started (default: a utility process running `hostEntry`). */
  startHost?: StartHost;
  /** The host process's entry file (default: the bundled dist/bundle/host-child.js). */
  hostEntry?: string;
  /** Defaults: process.platform, process.argv, app.isPackaged (tests set them). */
  platform?: NodeJS.Platform;
  argv?: readonly string[];
  packaged?: boolean;
  /** Linux autostart folder for "start with my computer" (default ~/.config/autostart). */
  autostartDir?: string;
  /** electron-updater's autoUpdater (default: loaded from electron-updater in packaged builds). */
  loadUpdater?: () => Promise<AutoUpdaterLike>;
}

export interface DesktopApp {
  controller: HostController;
  window(): BrowserWindow | null;
  tray(): AppTray | null;
  /** What the tray menu's items do (tests call them as clicks would). */
  trayActions: TrayActions;
  preferences(): DesktopPreferences;
  updates: Updates;
  /** Shows the native notification for a host notice (as the host process's notices do). */
  showNotice(notice: HostNotice): void;
  /** Stops the host and removes the IPC handlers (done on quit). */
  shutdown(): Promise<void>;
}

/** The parts of the shell, as the wiring below hands them to each other. */
interface Shell {
  options: DesktopAppOptions;
  platform: NodeJS.Platform;
  packaged: boolean;
  log: Logger;
  preferences: Preferences;
  controller: HostController;
  appWindow: AppWindow;
  notifications: NativeNotifications;
  /** Null until created, and on desktops without one (closing the window then quits). */
  tray: AppTray | null;
  /** Set once the user really quits (tray Quit, Cmd+Q, the OS logging out): closing the window then closes it. */
  quitting: boolean;
}

/**
 * The whole desktop shell: one instance, the embedded host on the saved settings, and one locked-down window on
 * the host's own URL, so the UI is the same LAN client a browser would get. Returns null when another instance
 * already runs (it is focused instead).
 */
export async function startDesktopApp(options: DesktopAppOptions = {}): Promise<DesktopApp | null> {
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return null;
  }
  app.enableSandbox();
  await app.whenReady();
  const shell = await createShell(options);
  lockDown(shell);
  const disposeIpc = registerIpc(shell);
  const updates = createDesktopUpdates(shell);
  const trayActions = createTrayActions(shell, updates);
  // Sockets come and go without a host state change: look now and then, and push only when the list changed.
  const clientsTimer = setInterval(() => {
    const state = shell.controller.state();
    if (!shell.appWindow.shows(state.clients)) pushState(shell, state);
  }, options.clientsRefreshMs ?? 2000);
  clientsTimer.unref();
  const shutdown = followAppLifecycle(shell, async () => {
    clearInterval(clientsTimer);
    updates.dispose();
    shell.tray?.destroy();
    disposeIpc();
  });
  const desktop: DesktopApp = {
    controller: shell.controller,
    window: () => shell.appWindow.window(),
    tray: () => shell.tray,
    trayActions,
    preferences: () => shell.preferences.get(),
    updates,
    showNotice: (notice) => shell.notifications.showNotice(notice),
    shutdown,
  };
  await launch(shell, desktop);
  return desktop;
}

/** main.log in the logs folder (the host process writes host.log beside it). */
function mainLog(logsDir: string): Logger {
  return pino(
    { level: process.env.HYPERNEX_LOG_LEVEL ?? 'info', base: undefined },
    pino.destination({ dest: join(logsDir, 'main.log'), mkdir: true, sync: false }),
  );
}

/** The tray and the page see every host state. */
function pushState(shell: Shell, state: HostState): void {
  shell.tray?.update(state, shell.preferences.get());
  shell.appWindow.send(state);
}

/** Preferences, host settings, the host controller, the window and notifications, wired to each other. */
async function createShell(options: DesktopAppOptions): Promise<Shell> {
  const userData = options.userDataDir ?? app.getPath('userData');
  const platform = options.platform ?? process.platform;
  const packaged = options.packaged ?? app.isPackaged;
  const logsDir = join(userData, 'logs');
  const log = options.logger ?? mainLog(logsDir);
  Menu.setApplicationMenu(Menu.buildFromTemplate(applicationMenuTemplate({ packaged, platform })));
  const preferences = await openPreferences(
    createPreferencesFile(join(userData, PREFERENCES_FILE_NAME)),
    (error) => log.warn({ err: error }, 'cannot save preferences'),
  );
  const settingsFile = createHostSettingsFile(join(userData, HOST_SETTINGS_FILE_NAME), defaultHostSettings());
  const loaded = await settingsFile.load();
  if (loaded.problem) log.warn({ path: settingsFile.path }, loaded.problem.message);

  const controller = createHostController({
    settings: loaded.settings,
    settingsProblem: loaded.problem,
    reloadSettings: () => settingsFile.load(),
    saveSettings: (settings) => settingsFile.save(settings),
    serverConfig: { uiDir: BUILT_UI_DIR, ...options.serverConfig },
    startHost:
      options.startHost ??
      processHostStarter({
        spawn: forkUtilityHost(options.hostEntry),
        logFile: join(logsDir, 'host.log'),
        log,
      }),
    onStateChanged: (state) => {
      log.info({ running: state.running, url: state.url, error: state.error }, 'host state');
      pushState(shell, state);
      appWindow.followHost();
    },
    onNotice: (notice) => notifications.showNotice(notice),
  });
  const appWindow = createAppWindow({
    controller,
    preloadPath: options.preloadPath ?? PRELOAD_PATH,
    log,
    quitting: () => shell.quitting,
    hasTray: () => shell.tray !== null,
    hidToTray: () => {
      if (preferences.get().closeToTrayExplained) return;
      preferences.set({ closeToTrayExplained: true });
      notifications.tell(
        'Hypernex Companion is still running',
        'The host keeps serving your LAN from the tray. Choose Quit in the tray menu to stop it.',
      );
    },
    recover: (reason) => recoverHost(controller, reason, () => appWindow.window()),
    quit: () => app.quit(),
  });
  const notifications = createNativeNotifications({
    platform,
    preferences: () => preferences.get(),
    focusWindow: () => appWindow.focus(),
    openSection: (section) => appWindow.openSection(section),
    dismissInvite: (userId, requestId) => {
      controller
        .host()
        ?.dismissInvite(userId, requestId)
        .catch((error: unknown) => log.warn({ err: error }, 'cannot dismiss the invite request'));
    },
  });
  const shell: Shell = {
    options,
    platform,
    packaged,
    log,
    preferences,
    controller,
    appWindow,
    notifications,
    tray: null,
    quitting: false,
  };
  return shell;
}

/** Every webContents stays on the app's origin, the page gets no permissions, packaged builds no DevTools. */
function lockDown(shell: Shell): void {
  const { appWindow, log } = shell;
  const openExternal = (url: string): void => {
    if (!isHttpUrl(url)) return;
    electronShell
      .openExternal(url)
      .catch((error: unknown) => log.warn({ err: error, url }, 'cannot open link'));
  };
  app.on('web-contents-created', (_event, contents) => {
    guardWebContents(contents, { appOrigin: () => appWindow.origin(), openExternal });
  });
  denyPermissions(session.defaultSession, () => appWindow.origin());
  if (shell.packaged) {
    // No DevTools in packaged builds, whatever shortcut or leftover API opens them.
    app.on('web-contents-created', (_event, contents) => {
      contents.on('devtools-opened', () => contents.closeDevTools());
    });
  }
}

/** The page's bridge (HostBridge); returns the function that removes its handlers. */
function registerIpc(shell: Shell): () => void {
  const { controller, appWindow, notifications } = shell;
  return registerHostIpc({
    controller,
    isTrustedSender: (event) => appWindow.isTrustedSender(event),
    openDataFolder: async () => {
      const { dataDir } = controller.state().settings;
      await mkdir(dataDir, { recursive: true });
      const problem = await electronShell.openPath(dataDir);
      if (problem) throw new Error(`cannot open ${dataDir}: ${problem}`);
    },
    openExternal: async (url) => {
      await electronShell.openExternal(url);
    },
    notify: ({ title, body }) => notifications.tell(title, body),
  });
}

function createDesktopUpdates(shell: Shell): Updates {
  const { controller, notifications } = shell;
  return createUpdates({
    packaged: shell.packaged,
    loadUpdater:
      shell.options.loadUpdater ??
      (async () => {
        const module = (await import('electron-updater')) as unknown as { autoUpdater: AutoUpdaterLike };
        return module.autoUpdater;
      }),
    uploadsInProgress: () => controller.uploadsInProgress().catch(() => 0),
    tell: (title, body) => notifications.tell(title, body),
    log: shell.log,
  });
}

function createTrayActions(shell: Shell, updates: Updates): TrayActions {
  const { controller, preferences, log, options } = shell;
  return {
    openWindow: () => shell.appWindow.focus(),
    start: () => {
      controller.start().catch((error: unknown) => log.error({ err: error }, 'starting the host failed'));
    },
    stop: () => {
      controller.stop().catch((error: unknown) => log.error({ err: error }, 'stopping the host failed'));
    },
    copy: (text) => {
      copyToClipboard(text).catch((error: unknown) =>
        log.warn({ err: error }, 'cannot copy to the clipboard'),
      );
    },
    checkForUpdates: updates.enabled
      ? () =>
          void updates.check('tray').then(
            (result) => shell.notifications.tell('Updates', result),
            () => undefined,
          )
      : null,
    setPreference: (key, value) => {
      preferences.set({ [key]: value });
      if (key === 'startWithComputer') {
        applyStartWithComputer(app, value, {
          platform: shell.platform,
          executable: process.env.APPIMAGE ?? process.execPath,
          ...(options.autostartDir !== undefined && { autostartDir: options.autostartDir }),
        }).catch((error: unknown) => log.warn({ err: error }, 'cannot change start with my computer'));
      }
      shell.tray?.update(controller.state(), preferences.get());
    },
    quit: () => app.quit(),
  };
}

/**
 * The app's own events: a second instance or the dock focuses the window, closing the last window quits only
 * without a tray, and quitting waits for the host to close. Returns the shutdown (`dispose` first, then the host).
 */
function followAppLifecycle(shell: Shell, dispose: () => Promise<void>): () => Promise<void> {
  const { appWindow, log } = shell;
  app.on('second-instance', () => appWindow.focus());
  // With a tray the host keeps serving without windows; only Quit ends the app. Without a tray (a desktop that
  // has none) closing the window quits, or there would be no way back in.
  app.on('window-all-closed', () => {
    if (shell.tray === null && shell.platform !== 'darwin') app.quit();
  });
  app.on('activate', () => appWindow.focus());
  app.on('before-quit', () => {
    shell.quitting = true;
  });
  // Ctrl+C in the terminal of `npm start` quits like the window's close button: the host closes cleanly.
  const quitOnSignal = (): void => app.quit();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, quitOnSignal);

  let shutdownPromise: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.off(signal, quitOnSignal);
      await dispose();
      await shell.controller.close();
      await shell.preferences.saved();
      log.flush();
    })();
    return shutdownPromise;
  };
  let shutDown = false;
  // Quit waits for the host to close: its store flushes and the data folder lock is released.
  app.on('will-quit', (event) => {
    if (shutDown) return;
    event.preventDefault();
    void shutdown()
      .catch((error: unknown) => log.error({ err: error }, 'host did not close cleanly'))
      .finally(() => {
        shutDown = true;
        app.quit();
      });
  });
  return shutdown;
}

/**
 * Starts the host (asking what to do when it cannot start), then the tray and the window; started with the
 * computer, the window loads hidden until asked for.
 */
async function launch(shell: Shell, desktop: DesktopApp): Promise<void> {
  const { controller, options, log } = shell;
  const hidden = startedHidden(options.argv ?? process.argv, app, shell.platform);
  const first = await controller.start();
  const reason = first.error ?? 'The host could not start.';
  if (!first.running && !hidden && !(await recoverHost(controller, reason, () => shell.appWindow.window()))) {
    app.quit();
    return;
  }
  try {
    shell.tray = createAppTray(controller.state(), shell.preferences.get(), desktop.trayActions);
  } catch (error) {
    // Some Linux desktops have no tray; the window is then the only way in, so closing it quits.
    log.warn({ err: error }, 'no tray on this desktop');
  }
  // Started with the computer: the host serves, the window loads hidden (its page keeps the session) until asked.
  shell.appWindow.open(!hidden);
  if (first.running) {
    void desktop.updates
      .check('start')
      .catch((error: unknown) => log.warn({ err: error }, 'update check failed'));
  }
}
