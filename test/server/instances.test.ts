import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestGameServer } from '../../server/tools/test-game-server.js';
import { expectFail, expectOk, signUp, startHost, type Account, type TestHost, editUser } from './helpers.js';
import { settle, TestSocket } from './socket-client.js';

const GS_TOKEN = 'lan-game-server-secret';

describe('instances and game servers', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  let carol: Account;
  let dave: Account;
  let worldId: string;
  const closers: Array<{ close(): void }> = [];

  async function user(account: Account): Promise<TestSocket> {
    const socket = await TestSocket.verified(host.server.url, account.id, account.token);
    closers.push(socket);
    return socket;
  }
  async function gameServer(
    options: Partial<Parameters<typeof TestGameServer.connect>[0]> = {},
  ): Promise<TestGameServer> {
    const gs = await TestGameServer.connect({ url: host.server.url, serverToken: GS_TOKEN, ...options });
    closers.push(gs);
    return gs;
  }
  async function befriend(a: Account, b: Account): Promise<void> {
    expectOk(
      await host.post('sendFriendRequest', { userid: a.id, tokenContent: a.token, targetUserId: b.id }),
    );
    expectOk(
      await host.post('acceptFriendRequest', { userid: b.id, tokenContent: b.token, targetUserId: a.id }),
    );
  }
  const msg = (from: Account, message: string, args: Record<string, unknown>) => ({
    userId: from.id,
    tokenContent: from.token,
    message,
    args,
  });
  const publicView = async (account: Account) =>
    expectOk(await host.post('getUser', { userid: account.id })).UserData as {
      isInWorld: boolean;
      Bio: { Status: number };
    };

  /** Alice opens a ready instance of her world; returns the instance id. */
  async function openInstance(creator: TestSocket, gs: TestGameServer, publicity = 2): Promise<string> {
    creator.sendJson(
      msg(alice, 'RequestNewInstance', { worldId, instancePublicity: publicity, instanceProtocol: 0 }),
    );
    await creator.next('createdtemporaryinstance');
    const opened = await creator.next('instanceopened');
    expect(opened).toMatchObject({
      gameServerId: gs.gameServerId,
      worldId,
      InstancePublicity: publicity,
      Moderators: [alice.id],
    });
    expect(typeof opened.tempUserToken).toBe('string');
    const instanceId = opened.instanceId as string;
    await gs.next(
      'updatedinstance',
      (r) => (r.instanceMeta as { InstanceId: string; Readied: boolean }).Readied,
    );
    return instanceId;
  }

  beforeEach(async () => {
    host = await startHost({ gameServerTokens: [GS_TOKEN], instances: { requestTimeoutMs: 300 } });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
    carol = await signUp(host, 'carol');
    dave = await signUp(host, 'dave');
    await befriend(alice, bob);
    await befriend(alice, dave);
    const world = expectOk(
      await host.post('upload', {
        userid: alice.id,
        tokenContent: alice.token,
        file: { name: 'plaza.hnw', data: Buffer.from('world').toString('base64') },
        worldMeta: {
          Publicity: 1,
          Name: 'Plaza',
          Description: '',
          Tags: [],
          ThumbnailURL: '',
          IconURLs: [],
          ServerScripts: [],
          BuildPlatform: 0,
        },
      }),
    );
    worldId = world.WorldId as string;
  });
  afterEach(async () => {
    for (const c of closers.splice(0)) c.close();
    await host.close();
  });

  describe('game-server sockets', () => {
    it('authenticates with a configured token, answers sendauth and is listed', async () => {
      const gs = await gameServer();
      expect(gs.gameServerId).toMatch(/^gameserver_[0-9a-f-]{36}$/);
      expect(expectOk(await host.get('gameServers'))).toEqual({
        GameServers: [{ GameServerId: gs.gameServerId, Region: expect.objectContaining({ City: '' }) }],
      });
      gs.close();
      await settle(50);
      expect(expectOk(await host.get('gameServers'))).toEqual({ GameServers: [] });
    });

    it('closes a game-server socket with a wrong token', async () => {
      await expect(TestGameServer.connect({ url: host.server.url, serverToken: 'wrong' })).rejects.toThrow(
        /4004/,
      );
    });

    it('accepts any game server when the host allows it', async () => {
      const open = await startHost({ allowAnyGameServer: true });
      try {
        const gs = await TestGameServer.connect({ url: open.server.url, serverToken: '' });
        expect(gs.gameServerId).toMatch(/^gameserver_/);
        gs.close();
      } finally {
        await open.close();
      }
    });

    it('lets admins add and revoke tokens; a revoked token closes its servers', async () => {
      expectFail(
        await host.post('addGameServerToken', { userid: bob.id, tokenContent: bob.token, label: 'x' }),
        'FORBIDDEN',
      );
      await editUser(host, alice.id, (draft) => {
        draft.Rank = 5;
      });
      const added = expectOk(
        await host.post('addGameServerToken', {
          userid: alice.id,
          tokenContent: alice.token,
          label: 'Basement PC',
        }),
      );
      const token = added.token as string;
      const record = added.GameServerToken as { id: string; label: string };
      expect(record.label).toBe('Basement PC');
      const listed = expectOk(
        await host.post('gameServerTokens', { userid: alice.id, tokenContent: alice.token }),
      );
      expect(JSON.stringify(listed)).not.toContain(token);
      const gs = await TestGameServer.connect({ url: host.server.url, serverToken: token });
      closers.push(gs);
      const closed = new Promise<number>((resolve) => gs.on('close', resolve));
      expectOk(
        await host.post('revokeGameServerToken', {
          userid: alice.id,
          tokenContent: alice.token,
          tokenId: record.id,
        }),
      );
      expect(await closed).toBe(4004);
      await expect(TestGameServer.connect({ url: host.server.url, serverToken: token })).rejects.toThrow(
        /4004/,
      );
    });

    it('closes a game-server socket that sends a user message, and ignores game-server messages from users', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      a.sendJson(msg(alice, 'claiminstancerequest', { TemporaryId: 'x' }));
      expect((await a.next('error')).code).toBe('NOT_ALLOWED');
      expect(a.closed).toBeNull();
      const closed = new Promise<number>((resolve) => gs.on('close', resolve));
      gs.send('joininstance', {}, { userId: alice.id });
      expect(await closed).toBe(4005);
    });

    it('answers a claim for an unknown temporary id', async () => {
      const gs = await gameServer();
      gs.send('claiminstancerequest', { TemporaryId: 'nope', Uri: 'x' });
      expect(await gs.next('failedtoclaiminstancerequest')).toMatchObject({
        TemporaryId: 'nope',
        reason: 'UNKNOWN_INSTANCE',
      });
    });
  });

  describe('lifecycle', () => {
    it('opens an instance for the world owner, which marks them in world unless Do Not Disturb', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      await openInstance(a, gs);
      const claimed = await gs.next('tempusertoken');
      expect(claimed).toMatchObject({ userId: alice.id });
      expect(await publicView(alice)).toMatchObject({ isInWorld: true, Bio: { Status: 1 } });
      expectOk(
        await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio: { Status: 4 } }),
      );
      expect((await publicView(alice)).isInWorld).toBe(false);
    });

    it('refuses an instance of an unknown world, of a private world of someone else, or with no game server', async () => {
      const a = await user(alice);
      a.sendJson(msg(alice, 'RequestNewInstance', { worldId, instancePublicity: 0, instanceProtocol: 0 }));
      expect((await a.next('failedtocreatetemporaryinstance')).reason).toBe('NO_GAME_SERVER');
      await gameServer();
      const b = await user(bob);
      b.sendJson(msg(bob, 'RequestNewInstance', { worldId, instancePublicity: 0, instanceProtocol: 0 }));
      expect((await b.next('failedtocreatetemporaryinstance')).reason).toBe('NOT_ALLOWED');
      b.sendJson(
        msg(bob, 'RequestNewInstance', { worldId: 'world_nope', instancePublicity: 0, instanceProtocol: 0 }),
      );
      expect((await b.next('failedtocreatetemporaryinstance')).reason).toBe('UNKNOWN_WORLD');
    });

    it('gives up on a request no game server claims', async () => {
      await gameServer({ autoClaim: false });
      const a = await user(alice);
      a.sendJson(msg(alice, 'RequestNewInstance', { worldId, instancePublicity: 0, instanceProtocol: 0 }));
      await a.next('createdtemporaryinstance');
      expect((await a.next('failedtocreatetemporaryinstance', 2000)).reason).toBe('TIMED_OUT');
    });

    it('lets a friend join a Friends instance and keeps a stranger out', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs);
      const b = await user(bob);
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      const joined = await b.next('joinedinstance');
      expect(joined).toMatchObject({
        gameServerId: gs.gameServerId,
        instanceId,
        worldId,
        instanceCreatorId: alice.id,
        InstancePublicity: 2,
      });
      expect(await gs.next('tempusertoken', (r) => r.userId === bob.id)).toMatchObject({
        tempUserToken: joined.tempUserToken,
        instanceId,
      });
      let update = await a.next('updatedinstance');
      const members = () => (update.instanceMeta as { ConnectedUsers: string[] }).ConnectedUsers;
      while (members().length < 2) update = await a.next('updatedinstance');
      expect((update.instanceMeta as { ConnectedUsers: string[] }).ConnectedUsers).toEqual([
        alice.id,
        bob.id,
      ]);
      expect((await publicView(bob)).isInWorld).toBe(true);
      const listed = expectOk(await host.post('instances', { userid: bob.id, tokenContent: bob.token }));
      expect(listed.SafeInstances).toEqual([
        expect.objectContaining({
          InstanceId: instanceId,
          WorldId: worldId,
          ConnectedUsers: [alice.id, bob.id],
        }),
      ]);
      expect(expectOk(await host.get(`instances/${worldId}`)).SafeInstances).toEqual([]);

      const c = await user(carol);
      c.sendJson(msg(carol, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect((await c.next('failedtojoininstance')).reason).toBe('NOT_WELCOME');
      expect(
        expectOk(await host.post('instances', { userid: carol.id, tokenContent: carol.token })).SafeInstances,
      ).toEqual([]);
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect((await b.next('failedtojoininstance')).reason).toBe('ALREADY_IN_INSTANCE');
    });

    it('lists Anyone instances by world', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs, 0);
      expect(expectOk(await host.get(`instances/${worldId}`)).SafeInstances).toEqual([
        expect.objectContaining({ InstanceId: instanceId }),
      ]);
    });

    it('refuses joining an unknown, unready or removed instance', async () => {
      const gs = await gameServer({ autoReady: false });
      const a = await user(alice);
      const b = await user(bob);
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId: 'instance_nope' }));
      expect((await b.next('failedtojoininstance')).reason).toBe('UNKNOWN_INSTANCE');
      a.sendJson(msg(alice, 'RequestNewInstance', { worldId, instancePublicity: 0, instanceProtocol: 0 }));
      const instanceId = (await a.next('instanceopened')).instanceId as string;
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect((await b.next('failedtojoininstance')).reason).toBe('NOT_READY');
      gs.send('instanceready', { instanceId });
      gs.send('removeinstance', { instanceId });
      expect(await a.next('leftinstance')).toEqual({ gameServerId: gs.gameServerId, instanceId });
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect((await b.next('failedtojoininstance')).reason).toBe('UNKNOWN_INSTANCE');
      expect((await publicView(alice)).isInWorld).toBe(false);
    });

    it('keeps out a user the game server banned from the instance', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs, 0);
      const b = await user(bob);
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      await b.next('joinedinstance');
      gs.send('banuser', { instanceId, userId: bob.id });
      expect(await gs.next('banneduser')).toEqual({ instanceId, userId: bob.id });
      await b.next('leftinstance');
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect((await b.next('failedtojoininstance')).reason).toBe('BANNED_FROM_INSTANCE');
    });

    it('leaves an instance, and refuses leaving one you are not in', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs, 0);
      const b = await user(bob);
      b.sendJson(msg(bob, 'LeaveInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect((await b.next('failedtoleaveinstance')).reason).toBe('NOT_IN_INSTANCE');
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      await b.next('joinedinstance');
      b.sendJson(msg(bob, 'LeaveInstance', { gameServerId: gs.gameServerId, instanceId }));
      expect(await b.next('leftinstance')).toEqual({ gameServerId: gs.gameServerId, instanceId });
      expect(await gs.next('kickeduser', (r) => r.userId === bob.id)).toEqual({ instanceId, userId: bob.id });
      expect((await publicView(bob)).isInWorld).toBe(false);
    });

    it('takes a user whose last socket closed out of their instances', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs, 0);
      a.close();
      expect(await gs.next('kickeduser', (r) => r.userId === alice.id)).toEqual({
        instanceId,
        userId: alice.id,
      });
      expect((await publicView(alice)).isInWorld).toBe(false);
    });

    it('ends the instances of a game server that disconnects, telling the users inside', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs, 0);
      const b = await user(bob);
      b.sendJson(msg(bob, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      await b.next('joinedinstance');
      gs.close();
      expect(await b.next('leftinstance')).toEqual({ gameServerId: gs.gameServerId, instanceId });
      await a.next('leftinstance');
      expect((await publicView(bob)).isInWorld).toBe(false);
      expect(host.server.instances.count).toBe(0);
    });
  });

  describe('sendinvite', () => {
    it('delivers gotinvite to a friend and marks their invite request answered', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs);
      const d = await user(dave);
      d.sendJson(msg(dave, 'RequestInvite', { targetUserId: alice.id }));
      const request = await a.next('gotinviterequest');
      a.sendJson(
        msg(alice, 'SendInvite', {
          targetUserId: dave.id,
          gameServerId: gs.gameServerId,
          toInstanceId: instanceId,
          assetToken: 'tok',
        }),
      );
      expect(await d.next('gotinvite')).toEqual({
        fromUserId: alice.id,
        toGameServerId: gs.gameServerId,
        toInstanceId: instanceId,
        worldId,
        assetToken: 'tok',
      });
      expect(await a.next('sentinvite')).toEqual({ targetUserId: dave.id, instanceId });
      const updated = await a.next('inviterequestupdated');
      expect(updated.request).toMatchObject({ requestId: request.requestId, state: 'answered' });
      // Invited to a Friends-only instance, dave may now join even as a friend of a friend.
      d.sendJson(msg(dave, 'JoinInstance', { gameServerId: gs.gameServerId, instanceId }));
      await d.next('joinedinstance');
    });

    it('goes on serving when marking the invite request answered fails in the background', async () => {
      const escaped: unknown[] = [];
      const onEscape = (error: unknown) => escaped.push(error);
      process.on('unhandledRejection', onEscape);
      try {
        // As a history write that fails (a full disk, PostgreSQL away) would.
        const invites = host.server.invites as { markAnswered: (a: string, b: string) => Promise<void> };
        invites.markAnswered = () => Promise.reject(new Error('the history could not be written'));
        const gs = await gameServer();
        const a = await user(alice);
        const instanceId = await openInstance(a, gs);
        const d = await user(dave);
        a.sendJson(
          msg(alice, 'SendInvite', {
            targetUserId: dave.id,
            gameServerId: gs.gameServerId,
            toInstanceId: instanceId,
          }),
        );
        await d.next('gotinvite');
        await a.next('sentinvite');
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(escaped).toEqual([]);
        // Still serving.
        expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }));
      } finally {
        process.off('unhandledRejection', onEscape);
      }
    });

    it('refuses an invite from outside the instance, to a non-friend, or to someone offline', async () => {
      const gs = await gameServer();
      const a = await user(alice);
      const instanceId = await openInstance(a, gs, 0);
      const b = await user(bob);
      const c = await user(carol);
      const invite = (from: Account, to: Account) =>
        msg(from, 'SendInvite', {
          targetUserId: to.id,
          gameServerId: gs.gameServerId,
          toInstanceId: instanceId,
          assetToken: '',
        });
      b.sendJson(invite(bob, alice));
      expect((await b.next('failedtosendinvite')).reason).toBe('NOT_IN_INSTANCE');
      a.sendJson(invite(alice, carol));
      expect((await a.next('failedtosendinvite')).reason).toBe('NOT_FRIENDS');
      a.sendJson(invite(alice, dave));
      expect((await a.next('failedtosendinvite')).reason).toBe('OFFLINE');
      await settle(50);
      expect(c.count('gotinvite') + b.count('gotinvite')).toBe(0);
    });
  });
});
