import { mkdir, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The argument a start at login passes, so the app starts with its window hidden. */
export const HIDDEN_ARG = '--hidden';

export interface LoginItemApp {
  setLoginItemSettings(settings: { openAtLogin: boolean; openAsHidden?: boolean; args?: string[] }): void;
  getLoginItemSettings(): { wasOpenedAtLogin?: boolean };
}

export interface LoginItemEnv {
  platform: NodeJS.Platform;
  /** The program a login start runs: the AppImage when there is one, else Electron's executable. */
  executable: string;
  /** Folder of XDG autostart entries (Linux); default $XDG_CONFIG_HOME/autostart or ~/.config/autostart. */
  autostartDir?: string;
}

export function linuxAutostartDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'autostart');
}

export const AUTOSTART_FILE_NAME = 'hypernex-companion.desktop';

/** An XDG autostart entry; quotes the executable as the Desktop Entry spec asks. */
export function autostartEntry(executable: string): string {
  const quoted = `"${executable.replace(/(["`$\\])/g, '\\$1')}"`;
  return [
    '[Desktop Entry]',
    'Type=Application',
    'Name=Hypernex Companion',
    `Exec=${quoted} ${HIDDEN_ARG}`,
    'X-GNOME-Autostart-enabled=true',
    'Terminal=false',
    '',
  ].join('\n');
}

/**
 * "Start with my computer": app.setLoginItemSettings on Windows and macOS; Electron has no login items on Linux,
 * so there it writes (or removes) an XDG autostart entry, which every mainstream desktop honours.
 */
export async function applyStartWithComputer(
  app: LoginItemApp,
  enabled: boolean,
  env: LoginItemEnv,
): Promise<void> {
  if (env.platform === 'win32' || env.platform === 'darwin') {
    app.setLoginItemSettings({
      openAtLogin: enabled,
      // macOS reads openAsHidden (and reports wasOpenedAtLogin); Windows passes the args.
      openAsHidden: enabled,
      args: enabled ? [HIDDEN_ARG] : [],
    });
    return;
  }
  const dir = env.autostartDir ?? linuxAutostartDir();
  const file = join(dir, AUTOSTART_FILE_NAME);
  if (!enabled) {
    await rm(file, { force: true });
    return;
  }
  await mkdir(dir, { recursive: true });
  await writeFile(file, autostartEntry(env.executable));
}

/** True when this start came from the login item (window stays hidden, the host serves). */
export function startedHidden(
  argv: readonly string[],
  app: LoginItemApp,
  platform: NodeJS.Platform,
): boolean {
  if (argv.includes(HIDDEN_ARG)) return true;
  return platform === 'darwin' && app.getLoginItemSettings().wasOpenedAtLogin === true;
}
