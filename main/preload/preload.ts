// Sandboxed preload: it may require only 'electron', so it stands alone, and it hands the page one object, the
// HostBridge, never ipcRenderer itself (a page holding ipcRenderer could call any channel).
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';

// Restated from server/protocol/host-bridge.ts: tsconfig.preload.json compiles only main/preload (rootDir), so
// even a type-only import from server/ is refused there. test/main/preload.test.ts proves the two agree.
export interface HostSettings {
  host: string;
  port: number;
  dataDir: string;
}

export interface HostState {
  running: boolean;
  url: string | null;
  lanUrls: string[];
  settings: HostSettings;
  setupSecret: string | null;
  error: string | null;
  clients: { connections: number; users: { userId: string; username: string; sockets: number }[] };
}

export interface NotificationRequest {
  title: string;
  body: string;
}

export interface DesktopUser {
  userId: string;
  tokenContent: string;
}

export interface HostBridge {
  getState(): Promise<HostState>;
  start(): Promise<HostState>;
  stop(): Promise<HostState>;
  updateSettings(settings: Partial<HostSettings>): Promise<HostState>;
  openDataFolder(): Promise<void>;
  openExternal(url: string): Promise<void>;
  notify(notification: NotificationRequest): Promise<void>;
  onStateChanged(listener: (state: HostState) => void): () => void;
  setDesktopUser(user: DesktopUser | null): Promise<void>;
  onNavigate(listener: (section: string) => void): () => void;
}

// Must equal main/ipc-channels.ts (checked by test/main/preload.test.ts).
const PRELOAD_CHANNELS = {
  getState: 'host:get-state',
  start: 'host:start',
  stop: 'host:stop',
  updateSettings: 'host:update-settings',
  openDataFolder: 'host:open-data-folder',
  openExternal: 'host:open-external',
  notify: 'host:notify',
  setDesktopUser: 'host:set-desktop-user',
} as const;

const PRELOAD_STATE_EVENT = 'host:state';
const PRELOAD_NAVIGATE_EVENT = 'host:navigate';

// Each method forwards exactly its own argument, so the page cannot smuggle extra ones to main.
const hostBridge: HostBridge = {
  getState: () => ipcRenderer.invoke(PRELOAD_CHANNELS.getState),
  start: () => ipcRenderer.invoke(PRELOAD_CHANNELS.start),
  stop: () => ipcRenderer.invoke(PRELOAD_CHANNELS.stop),
  updateSettings: (settings) => ipcRenderer.invoke(PRELOAD_CHANNELS.updateSettings, settings),
  openDataFolder: () => ipcRenderer.invoke(PRELOAD_CHANNELS.openDataFolder),
  openExternal: (url) => ipcRenderer.invoke(PRELOAD_CHANNELS.openExternal, url),
  notify: (notification) => ipcRenderer.invoke(PRELOAD_CHANNELS.notify, notification),
  setDesktopUser: (user) => ipcRenderer.invoke(PRELOAD_CHANNELS.setDesktopUser, user),
  onNavigate(listener) {
    if (typeof listener !== 'function') throw new TypeError('onNavigate needs a function');
    const forward = (_event: IpcRendererEvent, section: string): void => listener(section);
    ipcRenderer.on(PRELOAD_NAVIGATE_EVENT, forward);
    return () => {
      ipcRenderer.removeListener(PRELOAD_NAVIGATE_EVENT, forward);
    };
  },
  onStateChanged(listener) {
    if (typeof listener !== 'function') throw new TypeError('onStateChanged needs a function');
    // The IPC event (with its sender) stays here; the page gets only the state.
    const forward = (_event: IpcRendererEvent, state: HostState): void => listener(state);
    ipcRenderer.on(PRELOAD_STATE_EVENT, forward);
    return () => {
      ipcRenderer.removeListener(PRELOAD_STATE_EVENT, forward);
    };
  },
};

contextBridge.exposeInMainWorld('hypernexHost', hostBridge);
