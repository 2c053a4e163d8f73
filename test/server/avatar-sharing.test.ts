import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectOk, signUp, startHost, type Account, type TestHost } from './helpers.js';
import { TestSocket } from './socket-client.js';
import { avatarMeta, upload } from './upload-helpers.js';

/** shareavatartoken as HypernexSharp's user socket sends it (PascalCase name, credentials in every frame). */
function share(socket: TestSocket, from: Account, args: Record<string, unknown>): void {
  socket.sendJson({ userId: from.id, tokenContent: from.token, message: 'ShareAvatarToken', args });
}

describe('shareavatartoken on the user socket', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  let avatarId: string;
  let assetToken: string;
  const sockets: TestSocket[] = [];
  /** Alice removes the avatar's asset token (manageAssetToken action 1). */
  const removeToken = async (): Promise<void> => {
    expectOk(
      await host.post('manageAssetToken', {
        userid: alice.id,
        tokenContent: alice.token,
        action: 1,
        assetId: avatarId,
        assetToken,
      }),
    );
  };
  const open = async (who: Account): Promise<TestSocket> => {
    const socket = await TestSocket.verified(host.server.url, who.id, who.token);
    sockets.push(socket);
    return socket;
  };

  beforeEach(async () => {
    host = await startHost();
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
    const uploaded = expectOk(
      await upload(
        host,
        alice,
        { name: 'secret.hna', data: 'avatar bytes' },
        { avatarMeta: avatarMeta({ Publicity: 1, Name: 'Secret' }) },
      ),
    );
    avatarId = uploaded.AvatarId as string;
    const added = expectOk(
      await host.post('manageAssetToken', {
        userid: alice.id,
        tokenContent: alice.token,
        action: 0,
        assetId: avatarId,
      }),
    );
    assetToken = (added.token as { content: string }).content;
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await host.close();
  });

  it('delivers sharedavatartoken to the target and the sender, and the token opens the OwnerOnly build', async () => {
    const aliceSocket = await open(alice);
    const bobSocket = await open(bob);
    share(aliceSocket, alice, { targetUserId: bob.id, avatarId, avatarToken: assetToken });
    const expected = { fromUserId: alice.id, targetUserId: bob.id, avatarId, avatarToken: assetToken };
    expect(await bobSocket.next('sharedavatartoken')).toEqual(expected);
    expect(await aliceSocket.next('sharedavatartoken')).toEqual(expected);
    // What bob received is what the game client uses: the build's file through the asset token.
    const meta = expectOk(await host.get(`meta/avatar/${avatarId}`)).Meta as {
      Builds: Array<{ FileId: string }>;
    };
    const res = await fetch(
      `${host.server.url}/api/v1/file/${alice.id}/${meta.Builds[0]!.FileId}/${assetToken}`,
    );
    expect(await res.text()).toBe('avatar bytes');
  });

  it('shares with a player who is not a friend, as the game client shares with everyone in its instance', async () => {
    const aliceSocket = await open(alice);
    const bobSocket = await open(bob);
    expect((await host.server.users.get(bob.id))!.Friends).not.toContain(alice.id);
    share(aliceSocket, alice, { targetUserId: bob.id, avatarId, avatarToken: assetToken });
    expect((await bobSocket.next('sharedavatartoken')).fromUserId).toBe(alice.id);
  });

  const refusals: Array<[string, () => Record<string, unknown>, string, (() => Promise<void>)?]> = [
    [
      'the target is not connected',
      () => ({ targetUserId: bob.id, avatarId, avatarToken: assetToken }),
      'OFFLINE',
    ],
    ['an argument is missing', () => ({ targetUserId: bob.id, avatarId }), 'INVALID_ARGS'],
    [
      'an argument is not a string',
      () => ({ targetUserId: bob.id, avatarId, avatarToken: 7 }),
      'INVALID_ARGS',
    ],
    [
      'the target is the sender',
      () => ({ targetUserId: alice.id, avatarId, avatarToken: assetToken }),
      'SELF',
    ],
    [
      'the target does not exist',
      () => ({
        targetUserId: 'user_00000000-0000-4000-8000-000000000000',
        avatarId,
        avatarToken: assetToken,
      }),
      'UNKNOWN_USER',
    ],
    [
      'the avatar does not exist',
      () => ({
        targetUserId: bob.id,
        avatarId: 'avatar_00000000-0000-4000-8000-000000000000',
        avatarToken: assetToken,
      }),
      'UNKNOWN_AVATAR',
    ],
    [
      'the token is not a live asset token of the avatar',
      () => ({ targetUserId: bob.id, avatarId, avatarToken: 'made-up' }),
      'INVALID_ASSET_TOKEN',
    ],
  ];

  it.each(refusals)(
    'answers failedtoshareavatartoken to the sender only when %s',
    async (_name, args, reason) => {
      const aliceSocket = await open(alice);
      // bob is connected except in the OFFLINE case.
      const bobSocket = reason === 'OFFLINE' ? null : await open(bob);
      const sent = args();
      share(aliceSocket, alice, sent);
      const failed = await aliceSocket.next('failedtoshareavatartoken');
      expect(failed.reason).toBe(reason);
      expect(failed).toMatchObject({
        targetUserId: typeof sent.targetUserId === 'string' ? sent.targetUserId : '',
        avatarId: typeof sent.avatarId === 'string' ? sent.avatarId : '',
        avatarToken: typeof sent.avatarToken === 'string' ? sent.avatarToken : '',
      });
      if (bobSocket) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(bobSocket.count('sharedavatartoken')).toBe(0);
      }
      expect(aliceSocket.count('sharedavatartoken')).toBe(0);
    },
  );

  it('refuses sharing an avatar of someone else, even with a live token of it', async () => {
    const bobSocket = await open(bob);
    await open(alice);
    share(bobSocket, bob, { targetUserId: alice.id, avatarId, avatarToken: assetToken });
    expect((await bobSocket.next('failedtoshareavatartoken')).reason).toBe('NOT_OWNER');
  });

  it('refuses sharing with a player who blocked the sender', async () => {
    expectOk(
      await host.post('blockUser', { userid: bob.id, tokenContent: bob.token, targetUserId: alice.id }),
    );
    const aliceSocket = await open(alice);
    const bobSocket = await open(bob);
    share(aliceSocket, alice, { targetUserId: bob.id, avatarId, avatarToken: assetToken });
    expect((await aliceSocket.next('failedtoshareavatartoken')).reason).toBe('BLOCKED');
    expect(bobSocket.count('sharedavatartoken')).toBe(0);
  });

  it('takes back what a delivered token opened once the owner removes the token', async () => {
    const aliceSocket = await open(alice);
    const bobSocket = await open(bob);
    share(aliceSocket, alice, { targetUserId: bob.id, avatarId, avatarToken: assetToken });
    await bobSocket.next('sharedavatartoken');
    // Asked with no credentials, as the game client asks, from the machine of bob's socket (the owner gone).
    aliceSocket.close();
    const builds = async () =>
      ((expectOk(await host.get(`meta/avatar/${avatarId}`)).Meta as { Builds?: unknown[] }).Builds ?? [])
        .length;
    expect(await builds()).toBe(1);
    await removeToken();
    await expect.poll(builds, { timeout: 3000 }).toBe(0);
  });

  it('refuses a token that was removed', async () => {
    await removeToken();
    const aliceSocket = await open(alice);
    await open(bob);
    share(aliceSocket, alice, { targetUserId: bob.id, avatarId, avatarToken: assetToken });
    expect((await aliceSocket.next('failedtoshareavatartoken')).reason).toBe('INVALID_ASSET_TOKEN');
  });
});
