import { useEffect, useRef, useState } from 'react';
import type { InviteRequestDto } from '../../../server/protocol/socket.js';
import { askNotificationPermission, notificationState } from '../../shared/alerts.js';
import { describeError } from '../../shared/api-client.js';
import { SocketHealthIndicator } from '../../shared/socket-context.js';
import { formatDateTime, formatRelative, localTimeZone } from '../../shared/time.js';
import { Alert, Spinner } from '../../shared/ui.js';
import { useNow } from '../../shared/use-now.js';
import { effectiveState, isOpen, STATE_LABELS } from './invite-state.js';
import { useInvites, type SettableState } from './invites-store.js';
import { SentRequestsCard } from './sent-requests-card.js';

type Filter = 'open' | 'all';

/** Invite requests friends sent you: live, with who and when, and what you did about each. */
export function InvitesPage() {
  const { requests, loading, error, reload, update } = useInvites();
  const now = useNow(15_000);
  const [filter, setFilter] = useState<Filter>('open');
  const visible = usePageVisible();
  const headingRef = useRef<HTMLHeadingElement>(null);

  // "Seen" means a person had the list in front of them: mark new ones once the page is actually visible.
  const marked = useRef(new Set<string>());
  useEffect(() => {
    if (!visible) return;
    for (const request of requests) {
      if (effectiveState(request, now) !== 'new' || marked.current.has(request.requestId)) continue;
      marked.current.add(request.requestId);
      update(request.requestId, 'seen').catch(() => marked.current.delete(request.requestId));
    }
  }, [requests, visible, now, update]);

  const open = requests.filter((r) => isOpen(r, now));
  const shown = filter === 'open' ? open : requests;

  return (
    <div className="page">
      <header className="page-header with-aside">
        <div>
          <h1>Invite requests</h1>
          <p className="muted">
            Friends ask to join you here. New requests appear live, with a notification, while this window is
            open.
          </p>
        </div>
        <SocketHealthIndicator />
      </header>

      <NotificationOffer />

      <Alert tone="info" title="Answering needs an instance">
        <span id="answer-reason">
          An invite sends your friend into the instance you are in, so it is sent from the game while you are
          in one; the request here then turns answered by itself. This window cannot send one: to answer
          another way, mark the request answered.
        </span>
      </Alert>

      <section className="card" aria-labelledby="invite-list-title">
        <div className="card-heading spread">
          <h2 id="invite-list-title" className="card-title" ref={headingRef} tabIndex={-1}>
            {filter === 'open' ? 'Waiting for you' : 'All requests'}
          </h2>
          <div className="segmented compact" role="group" aria-label="Which requests">
            <button
              type="button"
              className="segment"
              aria-pressed={filter === 'open'}
              aria-current={filter === 'open' ? 'page' : undefined}
              onClick={() => setFilter('open')}
            >
              Open ({open.length})
            </button>
            <button
              type="button"
              className="segment"
              aria-pressed={filter === 'all'}
              aria-current={filter === 'all' ? 'page' : undefined}
              onClick={() => setFilter('all')}
            >
              All ({requests.length})
            </button>
          </div>
        </div>

        {error ? (
          <Alert tone="error">
            {error}{' '}
            <button type="button" className="link-button" onClick={reload}>
              Try again
            </button>
          </Alert>
        ) : null}

        {loading && requests.length === 0 ? (
          <Spinner label="Loading invite requests…" />
        ) : shown.length === 0 ? (
          <p className="empty-state">
            {filter === 'open'
              ? 'Nothing waiting. When a friend asks to join you, it shows up here.'
              : 'No invite requests yet. When a friend asks to join you, it shows up here.'}
          </p>
        ) : (
          <ul className="row-list" aria-label="Invite requests" data-testid="invite-list">
            {shown.map((request) => (
              <InviteRow
                key={request.requestId}
                request={request}
                now={now}
                update={update}
                onAnswered={() => headingRef.current?.focus()}
              />
            ))}
          </ul>
        )}
        <p className="muted small">Times are in your time zone ({localTimeZone()}).</p>
      </section>

      <SentRequestsCard />
    </div>
  );
}

function InviteRow({
  request,
  now,
  update,
  onAnswered,
}: {
  request: InviteRequestDto;
  now: number;
  update(requestId: string, state: SettableState): Promise<void>;
  /** The row's buttons are gone (and the row too, in the open list): where focus goes when it was on them. */
  onAnswered(): void;
}) {
  const rowRef = useRef<HTMLLIElement>(null);
  const [busy, setBusy] = useState<SettableState | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const state = effectiveState(request, now);
  const open = state === 'new' || state === 'seen';
  const who = request.fromUsername || 'Someone';

  function act(next: SettableState): void {
    const hadFocus = rowRef.current?.contains(document.activeElement) === true;
    setBusy(next);
    setProblem(null);
    update(request.requestId, next)
      .then(() => {
        // Focus was on a button that is gone now: keep it in the list rather than at the top of the page.
        const active = document.activeElement;
        const lost = active === null || active === document.body || rowRef.current?.contains(active) === true;
        if (hadFocus && lost) onAnswered();
      })
      .catch((failure: unknown) => setProblem(describeError(failure)))
      .finally(() => setBusy(null));
  }

  return (
    <li
      ref={rowRef}
      className="row"
      data-testid="invite-row"
      data-state={state}
      data-request-id={request.requestId}
    >
      <span className="avatar small" aria-hidden="true">
        {who.charAt(0).toUpperCase()}
      </span>
      <div className="row-main">
        <p className="row-title">
          <strong>{who}</strong> asked to join you
        </p>
        <p className="row-meta muted small">
          <time
            dateTime={new Date(request.sentAt * 1000).toISOString()}
            title={formatDateTime(request.sentAt)}
          >
            {formatRelative(request.sentAt, Math.max(now, request.sentAt * 1000))} ·{' '}
            {formatDateTime(request.sentAt)}
          </time>
          {open ? <> · expires {formatRelative(request.expiresAt, now)}</> : null}
        </p>
        {problem ? (
          <p className="row-error" role="alert">
            {problem}
          </p>
        ) : null}
      </div>
      <span className="state-pill" data-state={state} data-testid="invite-state">
        {STATE_LABELS[state]}
      </span>
      {open ? (
        <div className="row-actions">
          <button
            type="button"
            className="button small secondary"
            disabled
            aria-describedby="answer-reason"
            title="Send invites from the game, while you are in an instance"
          >
            Send invite
          </button>
          <button
            type="button"
            className="button small secondary"
            disabled={busy !== null}
            onClick={() => act('answered')}
          >
            {busy === 'answered' ? 'Saving…' : 'Mark answered'}
          </button>
          <button
            type="button"
            className="button small ghost"
            disabled={busy !== null}
            onClick={() => act('dismissed')}
            aria-label={`Dismiss the request from ${who}`}
          >
            {busy === 'dismissed' ? 'Dismissing…' : 'Dismiss'}
          </button>
        </div>
      ) : null}
    </li>
  );
}

function usePageVisible(): boolean {
  const [visible, setVisible] = useState(() => document.visibilityState === 'visible');
  useEffect(() => {
    const onChange = (): void => setVisible(document.visibilityState === 'visible');
    document.addEventListener('visibilitychange', onChange);
    return () => document.removeEventListener('visibilitychange', onChange);
  }, []);
  return visible;
}

/** In a browser that has not been asked yet: one click to be notified of requests while the tab is hidden. */
function NotificationOffer() {
  const [state, setState] = useState(notificationState);
  if (state !== 'default') return null;
  return (
    <div className="notification-offer" data-testid="notification-offer">
      <p className="muted small">
        Want to know of a request while this tab is in the background? The browser asks once.
      </p>
      <button
        type="button"
        className="button secondary small"
        onClick={() => void askNotificationPermission().then(setState)}
      >
        Turn on notifications
      </button>
    </div>
  );
}
