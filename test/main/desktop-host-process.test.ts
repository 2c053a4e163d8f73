// The desktop app as it runs by default: the host in a utility process. Electron's utilityProcess is played by a
// forked Node child running the built host entry (the same messages as Electron's port).
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDesktopApp, type DesktopApp } from '../../main/desktop-app.js';
import { HOST_SETTINGS_FILE_NAME } from '../../main/host-settings-file.js';
import { fake } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()));

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const ENTRY = join(root, 'dist', 'bundle', 'host-child.js');

let dir: string;
let desktop: DesktopApp | null = null;

beforeAll(() => {
  if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` first`);
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await desktop?.shutdown();
  await rm(dir, { recursive: true, force: true });
});

describe('desktop app with the host in a utility process', () => {
  it('serves from the child, restarts it after a crash, and stops it cleanly on quit', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hnx-desktop-child-'));
    await writeFile(
      join(dir, HOST_SETTINGS_FILE_NAME),
      JSON.stringify({ host: '127.0.0.1', port: 0, dataDir: join(dir, 'data') }),
    );
    // The host process inherits the environment; vitest's config silences logs, and this test reads them.
    vi.stubEnv('HYPERNEX_LOG_LEVEL', 'info');
    desktop = await startDesktopApp({
      userDataDir: dir,
      preloadPath: '/app/preload.js',
      serverConfig: { uiDir: null, passwordHash: { memoryCost: 1024, timeCost: 1 }, fsync: false },
      logger: pino({ level: 'silent' }),
      hostEntry: ENTRY,
      platform: 'linux',
      argv: [],
    });
    const app = desktop!;
    const state = app.controller.state();
    expect(state.running).toBe(true);
    expect(fake.utilityProcesses).toHaveLength(1);
    const child = fake.utilityProcesses[0]!;
    expect(child.pid).not.toBe(process.pid);
    expect(fake.windows.at(-1)?.loaded).toEqual([`${state.url}/`]);
    expect((await fetch(`${state.url}/api/v1/isInviteCodeRequired`)).ok).toBe(true);

    child.kill();
    await vi.waitFor(() => expect(fake.utilityProcesses).toHaveLength(2), { timeout: 10_000 });
    await vi.waitFor(() => expect(app.controller.state().running).toBe(true), { timeout: 10_000 });

    const second = fake.utilityProcesses[1]!;
    const exited = new Promise((resolve) => second.once('exit', resolve));
    await app.shutdown();
    // A clean stop: the child exits by itself with code 0.
    await expect(exited).resolves.toBe(0);
    const log = await readFile(join(dir, 'logs', 'host.log'), 'utf8');
    expect(log).toContain('"msg":"host started"');
  });
});
