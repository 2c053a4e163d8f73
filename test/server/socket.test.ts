import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  expectFail,
  expectOk,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  type Account,
  type TestHost,
  editUser,
} from './helpers.js';
import { settle, TestSocket } from './socket-client.js';

describe('socket', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  let carol: Account;
  const sockets: TestSocket[] = [];
  const clock = manualClock();

  async function connect(account: Account): Promise<TestSocket> {
    const socket = await TestSocket.verified(host.server.url, account.id, account.token);
    sockets.push(socket);
    return socket;
  }
  async function raw(path = '/'): Promise<TestSocket> {
    const socket = await TestSocket.open(host.server.url + path);
    sockets.push(socket);
    return socket;
  }
  async function befriend(a: Account, b: Account): Promise<void> {
    expectOk(
      await host.post('sendFriendRequest', { userid: a.id, tokenContent: a.token, targetUserId: b.id }),
    );
    expectOk(
      await host.post('acceptFriendRequest', { userid: b.id, tokenContent: b.token, targetUserId: a.id }),
    );
  }
  const request = (from: Account, targetUserId: unknown) => ({
    userId: from.id,
    tokenContent: from.token,
    message: 'RequestInvite',
    args: { targetUserId },
  });

  beforeEach(async () => {
    host = await startHost({ socket: { heartbeatMs: 250, verifyTimeoutMs: 600 } }, { clock });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
    carol = await signUp(host, 'carol');
    await befriend(alice, bob);
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await host.close();
  });

  describe('verification', () => {
    it('is advertised by getSocketInfo on the API port and accepts upgrades on any path', async () => {
      expect(expectOk(await host.get('getSocketInfo'))).toEqual({ IsWSS: false, Port: host.server.port });
      for (const path of ['/', '/socket', '/api/v1/anything']) {
        const socket = await raw(path);
        socket.sendJson({ userId: alice.id, tokenContent: alice.token, message: 'auth', args: {} });
        expect(await socket.next('authenticated')).toEqual({ userId: alice.id });
      }
    });

    it('keeps a socket with a wrong token open and unverified, and delivers nothing to it', async () => {
      const socket = await raw();
      socket.sendJson({ userId: bob.id, tokenContent: 'wrong', message: 'auth', args: {} });
      await socket.next('authfailed');
      const sender = await connect(alice);
      sender.sendJson(request(alice, bob.id));
      expect((await sender.next('failedtorequestinvite')).reason).toBe('OFFLINE');
      expect(socket.count('gotinviterequest')).toBe(0);
      expect(socket.closed).toBeNull();
      // The next message may still verify it.
      socket.sendJson({ userId: bob.id, tokenContent: bob.token, message: 'auth', args: {} });
      await socket.next('authenticated');
    });

    it("refuses a banned user's token", async () => {
      const now = Math.floor(clock.now() / 1000);
      await editUser(host, bob.id, (draft) => {
        draft.BanStatus = {
          isBanned: true,
          BanBegin: now,
          BanEnd: now + 60,
          BanReason: 'x',
          BanDescription: 'y',
        };
      });
      const socket = await raw();
      socket.sendJson({ userId: bob.id, tokenContent: bob.token, message: 'auth', args: {} });
      await socket.next('authfailed');
      expect(host.server.hub.isConnected(bob.id)).toBe(false);
    });

    it('lets later messages leave out the token, and closes the socket on a message for another user', async () => {
      const socket = await connect(alice);
      await connect(bob);
      socket.sendJson({ userId: alice.id, message: 'RequestInvite', args: { targetUserId: bob.id } });
      await socket.next('sentinviterequest');
      socket.sendJson({ userId: bob.id, tokenContent: bob.token, message: 'auth', args: {} });
      expect((await socket.waitClosed()).code).toBe(4003);
      expect(host.server.hub.socketsOf(alice.id).size).toBe(0);
    });

    it('closes the sockets of a user who logs out that token or gets banned', async () => {
      const a1 = await connect(alice);
      const login = expectOk(await host.post('login', { username: 'alice', password: PASSWORD }));
      const second = (login.token as { content: string }).content;
      const a2 = await TestSocket.verified(host.server.url, alice.id, second);
      sockets.push(a2);
      expectOk(await host.post('logout', { userid: alice.id, tokenContent: alice.token }));
      expect(await a1.waitClosed()).toEqual({ code: 4001, reason: 'token expired or revoked' });
      expect(a2.closed).toBeNull();

      const now = Math.floor(clock.now() / 1000);
      await editUser(host, alice.id, (draft) => {
        draft.BanStatus = {
          isBanned: true,
          BanBegin: now,
          BanEnd: now + 60,
          BanReason: 'x',
          BanDescription: 'y',
        };
      });
      host.server.events.emit('tokensRevoked', { userId: alice.id });
      // The reason says why, so a client can tell a ban from an expired session.
      expect(await a2.waitClosed()).toEqual({ code: 4001, reason: 'banned' });
      expect(host.server.hub.isConnected(alice.id)).toBe(false);

      const b = await connect(bob);
      await editUser(host, bob.id, (draft) => {
        draft.WarnStatus = { isWarned: true, TimeWarned: now, WarnReason: 'x', WarnDescription: 'y' };
      });
      host.server.events.emit('tokensRevoked', { userId: bob.id });
      expect(await b.waitClosed()).toEqual({ code: 4001, reason: 'warned' });
    });

    it('closes a socket whose user was warned while it was being verified', async () => {
      const mod = await signUp(host, 'mod');
      await editUser(host, mod.id, (draft) => {
        draft.Rank = 4;
      });
      // The verification waits between reading the token and joining the hub, as a slow store would make it.
      const accounts = host.server.accounts;
      const tokenExpiry = accounts.tokenExpiry.bind(accounts);
      let reached!: () => void;
      let release!: () => void;
      const inGap = new Promise<void>((resolve) => (reached = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      accounts.tokenExpiry = async (...args: Parameters<typeof tokenExpiry>) => {
        reached();
        await gate;
        return tokenExpiry(...args);
      };
      const socket = await raw();
      socket.sendJson({ userId: carol.id, tokenContent: carol.token, message: 'auth', args: {} });
      await inGap;
      expectOk(
        await host.post('moderation', {
          userid: mod.id,
          tokenContent: mod.token,
          action: 'warnuser',
          targetUserId: carol.id,
          warnReason: 'spam',
          warnDescription: '',
        }),
      );
      release();
      expect((await socket.waitClosed(5000)).code).toBe(4001);
      expect(socket.count('authenticated')).toBe(0);
    });

    it('closes a socket whose token expired, at the next heartbeat', async () => {
      const socket = await connect(alice);
      clock.advance(31 * 24 * 3600);
      expect((await socket.waitClosed()).code).toBe(4001);
    });

    it('closes a socket that never verifies', async () => {
      const socket = await raw();
      expect((await socket.waitClosed(4000)).code).toBe(4002);
    });

    it('terminates a client that never answers pings, and forgets it', async () => {
      const silent = await TestSocket.open(host.server.url, { autoPong: false });
      sockets.push(silent);
      silent.sendJson({ userId: alice.id, tokenContent: alice.token, message: 'auth', args: {} });
      await silent.next('authenticated');
      expect(host.server.hub.isConnected(alice.id)).toBe(true);
      const closed = await silent.waitClosed(4000);
      expect(closed.code).toBe(1006);
      await settle(50);
      expect(host.server.hub.isConnected(alice.id)).toBe(false);
      expect(host.server.socket.connections).toBe(0);
    });
  });

  describe('bad messages', () => {
    it.each([
      ['not JSON', 'hello', 'INVALID_JSON'],
      ['JSON that is not an object', '[1,2]', 'INVALID_MESSAGE'],
      ['JSON null', 'null', 'INVALID_MESSAGE'],
      ['an object with no message name', '{"userId":"x"}', 'INVALID_MESSAGE'],
    ])('answers %s with an error and stays open', async (_name, text, code) => {
      const socket = await connect(alice);
      socket.ws.send(text);
      expect((await socket.next('error')).code).toBe(code);
      socket.sendJson(request(alice, 'user_ghost'));
      expect((await socket.next('failedtorequestinvite')).reason).toBe('UNKNOWN_USER');
    });

    it('closes the socket on a 1 MB message', async () => {
      const socket = await connect(alice);
      socket.sendJson({ userId: alice.id, message: 'auth', args: { pad: 'x'.repeat(1024 * 1024) } });
      expect((await socket.waitClosed()).code).toBe(1009);
      await settle(50);
      expect(host.server.hub.isConnected(alice.id)).toBe(false);
    });

    it('ignores an unknown message name and missing args', async () => {
      const socket = await connect(alice);
      socket.sendJson({ userId: alice.id, tokenContent: alice.token, message: 'TeleportEveryone', args: {} });
      socket.sendJson({ userId: alice.id, tokenContent: alice.token, message: 'RequestInvite' });
      expect(await socket.next('failedtorequestinvite')).toEqual({
        targetUserId: '',
        reason: 'INVALID_ARGS',
      });
      expect(socket.closed).toBeNull();
      expect(socket.count('error')).toBe(0);
    });

    it('drops a flood of 1,000 requestinvite messages past the rate limit and stays usable', async () => {
      const socket = await connect(alice);
      const target = await connect(bob);
      for (let i = 0; i < 1000; i++) socket.sendJson(request(alice, bob.id));
      await socket.next('sentinviterequest');
      await settle(300);
      // One delivery; the cooldown refused the rest of the burst, the rate limit dropped the remainder.
      expect(target.count('gotinviterequest')).toBe(1);
      expect(socket.count('error')).toBeGreaterThanOrEqual(1);
      expect(socket.count('failedtorequestinvite')).toBeLessThanOrEqual(80);
      expect(socket.closed).toBeNull();
      expect(expectOk(await host.get('gameEngine'))).toBeDefined();
    });
  });

  describe('requestinvite', () => {
    it('delivers gotinviterequest to every socket of a friend, answers the sender, and keeps a history', async () => {
      const sender = await connect(alice);
      const [b1, b2] = [await connect(bob), await connect(bob)];
      sender.sendJson(request(alice, bob.id));
      for (const socket of [b1!, b2!]) {
        const got = await socket.next('gotinviterequest');
        expect(got).toMatchObject({ fromUserId: alice.id, fromUsername: 'alice' });
        expect(got.requestId).toMatch(/^invreq_/);
      }
      const sent = await sender.next('sentinviterequest');
      expect(sent).toEqual({ targetUserId: bob.id, requestId: expect.stringMatching(/^invreq_/) });
      const list = expectOk(await host.post('inviteRequests', { userid: bob.id, tokenContent: bob.token }));
      expect(list.InviteRequests).toEqual([
        expect.objectContaining({
          requestId: sent.requestId,
          fromUserId: alice.id,
          toUserId: bob.id,
          state: 'new',
        }),
      ]);
      // The invite-request log holds it (an event per line).
      const lines = (await readFile(join(host.dir, 'invite-requests.jsonl'), 'utf8')).trim().split('\n');
      const line = JSON.parse(lines.at(-1)!) as unknown;
      expect(line).toEqual({
        t: 'request',
        to: bob.id,
        request: {
          requestId: sent.requestId,
          fromUserId: alice.id,
          sentAt: expect.any(Number),
          expiresAt: expect.any(Number),
          state: 'new',
          updatedAt: expect.any(Number),
        },
      });
      expect(lines.at(-1)).toBe(JSON.stringify(line));
      // Alice's own history is untouched.
      expect(
        expectOk(await host.post('inviteRequests', { userid: alice.id, tokenContent: alice.token }))
          .InviteRequests,
      ).toEqual([]);
    });

    it.each([
      ['to oneself', 'self', 'SELF'],
      ['to a stranger', 'carol', 'NOT_FRIENDS'],
      ['to an unknown id', 'ghost', 'UNKNOWN_USER'],
      ['to a numeric id', 'number', 'INVALID_ARGS'],
    ])('refuses a request %s', async (_name, who, reason) => {
      const sender = await connect(alice);
      const carolSocket = await connect(carol);
      const target = { self: alice.id, carol: carol.id, ghost: 'user_ghost', number: 42 }[who];
      sender.sendJson(request(alice, target));
      expect((await sender.next('failedtorequestinvite')).reason).toBe(reason);
      await settle(50);
      expect(carolSocket.count('gotinviterequest')).toBe(0);
    });

    it('answers a burst of requests once each, in order, and checks a long friend list', async () => {
      // Bob has 18 friends, past the size where the friend check builds a set.
      const others: Account[] = [];
      for (let i = 0; i < 17; i++) {
        const friend = await signUp(host, `friend${i}`);
        await befriend(friend, bob);
        others.push(friend);
      }
      await befriend(alice, others[0]!);
      await befriend(alice, others[1]!);
      const bobSocket = await connect(bob);
      const [f0, f1] = [await connect(others[0]!), await connect(others[1]!)];
      // One socket, three requests in one go: their answers come from one history write.
      const sender = await connect(alice);
      for (const target of [bob, others[0]!, others[1]!]) sender.sendJson(request(alice, target.id));
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await sender.next('sentinviterequest'));
      expect(answers.map((a) => a.targetUserId)).toEqual([bob.id, others[0]!.id, others[1]!.id]);
      expect(new Set(answers.map((a) => a.requestId)).size).toBe(3);
      expect((await f0.next('gotinviterequest')).requestId).toBe(answers[1]!.requestId);
      expect((await f1.next('gotinviterequest')).requestId).toBe(answers[2]!.requestId);
      // Every friend of Bob reaches him; a stranger does not.
      for (const friend of others.slice(2)) {
        (await connect(friend)).sendJson(request(friend, bob.id));
      }
      const carolSocket = await connect(carol);
      carolSocket.sendJson(request(carol, bob.id));
      expect((await carolSocket.next('failedtorequestinvite')).reason).toBe('NOT_FRIENDS');
      const from = new Set<unknown>();
      for (let i = 0; i < 16; i++) from.add((await bobSocket.next('gotinviterequest')).fromUserId);
      expect(from).toEqual(new Set([alice.id, ...others.slice(2).map((friend) => friend.id)]));
      await settle(50);
      expect(bobSocket.count('gotinviterequest')).toBe(0);
      expect(sender.count('sentinviterequest')).toBe(0);
    });

    it('refuses a request to a user who blocked you without saying so', async () => {
      expectOk(
        await host.post('blockUser', { userid: bob.id, tokenContent: bob.token, targetUserId: alice.id }),
      );
      const sender = await connect(alice);
      const target = await connect(bob);
      sender.sendJson(request(alice, bob.id));
      expect((await sender.next('failedtorequestinvite')).reason).toBe('NOT_FRIENDS');
      await settle(50);
      expect(target.count('gotinviterequest')).toBe(0);
    });

    it('refuses a request to a friend who is offline or Do Not Disturb', async () => {
      const sender = await connect(alice);
      sender.sendJson(request(alice, bob.id));
      expect((await sender.next('failedtorequestinvite')).reason).toBe('OFFLINE');
      const target = await connect(bob);
      expectOk(await host.post('updateBio', { userid: bob.id, tokenContent: bob.token, bio: { Status: 4 } }));
      sender.sendJson(request(alice, bob.id));
      expect((await sender.next('failedtorequestinvite')).reason).toBe('DO_NOT_DISTURB');
      await settle(50);
      expect(target.count('gotinviterequest')).toBe(0);
    });

    it('rate-limits repeated requests to the same target until the cooldown passes', async () => {
      const sender = await connect(alice);
      const target = await connect(bob);
      sender.sendJson(request(alice, bob.id));
      await target.next('gotinviterequest');
      sender.sendJson(request(alice, bob.id));
      expect(await sender.next('failedtorequestinvite')).toEqual({
        targetUserId: bob.id,
        reason: 'RATE_LIMITED',
        retryAfter: 30,
      });
      clock.advance(30);
      sender.sendJson(request(alice, bob.id));
      await target.next('gotinviterequest');
    });

    it('shares seen and dismissed states with the other sockets, and expires unanswered requests', async () => {
      const sender = await connect(alice);
      const [b1, b2] = [await connect(bob), await connect(bob)];
      sender.sendJson(request(alice, bob.id));
      const { requestId } = await b1!.next('gotinviterequest');
      const seen = expectOk(
        await host.post('updateInviteRequest', {
          userid: bob.id,
          tokenContent: bob.token,
          requestId,
          state: 'seen',
        }),
      );
      expect(seen.InviteRequest).toMatchObject({ requestId, state: 'seen' });
      expect(((await b2!.next('inviterequestupdated')).request as { state: string }).state).toBe('seen');
      expectOk(
        await host.post('updateInviteRequest', {
          userid: bob.id,
          tokenContent: bob.token,
          requestId,
          state: 'dismissed',
        }),
      );
      expect(((await b1!.next('inviterequestupdated')).request as { state: string }).state).toBe('seen');
      expect(((await b1!.next('inviterequestupdated')).request as { state: string }).state).toBe('dismissed');
      // Seen never turns a dismissed request back.
      expectOk(
        await host.post('updateInviteRequest', {
          userid: bob.id,
          tokenContent: bob.token,
          requestId,
          state: 'seen',
        }),
      );
      const [only] = expectOk(await host.post('inviteRequests', { userid: bob.id, tokenContent: bob.token }))
        .InviteRequests as Array<{ state: string }>;
      expect(only!.state).toBe('dismissed');

      clock.advance(30);
      sender.sendJson(request(alice, bob.id));
      await b1!.next('gotinviterequest');
      // The history shows a request once it is durable, which is when the sender hears back (for both requests).
      await sender.next('sentinviterequest');
      await sender.next('sentinviterequest');
      clock.advance(15 * 60);
      const expired = expectOk(
        await host.post('inviteRequests', { userid: bob.id, tokenContent: bob.token, state: 'expired' }),
      ).InviteRequests as unknown[];
      expect(expired).toHaveLength(1);
    });

    it("refuses to update another user's request or an unknown one", async () => {
      const sender = await connect(alice);
      await connect(bob);
      sender.sendJson(request(alice, bob.id));
      const { requestId } = await sender.next('sentinviterequest');
      expectFail(
        await host.post('updateInviteRequest', {
          userid: alice.id,
          tokenContent: alice.token,
          requestId,
          state: 'dismissed',
        }),
        'NOT_FOUND',
      );
      expectFail(
        await host.post('updateInviteRequest', {
          userid: bob.id,
          tokenContent: bob.token,
          requestId,
          state: 'expired',
        }),
        'INVALID_PARAMETERS',
      );
    });
  });

  describe('presence', () => {
    it('shows the stored status while connected and Offline after the last socket closes', async () => {
      const view = async () =>
        (expectOk(await host.post('getUser', { userid: bob.id })).UserData as { Bio: { Status: number } }).Bio
          .Status;
      expect(await view()).toBe(0);
      const b1 = await connect(bob);
      const b2 = await connect(bob);
      expect(await view()).toBe(1);
      b1.close();
      await settle(50);
      expect(await view()).toBe(1);
      b2.close();
      await settle(50);
      expect(await view()).toBe(0);
    });

    it('tells connected friends when a user comes online, changes status and goes offline', async () => {
      const watcher = await connect(alice);
      const stranger = await connect(carol);
      const b = await connect(bob);
      expect(await watcher.next('friendstatus')).toEqual({ userId: bob.id, Status: 1, StatusText: '' });
      expectOk(
        await host.post('updateBio', {
          userid: bob.id,
          tokenContent: bob.token,
          bio: { Status: 3, StatusText: 'party!' },
        }),
      );
      expect(await watcher.next('friendstatus')).toEqual({ userId: bob.id, Status: 3, StatusText: 'party!' });
      b.close();
      expect(await watcher.next('friendstatus')).toEqual({ userId: bob.id, Status: 0, StatusText: 'party!' });
      await settle(50);
      expect(stranger.count('friendstatus')).toBe(0);
    });
  });
});

describe('separate socket port', () => {
  it('serves the socket on its own port when configured and advertises it', async () => {
    const host = await startHost({ socket: { port: 0 } });
    try {
      const info = expectOk(await host.get('getSocketInfo')) as { Port: number };
      expect(info.Port).not.toBe(host.server.port);
      expect(info.Port).toBe(host.server.socketPort);
      const alice = await signUp(host, 'alice');
      const socket = await TestSocket.verified(`http://127.0.0.1:${info.Port}`, alice.id, alice.token);
      socket.close();
      const plain = await fetch(`http://127.0.0.1:${info.Port}/`);
      expect(plain.status).toBe(426);
    } finally {
      await host.close();
    }
  });
});
