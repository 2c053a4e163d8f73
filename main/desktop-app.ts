import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  app,
  BrowserWindow,
  dialog,
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
import {
  createHostController,
  inProcessHost,
  isPortProblem,
  type HostController,
} from './host-controller.js';
import { registerHostIpc } from './host-ipc.js';
import {
  createHostSettingsFile,
  defaultHostSettings,
  HOST_SETTINGS_FILE_NAME,
} from './host-settings-file.js';
import { HOST_STATE_EVENT } from './ipc-channels.js';
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
}

export interface DesktopApp {
  controller: HostController;
  window(): BrowserWindow | null;
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
  const log =
    options.logger ??
    pino(
      { level: process.env.HYPERNEX_LOG_LEVEL ?? 'info', base: undefined },
      pino.destination({ dest: join(userData, 'logs', 'host.log'), mkdir: true, sync: false }),
    );
  const settingsFile = createHostSettingsFile(join(userData, HOST_SETTINGS_FILE_NAME), defaultHostSettings());
  const loaded = await settingsFile.load();
  if (loaded.problem) log.warn({ path: settingsFile.path }, loaded.problem);

  let window: BrowserWindow | null = null;
  // The origin and data folder of the page main loaded last: the only page trusted with the bridge. It stays
  // trusted while the host is stopped, so the UI can start it again.
  let loadedOrigin: string | null = null;
  let loadedDataDir: string | null = null;
  let recovering = false;
  const notifications = new Set<Notification>();

  const openExternal = (url: string): void => {
    if (!isHttpUrl(url)) return;
    shell.openExternal(url).catch((error: unknown) => log.warn({ err: error, url }, 'cannot open link'));
  };

  let pushedClients = '';
  const pushState = (state: HostState): void => {
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
    saveSettings: (settings) => settingsFile.save(settings),
    serverConfig: { uiDir: BUILT_UI_DIR, ...options.serverConfig },
    startHost: inProcessHost({ logger: log }),
    onStateChanged: (state) => {
      log.info({ running: state.running, url: state.url, error: state.error }, 'host state');
      pushState(state);
      followHost();
    },
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
    if (!window || window.isDestroyed()) return;
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
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
      const portFix = isPortProblem(controller.lastFailure());
      const buttons = portFix ? ['Retry', 'Use a free port', 'Quit'] : ['Retry', 'Quit'];
      const box: MessageBoxOptions = {
        type: 'error',
        title: 'Hypernex Companion',
        message: 'The host is not running',
        detail: reason,
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
      const state = await controller.start();
      if (state.running) return true;
      reason = state.error ?? reason;
    }
  };

  const openWindow = (): void => {
    window = createMainWindow(options.preloadPath ?? PRELOAD_PATH);
    const own = window;
    own.on('closed', () => {
      if (window === own) window = null;
    });
    own.webContents.on('did-fail-load', (_event, errorCode, errorDescription, _url, isMainFrame) => {
      if (!isMainFrame || errorCode === ERR_ABORTED || recovering) return;
      recovering = true;
      own.show();
      const state = controller.state();
      const reason = state.running
        ? `The window could not load ${state.url ?? 'the host'}: ${errorDescription}`
        : (state.error ?? 'The host was stopped.');
      void recover(reason)
        .then((ok) => {
          const now = controller.state();
          if (!ok) app.quit();
          else if (now.url) load(now.url, now.settings.dataDir);
        })
        .finally(() => {
          recovering = false;
        });
    });
    const state = controller.state();
    if (state.url) load(state.url, state.settings.dataDir);
  };

  app.on('second-instance', () => {
    if (window) focusWindow();
    else if (controller.state().running) openWindow();
  });
  // macOS keeps the app (and the host) alive without windows, as its apps do; elsewhere closing the window quits.
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  app.on('activate', () => {
    if (!window && controller.state().running) openWindow();
  });

  // Ctrl+C in the terminal of `npm start` quits like the window's close button: the host closes cleanly.
  const quitOnSignal = (): void => app.quit();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, quitOnSignal);

  let shutdownPromise: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.off(signal, quitOnSignal);
      clearInterval(clientsTimer);
      disposeIpc();
      await controller.close();
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

  const first = await controller.start();
  if (!first.running && !(await recover(first.error ?? 'The host could not start.'))) {
    app.quit();
    return { controller, window: () => window, shutdown };
  }
  openWindow();
  return { controller, window: () => window, shutdown };
}
