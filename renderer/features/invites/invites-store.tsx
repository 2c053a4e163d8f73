import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from 'react';
import { ServerMessage, type InviteRequestDto } from '../../../server/protocol/socket.js';
import { alertPerson } from '../../shared/alerts.js';
import { describeError } from '../../shared/api-client.js';
import { useOpenSection } from '../../shared/navigation.js';
import { useSession } from '../../shared/session.js';
import { useSocketEvent, useSocketStatus } from '../../shared/socket-context.js';
import { useToasts } from '../../shared/toast.js';
import { useNow } from '../../shared/use-now.js';
import { effectiveState, fromLiveRequest, mergeRequests } from './invite-state.js';

export type SettableState = 'seen' | 'answered' | 'dismissed';

interface InvitesValue {
  /** Newest first, as the host last told us (states may be older than `effectiveState` says). */
  requests: InviteRequestDto[];
  loading: boolean;
  error: string | null;
  reload(): void;
  /** Sets a request's state on the host; the answer (and the event to other windows) updates the list. */
  update(requestId: string, state: SettableState): Promise<void>;
}

const InvitesContext = createContext<InvitesValue | null>(null);

const toastId = (requestId: string): string => `invite-${requestId}`;
const isDecided = (request: InviteRequestDto): boolean => request.state !== 'new' && request.state !== 'seen';

/**
 * Invite requests for the whole window: the history from the host, merged with what arrives live, a toast and a
 * native notification for each new one (whatever section is open), and updates from the user's other windows.
 */
export function InvitesProvider({ children }: { children: ReactNode }) {
  const { authedCall, user } = useSession();
  const { connection } = useSocketStatus();
  const toasts = useToasts();
  const openSection = useOpenSection();
  const [requests, setRequests] = useState<InviteRequestDto[]>([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);
  // The session's call changes identity on every render of the app; the latest one is enough here.
  const callRef = useRef(authedCall);
  useEffect(() => {
    callRef.current = authedCall;
  }, [authedCall]);

  // Again after every reconnect: requests sent while the socket was down are only in the history.
  useEffect(() => {
    let live = true;
    callRef
      .current<{ InviteRequests: InviteRequestDto[] }>('inviteRequests', {})
      .then(({ InviteRequests }) => {
        if (!live) return;
        setRequests((old) => mergeRequests(old, InviteRequests));
        setError(null);
      })
      .catch((failure: unknown) => {
        if (live) setError(`Could not load invite requests: ${describeError(failure)}`);
      })
      .finally(() => {
        if (live) setLoading(false);
      });
    return () => {
      live = false;
    };
  }, [connection, reloads]);

  const update = useCallback(
    async (requestId: string, state: SettableState): Promise<void> => {
      const { InviteRequest } = await callRef.current<{ InviteRequest: InviteRequestDto }>(
        'updateInviteRequest',
        {
          requestId,
          state,
        },
      );
      setRequests((old) => mergeRequests(old, [InviteRequest]));
      if (isDecided(InviteRequest)) toasts.dismiss(toastId(requestId));
    },
    [toasts],
  );

  useSocketEvent((event) => {
    if (event.message === ServerMessage.gotInviteRequest) {
      const request = fromLiveRequest(event.result, user.Id);
      setRequests((old) => mergeRequests(old, [request]));
      const who = request.fromUsername || 'A friend';
      const title = `${who} asks to join you`;
      toasts.show({
        id: toastId(request.requestId),
        tone: 'info',
        title,
        body: 'Invite request · see it under Invites',
        timeoutMs: 20_000,
        actions: [
          { label: 'View', onClick: () => openSection('invites') },
          {
            label: 'Dismiss',
            onClick: () => void update(request.requestId, 'dismissed').catch(() => undefined),
          },
        ],
      });
      alertPerson(title, `${who} sent you an invite request.`, request.requestId);
    } else if (
      event.message === ServerMessage.friendRequest &&
      event.result.targetUserId === user.Id &&
      event.result.fromUserId !== user.Id
    ) {
      // Pushed to every screen (the Friends screen updates its own lists): say so wherever the person is.
      const who = event.result.user.Username || 'Someone';
      toasts.show({
        id: `friend-${event.result.fromUserId}`,
        tone: 'info',
        title: `${who} sent you a friend request`,
        body: 'Accept or decline it under Friends',
        actions: [{ label: 'View', onClick: () => openSection('friends') }],
      });
      alertPerson(
        `${who} sent you a friend request`,
        'Accept or decline it under Friends.',
        `friend-${event.result.fromUserId}`,
      );
    } else if (
      event.message === ServerMessage.friendAccepted ||
      event.message === ServerMessage.friendDeclined ||
      event.message === ServerMessage.friendRemoved
    ) {
      // The friend request was answered or withdrawn (here or in another window): its toast has nothing left to
      // offer. The toast is keyed by the person who asked, whichever side acted.
      toasts.dismiss(`friend-${event.result.fromUserId}`);
      toasts.dismiss(`friend-${event.result.targetUserId}`);
    } else if (event.message === ServerMessage.inviteRequestUpdated) {
      const { request } = event.result;
      setRequests((old) => mergeRequests(old, [request]));
      // Decided in another window: the toast has nothing left to offer. (Merely seen there, it stays here.)
      if (isDecided(request)) toasts.dismiss(toastId(request.requestId));
    }
  });

  const value = useMemo<InvitesValue>(
    () => ({ requests, loading, error, reload: () => setReloads((n) => n + 1), update }),
    [requests, loading, error, update],
  );
  return <InvitesContext value={value}>{children}</InvitesContext>;
}

export function useInvites(): InvitesValue {
  const value = useContext(InvitesContext);
  if (!value) throw new Error('useInvites is only available inside InvitesProvider');
  return value;
}

/** The number of requests nobody has looked at yet, for the navigation. */
export function InvitesNavBadge() {
  const { requests } = useInvites();
  const now = useNow(30_000);
  const count = requests.filter((r) => effectiveState(r, now) === 'new').length;
  if (count === 0) return null;
  return (
    <span className="nav-count" data-testid="invites-unseen">
      {count}
      <span className="visually-hidden"> new</span>
    </span>
  );
}
