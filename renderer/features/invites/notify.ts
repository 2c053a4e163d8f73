import { hostBridge } from '../../shared/host-bridge.js';

/**
 * A native notification: through the desktop shell when there is one; in a browser only when the person already
 * allowed notifications for this host (we never ask: a permission prompt on arrival would be nagging). The tag
 * makes several open tabs show one notification per request.
 */
export function notifyNatively(title: string, body: string, tag: string): void {
  const bridge = hostBridge();
  if (bridge) {
    bridge.notify({ title, body }).catch(() => undefined);
    return;
  }
  if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
  try {
    new Notification(title, { body, tag });
  } catch {
    // Some browsers allow notifications only from a service worker; the toast is there anyway.
  }
}
