// The defaults a host starts on when nothing says otherwise, in shared/ (see atomic-file.ts): the host's
// configuration (server/config.ts) and the desktop shell's settings file (main/host-settings-file.ts) both use them.
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The data folder of a host given none: the platform's folder for application data. */
export function defaultDataDir(): string {
  if (process.platform === 'win32') {
    return join(process.env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'Hypernex Companion');
  }
  if (process.platform === 'darwin')
    return join(homedir(), 'Library', 'Application Support', 'Hypernex Companion');
  return join(process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'hypernex-companion');
}

export const DEFAULT_PORT = 5180;
