import { beforeEach, describe, expect, it, vi, type Mock } from 'vitest';
import type { HostState } from '../../server/protocol/host-bridge.js';
import type { HostController } from '../../main/host-controller.js';
import { registerHostIpc, UntrustedSenderError, type HostIpcDeps } from '../../main/host-ipc.js';
import { HOST_CHANNELS } from '../../main/ipc-channels.js';
import {
  IpcArgumentError,
  parseDataDir,
  parseExternalUrl,
  parseHost,
  parseNotification,
  parsePort,
  parseSettingsPatch,
} from '../../main/ipc-validation.js';
import { fake, ipcEvent } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()));

const ABSOLUTE_DIR = process.platform === 'win32' ? 'C:\\hnx\\data' : '/srv/hnx/data';

const STATE: HostState = {
  running: true,
  url: 'http://127.0.0.1:5180',
  lanUrls: [],
  settings: { host: '127.0.0.1', port: 5180, dataDir: ABSOLUTE_DIR },
  setupSecret: null,
  error: null,
  clients: { connections: 0, users: [] },
};

type StubController = { [K in keyof HostController]: Mock<HostController[K]> };

function stubController(): StubController {
  return {
    state: vi.fn(() => STATE),
    host: vi.fn(() => null),
    setDesktopUser: vi.fn(),
    desktopUserId: vi.fn(() => null),
    uploadsInProgress: vi.fn(async () => 0),
    lastFailure: vi.fn(() => null),
    start: vi.fn(async () => STATE),
    stop: vi.fn(async () => STATE),
    updateSettings: vi.fn(async () => STATE),
    close: vi.fn(async () => undefined),
  };
}

describe('IPC argument validation', () => {
  it('accepts ports 0..65535 and refuses anything else', () => {
    expect(parsePort(0)).toBe(0);
    expect(parsePort(65535)).toBe(65535);
    for (const bad of [-1, 65536, 80.5, Number.NaN, Infinity, '5180', null, undefined, {}]) {
      expect(() => parsePort(bad), String(bad)).toThrow(IpcArgumentError);
    }
  });

  it('accepts IP literals and host names and refuses other strings and types', () => {
    for (const good of ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost', 'my-pc.lan'])
      expect(parseHost(good)).toBe(good);
    for (const bad of [
      '',
      ' ',
      '127.0.0.1 ',
      'http://127.0.0.1',
      'a/b',
      '-bad',
      'x'.repeat(300),
      127001,
      null,
      ['::'],
    ]) {
      expect(() => parseHost(bad), String(bad)).toThrow(IpcArgumentError);
    }
  });

  it('accepts only an absolute data folder path', () => {
    expect(parseDataDir(ABSOLUTE_DIR)).toBe(ABSOLUTE_DIR);
    for (const bad of [
      'data',
      './data',
      '../data',
      '',
      `${ABSOLUTE_DIR}\0x`,
      42,
      null,
      { path: ABSOLUTE_DIR },
    ]) {
      expect(() => parseDataDir(bad), String(bad)).toThrow(IpcArgumentError);
    }
    expect(() => parseDataDir('relative/dir')).toThrow('dataDir must be an absolute path');
  });

  it('refuses settings that are not a plain object or carry unknown fields', () => {
    expect(parseSettingsPatch({ port: 0 })).toEqual({ port: 0 });
    expect(parseSettingsPatch({})).toEqual({});
    for (const bad of [
      null,
      'port=1',
      [1],
      5180,
      { port: 1, uiDir: '/tmp' },
      { __proto__: { port: 1 }, x: 1 },
    ]) {
      expect(() => parseSettingsPatch(bad), JSON.stringify(bad)).toThrow(IpcArgumentError);
    }
    expect(() => parseSettingsPatch(new (class Settings {})())).toThrow(IpcArgumentError);
    expect(() => parseSettingsPatch({ port: '80' })).toThrow('port must be a whole number from 0 to 65535');
  });

  it('opens only http and https URLs', () => {
    expect(parseExternalUrl('https://hypernex.dev/docs')).toBe('https://hypernex.dev/docs');
    expect(parseExternalUrl('http://192.168.1.20:5180')).toBe('http://192.168.1.20:5180/');
    for (const bad of [
      'file:///etc/passwd',
      'javascript:alert(1)',
      'smb://server/share',
      'ms-settings:',
      'data:text/html,hi',
      '/relative',
      'not a url',
      42,
      null,
    ]) {
      expect(() => parseExternalUrl(bad), String(bad)).toThrow(IpcArgumentError);
    }
  });

  it('refuses notifications without a title string or with extra fields', () => {
    expect(parseNotification({ title: 'Invite', body: 'Ann invites you' })).toEqual({
      title: 'Invite',
      body: 'Ann invites you',
    });
    for (const bad of [
      null,
      'hi',
      { title: '', body: 'x' },
      { title: 'x' },
      { title: 1, body: 'x' },
      { title: 'x', body: 'y', icon: '/etc/x.png' },
      { title: 'x'.repeat(1000), body: '' },
    ]) {
      expect(() => parseNotification(bad), JSON.stringify(bad)).toThrow(IpcArgumentError);
    }
  });
});

describe('host IPC handlers', () => {
  const trustedContents = { id: 1 };
  const trusted = ipcEvent(trustedContents, 'http://127.0.0.1:5180/');
  let controller: StubController;
  let deps: HostIpcDeps & {
    openDataFolder: Mock<HostIpcDeps['openDataFolder']>;
    openExternal: Mock<HostIpcDeps['openExternal']>;
    notify: Mock<HostIpcDeps['notify']>;
  };
  let dispose: () => void;

  beforeEach(() => {
    dispose?.();
    controller = stubController();
    deps = {
      controller,
      isTrustedSender: (event) => event === trusted,
      openDataFolder: vi.fn(async () => undefined),
      openExternal: vi.fn(async () => undefined),
      notify: vi.fn(),
    };
    dispose = registerHostIpc(deps);
  });

  it('registers one handler per HostBridge method and removes them all', () => {
    expect([...fake.handlers.keys()].sort()).toEqual(Object.values(HOST_CHANNELS).sort());
    dispose();
    expect(fake.handlers.size).toBe(0);
    dispose = registerHostIpc(deps);
  });

  it('answers a trusted sender', async () => {
    await expect(fake.invoke(HOST_CHANNELS.getState, trusted)).resolves.toEqual(STATE);
    await expect(fake.invoke(HOST_CHANNELS.updateSettings, trusted, { port: 0 })).resolves.toEqual(STATE);
    expect(controller.updateSettings).toHaveBeenCalledWith({ port: 0 });
    await fake.invoke(HOST_CHANNELS.openExternal, trusted, 'https://example.org/');
    expect(deps.openExternal).toHaveBeenCalledWith('https://example.org/');
    await fake.invoke(HOST_CHANNELS.notify, trusted, { title: 'Invite', body: 'from Ann' });
    expect(deps.notify).toHaveBeenCalledWith({ title: 'Invite', body: 'from Ann' });
  });

  it('refuses every call from a sender that is not the app page, before looking at arguments', async () => {
    const foreign = ipcEvent(trustedContents, 'https://evil.example/');
    for (const channel of Object.values(HOST_CHANNELS)) {
      await expect(fake.invoke(channel, foreign, { port: 1 })).rejects.toBeInstanceOf(UntrustedSenderError);
    }
    for (const fn of [controller.start, controller.stop, controller.updateSettings, controller.state]) {
      expect(fn).not.toHaveBeenCalled();
    }
    expect(deps.openExternal).not.toHaveBeenCalled();
    expect(deps.openDataFolder).not.toHaveBeenCalled();
  });

  it('refuses bad settings without touching the host', async () => {
    const bad: unknown[] = [
      [{ port: 70000 }],
      [{ port: -1 }],
      [{ port: '5180' }],
      [{ host: 42 }],
      [{ host: 'bad host' }],
      [{ dataDir: 'relative/data' }],
      [{ dataDir: 7 }],
      [{ uiDir: '/tmp' }],
      ['port=1'],
      [],
      [{ port: 1 }, { port: 2 }],
    ];
    for (const args of bad as unknown[][]) {
      await expect(
        fake.invoke(HOST_CHANNELS.updateSettings, trusted, ...args),
        JSON.stringify(args),
      ).rejects.toBeInstanceOf(IpcArgumentError);
    }
    expect(controller.updateSettings).not.toHaveBeenCalled();
  });

  it('refuses non-http(s) links and bad notifications', async () => {
    for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'smb://nas/share', 42]) {
      await expect(fake.invoke(HOST_CHANNELS.openExternal, trusted, url)).rejects.toBeInstanceOf(
        IpcArgumentError,
      );
    }
    expect(deps.openExternal).not.toHaveBeenCalled();
    await expect(fake.invoke(HOST_CHANNELS.notify, trusted, { title: 5 })).rejects.toBeInstanceOf(
      IpcArgumentError,
    );
    expect(deps.notify).not.toHaveBeenCalled();
  });

  it('refuses arguments to methods that take none', async () => {
    for (const channel of [
      HOST_CHANNELS.getState,
      HOST_CHANNELS.start,
      HOST_CHANNELS.stop,
      HOST_CHANNELS.openDataFolder,
    ]) {
      await expect(fake.invoke(channel, trusted, 'extra')).rejects.toBeInstanceOf(IpcArgumentError);
    }
    expect(controller.start).not.toHaveBeenCalled();
    expect(controller.stop).not.toHaveBeenCalled();
    expect(deps.openDataFolder).not.toHaveBeenCalled();
  });
});
