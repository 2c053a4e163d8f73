import { BrowserWindow, type BrowserWindowConstructorOptions } from 'electron';

/** The app window's options: the page gets no Node, runs sandboxed and isolated, and sees only the preload's bridge. */
export function mainWindowOptions(preloadPath: string): BrowserWindowConstructorOptions {
  return {
    width: 1200,
    height: 800,
    minWidth: 720,
    minHeight: 520,
    title: 'Hypernex Companion',
    backgroundColor: '#111318',
    // Shown on ready-to-show, so the user never sees a blank white frame.
    show: false,
    webPreferences: {
      preload: preloadPath,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      // A file dropped beside the upload zone must not replace the app with file://.
      navigateOnDragDrop: false,
      safeDialogs: true,
    },
  };
}

/** `show` false keeps it hidden (start with the computer) until the tray or a notification opens it. */
export function createMainWindow(preloadPath: string, show = true): BrowserWindow {
  const window = new BrowserWindow(mainWindowOptions(preloadPath));
  if (show) window.once('ready-to-show', () => window.show());
  return window;
}
