import { useState } from 'react';
import { usernameProblem } from '../../../server/protocol/schemas.js';
import {
  ServerMessage,
  type InviteRefusal,
  type InviteRequestState,
} from '../../../server/protocol/socket.js';
import { ConfirmDialog } from '../../shared/confirm-dialog.js';
import { useForm } from '../../shared/form.js';
import { answeredInviteText } from '../../shared/invite-words.js';
import {
  SocketHealthIndicator,
  useSocketClient,
  useSocketEvent,
  useSocketStatus,
} from '../../shared/socket-context.js';
import { Alert, FormStatus, Spinner, SubmitButton, TextField } from '../../shared/ui.js';
import { useNow } from '../../shared/use-now.js';
import {
  formatWait,
  isOnline,
  refusalText,
  requestOutcomeText,
  statusName,
  type Person,
} from './friends-model.js';
import { useFriends, type FriendsValue, type SocialAction } from './friends-store.js';

/** Your friends with live presence, friend requests both ways, blocks, and asking a friend for an invite. */
export function FriendsPage() {
  const friends = useFriends();
  const [notice, setNotice] = useState<{ tone: 'success' | 'error'; text: string } | null>(null);
  const social: Social = {
    ...friends,
    async act(action, person) {
      setNotice(null);
      const { ok, text } = await friends.act(action, person);
      setNotice({ tone: ok ? 'success' : 'error', text });
      return ok;
    },
  };
  const [confirm, setConfirm] = useState<{ action: 'removeFriend' | 'blockUser'; person: Person } | null>(
    null,
  );
  const [confirming, setConfirming] = useState(false);

  async function confirmed(): Promise<void> {
    if (!confirm) return;
    setConfirming(true);
    await social.act(confirm.action, confirm.person);
    setConfirming(false);
    setConfirm(null);
  }

  return (
    <div className="page">
      <header className="page-header with-aside">
        <div>
          <h1>Friends</h1>
          <p className="muted">Who is around, friend requests, and asking a friend to invite you.</p>
        </div>
        <div className="header-tools">
          <SocketHealthIndicator />
          <button
            type="button"
            className="button small ghost"
            onClick={social.refresh}
            disabled={social.refreshing}
          >
            {social.refreshing ? 'Refreshing…' : 'Refresh'}
          </button>
        </div>
      </header>

      {social.error ? <Alert tone="error">{social.error}</Alert> : null}
      {notice ? (
        <Alert tone={notice.tone}>
          <span data-testid="friends-notice">{notice.text}</span>
        </Alert>
      ) : null}

      {social.lists === null ? (
        <Spinner label="Loading your friends…" />
      ) : (
        <>
          <FriendList social={social} onAsk={(action, person) => setConfirm({ action, person })} />
          <RequestsCard social={social} onBlock={(person) => setConfirm({ action: 'blockUser', person })} />
          <AddFriendCard social={social} />
          <BlockedCard social={social} />
        </>
      )}

      {confirm ? (
        <ConfirmDialog
          title={
            confirm.action === 'removeFriend'
              ? `Remove ${confirm.person.username}?`
              : `Block ${confirm.person.username}?`
          }
          confirmLabel={confirm.action === 'removeFriend' ? 'Remove friend' : 'Block'}
          pendingLabel={confirm.action === 'removeFriend' ? 'Removing…' : 'Blocking…'}
          pending={confirming}
          onCancel={() => setConfirm(null)}
          onConfirm={() => void confirmed()}
        >
          <p className="form-intro">
            {confirm.action === 'removeFriend'
              ? `${confirm.person.username} will no longer be your friend, on both sides. They cannot ask you for invites until you are friends again.`
              : `${confirm.person.username} will be removed from your friends and requests, and cannot send you friend or invite requests until you unblock them.`}
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

/** The friends store, with actions that report on this screen. */
type Social = Omit<FriendsValue, 'act'> & { act(action: SocialAction, person: Person): Promise<boolean> };

function FriendList({
  social,
  onAsk,
}: {
  social: Social;
  onAsk(action: 'removeFriend' | 'blockUser', person: Person): void;
}) {
  const online = social.friends.filter((f) => isOnline(f.status)).length;
  return (
    <section className="card" aria-labelledby="friends-title">
      <div className="card-heading">
        <h2 id="friends-title" className="card-title">
          Friends
        </h2>
        <span className="pill">
          {online} of {social.friends.length} online
        </span>
      </div>
      {social.friends.length === 0 ? (
        <p className="empty-state">No friends yet. Add someone by their username below.</p>
      ) : (
        <ul className="row-list" aria-label="Friends">
          {social.friends.map((friend) => (
            <FriendRow key={friend.id} friend={friend} social={social} onAsk={onAsk} />
          ))}
        </ul>
      )}
    </section>
  );
}

type InviteAsk =
  | { kind: 'sending' }
  | { kind: 'sent'; requestId: string; state: InviteRequestState }
  | { kind: 'refused'; reason: InviteRefusal; at: number; until: number | null }
  | { kind: 'unknown'; text: string };

function FriendRow({
  friend,
  social,
  onAsk,
}: {
  friend: Person;
  social: Social;
  onAsk(action: 'removeFriend' | 'blockUser', person: Person): void;
}) {
  const client = useSocketClient();
  const { health } = useSocketStatus();
  const [ask, setAsk] = useState<InviteAsk | null>(null);
  const waiting = ask?.kind === 'refused' && ask.until !== null;
  const now = useNow(waiting ? 1000 : 60_000);
  // `now` may lag by up to a tick; the moment of the answer bounds it, so the wait never reads longer than said.
  const remaining =
    ask?.kind === 'refused' && ask.until !== null ? (ask.until - Math.max(now, ask.at)) / 1000 : 0;
  const coolingDown = remaining > 0;
  const online = isOnline(friend.status);
  // The target's answer (seen, answered, dismissed, expired) comes back over the socket.
  useSocketEvent((event) => {
    if (event.message !== ServerMessage.sentInviteRequestUpdated) return;
    const { requestId, state } = event.result.request;
    setAsk((old) => (old?.kind === 'sent' && old.requestId === requestId ? { ...old, state } : old));
  });

  async function requestInvite(): Promise<void> {
    setAsk({ kind: 'sending' });
    const outcome = await client.requestInvite(friend.id);
    if (outcome.kind === 'sent') setAsk({ kind: 'sent', requestId: outcome.requestId, state: 'new' });
    else if (outcome.kind === 'refused') {
      const at = Date.now();
      setAsk({
        kind: 'refused',
        reason: outcome.reason,
        at,
        until: outcome.retryAfter !== undefined ? at + outcome.retryAfter * 1000 : null,
      });
    } else setAsk({ kind: 'unknown', text: `Not sure it was sent: ${outcome.problem}` });
  }

  const disabledReason =
    health !== 'connected'
      ? 'Not connected to the host'
      : !online
        ? `${friend.username} is offline`
        : coolingDown
          ? `You can ask again in ${formatWait(remaining)}`
          : null;

  return (
    <li className="row" data-testid="friend-row" data-username={friend.username}>
      <span className="avatar small" aria-hidden="true">
        {friend.username.charAt(0).toUpperCase()}
        <span className="status-dot" data-status={friend.status} />
      </span>
      <div className="row-main">
        <p className="row-title">
          <strong>{friend.username}</strong>
        </p>
        <p className="row-meta muted small" data-testid="friend-status">
          {statusName(friend.status)}
          {friend.statusText ? ` · ${friend.statusText}` : ''}
        </p>
        {ask && ask.kind !== 'sending' ? (
          <p
            className={ask.kind === 'sent' ? 'row-result is-ok' : 'row-result is-error'}
            role="status"
            data-testid="invite-result"
          >
            {ask.kind === 'sent'
              ? sentText(ask.state, friend.username)
              : ask.kind === 'unknown'
                ? ask.text
                : ask.until !== null && !coolingDown
                  ? `You can ask ${friend.username} again now.`
                  : refusalText(ask.reason, friend.username, ask.until !== null ? remaining : undefined)}
          </p>
        ) : null}
      </div>
      <div className="row-actions">
        <button
          type="button"
          className="button small primary"
          disabled={disabledReason !== null || ask?.kind === 'sending'}
          title={disabledReason ?? undefined}
          onClick={() => void requestInvite()}
        >
          {ask?.kind === 'sending' ? 'Asking…' : 'Request invite'}
        </button>
        <button
          type="button"
          className="button small ghost"
          disabled={social.busy !== null}
          onClick={() => onAsk('removeFriend', friend)}
          aria-label={`Remove ${friend.username}`}
        >
          Remove
        </button>
        <button
          type="button"
          className="button small ghost"
          disabled={social.busy !== null}
          onClick={() => onAsk('blockUser', friend)}
          aria-label={`Block ${friend.username}`}
        >
          Block
        </button>
      </div>
    </li>
  );
}

/** What became of an invite request you sent, in words. */
export function sentText(state: InviteRequestState, name: string): string {
  switch (state) {
    case 'new':
      return `Invite request sent. It is on ${name}'s screen, not opened yet.`;
    case 'seen':
      return `${name} has seen your invite request.`;
    case 'answered':
      return answeredInviteText(name);
    case 'dismissed':
      return `${name} dismissed your invite request.`;
    case 'expired':
      return `Your invite request to ${name} expired unanswered.`;
  }
}

function RequestsCard({ social, onBlock }: { social: Social; onBlock(person: Person): void }) {
  const lists = social.lists!;
  // Requests of yours that were answered stay here, saying how, until you have read them.
  const answered = [...social.outcomes].filter(
    ([id, outcome]) => outcome !== 'withdrawn' && !lists.outgoing.includes(id),
  );
  if (lists.incoming.length === 0 && lists.outgoing.length === 0 && answered.length === 0) return null;
  return (
    <section className="card" aria-labelledby="requests-title">
      <h2 id="requests-title" className="card-title">
        Friend requests
      </h2>
      {lists.incoming.length > 0 ? (
        <ul className="row-list" aria-label="Incoming friend requests">
          {lists.incoming.map((id) => {
            const person = social.personFor(id);
            return (
              <li key={id} className="row" data-testid="incoming-request" data-username={person.username}>
                <span className="avatar small" aria-hidden="true">
                  {person.username.charAt(0).toUpperCase()}
                </span>
                <div className="row-main">
                  <p className="row-title">
                    <strong>{person.username}</strong> wants to be your friend
                  </p>
                </div>
                <div className="row-actions">
                  <button
                    type="button"
                    className="button small primary"
                    disabled={social.busy !== null}
                    onClick={() => void social.act('acceptFriendRequest', person)}
                  >
                    Accept
                  </button>
                  <button
                    type="button"
                    className="button small secondary"
                    disabled={social.busy !== null}
                    onClick={() => void social.act('declineFriendRequest', person)}
                  >
                    Decline
                  </button>
                  <button
                    type="button"
                    className="button small ghost"
                    disabled={social.busy !== null}
                    onClick={() => onBlock(person)}
                    aria-label={`Block ${person.username}`}
                  >
                    Block
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      ) : null}
      {lists.outgoing.length > 0 || answered.length > 0 ? (
        <ul className="row-list" aria-label="Sent friend requests">
          {lists.outgoing.map((id) => {
            const person = social.personFor(id);
            return (
              <li key={id} className="row" data-testid="outgoing-request" data-username={person.username}>
                <span className="avatar small" aria-hidden="true">
                  {person.username.charAt(0).toUpperCase()}
                </span>
                <div className="row-main">
                  <p className="row-title">
                    You asked <strong>{person.username}</strong> to be friends
                  </p>
                  <p className="row-meta muted small">Waiting for their answer.</p>
                </div>
                <div className="row-actions">
                  <span className="state-pill" data-state="seen">
                    Waiting
                  </span>
                  <button
                    type="button"
                    className="button small ghost"
                    disabled={social.busy !== null}
                    onClick={() => void social.act('cancelFriendRequest', person)}
                    aria-label={`Withdraw your friend request to ${person.username}`}
                  >
                    Withdraw
                  </button>
                </div>
              </li>
            );
          })}
          {answered.map(([id, outcome]) => {
            const person = social.personFor(id);
            return (
              <li
                key={id}
                className="row"
                data-testid="answered-request"
                data-username={person.username}
                data-outcome={outcome}
              >
                <span className="avatar small" aria-hidden="true">
                  {person.username.charAt(0).toUpperCase()}
                </span>
                <div className="row-main">
                  <p className="row-title">{requestOutcomeText(outcome, person.username)}</p>
                </div>
                <div className="row-actions">
                  <span className="state-pill" data-state={outcome === 'accepted' ? 'answered' : 'dismissed'}>
                    {outcome === 'accepted' ? 'Accepted' : 'Declined'}
                  </span>
                  <button
                    type="button"
                    className="button small ghost"
                    onClick={() => social.clearOutcome(id)}
                    aria-label={`Clear: ${requestOutcomeText(outcome, person.username)}`}
                  >
                    Clear
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      ) : null}
    </section>
  );
}

function AddFriendCard({ social }: { social: Social }) {
  const [sentTo, setSentTo] = useState<Person | null>(null);
  // Each sent request starts a fresh form, so the emptied box is not flagged as a mistake.
  const [round, setRound] = useState(0);
  // What became of the request follows its answer (or your withdrawal) while this is shown.
  const outcome = sentTo ? social.outcomes.get(sentTo.id) : undefined;
  return (
    <section className="card" aria-labelledby="add-friend-title">
      <h2 id="add-friend-title" className="card-title">
        Add a friend
      </h2>
      <AddFriendForm
        key={round}
        social={social}
        onEdit={() => setSentTo(null)}
        onSent={(person) => {
          setSentTo(person);
          setRound((n) => n + 1);
        }}
      />
      {sentTo ? (
        <Alert tone={outcome === undefined || outcome === 'accepted' ? 'success' : 'info'}>
          <span data-testid="friend-request-outcome" data-outcome={outcome ?? 'waiting'}>
            {requestOutcomeText(outcome, sentTo.username)}
          </span>
        </Alert>
      ) : null}
    </section>
  );
}

function AddFriendForm({
  social,
  onEdit,
  onSent,
}: {
  social: Social;
  onEdit(): void;
  onSent(person: Person): void;
}) {
  const form = useForm({ username: '' }, (v) => {
    const problem = usernameProblem(v.username.trim());
    return { username: problem ? `Username ${problem}` : undefined };
  });
  return (
    <form
      className="form inline-form"
      noValidate
      aria-label="Add a friend"
      onSubmit={form.handleSubmit(async ({ username }) => {
        onSent(await social.addByName(username.trim()));
      })}
    >
      <TextField
        label="Username"
        name="friend-username"
        value={form.values.username}
        onValueChange={(v) => {
          onEdit();
          form.setValue('username', v);
        }}
        error={form.errors.username}
        hint="Their exact username on this host."
        autoComplete="off"
        spellCheck={false}
        autoCapitalize="off"
      />
      <SubmitButton pending={form.pending} pendingLabel="Sending…">
        Send friend request
      </SubmitButton>
      <FormStatus message={form.formError} />
    </form>
  );
}

function BlockedCard({ social }: { social: Social }) {
  const blocked = social.lists!.blocked;
  if (blocked.length === 0) return null;
  return (
    <section className="card" aria-labelledby="blocked-title">
      <h2 id="blocked-title" className="card-title">
        Blocked
      </h2>
      <ul className="row-list" aria-label="Blocked users">
        {blocked.map((id) => {
          const person = social.personFor(id);
          return (
            <li key={id} className="row" data-testid="blocked-row" data-username={person.username}>
              <span className="avatar small muted-avatar" aria-hidden="true">
                {person.username.charAt(0).toUpperCase()}
              </span>
              <div className="row-main">
                <p className="row-title">
                  <strong>{person.username}</strong>
                </p>
                <p className="row-meta muted small">Cannot send you friend or invite requests.</p>
              </div>
              <div className="row-actions">
                <button
                  type="button"
                  className="button small secondary"
                  disabled={social.busy !== null}
                  onClick={() => void social.act('unblockUser', person)}
                >
                  Unblock
                </button>
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
