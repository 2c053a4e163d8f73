import { hostBridge } from '../../shared/host-bridge.js';

/**
 * A native notification in a browser, only when the person already allowed notifications for this host (we never
 * ask: a permission prompt on arrival would be nagging). The tag makes several open tabs show one notification per
 * request. In the desktop window nothing is shown from here: the host process itself has main notify the signed-in
 * desktop user, window open or not (main/desktop-notifications.ts).
 */
export function notifyNatively(title: string, body: string, tag: string): void {
  if (hostBridge()) return;
  if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
  try {
    new Notification(title, { body, tag });
  } catch {
    // Some browsers allow notifications only from a service worker; the toast is there anyway.
  }
}
