/**
 * IPC channel names between main and the preload. The sandboxed preload cannot require this file, so it restates
 * the names; test/main/preload.test.ts proves both lists agree.
 */
export const HOST_CHANNELS = {
  getState: 'host:get-state',
  start: 'host:start',
  stop: 'host:stop',
  updateSettings: 'host:update-settings',
  openDataFolder: 'host:open-data-folder',
  openExternal: 'host:open-external',
  notify: 'host:notify',
  setDesktopUser: 'host:set-desktop-user',
} as const;

/** Main → renderer push of a fresh `HostState`. */
export const HOST_STATE_EVENT = 'host:state';

/** Main → renderer: show this section (a notification was clicked). */
export const HOST_NAVIGATE_EVENT = 'host:navigate';
