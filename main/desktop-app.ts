import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  app,
  BrowserWindow,
  dialog,
  Menu,
  Notification,
  session,
  shell,
  type IpcMainInvokeEvent,
  type MessageBoxOptions,
} from 'electron';
import pino, { type Logger } from 'pino';
import { BUILT_UI_DIR } from '../server/cli.js';
import type { ConfigOverrides } from '../server/config.js';
import type { HostState, NotificationRequest } from '../server/protocol/host-bridge.js';
import { findFreePort } from './free-port.js';
import { applicationMenuTemplate } from './app-menu.js';
import {
  createPreferencesFile,
  PREFERENCES_FILE_NAME,
  type DesktopPreferences,
} from './desktop-preferences.js';
import {
  noticeOutcome,
  noticeView,
  supportsNotificationActions,
  type NoticeSection,
} from './desktop-notifications.js';
import {
  createHostController,
  isPortProblem,
  type HostController,
  type StartHost,
} from './host-controller.js';
import { registerHostIpc } from './host-ipc.js';
import type { HostNotice } from './host-messages.js';
import { processHostStarter } from './host-process.js';
import { applyStartWithComputer, startedHidden } from './login-item.js';
import { copyToClipboard, createAppTray, type AppTray, type TrayActions } from './tray.js';
import { createUpdates, type AutoUpdaterLike, type Updates } from './updates.js';
import { forkUtilityHost } from './utility-host.js';
import {
  createHostSettingsFile,
  HostSettingsFileError,
  defaultHostSettings,
  HOST_SETTINGS_FILE_NAME,
} from './host-settings-file.js';
import { HOST_NAVIGATE_EVENT, HOST_STATE_EVENT } from './ipc-channels.js';
import { createMainWindow } from './main-window.js';
import { denyPermissions, guardWebContents, isHttpUrl, originOf } from './window-security.js';

export const PRELOAD_PATH = fileURLToPath(new URL('./preload/preload.js', import.meta.url));

// Chromium's code for a navigation superseded by another one: not a failure worth a dialog.
const ERR_ABORTED = -3;

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

  const userData = options.userDataDir ?? app.getPath('userData');
  const platform = options.platform ?? process.platform;
  const packaged = options.packaged ?? app.isPackaged;
  const logsDir = join(userData, 'logs');
  const log =
    options.logger ??
    pino(
      { level: process.env.HYPERNEX_LOG_LEVEL ?? 'info', base: undefined },
      pino.destination({ dest: join(logsDir, 'main.log'), mkdir: true, sync: false }),
    );
  Menu.setApplicationMenu(Menu.buildFromTemplate(applicationMenuTemplate({ packaged, platform })));
  const preferencesFile = createPreferencesFile(join(userData, PREFERENCES_FILE_NAME));
  let preferences = await preferencesFile.load();
  // Saves run one after another (the last change is the one on disk) and quitting waits for them.
  let preferencesSaved: Promise<void> = Promise.resolve();
  const savePreferences = (patch: Partial<DesktopPreferences>): void => {
    preferences = { ...preferences, ...patch };
    const snapshot = preferences;
    preferencesSaved = preferencesSaved
      .then(() => preferencesFile.save(snapshot))
      .catch((error: unknown) => log.warn({ err: error }, 'cannot save preferences'));
  };
  const settingsFile = createHostSettingsFile(join(userData, HOST_SETTINGS_FILE_NAME), defaultHostSettings());
  const loaded = await settingsFile.load();
  if (loaded.problem) log.warn({ path: settingsFile.path }, loaded.problem.message);

  let window: BrowserWindow | null = null;
  // The origin and data folder of the page main loaded last: the only page trusted with the bridge. It stays
  // trusted while the host is stopped, so the UI can start it again.
  let loadedOrigin: string | null = null;
  let loadedDataDir: string | null = null;
  let recovering = false;
  // Set once the user really quits (tray Quit, Cmd+Q, the OS logging out): closing the window then closes it.
  let quitting = false;
  let tray: AppTray | null = null;
  const notifications = new Set<Notification>();

  const openExternal = (url: string): void => {
    if (!isHttpUrl(url)) return;
    shell.openExternal(url).catch((error: unknown) => log.warn({ err: error, url }, 'cannot open link'));
  };

  let pushedClients = '';
  const pushState = (state: HostState): void => {
    tray?.update(state, preferences);
    const contents = window && !window.isDestroyed() ? window.webContents : null;
    if (!contents || loadedOrigin === null || originOf(contents.getURL()) !== loadedOrigin) return;
    pushedClients = JSON.stringify(state.clients);
    contents.send(HOST_STATE_EVENT, state);
  };

  const load = (url: string, dataDir: string): void => {
    if (!window || window.isDestroyed()) return;
    loadedOrigin = originOf(url);
    loadedDataDir = dataDir;
    // Failures surface through did-fail-load, which offers a way out.
    window.loadURL(`${url}/`).catch(() => undefined);
  };

  // A restart onto another port or data folder leaves the page talking to nothing (or to another account
  // store): follow the host. Deferred so the IPC reply that caused the restart reaches the old page first.
  const followHost = (): void => {
    setImmediate(() => {
      const { url, settings } = controller.state();
      if (url === null || (originOf(url) === loadedOrigin && settings.dataDir === loadedDataDir)) return;
      load(url, settings.dataDir);
    });
  };

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
      pushState(state);
      followHost();
    },
    onNotice: (notice) => showNotice(notice),
  });

  // Sockets come and go without a host state change: look now and then, and push only when the list changed.
  const clientsTimer = setInterval(() => {
    const state = controller.state();
    if (JSON.stringify(state.clients) !== pushedClients) pushState(state);
  }, options.clientsRefreshMs ?? 2000);
  clientsTimer.unref();

  app.on('web-contents-created', (_event, contents) => {
    guardWebContents(contents, { appOrigin: () => loadedOrigin, openExternal });
  });
  denyPermissions(session.defaultSession, () => loadedOrigin);

  const isTrustedSender = (event: IpcMainInvokeEvent): boolean => {
    if (!window || window.isDestroyed() || event.sender !== window.webContents) return false;
    const frame = event.senderFrame;
    return frame !== null && loadedOrigin !== null && originOf(frame.url) === loadedOrigin;
  };

  const focusWindow = (): void => {
    if (!window || window.isDestroyed()) {
      if (controller.state().running) openWindow(true);
      return;
    }
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  };

  /** Brings the window up on a section of the UI (a notification was clicked). */
  const openSection = (section: NoticeSection): void => {
    focusWindow();
    const own = window;
    if (!own || own.isDestroyed()) return;
    const send = (): void => {
      if (!own.isDestroyed() && originOf(own.webContents.getURL()) === loadedOrigin) {
        own.webContents.send(HOST_NAVIGATE_EVENT, section);
      }
    };
    if (own.webContents.isLoading()) own.webContents.once('did-finish-load', send);
    else send();
  };

  const hold = (notification: Notification): (() => void) => {
    // Held until it is gone: a notification only referenced by the OS can be collected before its click.
    notifications.add(notification);
    const forget = (): void => {
      notifications.delete(notification);
    };
    notification.on('close', forget);
    notification.on('failed', forget);
    return forget;
  };

  const tell = (title: string, body: string): void => {
    if (!Notification.isSupported()) return;
    const notification = new Notification({ title, body });
    const forget = hold(notification);
    notification.on('click', () => {
      forget();
      focusWindow();
    });
    notification.show();
  };

  const showNotice = (notice: HostNotice): void => {
    const view = noticeView(notice, preferences);
    if (!view || !Notification.isSupported()) return;
    const withActions = supportsNotificationActions(platform);
    const notification = new Notification({
      title: view.title,
      body: view.body,
      ...(withActions && { actions: view.actions.map((text) => ({ type: 'button' as const, text })) }),
    });
    const forget = hold(notification);
    const act = (actionIndex: number | null): void => {
      forget();
      const outcome = noticeOutcome(notice, view, actionIndex);
      if (outcome.do === 'open') openSection(outcome.section);
      else if (outcome.do === 'dismiss-invite') {
        controller
          .host()
          ?.dismissInvite(outcome.userId, outcome.requestId)
          .catch((error: unknown) => log.warn({ err: error }, 'cannot dismiss the invite request'));
      }
    };
    notification.on('click', () => act(null));
    notification.on('action', (details) => act(details.actionIndex));
    notification.show();
  };

  const notify = ({ title, body }: NotificationRequest): void => {
    if (!Notification.isSupported()) return;
    const notification = new Notification({ title, body });
    // Held until it is gone: a notification only referenced by the OS can be collected before its click.
    notifications.add(notification);
    const forget = (): void => {
      notifications.delete(notification);
    };
    notification.on('click', () => {
      forget();
      focusWindow();
    });
    notification.on('close', forget);
    notification.on('failed', forget);
    notification.show();
  };

  const disposeIpc = registerHostIpc({
    controller,
    isTrustedSender,
    openDataFolder: async () => {
      const { dataDir } = controller.state().settings;
      await mkdir(dataDir, { recursive: true });
      const problem = await shell.openPath(dataDir);
      if (problem) throw new Error(`cannot open ${dataDir}: ${problem}`);
    },
    openExternal: async (url) => {
      await shell.openExternal(url);
    },
    notify,
  });

  /** Asks what to do when the host is not serving; false when the user chose to quit. */
  const recover = async (reason: string): Promise<boolean> => {
    for (;;) {
      const failure = controller.lastFailure();
      const portFix = isPortProblem(failure);
      // A settings file that cannot be used: fixed by hand (Retry reads it again), or replaced by the defaults,
      // which the Settings screen can then change.
      const settingsFix = failure instanceof HostSettingsFileError;
      const buttons = portFix
        ? ['Retry', 'Use a free port', 'Quit']
        : settingsFix
          ? ['Retry', 'Use the default settings', 'Quit']
          : ['Retry', 'Quit'];
      const box: MessageBoxOptions = {
        type: 'error',
        title: 'Hypernex Companion',
        message: 'The host is not running',
        detail: settingsFix
          ? `${reason}\n\nFix the file and choose Retry, or start on the default settings (they replace the file) and change them in Settings.`
          : reason,
        buttons,
        defaultId: 0,
        cancelId: buttons.length - 1,
        noLink: true,
      };
      const { response } =
        window && !window.isDestroyed()
          ? await dialog.showMessageBox(window, box)
          : await dialog.showMessageBox(box);
      const choice = buttons[response];
      if (choice === 'Quit' || choice === undefined) return false;
      if (choice === 'Use a free port') {
        const port = await findFreePort(controller.state().settings.host).catch(() => 0);
        await controller.updateSettings({ port });
      }
      if (choice === 'Use the default settings') await controller.updateSettings(defaultHostSettings());
      const state = await controller.start();
      if (state.running) return true;
      reason = state.error ?? reason;
    }
  };

  const openWindow = (show = true): void => {
    window = createMainWindow(options.preloadPath ?? PRELOAD_PATH, show);
    const own = window;
    own.on('closed', () => {
      if (window === own) window = null;
    });
    // Closing the window keeps the host serving for the LAN: it hides to the tray. Quit really quits.
    own.on('close', (event) => {
      if (quitting || tray === null) return;
      event.preventDefault();
      own.hide();
      if (!preferences.closeToTrayExplained) {
        savePreferences({ closeToTrayExplained: true });
        tell(
          'Hypernex Companion is still running',
          'The host keeps serving your LAN from the tray. Choose Quit in the tray menu to stop it.',
        );
      }
    });
    own.webContents.on('did-fail-load', (_event, errorCode, errorDescription, _url, isMainFrame) => {
      if (!isMainFrame || errorCode === ERR_ABORTED || recovering) return;
      recovering = true;
      own.show();
      const state = controller.state();
      const reason = state.running
        ? `The window could not load ${state.url ?? 'the host'}: ${errorDescription}`
        : (state.error ?? 'The host was stopped.');
      recover(reason)
        .then((ok) => {
          const now = controller.state();
          if (!ok) app.quit();
          else if (now.url) load(now.url, now.settings.dataDir);
        })
        .catch((error: unknown) => log.error({ err: error }, 'recovering the window failed'))
        .finally(() => {
          recovering = false;
        });
    });
    const state = controller.state();
    if (state.url) load(state.url, state.settings.dataDir);
  };

  app.on('second-instance', () => focusWindow());
  // With a tray the host keeps serving without windows; only Quit ends the app. Without a tray (a desktop that
  // has none) closing the window quits, or there would be no way back in.
  app.on('window-all-closed', () => {
    if (tray === null && platform !== 'darwin') app.quit();
  });
  app.on('activate', () => focusWindow());
  app.on('before-quit', () => {
    quitting = true;
  });
  if (packaged) {
    // No DevTools in packaged builds, whatever shortcut or leftover API opens them.
    app.on('web-contents-created', (_event, contents) => {
      contents.on('devtools-opened', () => contents.closeDevTools());
    });
  }

  const updates = createUpdates({
    packaged,
    loadUpdater:
      options.loadUpdater ??
      (async () => {
        const module = (await import('electron-updater')) as unknown as { autoUpdater: AutoUpdaterLike };
        return module.autoUpdater;
      }),
    uploadsInProgress: () => controller.uploadsInProgress().catch(() => 0),
    tell,
    log,
  });

  const trayActions: TrayActions = {
    openWindow: () => focusWindow(),
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
            (result) => tell('Updates', result),
            () => undefined,
          )
      : null,
    setPreference: (key, value) => {
      savePreferences({ [key]: value });
      if (key === 'startWithComputer') {
        applyStartWithComputer(app, value, {
          platform,
          executable: process.env.APPIMAGE ?? process.execPath,
          ...(options.autostartDir !== undefined && { autostartDir: options.autostartDir }),
        }).catch((error: unknown) => log.warn({ err: error }, 'cannot change start with my computer'));
      }
      tray?.update(controller.state(), preferences);
    },
    quit: () => app.quit(),
  };

  // Ctrl+C in the terminal of `npm start` quits like the window's close button: the host closes cleanly.
  const quitOnSignal = (): void => app.quit();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, quitOnSignal);

  let shutdownPromise: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.off(signal, quitOnSignal);
      clearInterval(clientsTimer);
      updates.dispose();
      tray?.destroy();
      disposeIpc();
      await controller.close();
      await preferencesSaved;
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

  const desktop: DesktopApp = {
    controller,
    window: () => window,
    tray: () => tray,
    trayActions,
    preferences: () => preferences,
    updates,
    showNotice,
    shutdown,
  };
  const hidden = startedHidden(options.argv ?? process.argv, app, platform);
  const first = await controller.start();
  if (!first.running && !hidden && !(await recover(first.error ?? 'The host could not start.'))) {
    app.quit();
    return desktop;
  }
  try {
    tray = createAppTray(controller.state(), preferences, trayActions);
  } catch (error) {
    // Some Linux desktops have no tray; the window is then the only way in, so closing it quits.
    log.warn({ err: error }, 'no tray on this desktop');
  }
  // Started with the computer: the host serves, the window loads hidden (its page keeps the session) until asked.
  openWindow(!hidden);
  if (first.running) {
    void updates.check('start').catch((error: unknown) => log.warn({ err: error }, 'update check failed'));
  }
  return desktop;
}
