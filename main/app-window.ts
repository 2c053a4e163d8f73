// The app's one window: it shows the host's own page (the same LAN client a browser gets), follows the host when a
// restart moves it, hides to the tray on close, and offers a way out when the page cannot load.
import type { BrowserWindow, IpcMainInvokeEvent } from 'electron';
import type { Logger } from 'pino';
import type { HostState } from '../server/protocol/host-bridge.js';
import type { NoticeSection } from './desktop-notifications.js';
import type { HostController } from './host-controller.js';
import { HOST_NAVIGATE_EVENT, HOST_STATE_EVENT } from './ipc-channels.js';
import { createMainWindow } from './main-window.js';
import { originOf } from './window-security.js';

// Chromium's code for a navigation superseded by another one: not a failure worth a dialog.
const ERR_ABORTED = -3;

export interface AppWindowDeps {
  controller: HostController;
  preloadPath: string;
  log: Logger;
  /** True once the user really quits (tray Quit, Cmd+Q, the OS logging out): closing the window then closes it. */
  quitting(): boolean;
  /** Whether a tray keeps the app reachable: closing the window then only hides it. */
  hasTray(): boolean;
  /** The window was closed and hid to the tray. */
  hidToTray(): void;
  /** Asks what to do while the host is not serving (host-recovery.ts); false when the user chose to quit. */
  recover(reason: string): Promise<boolean>;
  quit(): void;
}

export interface AppWindow {
  window(): BrowserWindow | null;
  /** The origin of the page loaded last: the only page trusted with the bridge (still while the host is stopped). */
  origin(): string | null;
  /** Creates the window on the host's page (hidden: the page loads, the window waits to be shown). */
  open(show: boolean): void;
  /** Brings the window up, opening it again if it was closed while the host serves. */
  focus(): void;
  /** Brings the window up on a section of the UI (a notification was clicked). */
  openSection(section: NoticeSection): void;
  /** Hands the page the host state. */
  send(state: HostState): void;
  /** True when the page was last sent these connected clients. */
  shows(clients: HostState['clients']): boolean;
  /** Moves the page to the host's address when a restart changed its port or data folder. */
  followHost(): void;
  /** True only for the window's frames on the loaded page's origin. */
  isTrustedSender(event: IpcMainInvokeEvent): boolean;
}

export function createAppWindow(deps: AppWindowDeps): AppWindow {
  const { controller } = deps;
  let window: BrowserWindow | null = null;
  let loadedOrigin: string | null = null;
  let loadedDataDir: string | null = null;
  let pushedClients = '';
  let recovering = false;
  const current = (): BrowserWindow | null => (window && !window.isDestroyed() ? window : null);

  const load = (url: string, dataDir: string): void => {
    const own = current();
    if (!own) return;
    loadedOrigin = originOf(url);
    loadedDataDir = dataDir;
    // Failures surface through did-fail-load, which offers a way out.
    own.loadURL(`${url}/`).catch(() => undefined);
  };

  const onLoadFailed = (own: BrowserWindow, errorDescription: string): void => {
    recovering = true;
    own.show();
    const state = controller.state();
    const reason = state.running
      ? `The window could not load ${state.url ?? 'the host'}: ${errorDescription}`
      : (state.error ?? 'The host was stopped.');
    deps
      .recover(reason)
      .then((ok) => {
        const now = controller.state();
        if (!ok) deps.quit();
        else if (now.url) load(now.url, now.settings.dataDir);
      })
      .catch((error: unknown) => deps.log.error({ err: error }, 'recovering the window failed'))
      .finally(() => {
        recovering = false;
      });
  };

  const open = (show: boolean): void => {
    const own = createMainWindow(deps.preloadPath, show);
    window = own;
    own.on('closed', () => {
      if (window === own) window = null;
    });
    // Closing the window keeps the host serving for the LAN: it hides to the tray. Quit really quits.
    own.on('close', (event) => {
      if (deps.quitting() || !deps.hasTray()) return;
      event.preventDefault();
      own.hide();
      deps.hidToTray();
    });
    own.webContents.on('did-fail-load', (_event, errorCode, errorDescription, _url, isMainFrame) => {
      if (isMainFrame && errorCode !== ERR_ABORTED && !recovering) onLoadFailed(own, errorDescription);
    });
    const state = controller.state();
    if (state.url) load(state.url, state.settings.dataDir);
  };

  const focus = (): void => {
    const own = current();
    if (!own) {
      if (controller.state().running) open(true);
      return;
    }
    if (own.isMinimized()) own.restore();
    own.show();
    own.focus();
  };

  return {
    window: () => window,
    origin: () => loadedOrigin,
    open,
    focus,
    openSection(section) {
      focus();
      const own = current();
      if (!own) return;
      const send = (): void => {
        if (!own.isDestroyed() && originOf(own.webContents.getURL()) === loadedOrigin) {
          own.webContents.send(HOST_NAVIGATE_EVENT, section);
        }
      };
      if (own.webContents.isLoading()) own.webContents.once('did-finish-load', send);
      else send();
    },
    send(state) {
      const contents = current()?.webContents;
      if (!contents || loadedOrigin === null || originOf(contents.getURL()) !== loadedOrigin) return;
      pushedClients = JSON.stringify(state.clients);
      contents.send(HOST_STATE_EVENT, state);
    },
    shows: (clients) => JSON.stringify(clients) === pushedClients,
    followHost() {
      // A restart onto another port or data folder leaves the page talking to nothing (or to another account
      // store): follow the host. Deferred so the IPC reply that caused the restart reaches the old page first.
      setImmediate(() => {
        const { url, settings } = controller.state();
        if (url === null || (originOf(url) === loadedOrigin && settings.dataDir === loadedDataDir)) return;
        load(url, settings.dataDir);
      });
    },
    isTrustedSender(event) {
      const own = current();
      if (!own || event.sender !== own.webContents) return false;
      const frame = event.senderFrame;
      return frame !== null && loadedOrigin !== null && originOf(frame.url) === loadedOrigin;
    },
  };
}
