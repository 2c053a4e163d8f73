import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectFail, expectOk, signUp, startHost, type Account, type TestHost } from './helpers.js';

describe('social', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  const as = (me: Account, targetUserId: string) => ({ userid: me.id, tokenContent: me.token, targetUserId });
  const user = async (account: Account) => (await host.server.users.get(account.id))!;

  beforeEach(async () => {
    host = await startHost();
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
  });
  afterEach(async () => {
    await host.close();
  });

  it('makes friends through a request and its acceptance, on both sides', async () => {
    expectOk(await host.post('sendFriendRequest', as(alice, bob.id)), 'Sent friend request!');
    expect((await user(alice)).OutgoingFriendRequests).toEqual([bob.id]);
    expect((await user(bob)).FriendRequests).toEqual([alice.id]);
    expectFail(await host.post('sendFriendRequest', as(alice, bob.id)), 'SOCIAL_REFUSED');
    expectFail(await host.post('acceptFriendRequest', as(alice, bob.id)), 'SOCIAL_REFUSED');
    expectOk(await host.post('acceptFriendRequest', as(bob, alice.id)), 'Accepted friend request!');
    expect((await user(alice)).Friends).toEqual([bob.id]);
    expect((await user(bob)).Friends).toEqual([alice.id]);
    expect((await user(alice)).OutgoingFriendRequests).toEqual([]);
    expect((await user(bob)).FriendRequests).toEqual([]);
    expectFail(await host.post('sendFriendRequest', as(bob, alice.id)), 'SOCIAL_REFUSED');
    expectOk(await host.post('removeFriend', as(bob, alice.id)), 'Removed friend!');
    expect((await user(alice)).Friends).toEqual([]);
  });

  it('declines a request', async () => {
    expectOk(await host.post('sendFriendRequest', as(alice, bob.id)));
    expectOk(await host.post('declineFriendRequest', as(bob, alice.id)), 'Declined friend request!');
    expect((await user(alice)).OutgoingFriendRequests).toEqual([]);
    expect((await user(bob)).FriendRequests).toEqual([]);
  });

  it('blocking ends friendship, requests and follows both ways, and stops new ones', async () => {
    expectOk(await host.post('sendFriendRequest', as(alice, bob.id)));
    expectOk(await host.post('acceptFriendRequest', as(bob, alice.id)));
    expectOk(await host.post('followUser', as(alice, bob.id)), 'Followed user!');
    expectOk(await host.post('blockUser', as(bob, alice.id)), 'Blocked user!');
    expect((await user(bob)).BlockedUsers).toEqual([alice.id]);
    expect((await user(alice)).Friends).toEqual([]);
    expect((await user(alice)).Following).toEqual([]);
    expect((await user(bob)).Followers).toEqual([]);
    expectFail(await host.post('sendFriendRequest', as(alice, bob.id)), 'SOCIAL_REFUSED');
    expectFail(await host.post('followUser', as(alice, bob.id)), 'SOCIAL_REFUSED');
    expectOk(await host.post('unblockUser', as(bob, alice.id)), 'Unblocked user!');
    expectOk(await host.post('sendFriendRequest', as(alice, bob.id)));
  });

  it('follows and unfollows', async () => {
    expectOk(await host.post('followUser', as(alice, bob.id)));
    const view = expectOk(await host.post('getUser', { userid: bob.id })).UserData as { Followers: string[] };
    expect(view.Followers).toEqual([alice.id]);
    expectOk(await host.post('unfollowUser', as(alice, bob.id)), 'Unfollowed user!');
    expectFail(await host.post('unfollowUser', as(alice, bob.id)), 'SOCIAL_REFUSED');
  });

  it('refuses acting on yourself, on an unknown user, or with a bad token, and changes nothing', async () => {
    const before = JSON.stringify([await user(alice), await user(bob)]);
    expectFail(await host.post('sendFriendRequest', as(alice, alice.id)), 'SOCIAL_REFUSED');
    expectFail(await host.post('sendFriendRequest', as(alice, 'user_ghost')), 'USER_NOT_FOUND');
    expectFail(
      await host.post('sendFriendRequest', {
        userid: alice.id,
        tokenContent: bob.token,
        targetUserId: bob.id,
      }),
      'INVALID_TOKEN',
    );
    expectFail(
      await host.post('sendFriendRequest', { userid: alice.id, tokenContent: alice.token }),
      'INVALID_PARAMETERS',
    );
    expect(JSON.stringify([await user(alice), await user(bob)])).toBe(before);
  });
});
