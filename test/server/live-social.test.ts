import { afterEach, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import {
  editUser,
  expectFail,
  expectOk,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  type Account,
  type TestHost,
} from './helpers.js';
import { settle, TestSocket } from './socket-client.js';

/** Issue 18: social events pushed to both sides, getUsers, the invite-request sender's outcome, password help. */
describe('live social events and their companions', () => {
  let host: TestHost | undefined;
  const sockets: TestSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await host?.close();
    host = undefined;
  });
  const as = (me: Account, extra: Record<string, unknown> = {}) => ({
    userid: me.id,
    tokenContent: me.token,
    ...extra,
  });
  async function socketOf(h: TestHost, account: Account): Promise<TestSocket> {
    const socket = await TestSocket.verified(h.server.url, account.id, account.token);
    sockets.push(socket);
    return socket;
  }

  it('pushes a friend request, acceptance, decline and removal to both sides', async () => {
    const h = (host = await startHost());
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    const [aliceSocket, bobSocket, bobGame] = [
      await socketOf(h, alice),
      await socketOf(h, bob),
      await socketOf(h, bob),
    ];

    expectOk(await h.post('sendFriendRequest', as(alice, { targetUserId: bob.id })));
    const toBob = await bobSocket.next('friendrequest');
    expect(toBob).toMatchObject({ action: 'sendFriendRequest', fromUserId: alice.id, targetUserId: bob.id });
    expect((toBob.user as { Username: string }).Username).toBe('alice');
    expect(((await aliceSocket.next('friendrequest')).user as { Username: string }).Username).toBe('bob');
    await bobGame.next('friendrequest');

    expectOk(await h.post('acceptFriendRequest', as(bob, { targetUserId: alice.id })));
    expect(await aliceSocket.next('friendaccepted')).toMatchObject({
      fromUserId: bob.id,
      targetUserId: alice.id,
    });
    await bobSocket.next('friendaccepted');

    expectOk(await h.post('removeFriend', as(alice, { targetUserId: bob.id })));
    expect(await bobSocket.next('friendremoved')).toMatchObject({ fromUserId: alice.id });
    await aliceSocket.next('friendremoved');

    expectOk(await h.post('sendFriendRequest', as(bob, { targetUserId: alice.id })));
    await aliceSocket.next('friendrequest');
    expectOk(await h.post('declineFriendRequest', as(alice, { targetUserId: bob.id })));
    expect(await bobSocket.next('frienddeclined')).toMatchObject({
      fromUserId: alice.id,
      targetUserId: bob.id,
    });

    // A block is told to the blocker only; the blocked side just sees the friendship end.
    expectOk(await h.post('blockUser', as(alice, { targetUserId: bob.id })));
    await aliceSocket.next('blockchanged');
    expect((await bobSocket.next('friendremoved')).action).toBe('removeFriend');
    await settle();
    expect(bobSocket.count('blockchanged')).toBe(0);
  });

  it('a refused social action pushes nothing', async () => {
    const h = (host = await startHost());
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    const bobSocket = await socketOf(h, bob);
    expectFail(await h.post('acceptFriendRequest', as(alice, { targetUserId: bob.id })), 'SOCIAL_REFUSED');
    await settle();
    expect(bobSocket.received.filter((m) => m.message.startsWith('friend'))).toEqual([]);
  });

  it('getUsers answers public views of many ids in one call', async () => {
    const h = (host = await startHost());
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    const result = expectOk(
      await h.post('getUsers', { userids: [bob.id, alice.id, 'user_missing', bob.id] }),
      'Got users',
    );
    const found = result.Users as Array<Record<string, unknown>>;
    expect(found.map((u) => u.Username)).toEqual(['bob', 'alice']);
    expect(result.NotFound).toEqual(['user_missing']);
    // Public view: no secrets, no tokens, no email.
    for (const user of found) {
      expect(user).not.toHaveProperty('AccountTokens');
      expect(user).not.toHaveProperty('HashedPassword');
      expect(user).not.toHaveProperty('Email');
    }
    expectFail(await h.post('getUsers', { userids: 'nope' }), 'INVALID_PARAMETERS');
    expectFail(
      await h.post('getUsers', { userids: Array.from({ length: 501 }, (_, i) => `user_${i}`) }),
      'INVALID_PARAMETERS',
    );
  });

  it('tells the invite-request sender when it is seen, answered, dismissed or expired, and lists sent requests', async () => {
    const clock = manualClock();
    const h = (host = await startHost(
      { socket: { inviteRequestCooldownSeconds: 0, inviteRequestTtlSeconds: 60 } },
      { clock },
    ));
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    expectOk(await h.post('sendFriendRequest', as(alice, { targetUserId: bob.id })));
    expectOk(await h.post('acceptFriendRequest', as(bob, { targetUserId: alice.id })));
    const aliceSocket = await socketOf(h, alice);
    const bobSocket = await socketOf(h, bob);

    const ask = async (): Promise<string> => {
      aliceSocket.sendJson({
        userId: alice.id,
        tokenContent: alice.token,
        message: 'requestinvite',
        args: { targetUserId: bob.id },
      });
      const sent = await aliceSocket.next('sentinviterequest');
      await bobSocket.next('gotinviterequest');
      return sent.requestId as string;
    };
    const stateOf = async (): Promise<string> =>
      ((await aliceSocket.next('sentinviterequestupdated')).request as { state: string }).state;

    const first = await ask();
    expectOk(await h.post('updateInviteRequest', as(bob, { requestId: first, state: 'seen' })));
    expect(await stateOf()).toBe('seen');
    expectOk(await h.post('updateInviteRequest', as(bob, { requestId: first, state: 'answered' })));
    expect(await stateOf()).toBe('answered');

    const second = await ask();
    expectOk(await h.post('updateInviteRequest', as(bob, { requestId: second, state: 'dismissed' })));
    expect(await stateOf()).toBe('dismissed');

    const third = await ask();
    clock.advance(61);
    h.server.invites.sweep();
    const expired = (await aliceSocket.next('sentinviterequestupdated')).request as Record<string, unknown>;
    expect(expired).toMatchObject({ requestId: third, state: 'expired', toUsername: 'bob' });

    const sent = expectOk(await h.post('sentInviteRequests', as(alice))).InviteRequests as Array<{
      requestId: string;
      state: string;
    }>;
    expect(sent.map((r) => [r.requestId, r.state])).toEqual([
      [third, 'expired'],
      [second, 'dismissed'],
      [first, 'answered'],
    ]);
    expect(expectOk(await h.post('sentInviteRequests', as(bob))).InviteRequests).toEqual([]);
    expectFail(await h.post('sentInviteRequests', { userid: alice.id, tokenContent: 'x' }), 'INVALID_TOKEN');
  });

  it('changes your own password only with the current one, and signs every session out', async () => {
    const h = (host = await startHost());
    const alice = await signUp(h, 'alice');
    expectFail(
      await h.post(
        'changePassword',
        as(alice, { currentPassword: 'wrong-one!', newPassword: 'N3w-password' }),
      ),
      'INCORRECT_CREDENTIALS',
    );
    expectFail(
      await h.post('changePassword', as(alice, { currentPassword: PASSWORD, newPassword: 'short' })),
      'WEAK_PASSWORD',
    );
    expectOk(
      await h.post('changePassword', as(alice, { currentPassword: PASSWORD, newPassword: 'N3w-password' })),
    );
    expect(expectOk(await h.post('isValidToken', as(alice))).isValidToken).toBe(false);
    const login = expectOk(await h.post('login', { username: 'alice', password: 'N3w-password' }));
    expect(login.LoginResult).toBe(4);
  });

  it('lets the owner or an admin reset the password of a lower-ranked user only', async () => {
    const h = (host = await startHost());
    const admin = await signUp(h, 'admin');
    const mod = await signUp(h, 'moddy');
    const other = await signUp(h, 'otheradmin');
    const player = await signUp(h, 'player');
    await editUser(h, admin.id, (d) => void (d.Rank = Rank.Admin));
    await editUser(h, other.id, (d) => void (d.Rank = Rank.Admin));
    await editUser(h, mod.id, (d) => void (d.Rank = Rank.Moderator));

    const reset = (actor: Account, target: Account) =>
      h.post('resetUserPassword', as(actor, { targetUserId: target.id, newPassword: 'Fresh-pass1' }));
    expectFail(await reset(mod, player), 'FORBIDDEN');
    expectFail(await reset(admin, other), 'TARGET_RANK_TOO_HIGH');
    expectFail(await reset(admin, admin), 'TARGET_RANK_TOO_HIGH');
    expectFail(
      await h.post(
        'resetUserPassword',
        as(admin, { targetUserId: 'user_nobody', newPassword: 'Fresh-pass1' }),
      ),
      'USER_NOT_FOUND',
    );
    expectOk(await reset(admin, player));
    expect(expectOk(await h.post('isValidToken', as(player))).isValidToken).toBe(false);
    expect(expectOk(await h.post('login', { username: 'player', password: 'Fresh-pass1' })).LoginResult).toBe(
      4,
    );
  });

  it('publishes the upload rules to anyone, and the host status to admins only', async () => {
    const h = (host = await startHost({ allowedDomains: ['img.example.org'] }));
    const rules = expectOk(await h.get('uploadRules'));
    expect(rules.allowedImageDomains).toEqual(['img.example.org']);
    expect(rules).toMatchObject({ nameMax: 50, descriptionMax: 1000, iconsMax: 10, buildPlatforms: [0, 1] });
    expect((rules.extensions as Record<string, number>)['.hna']).toBe(1);
    expect(rules.localHosts).toContain(`127.0.0.1:${h.server.port}`);

    const admin = await signUp(h, 'admin');
    const player = await signUp(h, 'player');
    await editUser(h, admin.id, (d) => void (d.Rank = Rank.Admin));
    expectFail(await h.post('hostStatus', as(player)), 'FORBIDDEN');
    await socketOf(h, player);
    const status = expectOk(await h.post('hostStatus', as(admin)));
    expect(status).toMatchObject({
      bindHost: '127.0.0.1',
      localOnly: true,
      port: h.server.port,
      lanUrls: [],
    });
    expect(status.openToLan).toMatch(/--host 0\.0\.0\.0/);
    expect(status.connectedUsers).toEqual([{ Id: player.id, Username: 'player', sockets: 1 }]);
    // On the embedded store the folder is the community: nothing shared to check.
    expect(status.community).toEqual({ storage: 'embedded', database: null, redis: null, hosts: 1 });
  });
});
