import { clipboard, Menu, nativeImage, Tray, type MenuItemConstructorOptions } from 'electron';
import type { HostState } from '../server/protocol/host-bridge.js';
import type { DesktopPreferences } from './desktop-preferences.js';
import { trayIconPng, type TrayStatus } from './tray-icon.js';

export function trayStatus(state: HostState): TrayStatus {
  if (state.running) return 'running';
  return state.error ? 'error' : 'stopped';
}

function users(count: number): string {
  return count === 1 ? '1 user connected' : `${count} users connected`;
}

export function trayTooltip(state: HostState): string {
  switch (trayStatus(state)) {
    case 'running':
      return `Hypernex Companion: host running, ${users(state.clients.users.length)}`;
    case 'error':
      return `Hypernex Companion: host not running (${state.error ?? 'error'})`;
    case 'stopped':
      return 'Hypernex Companion: host stopped';
  }
}

export interface TrayActions {
  openWindow(): void;
  start(): void;
  stop(): void;
  copy(text: string): void;
  /** Null where updates are off (development, unpackaged). */
  checkForUpdates: (() => void) | null;
  setPreference(
    key: 'startWithComputer' | 'notifyInviteRequests' | 'notifyFriendRequests',
    value: boolean,
  ): void;
  quit(): void;
}

/** The tray's menu for a host state: its status, the addresses to share, and the controls. */
export function trayMenuTemplate(
  state: HostState,
  preferences: DesktopPreferences,
  actions: TrayActions,
): MenuItemConstructorOptions[] {
  const status = trayStatus(state);
  const items: MenuItemConstructorOptions[] = [];
  if (status === 'running') {
    items.push({ label: `Host running · ${users(state.clients.users.length)}`, enabled: false });
  } else if (status === 'error') {
    items.push({ label: 'Host not running', enabled: false });
    items.push({ label: (state.error ?? '').slice(0, 120), enabled: false });
  } else {
    items.push({ label: 'Host stopped', enabled: false });
  }
  if (status === 'running') {
    // Other machines need a LAN address; bound to loopback only, the local one is all there is.
    const shared = state.lanUrls.length > 0 ? state.lanUrls : state.url ? [state.url] : [];
    for (const url of shared.slice(0, 4)) {
      items.push({ label: `Copy address ${url}`, click: () => actions.copy(url) });
    }
  }
  items.push({ type: 'separator' });
  items.push({ label: 'Open Hypernex Companion', click: () => actions.openWindow() });
  items.push(
    state.running
      ? { label: 'Stop host', click: () => actions.stop() }
      : { label: 'Start host', click: () => actions.start() },
  );
  if (actions.checkForUpdates) {
    const check = actions.checkForUpdates;
    items.push({ label: 'Check for updates', click: () => check() });
  }
  items.push({ type: 'separator' });
  items.push({
    label: 'Start with my computer',
    type: 'checkbox',
    checked: preferences.startWithComputer,
    click: (item) => actions.setPreference('startWithComputer', item.checked),
  });
  items.push({
    label: 'Notifications',
    submenu: [
      {
        label: 'Invite requests',
        type: 'checkbox',
        checked: preferences.notifyInviteRequests,
        click: (item) => actions.setPreference('notifyInviteRequests', item.checked),
      },
      {
        label: 'Friend requests',
        type: 'checkbox',
        checked: preferences.notifyFriendRequests,
        click: (item) => actions.setPreference('notifyFriendRequests', item.checked),
      },
    ],
  });
  items.push({ type: 'separator' });
  items.push({ label: 'Quit', click: () => actions.quit() });
  return items;
}

export interface AppTray {
  update(state: HostState, preferences: DesktopPreferences): void;
  destroy(): void;
}

/** The tray icon; clicking it opens the window (on Windows and Linux; macOS shows the menu). */
export function createAppTray(
  state: HostState,
  preferences: DesktopPreferences,
  actions: TrayActions,
): AppTray {
  const icon = (status: TrayStatus): Electron.NativeImage => {
    const image = nativeImage.createFromBuffer(trayIconPng(status, 16));
    image.addRepresentation({ scaleFactor: 2, buffer: trayIconPng(status, 32) });
    return image;
  };
  const tray = new Tray(icon(trayStatus(state)));
  tray.on('click', () => actions.openWindow());
  let shown = '';
  const update = (next: HostState, prefs: DesktopPreferences): void => {
    // Rebuilt only when something it shows changed: the clients poll would otherwise rebuild it every 2 s.
    const key = JSON.stringify([
      trayStatus(next),
      next.error,
      next.url,
      next.lanUrls,
      next.clients.users.length,
      prefs,
    ]);
    if (key === shown || tray.isDestroyed()) return;
    const statusChanged = shown === '' || JSON.parse(shown)[0] !== trayStatus(next);
    shown = key;
    if (statusChanged) tray.setImage(icon(trayStatus(next)));
    tray.setToolTip(trayTooltip(next));
    tray.setContextMenu(Menu.buildFromTemplate(trayMenuTemplate(next, prefs, actions)));
  };
  update(state, preferences);
  return {
    update,
    destroy: () => {
      if (!tray.isDestroyed()) tray.destroy();
    },
  };
}

/** Electron's clipboard writes asynchronously; the promise rejects when the system clipboard refuses the text. */
export async function copyToClipboard(text: string): Promise<void> {
  await clipboard.writeText(text);
}
