import type { Session, WebContents } from 'electron';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createMainWindow, mainWindowOptions } from '../../main/main-window.js';
import { denyPermissions, guardWebContents, originOf } from '../../main/window-security.js';
import { fake, FakeWebContents } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js').then((m) => m.fakeElectronModule()));

const APP = 'http://127.0.0.1:5180';

function guarded(appOrigin: string | null = APP) {
  const contents = new FakeWebContents();
  const openExternal = vi.fn<(url: string) => void>();
  guardWebContents(contents as unknown as WebContents, { appOrigin: () => appOrigin, openExternal });
  return { contents, openExternal };
}

describe('window lockdown', () => {
  beforeEach(() => {
    fake.windows.length = 0;
  });

  it('creates the window isolated, sandboxed, without Node and with web security', () => {
    const window = createMainWindow('/app/dist/main/preload/preload.js') as unknown as {
      options: Record<string, unknown>;
    };
    const prefs = window.options.webPreferences as Record<string, unknown>;
    expect(prefs).toMatchObject({
      preload: '/app/dist/main/preload/preload.js',
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
    });
    expect(fake.windows).toHaveLength(1);
    expect(mainWindowOptions('/p').webPreferences?.sandbox).toBe(true);
  });

  it('prevents navigation to a foreign origin and hands http links to the system browser', () => {
    const { contents, openExternal } = guarded();
    expect(contents.navigate('will-navigate', 'https://evil.example/phish')).toBe(true);
    expect(openExternal).toHaveBeenCalledWith('https://evil.example/phish');
    // Same host, other port: another origin, another program.
    expect(contents.navigate('will-navigate', 'http://127.0.0.1:8080/')).toBe(true);
  });

  it('prevents navigation to local schemes without opening them anywhere', () => {
    const { contents, openExternal } = guarded();
    for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'data:text/html,<h1>x', 'chrome://gpu']) {
      expect(contents.navigate('will-navigate', url), url).toBe(true);
    }
    expect(openExternal).not.toHaveBeenCalled();
  });

  it('lets the page navigate within the app origin', () => {
    const { contents, openExternal } = guarded();
    expect(contents.navigate('will-navigate', `${APP}/uploads`)).toBe(false);
    expect(contents.navigate('will-frame-navigate', `${APP}/x`, false)).toBe(false);
    expect(openExternal).not.toHaveBeenCalled();
  });

  it('prevents every navigation while no app origin is known', () => {
    const { contents } = guarded(null);
    expect(contents.navigate('will-navigate', `${APP}/`)).toBe(true);
  });

  it('prevents foreign redirects and iframe navigations', () => {
    const { contents } = guarded();
    expect(contents.navigate('will-redirect', 'https://evil.example/')).toBe(true);
    expect(contents.navigate('will-frame-navigate', 'https://evil.example/', false)).toBe(true);
  });

  it('denies window.open, sending only http(s) to the system browser', () => {
    const { contents, openExternal } = guarded();
    expect(contents.open('https://hypernex.dev/')).toEqual({ action: 'deny' });
    expect(contents.open(`${APP}/other`)).toEqual({ action: 'deny' });
    expect(contents.open('file:///C:/Windows/System32/calc.exe')).toEqual({ action: 'deny' });
    expect(openExternal.mock.calls).toEqual([['https://hypernex.dev/'], [`${APP}/other`]]);
  });

  it('refuses to attach a webview', () => {
    const { contents } = guarded();
    const event = { defaultPrevented: false, preventDefault: vi.fn() };
    contents.emit('will-attach-webview', event);
    expect(event.preventDefault).toHaveBeenCalled();
  });

  it('denies permission requests and checks, except clipboard writes from the app itself', () => {
    const session = {
      setPermissionRequestHandler: vi.fn(),
      setPermissionCheckHandler: vi.fn(),
    };
    denyPermissions(session as unknown as Session, () => APP);
    const [request] = session.setPermissionRequestHandler.mock.calls[0] as [
      (contents: unknown, permission: string, callback: (granted: boolean) => void, details: unknown) => void,
    ];
    const [check] = session.setPermissionCheckHandler.mock.calls[0] as [
      (contents: unknown, permission: string, origin: string, details: unknown) => boolean,
    ];
    const answer = (permission: string, url: string): boolean => {
      let granted: boolean | null = null;
      request(null, permission, (value) => (granted = value), { requestingUrl: url });
      if (granted === null) throw new Error('the request handler did not answer');
      return granted;
    };
    for (const permission of [
      'media',
      'geolocation',
      'notifications',
      'openExternal',
      'clipboard-read',
      'hid',
    ]) {
      expect(answer(permission, `${APP}/`), permission).toBe(false);
      expect(check(null, permission, APP, {}), permission).toBe(false);
    }
    expect(answer('clipboard-sanitized-write', `${APP}/`)).toBe(true);
    expect(answer('clipboard-sanitized-write', 'https://evil.example/')).toBe(false);
    expect(check(null, 'clipboard-sanitized-write', 'https://evil.example', {})).toBe(false);
  });

  it('treats opaque and unparsable URLs as having no origin', () => {
    expect(originOf('http://127.0.0.1:5180/a?b#c')).toBe(APP);
    expect(originOf('about:blank')).toBeNull();
    expect(originOf('data:text/html,x')).toBeNull();
    expect(originOf('nonsense')).toBeNull();
  });
});
