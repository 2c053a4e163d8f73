import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { ErrorCode } from '../../../server/protocol/errors.js';
import { GET_USERS_MAX, type GetUsersResult } from '../../../server/protocol/people.js';
import { ServerMessage } from '../../../server/protocol/socket.js';
import type { PrivateUserDto, PublicUserDto } from '../../../server/protocol/types.js';
import { ApiError, call, describeError } from '../../shared/api-client.js';
import { FormProblem } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import type { SocialPushMessage, SocketEvent } from '../../shared/socket-client.js';
import { useSocketEvent, useSocketStatus } from '../../shared/socket-context.js';
import {
  applySocialPush,
  outcomeOfPush,
  outcomesOfReload,
  personOf,
  sortFriends,
  type Lists,
  type Person,
  type Presence,
  type RequestOutcome,
} from './friends-model.js';

export type SocialAction =
  | 'acceptFriendRequest'
  | 'declineFriendRequest'
  | 'cancelFriendRequest'
  | 'removeFriend'
  | 'blockUser'
  | 'unblockUser';

const DONE: Record<SocialAction, (name: string) => string> = {
  acceptFriendRequest: (name) => `You and ${name} are friends now.`,
  declineFriendRequest: (name) => `Declined the friend request from ${name}.`,
  cancelFriendRequest: (name) => `Withdrew your friend request to ${name}.`,
  removeFriend: (name) => `${name} is no longer your friend.`,
  blockUser: (name) => `Blocked ${name}.`,
  unblockUser: (name) => `Unblocked ${name}.`,
};

export interface FriendsValue {
  /** null until first loaded. */
  lists: Lists | null;
  /** Online first, then by name, with live presence. */
  friends: Person[];
  personFor(id: string): Person;
  /** What became of requests you sent while this window was open (answered, or withdrawn by you). */
  outcomes: ReadonlyMap<string, RequestOutcome>;
  /** Forgets an outcome once read. */
  clearOutcome(id: string): void;
  error: string | null;
  refreshing: boolean;
  /** The action under way, as `action:userId`. */
  busy: string | null;
  refresh(): void;
  /** Does `action` on `person`; answers what to tell the person, as success or failure. */
  act(action: SocialAction, person: Person): Promise<{ ok: boolean; text: string }>;
  /** Sends a friend request by username; answers who it went to, or throws a FormProblem. */
  addByName(username: string): Promise<Person>;
}

const FriendsContext = createContext<FriendsValue | null>(null);

/**
 * Friends, friend requests and blocks for the whole signed-in window: the Friends screen shows them, the top bar
 * counts the requests waiting for an answer, and what becomes of a request you sent is kept while you look at
 * other screens. No polling: pushes over the socket keep it current, and every (re)connection loads it again.
 */
export function FriendsProvider({ children }: { children: ReactNode }) {
  const { authedCall, setUser, user } = useSession();
  const { connection, health } = useSocketStatus();
  const liveRef = useRef(health === 'connected');
  useEffect(() => {
    liveRef.current = health === 'connected';
  }, [health]);
  const [lists, setLists] = useState<Lists | null>(null);
  const [people, setPeople] = useState<ReadonlyMap<string, Person>>(new Map());
  const [presence, setPresence] = useState<ReadonlyMap<string, Presence>>(new Map());
  const [outcomes, setOutcomes] = useState<ReadonlyMap<string, RequestOutcome>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [refreshing, setRefreshing] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  // The session's functions change identity on every app render; the latest ones are what matter.
  const session = useRef({ authedCall, setUser });
  useEffect(() => {
    session.current = { authedCall, setUser };
  }, [authedCall, setUser]);
  // The lists as of the last push or load, kept in step with every change (two pushes may come before a render).
  const latest = useRef<Lists | null>(null);
  const commitLists = useCallback((next: Lists) => {
    latest.current = next;
    setLists(next);
  }, []);

  const settle = useCallback((id: string, outcome: RequestOutcome) => {
    setOutcomes((old) => new Map(old).set(id, outcome));
  }, []);
  const forget = useCallback((id: string) => {
    setOutcomes((old) => {
      if (!old.has(id)) return old;
      const next = new Map(old);
      next.delete(id);
      return next;
    });
  }, []);

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
      setPeople((old) => new Map([...old, ...found.map((p) => [p.id, p] as const)]));
      // What was just loaded is newer than any earlier live update.
      setPresence(new Map());
      const before = latest.current;
      if (before) {
        setOutcomes((old) => {
          const missed = outcomesOfReload(before, next).filter(([id]) => !old.has(id));
          return missed.length === 0 ? old : new Map([...old, ...missed]);
        });
      }
      commitLists(next);
      setError(null);
    } catch (failure) {
      setError(`Could not load your friends: ${describeError(failure)}`);
    }
  }, [commitLists]);

  useEffect(() => {
    void refresh();
  }, [refresh, connection]);

  useSocketEvent((event) => {
    if (event.message === ServerMessage.friendStatus) {
      const { userId, Status, StatusText } = event.result;
      setPresence((old) => new Map(old).set(userId, { status: Status, statusText: StatusText }));
      return;
    }
    if (!isSocialPush(event)) return;
    const { fromUserId, targetUserId, user: other, action } = event.result;
    const mine = fromUserId === user.Id;
    const otherId = mine ? targetUserId : fromUserId;
    setPeople((old) => new Map(old).set(otherId, personOf(other)));
    const current = latest.current;
    if (!current) return;
    const outcome = outcomeOfPush(current, event.message, action, mine, otherId);
    if (outcome) settle(otherId, outcome);
    // A new request to them starts afresh.
    else if (event.message === ServerMessage.friendRequest && mine) forget(otherId);
    commitLists(applySocialPush(current, event.message, action, mine, otherId));
  });

  const personFor = useCallback(
    (id: string): Person => people.get(id) ?? { id, username: 'Unknown user', status: 0, statusText: '' },
    [people],
  );

  async function act(action: SocialAction, person: Person): Promise<{ ok: boolean; text: string }> {
    setBusy(`${action}:${person.id}`);
    try {
      await session.current.authedCall(action, { targetUserId: person.id });
      if (action === 'cancelFriendRequest') settle(person.id, 'withdrawn');
      // The socket brings the change; without it, load the lists again.
      if (!liveRef.current) await refresh();
      return { ok: true, text: DONE[action](person.username) };
    } catch (failure) {
      // Often the other side got there first (withdrawn, answered): show the lists as they are now.
      if (failure instanceof ApiError && failure.code === ErrorCode.SOCIAL_REFUSED) void refresh();
      return { ok: false, text: describeError(failure) };
    } finally {
      setBusy(null);
    }
  }

  async function addByName(username: string): Promise<Person> {
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
    forget(target.Id);
    if (!liveRef.current) await refresh();
    return personOf(target);
  }

  const value: FriendsValue = {
    lists,
    friends: lists ? sortFriends(lists.friends.map(personFor), presence) : [],
    personFor,
    outcomes,
    clearOutcome: forget,
    error,
    refreshing,
    busy,
    refresh() {
      setRefreshing(true);
      void refresh().finally(() => setRefreshing(false));
    },
    act,
    addByName,
  };
  return <FriendsContext value={value}>{children}</FriendsContext>;
}

export function useFriends(): FriendsValue {
  const value = useContext(FriendsContext);
  if (!value) throw new Error('useFriends is only available inside FriendsProvider');
  return value;
}

/** The number of friend requests waiting for your answer, beside "Friends" in the top bar. */
export function FriendsNavBadge() {
  const { lists } = useFriends();
  const count = lists?.incoming.length ?? 0;
  if (count === 0) return null;
  return (
    <span className="nav-count" data-testid="friends-pending">
      {count}
      <span className="visually-hidden"> {count === 1 ? 'request' : 'requests'} waiting</span>
    </span>
  );
}

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
