// Finds Electron's executable the way node_modules/electron/index.js does, minus its side effect: requiring that
// module starts a download when the binary is missing, which hangs or throws on machines without network.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize, sep } from 'node:path';

/**
 * @typedef {{ found: true, path: string } | { found: false, reason: string }} ElectronBinary
 */

/**
 * Where the electron package's binary is, or why there is none.
 * @param {string} electronDir the electron package folder (node_modules/electron)
 * @param {NodeJS.ProcessEnv} [env] for ELECTRON_OVERRIDE_DIST_PATH, as electron honours it
 * @returns {ElectronBinary}
 */
export function findElectronBinary(electronDir, env = process.env) {
  if (!existsSync(join(electronDir, 'package.json'))) {
    return {
      found: false,
      reason: `the electron package is not installed in ${electronDir} (run npm install)`,
    };
  }
  const pathFile = join(electronDir, 'path.txt');
  let relative = null;
  if (existsSync(pathFile)) {
    relative = readFileSync(pathFile, 'utf8').trim();
    // path.txt names a file inside dist/; anything else is not something to execute.
    if (relative === '' || isAbsolute(relative) || normalize(relative).split(sep).includes('..')) {
      return {
        found: false,
        reason: `${pathFile} does not name a file inside dist/ (${JSON.stringify(relative)})`,
      };
    }
  }
  const override = env.ELECTRON_OVERRIDE_DIST_PATH;
  if (override) {
    const path = join(override, relative ?? 'electron');
    return isFile(path)
      ? { found: true, path }
      : { found: false, reason: `ELECTRON_OVERRIDE_DIST_PATH is set but ${path} does not exist` };
  }
  if (relative === null) {
    return {
      found: false,
      reason: `${pathFile} is missing: electron's postinstall download did not run or did not finish`,
    };
  }
  const path = join(electronDir, 'dist', relative);
  return isFile(path)
    ? { found: true, path }
    : { found: false, reason: `${path} is missing: electron's download did not finish` };
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
