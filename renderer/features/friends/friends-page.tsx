import { useCallback, useEffect, useRef, useState } from 'react';
import { ErrorCode } from '../../../server/protocol/errors.js';
import { usernameProblem } from '../../../server/protocol/schemas.js';
import { GET_USERS_MAX, type GetUsersResult } from '../../../server/protocol/people.js';
import {
  ServerMessage,
  type InviteRefusal,
  type InviteRequestState,
} from '../../../server/protocol/socket.js';
import type { PrivateUserDto, PublicUserDto } from '../../../server/protocol/types.js';
import { ApiError, call, describeError } from '../../shared/api-client.js';
import { ConfirmDialog } from '../../shared/confirm-dialog.js';
import { FormProblem, useForm } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import type { SocialPushMessage, SocketEvent } from '../../shared/socket-client.js';
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
  personOf,
  refusalText,
  sortFriends,
  statusName,
  type Person,
  type Presence,
} from './friends-model.js';

interface Lists {
  friends: string[];
  incoming: string[];
  outgoing: string[];
  blocked: string[];
}

type SocialAction =
  'acceptFriendRequest' | 'declineFriendRequest' | 'removeFriend' | 'blockUser' | 'unblockUser';

/** Your friends with live presence, friend requests both ways, blocks, and asking a friend for an invite. */
export function FriendsPage() {
  const social = useSocial();
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
      {social.notice ? (
        <Alert tone={social.notice.tone}>
          <span data-testid="friends-notice">{social.notice.text}</span>
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

type Social = ReturnType<typeof useSocial>;

function useSocial() {
  const { authedCall, setUser, user } = useSession();
  const { connection, health } = useSocketStatus();
  const liveRef = useRef(health === 'connected');
  useEffect(() => {
    liveRef.current = health === 'connected';
  }, [health]);
  const [lists, setLists] = useState<Lists | null>(null);
  const [people, setPeople] = useState<ReadonlyMap<string, Person>>(new Map());
  const [presence, setPresence] = useState<ReadonlyMap<string, Presence>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<{ tone: 'success' | 'error'; text: string } | null>(null);
  const [refreshing, setRefreshing] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  // The session's functions change identity on every app render; the latest ones are what matter.
  const session = useRef({ authedCall, setUser });
  useEffect(() => {
    session.current = { authedCall, setUser };
  }, [authedCall, setUser]);

  const refresh = useCallback(async (): Promise<void> => {
    try {
      const { UserData } = await session.current.authedCall<{ UserData: PrivateUserDto }>('getUser', {});
      session.current.setUser(() => UserData);
      const next: Lists = {
        friends: UserData.Friends,
        incoming: UserData.FriendRequests,
        outgoing: UserData.OutgoingFriendRequests,
        blocked: UserData.BlockedUsers,
      };
      const ids = [...new Set([...next.friends, ...next.incoming, ...next.outgoing, ...next.blocked])];
      // One batch call for every name on the page, however many friends (issue 18).
      const found = ids.length > 0 ? await lookupPeople(ids) : [];
      setPeople(new Map(found.map((p) => [p.id, p])));
      // What was just loaded is newer than any earlier live update.
      setPresence(new Map());
      setLists(next);
      setError(null);
    } catch (failure) {
      setError(`Could not load your friends: ${describeError(failure)}`);
    }
  }, []);

  /** The Refresh button's version, which shows that it is working. */
  const refreshNow = (): void => {
    setRefreshing(true);
    void refresh().finally(() => setRefreshing(false));
  };

  useEffect(() => {
    void refresh();
  }, [refresh, connection]);

  // No polling: friend requests, acceptances, declines, removals and presence arrive over the socket, and a
  // reconnect (a new `connection`) loads everything again in case something was missed meanwhile.
  useSocketEvent((event) => {
    if (event.message === ServerMessage.friendStatus) {
      const { userId, Status, StatusText } = event.result;
      setPresence((old) => new Map(old).set(userId, { status: Status, statusText: StatusText }));
      return;
    }
    if (!isSocialPush(event)) return;
    const { fromUserId, targetUserId, user: other } = event.result;
    const otherId = fromUserId === user.Id ? targetUserId : fromUserId;
    setPeople((old) => new Map(old).set(otherId, personOf(other)));
    setLists((old) =>
      old ? applySocialPush(old, event.message, event.result.action, fromUserId === user.Id, otherId) : old,
    );
  });

  const personFor = (id: string): Person =>
    people.get(id) ?? { id, username: 'Unknown user', status: 0, statusText: '' };

  async function act(action: SocialAction, person: Person): Promise<boolean> {
    setBusy(`${action}:${person.id}`);
    setNotice(null);
    try {
      await session.current.authedCall(action, { targetUserId: person.id });
      setNotice({ tone: 'success', text: DONE[action](person.username) });
      // The socket brings the change; without it, load the lists again.
      if (!liveRef.current) await refresh();
      return true;
    } catch (failure) {
      setNotice({ tone: 'error', text: describeError(failure) });
      return false;
    } finally {
      setBusy(null);
    }
  }

  async function addByName(username: string): Promise<string> {
    let target: PublicUserDto;
    try {
      ({ UserData: target } = await call<{ UserData: PublicUserDto }>('getUser', { username }));
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === ErrorCode.USER_NOT_FOUND) {
        throw new FormProblem('No account has that username on this host.', {
          username: 'No account has that username',
        });
      }
      throw failure;
    }
    if (target.Id === user.Id)
      throw new FormProblem('That is you.', { username: 'That is your own username' });
    try {
      await session.current.authedCall('sendFriendRequest', { targetUserId: target.Id });
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === ErrorCode.SOCIAL_REFUSED) {
        throw new FormProblem(failure.message, { username: failure.message });
      }
      throw failure;
    }
    if (!liveRef.current) await refresh();
    return target.Username;
  }

  return {
    lists,
    friends: lists ? sortFriends(lists.friends.map(personFor), presence) : [],
    personFor,
    error,
    notice,
    refreshing,
    busy,
    refresh: refreshNow,
    act,
    addByName,
  };
}

const DONE: Record<SocialAction, (name: string) => string> = {
  acceptFriendRequest: (name) => `You and ${name} are friends now.`,
  declineFriendRequest: (name) => `Declined the friend request from ${name}.`,
  removeFriend: (name) => `${name} is no longer your friend.`,
  blockUser: (name) => `Blocked ${name}.`,
  unblockUser: (name) => `Unblocked ${name}.`,
};

/** Public views of `ids` in one `getUsers` call (chunks of 500); ids nobody has become "Unknown user". */
async function lookupPeople(ids: string[]): Promise<Person[]> {
  const out: Person[] = [];
  for (let i = 0; i < ids.length; i += GET_USERS_MAX) {
    const chunk = ids.slice(i, i + GET_USERS_MAX);
    const { Users, NotFound } = await call<GetUsersResult>('getUsers', { userids: chunk });
    out.push(...Users.map(personOf));
    for (const id of NotFound) out.push({ id, username: 'Unknown user', status: 0, statusText: '' });
  }
  return out;
}

function isSocialPush(event: SocketEvent): event is Extract<SocketEvent, { message: SocialPushMessage }> {
  return (
    event.message === ServerMessage.friendRequest ||
    event.message === ServerMessage.friendAccepted ||
    event.message === ServerMessage.friendDeclined ||
    event.message === ServerMessage.friendRemoved ||
    event.message === ServerMessage.blockChanged
  );
}

const drop = (list: string[], id: string): string[] => list.filter((x) => x !== id);
const add = (list: string[], id: string): string[] => (list.includes(id) ? list : [...list, id]);

/** The lists after a pushed social action between me and `otherId` (`mine`: I acted). */
export function applySocialPush(
  lists: Lists,
  message: SocialPushMessage,
  action: string,
  mine: boolean,
  otherId: string,
): Lists {
  const cleared = {
    friends: lists.friends,
    incoming: drop(lists.incoming, otherId),
    outgoing: drop(lists.outgoing, otherId),
    blocked: lists.blocked,
  };
  switch (message) {
    case ServerMessage.friendRequest:
      return mine
        ? { ...lists, outgoing: add(lists.outgoing, otherId) }
        : { ...lists, incoming: add(lists.incoming, otherId) };
    case ServerMessage.friendAccepted:
      return { ...cleared, friends: add(lists.friends, otherId) };
    case ServerMessage.friendDeclined:
      return cleared;
    case ServerMessage.friendRemoved:
      return { ...cleared, friends: drop(lists.friends, otherId) };
    case ServerMessage.blockChanged:
      return action === 'unblockUser'
        ? { ...lists, blocked: drop(lists.blocked, otherId) }
        : { ...cleared, friends: drop(lists.friends, otherId), blocked: add(lists.blocked, otherId) };
  }
  return lists;
}

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
      return `${name} answered your invite request: look for their invite.`;
    case 'dismissed':
      return `${name} dismissed your invite request.`;
    case 'expired':
      return `Your invite request to ${name} expired unanswered.`;
  }
}

function RequestsCard({ social, onBlock }: { social: Social; onBlock(person: Person): void }) {
  const lists = social.lists!;
  if (lists.incoming.length === 0 && lists.outgoing.length === 0) return null;
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
      {lists.outgoing.length > 0 ? (
        <>
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
                  </div>
                  <span className="state-pill" data-state="seen">
                    Waiting
                  </span>
                </li>
              );
            })}
          </ul>
          <p className="muted small">
            A sent request stays until they accept or decline it; this host has no way to withdraw one.
          </p>
        </>
      ) : null}
    </section>
  );
}

function AddFriendCard({ social }: { social: Social }) {
  const [sentTo, setSentTo] = useState<string | null>(null);
  // Each sent request starts a fresh form, so the emptied box is not flagged as a mistake.
  const [round, setRound] = useState(0);
  return (
    <section className="card" aria-labelledby="add-friend-title">
      <h2 id="add-friend-title" className="card-title">
        Add a friend
      </h2>
      <AddFriendForm
        key={round}
        social={social}
        onEdit={() => setSentTo(null)}
        onSent={(name) => {
          setSentTo(name);
          setRound((n) => n + 1);
        }}
      />
      {sentTo ? (
        <Alert tone="success">
          Friend request sent to {sentTo}. It waits in their Friends screen until they answer.
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
  onSent(username: string): void;
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
