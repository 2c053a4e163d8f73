import { afterEach, describe, expect, it } from 'vitest';
import { expectFail, expectOk, signUp, startHost, type Account, type TestHost } from './helpers.js';
import { settle, TestSocket } from './socket-client.js';

/** Issue 28: the sender of a friend request can take it back before it is answered. */
describe('withdrawing a friend request', () => {
  let host: TestHost | undefined;
  const sockets: TestSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await host?.close();
    host = undefined;
  });
  const as = (me: Account, targetUserId: string) => ({ userid: me.id, tokenContent: me.token, targetUserId });

  it('clears the request on both sides and tells both sides, as a decline with its own action', async () => {
    const h = (host = await startHost());
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    const aliceSocket = await TestSocket.verified(h.server.url, alice.id, alice.token);
    const bobSocket = await TestSocket.verified(h.server.url, bob.id, bob.token);
    sockets.push(aliceSocket, bobSocket);

    expectOk(await h.post('sendFriendRequest', as(alice, bob.id)));
    await bobSocket.next('friendrequest');
    expectOk(await h.post('cancelFriendRequest', as(alice, bob.id)), 'Withdrew friend request!');
    expect((await h.server.users.get(alice.id))?.OutgoingFriendRequests).toEqual([]);
    expect((await h.server.users.get(bob.id))?.FriendRequests).toEqual([]);
    expect(await bobSocket.next('frienddeclined')).toMatchObject({
      action: 'cancelFriendRequest',
      fromUserId: alice.id,
      targetUserId: bob.id,
    });
    expect((await aliceSocket.next('frienddeclined')).action).toBe('cancelFriendRequest');

    // Nothing left to accept, and the sender may ask again.
    expectFail(await h.post('acceptFriendRequest', as(bob, alice.id)), 'SOCIAL_REFUSED');
    expectOk(await h.post('sendFriendRequest', as(alice, bob.id)));
  });

  it('refuses to withdraw what was never sent, or a request from the other side, and changes nothing', async () => {
    const h = (host = await startHost());
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    const bobSocket = await TestSocket.verified(h.server.url, bob.id, bob.token);
    sockets.push(bobSocket);
    expectFail(await h.post('cancelFriendRequest', as(alice, bob.id)), 'SOCIAL_REFUSED');

    expectOk(await h.post('sendFriendRequest', as(alice, bob.id)));
    // Bob cannot "withdraw" Alice's request to him: that is a decline.
    expectFail(await h.post('cancelFriendRequest', as(bob, alice.id)), 'SOCIAL_REFUSED');
    expect((await h.server.users.get(bob.id))?.FriendRequests).toEqual([alice.id]);
    await settle();
    expect(bobSocket.count('frienddeclined')).toBe(0);
  });
});
