import { useCallback, useEffect, useRef, useState } from 'react';
import type { SentInviteRequestDto } from '../../../server/protocol/socket.js';
import { ServerMessage } from '../../../server/protocol/socket.js';
import { answeredInviteText } from '../../shared/invite-words.js';
import { describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import { useSocketEvent, useSocketStatus } from '../../shared/socket-context.js';
import { formatDateTime, formatRelative } from '../../shared/time.js';
import { Alert } from '../../shared/ui.js';
import { useNow } from '../../shared/use-now.js';
import { effectiveState, STATE_LABELS } from './invite-state.js';

/** The invite requests you sent, with what became of each: updated live as the friend sees or answers them. */
export function SentRequestsCard() {
  const { authedCall } = useSession();
  const { connection } = useSocketStatus();
  const now = useNow(15_000);
  const [sent, setSent] = useState<SentInviteRequestDto[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  // The session's functions change identity on every app render; the latest one is what matters.
  const callRef = useRef(authedCall);
  useEffect(() => {
    callRef.current = authedCall;
  }, [authedCall]);

  const load = useCallback(async (): Promise<void> => {
    try {
      const { InviteRequests } = await callRef.current<{ InviteRequests: SentInviteRequestDto[] }>(
        'sentInviteRequests',
      );
      setSent(InviteRequests);
      setError(null);
    } catch (failure) {
      setError(`Could not load the requests you sent: ${describeError(failure)}`);
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load, connection]);

  useSocketEvent((event) => {
    if (event.message === ServerMessage.sentInviteRequest) void load();
    if (event.message !== ServerMessage.sentInviteRequestUpdated) return;
    const next = event.result.request;
    setSent((old) => {
      if (!old) return old;
      const known = old.some((r) => r.requestId === next.requestId);
      return known ? old.map((r) => (r.requestId === next.requestId ? next : r)) : [next, ...old];
    });
  });

  return (
    <section className="card" aria-labelledby="sent-invites-title">
      <h2 id="sent-invites-title" className="card-title">
        Requests you sent
      </h2>
      {error ? <Alert tone="error">{error}</Alert> : null}
      {sent === null ? null : sent.length === 0 ? (
        <p className="empty-state">
          You have not asked anyone for an invite yet. Ask from the Friends screen.
        </p>
      ) : (
        <ul className="row-list" aria-label="Invite requests you sent" data-testid="sent-invite-list">
          {sent.map((request) => {
            const state = effectiveState(request, now);
            const who = request.toUsername || 'Someone';
            return (
              <li key={request.requestId} className="row" data-testid="sent-invite-row" data-state={state}>
                <span className="avatar small" aria-hidden="true">
                  {who.charAt(0).toUpperCase()}
                </span>
                <div className="row-main">
                  <p className="row-title">
                    You asked <strong>{who}</strong> for an invite
                  </p>
                  <p className="row-meta muted small">
                    <time dateTime={new Date(request.sentAt * 1000).toISOString()}>
                      {formatRelative(request.sentAt, Math.max(now, request.sentAt * 1000))} ·{' '}
                      {formatDateTime(request.sentAt)}
                    </time>
                  </p>
                  {state === 'answered' ? (
                    <p className="row-meta small" data-testid="sent-invite-next">
                      {answeredInviteText(who)}
                    </p>
                  ) : null}
                </div>
                <span className="state-pill" data-state={state} data-testid="sent-invite-state">
                  {STATE_LABELS[state]}
                </span>
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}
