import type { Logger } from 'pino';

/** The part of electron-updater's autoUpdater we use (typed here so tests pass a fake). */
export interface AutoUpdaterLike {
  autoDownload: boolean;
  autoInstallOnAppQuit: boolean;
  checkForUpdates(): Promise<unknown>;
  downloadUpdate(): Promise<unknown>;
  on(event: 'update-available', listener: (info: { version: string }) => void): unknown;
  on(event: 'update-not-available', listener: () => void): unknown;
  on(event: 'update-downloaded', listener: (info: { version: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

export type UpdateSource = 'start' | 'tray';

/** Why no check runs now, or null when one may. */
export function updateBlocker(context: {
  packaged: boolean;
  env: NodeJS.ProcessEnv;
  uploadsInProgress: number;
}): string | null {
  if (!context.packaged) return 'updates are off in development';
  if (context.env.HYPERNEX_DISABLE_UPDATES === '1') return 'updates are off (HYPERNEX_DISABLE_UPDATES=1)';
  if (context.uploadsInProgress > 0) return 'an upload is running';
  return null;
}

export interface UpdatesOptions {
  packaged: boolean;
  env?: NodeJS.ProcessEnv;
  /** Loads electron-updater's autoUpdater; only called in packaged builds. */
  loadUpdater(): Promise<AutoUpdaterLike>;
  uploadsInProgress(): Promise<number>;
  /** Tells the user something (a native notification). */
  tell(title: string, body: string): void;
  log: Logger;
  /** How long to wait before trying again while uploads run (default 5 min). */
  retryMs?: number;
}

export interface Updates {
  /** Null when updates are off for good here (development, disabled). */
  readonly enabled: boolean;
  /** Checks now (downloading what it finds once no upload runs); says what happened. */
  check(source: UpdateSource): Promise<string>;
  dispose(): void;
}

/**
 * electron-updater wired to electron-builder's publish configuration (app-update.yml in the package). It never
 * checks or downloads while the host is receiving an upload: it waits and tries again. A downloaded update installs
 * when the app quits.
 */
export function createUpdates(options: UpdatesOptions): Updates {
  const env = options.env ?? process.env;
  const retryMs = options.retryMs ?? 5 * 60 * 1000;
  const off = updateBlocker({ packaged: options.packaged, env, uploadsInProgress: 0 });
  let updater: AutoUpdaterLike | null = null;
  let retry: NodeJS.Timeout | null = null;
  let announced = false;

  const later = (what: () => void): void => {
    if (retry) clearTimeout(retry);
    retry = setTimeout(() => {
      retry = null;
      what();
    }, retryMs);
    retry.unref();
  };

  const blocker = async (): Promise<string | null> =>
    updateBlocker({ packaged: options.packaged, env, uploadsInProgress: await options.uploadsInProgress() });

  const download = async (version: string): Promise<void> => {
    const why = await blocker();
    if (why) {
      options.log.info({ version, why }, 'update download postponed');
      later(() => {
        download(version).catch((error: unknown) =>
          options.log.warn({ err: error, version }, 'update download failed'),
        );
      });
      return;
    }
    await updater?.downloadUpdate();
  };

  const load = async (): Promise<AutoUpdaterLike> => {
    if (updater) return updater;
    const loaded = await options.loadUpdater();
    loaded.autoDownload = false;
    loaded.autoInstallOnAppQuit = true;
    loaded.on('update-available', (info) => {
      options.log.info({ version: info.version }, 'update available');
      void download(info.version).catch((error: unknown) =>
        options.log.warn({ err: error }, 'update download failed'),
      );
    });
    loaded.on('update-downloaded', (info) => {
      if (announced) return;
      announced = true;
      options.tell('Update ready', `Hypernex Companion ${info.version} will be installed when you quit.`);
    });
    loaded.on('error', (error) => options.log.warn({ err: error }, 'updater error'));
    updater = loaded;
    return loaded;
  };

  return {
    enabled: off === null,
    async check(source) {
      const why = await blocker();
      if (why) {
        // Development stays quiet; a running upload only delays the check.
        if (off === null) later(() => void this.check(source).catch(() => undefined));
        options.log.info({ source, why }, 'no update check now');
        return `No update check now: ${why}.`;
      }
      const active = await load();
      try {
        const result = (await active.checkForUpdates()) as { updateInfo?: { version?: string } } | null;
        const version = result?.updateInfo?.version;
        return version ? `Found version ${version}.` : 'No update found.';
      } catch (error) {
        options.log.warn({ err: error, source }, 'update check failed');
        return `The update check failed: ${(error as Error).message}`;
      }
    },
    dispose() {
      if (retry) clearTimeout(retry);
      retry = null;
    },
  };
}
