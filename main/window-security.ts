import type { Session, WebContents } from 'electron';

/** `new URL(url).origin`, or null for anything unparsable or opaque (data:, about:blank...). */
export function originOf(url: string): string | null {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

export function isHttpUrl(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

export interface WebContentsGuardOptions {
  /** The one origin the app's pages may live on (the embedded server's), null while none is known. */
  appOrigin(): string | null;
  /** Where http(s) links that would leave the app go instead (the system browser). */
  openExternal(url: string): void;
}

/**
 * Keeps a webContents on the app's origin: no new windows, no navigation or redirect elsewhere, no <webview>.
 * Links out are handed to the system browser, where they cannot reach the preload.
 */
export function guardWebContents(contents: WebContents, options: WebContentsGuardOptions): void {
  const leaveApp = (url: string): boolean => {
    const origin = options.appOrigin();
    return origin === null || originOf(url) !== origin;
  };

  contents.setWindowOpenHandler(({ url }) => {
    if (isHttpUrl(url)) options.openExternal(url);
    return { action: 'deny' };
  });
  contents.on('will-navigate', (event) => {
    if (!leaveApp(event.url)) return;
    event.preventDefault();
    if (isHttpUrl(event.url)) options.openExternal(event.url);
  });
  // The main frame is will-navigate's (which also sends links out); this catches iframes.
  contents.on('will-frame-navigate', (event) => {
    if (!event.isMainFrame && leaveApp(event.url)) event.preventDefault();
  });
  contents.on('will-redirect', (event) => {
    if (leaveApp(event.url)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => {
    event.preventDefault();
  });
}

/**
 * Refuses every permission (camera, geolocation, notifications...): the UI needs none, and native notifications
 * go through the bridge. Writing to the clipboard from the app's own origin stays allowed for "copy address".
 */
export function denyPermissions(session: Session, appOrigin: () => string | null): void {
  const allowed = (permission: string, origin: string | null): boolean =>
    permission === 'clipboard-sanitized-write' && origin !== null && origin === appOrigin();
  session.setPermissionRequestHandler((_contents, permission, callback, details) => {
    callback(allowed(permission, originOf(details.requestingUrl)));
  });
  session.setPermissionCheckHandler((_contents, permission, requestingOrigin) =>
    allowed(permission, originOf(requestingOrigin)),
  );
}
