import { ipcMain, type IpcMainInvokeEvent } from 'electron';
import type { HostState, NotificationRequest } from '../server/protocol/host-bridge.js';
import { assertUsableDataFolder, ForeignDataFolderError } from '../shared/data-folder.js';
import type { HostController } from './host-controller.js';
import { HOST_CHANNELS } from './ipc-channels.js';
import {
  IpcArgumentError,
  expectNoArguments,
  parseExternalUrl,
  parseDesktopUser,
  parseNotification,
  parseSettingsPatch,
  singleArgument,
} from './ipc-validation.js';

/** A caller that is not the app's own page; it is told nothing more. */
export class UntrustedSenderError extends Error {
  constructor() {
    super('refused: this page may not control the host');
    this.name = 'UntrustedSenderError';
  }
}

export interface HostIpcDeps {
  controller: HostController;
  /** True only for the app window's frames on the embedded server's origin. */
  isTrustedSender(event: IpcMainInvokeEvent): boolean;
  openDataFolder(): Promise<void>;
  openExternal(url: string): Promise<void>;
  notify(notification: NotificationRequest): void;
}

/**
 * A data folder must be missing, empty or already ours: a mistyped path (a home folder, a project checkout) is
 * refused before anything is saved, with the reason the storage layer gives.
 */
export async function checkDataFolder(dir: string): Promise<void> {
  try {
    await assertUsableDataFolder(dir);
  } catch (error) {
    if (error instanceof ForeignDataFolderError) throw new IpcArgumentError(error.message);
    throw new IpcArgumentError(`cannot use ${dir} as a data folder: ${(error as Error).message}`);
  }
}

/** Registers one handler per HostBridge method; returns a function that removes them all. */
export function registerHostIpc(deps: HostIpcDeps): () => void {
  const { controller } = deps;
  const handlers: Record<
    (typeof HOST_CHANNELS)[keyof typeof HOST_CHANNELS],
    (args: unknown[]) => Promise<unknown>
  > = {
    [HOST_CHANNELS.getState]: async (args): Promise<HostState> => {
      expectNoArguments(args);
      return controller.state();
    },
    [HOST_CHANNELS.start]: async (args) => {
      expectNoArguments(args);
      return controller.start();
    },
    [HOST_CHANNELS.stop]: async (args) => {
      expectNoArguments(args);
      return controller.stop();
    },
    [HOST_CHANNELS.updateSettings]: async (args) => {
      const patch = parseSettingsPatch(singleArgument(args));
      if (patch.dataDir !== undefined) await checkDataFolder(patch.dataDir);
      return controller.updateSettings(patch);
    },
    [HOST_CHANNELS.openDataFolder]: async (args) => {
      expectNoArguments(args);
      await deps.openDataFolder();
    },
    [HOST_CHANNELS.openExternal]: async (args) => {
      await deps.openExternal(parseExternalUrl(singleArgument(args)));
    },
    [HOST_CHANNELS.notify]: async (args) => {
      deps.notify(parseNotification(singleArgument(args)));
    },
    [HOST_CHANNELS.setDesktopUser]: async (args) => {
      controller.setDesktopUser(parseDesktopUser(singleArgument(args)));
    },
  };

  for (const [channel, handler] of Object.entries(handlers)) {
    ipcMain.handle(channel, async (event, ...args: unknown[]) => {
      if (!deps.isTrustedSender(event)) throw new UntrustedSenderError();
      return handler(args);
    });
  }
  return () => {
    for (const channel of Object.keys(handlers)) ipcMain.removeHandler(channel);
  };
}
