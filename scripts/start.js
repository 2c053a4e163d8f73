// `npm start`: opens the desktop app when Electron's binary is installed, otherwise serves the same UI headless
// (`hypernex-companion serve`) so a machine without the binary or without a display still gets a working host.
// Extra arguments go to `serve` (e.g. `npm start -- --port 0 --data-dir ./.data`).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findElectronBinary } from './electron-binary.js';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const electronDir = join(root, 'node_modules', 'electron');
const DOWNLOAD_TIMEOUT_MS = 60_000;
const args = process.argv.slice(2);

function say(line) {
  process.stderr.write(`${line}\n`);
}

function requireBuilt(file) {
  if (existsSync(join(root, file))) return true;
  say(`${file} is missing: run \`npm run build\` first.`);
  return false;
}

/** One bounded attempt at electron's own download; returns why it failed, or null. */
function tryDownloadElectron() {
  if (process.env.ELECTRON_SKIP_BINARY_DOWNLOAD) return 'ELECTRON_SKIP_BINARY_DOWNLOAD is set';
  say(`Electron's binary is missing; trying to download it once (up to ${DOWNLOAD_TIMEOUT_MS / 1000} s)...`);
  const result = spawnSync(process.execPath, [join(electronDir, 'install.js')], {
    cwd: electronDir,
    encoding: 'utf8',
    timeout: DOWNLOAD_TIMEOUT_MS,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (result.error?.code === 'ETIMEDOUT')
    return `the download did not finish within ${DOWNLOAD_TIMEOUT_MS / 1000} s`;
  if (result.error) return `the download could not run: ${result.error.message}`;
  if (result.status !== 0) {
    // install.js prints a whole stack; its first line says what went wrong.
    const first = `${result.stderr}${result.stdout}`.split('\n').find((line) => line.trim() !== '');
    return `the download failed${first ? `: ${first.trim()}` : ` (exit code ${result.status})`}`;
  }
  return null;
}

/** Runs a child with our stdio, hands it Ctrl+C and termination, and exits as it exits. */
function run(command, commandArgs, env = process.env) {
  // On POSIX the child gets its own process group, so a terminal's Ctrl+C reaches it once, through us: a second
  // copy straight from the terminal would cut its graceful shutdown short.
  const detached = process.platform !== 'win32';
  const child = spawn(command, commandArgs, { cwd: root, stdio: 'inherit', env, detached });
  const forward = (signal) => () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward(signal));
  child.on('error', (error) => {
    say(`cannot start ${command}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    // A child ended by a signal we forwarded has done what was asked: a clean stop.
    if (signal === 'SIGINT' || signal === 'SIGTERM' || signal === 'SIGHUP') process.exit(0);
    process.exit(code ?? 1);
  });
}

function serveHeadless(why) {
  say(`${why}; serving the same UI headless instead (open the printed address in a browser).`);
  if (!requireBuilt(join('dist', 'server', 'cli.js'))) process.exit(1);
  if (!existsSync(join(root, 'dist', 'renderer', 'index.html'))) {
    say('dist/renderer is missing: the API runs, but the web UI needs `npm run build`.');
  }
  run(process.execPath, [join(root, 'bin', 'hypernex-companion.js'), 'serve', ...args]);
}

function main() {
  if (process.env.HYPERNEX_HEADLESS === '1') {
    serveHeadless('HYPERNEX_HEADLESS=1 asks for no window');
    return;
  }
  let binary = findElectronBinary(electronDir);
  if (!binary.found && existsSync(join(electronDir, 'install.js'))) {
    const failure = tryDownloadElectron();
    binary = findElectronBinary(electronDir);
    if (!binary.found && failure) binary = { found: false, reason: `${binary.reason}; ${failure}` };
  }
  if (!binary.found) {
    serveHeadless(`Electron's binary is not installed (${binary.reason})`);
    return;
  }
  if (
    !requireBuilt(join('dist', 'main', 'main.js')) ||
    !requireBuilt(join('dist', 'main', 'preload', 'preload.js'))
  ) {
    process.exit(1);
  }
  // ELECTRON_RUN_AS_NODE inherited from a parent tool would turn the app into a plain Node process.
  const { ELECTRON_RUN_AS_NODE: _ignored, ...env } = process.env;
  run(binary.path, ['.', ...args], env);
}

main();
