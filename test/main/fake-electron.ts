// A stand-in for the parts of Electron the shell uses, recording what it was asked to do. Installed with
// `vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()))`; the real
// package would try to download its binary when imported outside Electron.
import { fork, type ChildProcess } from 'node:child_process';
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
  loading = false;
  windowOpenHandler: WindowOpenHandler | null = null;
  readonly sent: { channel: string; args: unknown[] }[] = [];

  setWindowOpenHandler(handler: WindowOpenHandler): void {
    this.windowOpenHandler = handler;
  }
  getURL(): string {
    return this.url;
  }
  isLoading(): boolean {
    return this.loading;
  }
  closeDevTools(): void {}
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
  hide(): void {
    this.visible = false;
  }
  focus(): void {}
  /** What the window's close button does: 'close' (preventable), then 'closed' unless prevented. */
  close(): boolean {
    let prevented = false;
    this.emit('close', {
      preventDefault: () => {
        prevented = true;
      },
    });
    if (prevented) return false;
    this.destroyed = true;
    this.emit('closed');
    return true;
  }
}

export interface MenuItemTemplate {
  label?: string;
  type?: string;
  role?: string;
  enabled?: boolean;
  checked?: boolean;
  click?: (item: { checked: boolean }) => void;
  submenu?: MenuItemTemplate[];
}

export class FakeTray extends EventEmitter {
  image: unknown;
  tooltip = '';
  menu: MenuItemTemplate[] = [];
  destroyed = false;
  constructor(image: unknown) {
    super();
    this.image = image;
  }
  setImage(image: unknown): void {
    this.image = image;
  }
  setToolTip(tooltip: string): void {
    this.tooltip = tooltip;
  }
  setContextMenu(menu: { template: MenuItemTemplate[] }): void {
    this.menu = menu.template;
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

/** Electron's UtilityProcess, played by a forked Node child (the host entry falls back to process.send). */
export class FakeUtilityProcess extends EventEmitter {
  readonly child: ChildProcess;
  constructor(modulePath: string, args: string[], options: { env?: NodeJS.ProcessEnv }) {
    super();
    this.child = fork(modulePath, args, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], env: options.env });
    this.child.on('message', (message) => this.emit('message', message));
    this.child.on('exit', (code) => this.emit('exit', code ?? 1));
  }
  get pid(): number | undefined {
    return this.child.pid;
  }
  get stdout(): NodeJS.ReadableStream | null {
    return this.child.stdout;
  }
  get stderr(): NodeJS.ReadableStream | null {
    return this.child.stderr;
  }
  postMessage(message: unknown): void {
    if (this.child.connected) this.child.send(message as object);
  }
  kill(): boolean {
    return this.child.kill('SIGKILL');
  }
}

export interface FakeNotificationRecord {
  options: { title: string; body: string; actions?: { type: string; text: string }[] };
  shown: boolean;
  /** The notification object, to emit 'click' and 'action' as the OS would. */
  emitter: EventEmitter;
}

export type IpcHandler = (event: unknown, ...args: unknown[]) => unknown;

export interface FakeElectron {
  windows: FakeBrowserWindow[];
  handlers: Map<string, IpcHandler>;
  trays: FakeTray[];
  utilityProcesses: FakeUtilityProcess[];
  applicationMenu: MenuItemTemplate[] | null;
  clipboard: { writeText: Mock };
  app: EventEmitter & {
    isPackaged: boolean;
    setLoginItemSettings: Mock;
    getLoginItemSettings: Mock<() => { wasOpenedAtLogin?: boolean }>;
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
  notifications: FakeNotificationRecord[];
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
    trays: [],
    utilityProcesses: [],
    applicationMenu: null,
    clipboard: { writeText: vi.fn() },
    app: Object.assign(new EventEmitter(), {
      isPackaged: false,
      setLoginItemSettings: vi.fn(),
      getLoginItemSettings: vi.fn(() => ({ wasOpenedAtLogin: false })),
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
    readonly record: FakeNotificationRecord;
    constructor(options: FakeNotificationRecord['options']) {
      super();
      this.record = { options, shown: false, emitter: this };
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
  class Tray extends FakeTray {
    constructor(image: unknown) {
      super(image);
      fake.trays.push(this);
    }
  }
  const Menu = {
    buildFromTemplate: (template: MenuItemTemplate[]) => ({ template }),
    setApplicationMenu: (menu: { template: MenuItemTemplate[] } | null) => {
      fake.applicationMenu = menu?.template ?? null;
    },
  };
  const nativeImage = {
    createFromBuffer: (buffer: Buffer) => ({
      buffer,
      representations: [] as unknown[],
      addRepresentation(representation: unknown) {
        this.representations.push(representation);
      },
    }),
  };
  const utilityProcess = {
    fork: (modulePath: string, args: string[] = [], options: { env?: NodeJS.ProcessEnv } = {}) => {
      const child = new FakeUtilityProcess(modulePath, args, options);
      fake.utilityProcesses.push(child);
      return child;
    },
  };
  return {
    app: fake.app,
    BrowserWindow,
    Notification,
    Tray,
    Menu,
    nativeImage,
    utilityProcess,
    clipboard: fake.clipboard,
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
