// What `electron` resolves to when bench/harness/main-import.js loads the desktop app's main process in plain Node
// (the real package only names a binary this machine cannot download). Every name main/ imports exists; the app
// asks for the single-instance lock, is refused, and quits, so importing main.js starts nothing.
const inert = () => undefined;
const Inert = class {};

export const app = {
  requestSingleInstanceLock: () => false,
  quit: inert,
  exit: inert,
  on: inert,
};
export const dialog = { showErrorBox: inert, showMessageBox: async () => ({ response: 0 }) };
export const Menu = { setApplicationMenu: inert, buildFromTemplate: () => ({}) };
export const BrowserWindow = Inert;
export const Notification = Object.assign(class {}, { isSupported: () => false });
export const Tray = Inert;
export const session = { defaultSession: {} };
export const shell = { openExternal: async () => undefined, openPath: async () => '' };
export const ipcMain = { handle: inert, removeHandler: inert };
export const ipcRenderer = { invoke: async () => undefined, on: inert, removeListener: inert };
export const contextBridge = { exposeInMainWorld: inert };
export const clipboard = { writeText: inert };
export const nativeImage = { createFromBuffer: () => ({}), createEmpty: () => ({}) };
export const utilityProcess = { fork: inert };
export default {
  app,
  dialog,
  Menu,
  BrowserWindow,
  Notification,
  Tray,
  session,
  shell,
  ipcMain,
  utilityProcess,
};
