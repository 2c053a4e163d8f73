import { describe, expect, it } from 'vitest';
import {
  applySocialPush,
  outcomeOfPush,
  outcomesOfReload,
  requestOutcomeText,
  type Lists,
} from '../../renderer/features/friends/friends-model.js';

const lists = (over: Partial<Lists> = {}): Lists => ({
  friends: [],
  incoming: [],
  outgoing: [],
  blocked: [],
  ...over,
});

describe('what became of a friend request you sent', () => {
  it('reads an acceptance, a decline and your own withdrawal from the pushes', () => {
    const waiting = lists({ outgoing: ['bea'] });
    expect(outcomeOfPush(waiting, 'friendaccepted', 'acceptFriendRequest', false, 'bea')).toBe('accepted');
    expect(outcomeOfPush(waiting, 'frienddeclined', 'declineFriendRequest', false, 'bea')).toBe('declined');
    expect(outcomeOfPush(waiting, 'frienddeclined', 'cancelFriendRequest', true, 'bea')).toBe('withdrawn');
    // Blocked by them: never said as a block, but the request did not go through.
    expect(outcomeOfPush(waiting, 'friendremoved', 'removeFriend', false, 'bea')).toBe('declined');
  });

  it('reads nothing into pushes about requests you did not send', () => {
    const none = lists({ incoming: ['bea'] });
    expect(outcomeOfPush(none, 'friendaccepted', 'acceptFriendRequest', true, 'bea')).toBeNull();
    expect(outcomeOfPush(none, 'frienddeclined', 'declineFriendRequest', true, 'bea')).toBeNull();
    expect(
      outcomeOfPush(lists({ outgoing: ['bea'] }), 'friendrequest', 'sendFriendRequest', true, 'bea'),
    ).toBeNull();
  });

  it('tells what a reload no longer lists: friends now, or not accepted; a block of yours is no answer', () => {
    const before = lists({ outgoing: ['bea', 'cat', 'dan', 'eve'] });
    const after = lists({ friends: ['bea'], outgoing: ['eve'], blocked: ['dan'] });
    expect(outcomesOfReload(before, after)).toEqual([
      ['bea', 'accepted'],
      ['cat', 'declined'],
    ]);
  });

  it('keeps a crossed request standing when only one of the two is declined or withdrawn', () => {
    const crossed = lists({ incoming: ['bea'], outgoing: ['bea'] });
    expect(applySocialPush(crossed, 'frienddeclined', 'declineFriendRequest', true, 'bea')).toEqual(
      lists({ outgoing: ['bea'] }),
    );
    expect(applySocialPush(crossed, 'frienddeclined', 'cancelFriendRequest', true, 'bea')).toEqual(
      lists({ incoming: ['bea'] }),
    );
    expect(applySocialPush(crossed, 'frienddeclined', 'cancelFriendRequest', false, 'bea')).toEqual(
      lists({ outgoing: ['bea'] }),
    );
    expect(applySocialPush(crossed, 'friendaccepted', 'acceptFriendRequest', true, 'bea')).toEqual(
      lists({ friends: ['bea'] }),
    );
  });

  it('says each outcome in words', () => {
    expect(requestOutcomeText(undefined, 'Bea')).toBe(
      'Friend request sent to Bea. It waits in their Friends screen until they answer.',
    );
    expect(requestOutcomeText('accepted', 'Bea')).toBe(
      'Bea accepted your friend request: you are friends now.',
    );
    expect(requestOutcomeText('declined', 'Bea')).toBe('Bea declined your friend request.');
    expect(requestOutcomeText('withdrawn', 'Bea')).toBe('You withdrew your friend request to Bea.');
  });
});
