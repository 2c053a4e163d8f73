// A stand-in for the parts of Electron the shell uses, recording what it was asked to do. Installed with
// `vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()))`; the real
// package would try to download its binary when imported outside Electron.
import { EventEmitter } from 'node:events';
import { vi, type Mock } from 'vitest';

export interface NavigationEvent {
  url: string;
  isMainFrame: boolean;
  defaultPrevented: boolean;
  preventDefault(): void;
}

export function navigationEvent(url: string, isMainFrame = true): NavigationEvent {
  return {
    url,
    isMainFrame,
    defaultPrevented: false,
    preventDefault() {
      this.defaultPrevented = true;
    },
  };
}

type WindowOpenHandler = (details: { url: string }) => { action: 'allow' | 'deny' };

export class FakeWebContents extends EventEmitter {
  url = '';
  windowOpenHandler: WindowOpenHandler | null = null;
  readonly sent: { channel: string; args: unknown[] }[] = [];

  setWindowOpenHandler(handler: WindowOpenHandler): void {
    this.windowOpenHandler = handler;
  }
  getURL(): string {
    return this.url;
  }
  send(channel: string, ...args: unknown[]): void {
    this.sent.push({ channel, args });
  }
  /** What a page's `window.open(url)` would get. */
  open(url: string): { action: 'allow' | 'deny' } {
    if (!this.windowOpenHandler) return { action: 'allow' };
    return this.windowOpenHandler({ url });
  }
  /** Emits a navigation event the way Electron does and says whether a handler prevented it. */
  navigate(
    event: 'will-navigate' | 'will-frame-navigate' | 'will-redirect',
    url: string,
    isMainFrame = true,
  ): boolean {
    const details = navigationEvent(url, isMainFrame);
    this.emit(event, details);
    return details.defaultPrevented;
  }
}

export class FakeBrowserWindow extends EventEmitter {
  readonly webContents = new FakeWebContents();
  readonly loaded: string[] = [];
  destroyed = false;
  visible = false;

  constructor(
    readonly options: Record<string, unknown>,
    private readonly fake: FakeElectron,
  ) {
    super();
    fake.windows.push(this);
    fake.app.emit('web-contents-created', {}, this.webContents);
  }
  async loadURL(url: string): Promise<void> {
    this.loaded.push(url);
    this.webContents.url = url;
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  isMinimized(): boolean {
    return false;
  }
  restore(): void {}
  show(): void {
    this.visible = true;
  }
  focus(): void {}
}

export type IpcHandler = (event: unknown, ...args: unknown[]) => unknown;

export interface FakeElectron {
  windows: FakeBrowserWindow[];
  handlers: Map<string, IpcHandler>;
  app: EventEmitter & {
    requestSingleInstanceLock: Mock<() => boolean>;
    enableSandbox: Mock;
    whenReady: () => Promise<void>;
    getPath: (name: string) => string;
    quit: Mock;
    exit: Mock;
  };
  ipcMain: {
    handle(channel: string, handler: IpcHandler): void;
    removeHandler(channel: string): void;
  };
  permissionRequestHandler:
    | ((
        contents: unknown,
        permission: string,
        callback: (granted: boolean) => void,
        details: unknown,
      ) => void)
    | null;
  permissionCheckHandler:
    ((contents: unknown, permission: string, origin: string, details: unknown) => boolean) | null;
  shell: { openExternal: Mock; openPath: Mock };
  dialog: { showMessageBox: Mock; showErrorBox: Mock };
  notifications: { options: { title: string; body: string }; shown: boolean }[];
  exposed: Map<string, unknown>;
  ipcRenderer: {
    invoke: Mock;
    on: Mock;
    removeListener: Mock;
  };
  /** Calls a registered ipcMain handler as Electron would. */
  invoke(channel: string, event: unknown, ...args: unknown[]): Promise<unknown>;
}

function createFakeElectron(): FakeElectron {
  const handlers = new Map<string, IpcHandler>();
  const fake: FakeElectron = {
    windows: [],
    handlers,
    app: Object.assign(new EventEmitter(), {
      requestSingleInstanceLock: vi.fn(() => true),
      enableSandbox: vi.fn(),
      whenReady: () => Promise.resolve(),
      getPath: (name: string): string => {
        throw new Error(`the test must pass userDataDir instead of app.getPath(${name})`);
      },
      quit: vi.fn(),
      exit: vi.fn(),
    }),
    ipcMain: {
      handle(channel, handler) {
        // As Electron: a second handler for one channel is a programming error.
        if (handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
        handlers.set(channel, handler);
      },
      removeHandler(channel) {
        handlers.delete(channel);
      },
    },
    permissionRequestHandler: null,
    permissionCheckHandler: null,
    shell: { openExternal: vi.fn(async () => undefined), openPath: vi.fn(async () => '') },
    dialog: { showMessageBox: vi.fn(async () => ({ response: 0 })), showErrorBox: vi.fn() },
    notifications: [],
    exposed: new Map(),
    ipcRenderer: { invoke: vi.fn(async () => undefined), on: vi.fn(), removeListener: vi.fn() },
    async invoke(channel, event, ...args) {
      const handler = handlers.get(channel);
      if (!handler) throw new Error(`No handler registered for '${channel}'`);
      return handler(event, ...args);
    },
  };
  return fake;
}

/** The one fake per test file (each file runs in its own process). */
export const fake = createFakeElectron();

/** The module object `vi.mock('electron')` hands to the code under test. */
export function fakeElectronModule(): Record<string, unknown> {
  class BrowserWindow extends FakeBrowserWindow {
    constructor(options: Record<string, unknown>) {
      super(options, fake);
    }
  }
  class Notification extends EventEmitter {
    static isSupported(): boolean {
      return true;
    }
    readonly record: { options: { title: string; body: string }; shown: boolean };
    constructor(options: { title: string; body: string }) {
      super();
      this.record = { options, shown: false };
      fake.notifications.push(this.record);
    }
    show(): void {
      this.record.shown = true;
    }
  }
  const session = {
    defaultSession: {
      setPermissionRequestHandler(handler: FakeElectron['permissionRequestHandler']) {
        fake.permissionRequestHandler = handler;
      },
      setPermissionCheckHandler(handler: FakeElectron['permissionCheckHandler']) {
        fake.permissionCheckHandler = handler;
      },
    },
  };
  const contextBridge = {
    exposeInMainWorld: vi.fn((key: string, api: unknown) => {
      fake.exposed.set(key, api);
    }),
  };
  return {
    app: fake.app,
    BrowserWindow,
    Notification,
    session,
    shell: fake.shell,
    dialog: fake.dialog,
    ipcMain: fake.ipcMain,
    contextBridge,
    ipcRenderer: fake.ipcRenderer,
  };
}

/** An IPC event as sent by `contents` from a frame at `frameUrl`. */
export function ipcEvent(contents: unknown, frameUrl: string | null): unknown {
  return { sender: contents, senderFrame: frameUrl === null ? null : { url: frameUrl } };
}
