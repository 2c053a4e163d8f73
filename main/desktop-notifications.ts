import type { DesktopPreferences } from './desktop-preferences.js';
import type { HostNotice } from './host-messages.js';

/** Screens of the UI a notification can open (renderer/shared/navigation.ts SectionName). */
export type NoticeSection = 'invites' | 'friends';

export interface NoticeView {
  title: string;
  body: string;
  section: NoticeSection;
  /** Button labels, in order; index 0 opens, "Dismiss" dismisses. */
  actions: ('Open' | 'Dismiss')[];
}

/** What a notice looks like as a native notification, or null when the user turned that kind off. */
export function noticeView(notice: HostNotice, preferences: DesktopPreferences): NoticeView | null {
  const who = notice.fromUsername || 'Someone';
  if (notice.kind === 'invite-request') {
    if (!preferences.notifyInviteRequests) return null;
    return {
      title: `${who} asks to join you`,
      body: `${who} sent you an invite request.`,
      section: 'invites',
      actions: ['Open', 'Dismiss'],
    };
  }
  if (!preferences.notifyFriendRequests) return null;
  return {
    title: `${who} wants to be friends`,
    body: `${who} sent you a friend request.`,
    section: 'friends',
    actions: ['Open'],
  };
}

/** What a click on the notification or one of its buttons does. */
export type NoticeOutcome =
  | { do: 'open'; section: NoticeSection }
  | { do: 'dismiss-invite'; userId: string; requestId: string }
  | { do: 'nothing' };

/** `actionIndex` null for a click on the notification itself. */
export function noticeOutcome(
  notice: HostNotice,
  view: NoticeView,
  actionIndex: number | null,
): NoticeOutcome {
  const action = actionIndex === null ? 'Open' : view.actions[actionIndex];
  if (action === 'Open') return { do: 'open', section: view.section };
  if (action === 'Dismiss' && notice.kind === 'invite-request') {
    return { do: 'dismiss-invite', userId: notice.userId, requestId: notice.requestId };
  }
  return { do: 'nothing' };
}

/** Native buttons exist on macOS and Windows; on Linux a click is the only action. */
export function supportsNotificationActions(platform: NodeJS.Platform): boolean {
  return platform === 'darwin' || platform === 'win32';
}
