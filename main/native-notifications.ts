// The desktop's own notifications (Electron's Notification): a plain one (the page's or the shell's), or one for a
// host notice with its buttons (desktop-notifications.ts decides what it says and what its buttons do).
import { Notification } from 'electron';
import type { DesktopPreferences } from './desktop-preferences.js';
import {
  noticeOutcome,
  noticeView,
  supportsNotificationActions,
  type NoticeSection,
} from './desktop-notifications.js';
import type { HostNotice } from './host-messages.js';

export interface NativeNotificationsDeps {
  platform: NodeJS.Platform;
  preferences(): DesktopPreferences;
  /** Brings the window up (a plain notification was clicked). */
  focusWindow(): void;
  /** Brings the window up on a section of the UI (a notice was clicked). */
  openSection(section: NoticeSection): void;
  /** The notice's "Dismiss" button on an invite request. */
  dismissInvite(userId: string, requestId: string): void;
}

export interface NativeNotifications {
  /** A plain notification; a click brings the window up. */
  tell(title: string, body: string): void;
  /** The notification for a host notice, unless the user turned that kind off. */
  showNotice(notice: HostNotice): void;
}

export function createNativeNotifications(deps: NativeNotificationsDeps): NativeNotifications {
  // Held until they are gone: a notification only referenced by the OS can be collected before its click.
  const shown = new Set<Notification>();
  const hold = (notification: Notification): (() => void) => {
    shown.add(notification);
    const forget = (): void => {
      shown.delete(notification);
    };
    notification.on('close', forget);
    notification.on('failed', forget);
    return forget;
  };

  return {
    tell(title, body) {
      if (!Notification.isSupported()) return;
      const notification = new Notification({ title, body });
      const forget = hold(notification);
      notification.on('click', () => {
        forget();
        deps.focusWindow();
      });
      notification.show();
    },

    showNotice(notice) {
      const view = noticeView(notice, deps.preferences());
      if (!view || !Notification.isSupported()) return;
      const withActions = supportsNotificationActions(deps.platform);
      const notification = new Notification({
        title: view.title,
        body: view.body,
        ...(withActions && { actions: view.actions.map((text) => ({ type: 'button' as const, text })) }),
      });
      const forget = hold(notification);
      const act = (actionIndex: number | null): void => {
        forget();
        const outcome = noticeOutcome(notice, view, actionIndex);
        if (outcome.do === 'open') deps.openSection(outcome.section);
        else if (outcome.do === 'dismiss-invite') deps.dismissInvite(outcome.userId, outcome.requestId);
      };
      notification.on('click', () => act(null));
      notification.on('action', (details) => act(details.actionIndex));
      notification.show();
    },
  };
}
