import { beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import type * as Contract from '../../server/protocol/host-bridge.js';
import type * as Preload from '../../main/preload/preload.js';
import { HOST_CHANNELS, HOST_NAVIGATE_EVENT, HOST_STATE_EVENT } from '../../main/ipc-channels.js';
import { fake } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()));

const METHODS = [
  'getState',
  'start',
  'stop',
  'updateSettings',
  'openDataFolder',
  'openExternal',
  'notify',
  'onStateChanged',
  'setDesktopUser',
  'onNavigate',
] as const;

const STATE: Contract.HostState = {
  running: false,
  url: null,
  lanUrls: [],
  settings: { host: '127.0.0.1', port: 5180, dataDir: '/data' },
  setupSecret: null,
  error: null,
  clients: { connections: 0, users: [] },
};

let bridge: Contract.HostBridge;

beforeAll(async () => {
  await import('../../main/preload/preload.js');
  bridge = fake.exposed.get('hypernexHost') as Contract.HostBridge;
});

describe('preload', () => {
  it('restates the HostBridge contract exactly (checked by tsc)', () => {
    expectTypeOf<Preload.HostBridge>().toEqualTypeOf<Contract.HostBridge>();
    expectTypeOf<Preload.HostState>().toEqualTypeOf<Contract.HostState>();
    expectTypeOf<Preload.HostSettings>().toEqualTypeOf<Contract.HostSettings>();
    expectTypeOf<Preload.NotificationRequest>().toEqualTypeOf<Contract.NotificationRequest>();
    expectTypeOf<(typeof METHODS)[number]>().toEqualTypeOf<keyof Contract.HostBridge>();
  });

  it('exposes one object, hypernexHost, with exactly the HostBridge methods', () => {
    expect([...fake.exposed.keys()]).toEqual(['hypernexHost']);
    expect(Object.keys(bridge).sort()).toEqual([...METHODS].sort());
    for (const method of METHODS) expect(typeof bridge[method], method).toBe('function');
  });

  it('never hands the page ipcRenderer or its methods', () => {
    for (const value of Object.values(bridge)) {
      expect(value).not.toBe(fake.ipcRenderer);
      expect(Object.values(fake.ipcRenderer)).not.toContain(value);
    }
  });

  it('sends each call on its own channel with exactly its argument', async () => {
    fake.ipcRenderer.invoke.mockClear();
    fake.ipcRenderer.invoke.mockResolvedValue(STATE);
    await expect(bridge.getState()).resolves.toEqual(STATE);
    await bridge.start();
    await bridge.stop();
    // Extra arguments from the page are dropped here, not forwarded to main.
    await (bridge.updateSettings as (...args: unknown[]) => Promise<unknown>)({ port: 0 }, 'extra');
    await bridge.openDataFolder();
    await bridge.openExternal('https://hypernex.dev/');
    await bridge.notify({ title: 't', body: 'b' });
    await bridge.setDesktopUser({ userId: 'user_1', tokenContent: 'tok' });
    await bridge.setDesktopUser(null);
    expect(fake.ipcRenderer.invoke.mock.calls).toEqual([
      [HOST_CHANNELS.getState],
      [HOST_CHANNELS.start],
      [HOST_CHANNELS.stop],
      [HOST_CHANNELS.updateSettings, { port: 0 }],
      [HOST_CHANNELS.openDataFolder],
      [HOST_CHANNELS.openExternal, 'https://hypernex.dev/'],
      [HOST_CHANNELS.notify, { title: 't', body: 'b' }],
      [HOST_CHANNELS.setDesktopUser, { userId: 'user_1', tokenContent: 'tok' }],
      [HOST_CHANNELS.setDesktopUser, null],
    ]);
  });

  it('delivers pushed states without the IPC event and unsubscribes', () => {
    fake.ipcRenderer.on.mockClear();
    const listener = vi.fn<(state: Contract.HostState) => void>();
    const unsubscribe = bridge.onStateChanged(listener);
    const [channel, forward] = fake.ipcRenderer.on.mock.calls[0] as [string, (...args: unknown[]) => void];
    expect(channel).toBe(HOST_STATE_EVENT);
    forward({ sender: 'ipc internals' }, STATE);
    expect(listener.mock.calls).toEqual([[STATE]]);
    unsubscribe();
    expect(fake.ipcRenderer.removeListener).toHaveBeenCalledWith(HOST_STATE_EVENT, forward);
  });

  it('delivers navigation requests without the IPC event and unsubscribes', () => {
    fake.ipcRenderer.on.mockClear();
    const listener = vi.fn<(section: string) => void>();
    const unsubscribe = bridge.onNavigate(listener);
    const [channel, forward] = fake.ipcRenderer.on.mock.calls[0] as [string, (...args: unknown[]) => void];
    expect(channel).toBe(HOST_NAVIGATE_EVENT);
    forward({ sender: 'ipc internals' }, 'invites');
    expect(listener.mock.calls).toEqual([['invites']]);
    unsubscribe();
    expect(fake.ipcRenderer.removeListener).toHaveBeenCalledWith(HOST_NAVIGATE_EVENT, forward);
  });

  it('refuses a listener that is not a function', () => {
    expect(() => bridge.onStateChanged('nope' as unknown as () => void)).toThrow(TypeError);
  });
});
