import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Secret, TOTP } from 'otpauth';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestGameServer } from '../../server/tools/test-game-server.js';
import { FaultyFs } from './faulty-fs.js';
import {
  editUser,
  expectFail,
  expectOk,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  type Account,
  type Answer,
  type TestHost,
} from './helpers.js';
import { TestSocket } from './socket-client.js';
import { avatarMeta, blobTree, upload, worldMeta } from './upload-helpers.js';

const GS_TOKEN = 'lan-game-server-secret';

/** Loopback addresses stand for machines on the LAN: the host tells them apart by address as it would. */
const OWNER_MACHINE = '127.0.0.2';
const FRIEND_MACHINE = '127.0.0.3';
const STRANGER_MACHINE = '127.0.0.4';
const GAME_SERVER_MACHINE = '127.0.0.5';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** A plain HTTP GET from a chosen local address (as another machine would ask), with optional headers. */
function getFrom(
  host: TestHost,
  path: string,
  from = '127.0.0.1',
  headers: Record<string, string> = {},
): Promise<Reply> {
  const url = new URL(`${host.server.url}/api/v1/${path}`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        localAddress: from,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const json = (reply: Reply): Answer => JSON.parse(reply.text) as Answer;

/** A refused file download: the JSON envelope, no attachment. */
function expectRefusedFile(reply: Reply, secret: string): void {
  expect(reply.status).toBe(200);
  expect(reply.headers['content-disposition']).toBeUndefined();
  expect(reply.text).not.toContain(secret);
  expect(json(reply).success).toBe(false);
}

/** A verified user socket opened from `from`. */
async function socketFrom(host: TestHost, account: Account, from: string): Promise<TestSocket> {
  const socket = await TestSocket.open(host.server.url, { localAddress: from });
  socket.sendJson({ userId: account.id, tokenContent: account.token, message: 'auth', args: {} });
  await socket.next('authenticated');
  return socket;
}

const as = (account: Account, fields: Record<string, unknown> = {}) => ({
  userid: account.id,
  tokenContent: account.token,
  ...fields,
});

describe('access control', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  let carol: Account;
  const closers: Array<{ close(): void }> = [];
  const fileUrl = (userId: string, fileId: string) => `${host.server.url}/api/v1/file/${userId}/${fileId}`;

  async function script(owner: Account, text = 'print("secret plan")'): Promise<string> {
    return (
      expectOk(await upload(host, owner, { name: 'logic.js', data: text })).UploadData as { FileId: string }
    ).FileId;
  }

  async function world(owner: Account, scripts: string[], publicity = 0): Promise<string> {
    return expectOk(
      await upload(
        host,
        owner,
        { name: 'plaza.hnw', data: 'world bytes' },
        {
          worldMeta: worldMeta({
            Publicity: publicity,
            ServerScripts: scripts.map((id) => fileUrl(owner.id, id)),
          }),
        },
      ),
    ).WorldId as string;
  }

  async function gameServer(
    options: Partial<Parameters<typeof TestGameServer.connect>[0]> = {},
  ): Promise<TestGameServer> {
    const gs = await TestGameServer.connect({ url: host.server.url, serverToken: GS_TOKEN, ...options });
    closers.push(gs);
    return gs;
  }

  /** `creator` opens an instance of `worldId`; resolves once the game server holds it. */
  async function openInstance(
    creator: Account,
    socket: TestSocket,
    gs: TestGameServer,
    worldId: string,
  ): Promise<{ instanceId: string }> {
    socket.sendJson({
      userId: creator.id,
      tokenContent: creator.token,
      message: 'RequestNewInstance',
      args: { worldId, instancePublicity: 0, instanceProtocol: 0, gameServerId: gs.gameServerId },
    });
    const opened = await socket.next('instanceopened');
    expect(opened.gameServerId).toBe(gs.gameServerId);
    return { instanceId: opened.instanceId as string };
  }

  async function start(overrides: Parameters<typeof startHost>[0] = {}, clock = manualClock()) {
    host = await startHost({ gameServerTokens: [GS_TOKEN], ...overrides }, { clock });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
    carol = await signUp(host, 'carol');
    return clock;
  }

  afterEach(async () => {
    for (const c of closers.splice(0)) c.close();
    await host?.close();
  });

  describe('server scripts', () => {
    beforeEach(async () => {
      await start();
    });

    it('does not serve a private script to someone who only read a game-server id from the public list', async () => {
      const scriptId = await script(alice);
      await world(alice, [scriptId]);
      const gs = await gameServer();
      const listed = expectOk(await host.get('gameServers')).GameServers as Array<{ GameServerId: string }>;
      expect(listed.map((g) => g.GameServerId)).toEqual([gs.gameServerId]);

      for (const path of [
        `file/${alice.id}/${scriptId}/${gs.gameServerId}`,
        `file/${alice.id}/${scriptId}/${gs.gameServerId}/guess`,
        `file/${alice.id}/${scriptId}`,
      ]) {
        expectRefusedFile(await getFrom(host, path, STRANGER_MACHINE), 'secret plan');
      }
    });

    it('serves a script to the game server hosting its world, with the id and token from sendauth', async () => {
      const scriptId = await script(alice);
      const worldId = await world(alice, [scriptId]);
      const gs = await gameServer();
      expect(gs.gameServerToken).not.toBe('');
      const path = `file/${alice.id}/${scriptId}/${gs.gameServerId}/${encodeURIComponent(gs.gameServerToken)}`;
      // Before it hosts an instance of the world, even its own proof reads nothing.
      expectRefusedFile(await getFrom(host, path), 'secret plan');

      const aliceSocket = await socketFrom(host, alice, '127.0.0.1');
      closers.push(aliceSocket);
      await openInstance(alice, aliceSocket, gs, worldId);
      const served = await getFrom(host, path);
      expect(served.text).toBe('print("secret plan")');
      expect(served.headers['content-disposition']).toContain('attachment');

      // Another game server with a valid token of its own, hosting nothing of this world, reads nothing.
      const other = await gameServer();
      const otherPath = `file/${alice.id}/${scriptId}/${other.gameServerId}/${encodeURIComponent(other.gameServerToken)}`;
      expectRefusedFile(await getFrom(host, otherPath), 'secret plan');
      // Nor does the hosting game server's id with another server's token.
      const mixed = `file/${alice.id}/${scriptId}/${gs.gameServerId}/${encodeURIComponent(`${gs.gameServerToken}x`)}`;
      expectRefusedFile(await getFrom(host, mixed), 'secret plan');
    });

    it('refuses any token with a listed id when the host accepts any game server, and gives tokenless servers a proof', async () => {
      await host.close();
      await start({ allowAnyGameServer: true, gameServerTokens: [] });
      const scriptId = await script(alice);
      const worldId = await world(alice, [scriptId]);
      const gs = await gameServer({ serverToken: '' });
      // The attacker's guess is refused whatever it is.
      for (const guess of ['', 'x', GS_TOKEN]) {
        const reply = await getFrom(
          host,
          `file/${alice.id}/${scriptId}/${gs.gameServerId}/${guess}`,
          STRANGER_MACHINE,
        );
        expect(reply.text).not.toContain('secret plan');
        expect(reply.headers['content-disposition']).toBeUndefined();
      }
      // A tokenless game server still gets a proof of its own, and with it the script of the world it hosts.
      expect(gs.gameServerToken.length).toBeGreaterThanOrEqual(32);
      const aliceSocket = await socketFrom(host, alice, '127.0.0.1');
      closers.push(aliceSocket);
      await openInstance(alice, aliceSocket, gs, worldId);
      const served = await getFrom(
        host,
        `file/${alice.id}/${scriptId}/${gs.gameServerId}/${encodeURIComponent(gs.gameServerToken)}`,
      );
      expect(served.text).toBe('print("secret plan")');
    });
  });

  describe("removing someone else's content", () => {
    beforeEach(async () => {
      await start();
      await editUser(host, alice.id, (draft) => {
        draft.Rank = 6;
      });
      await editUser(host, bob.id, (draft) => {
        draft.Rank = 4;
      });
    });

    const log = async (moderator: Account) =>
      expectOk(await host.post('moderationLog', as(moderator))) as {
        Total: number;
        Entries: Array<Record<string, unknown>>;
      };

    it("refuses a moderator removing the owner's avatar, world and file, and logs nothing", async () => {
      const avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      const worldId = await world(alice, []);
      const picture = (
        expectOk(await upload(host, alice, { name: 'p.png', data: 'png' })).UploadData as { FileId: string }
      ).FileId;
      const files = await blobTree(host.dir);

      expectFail(await host.post('remove/avatar', as(bob, { avatarid: avatarId })), 'TARGET_RANK_TOO_HIGH');
      expectFail(await host.post('remove/world', as(bob, { worldid: worldId })), 'TARGET_RANK_TOO_HIGH');
      expectFail(await host.post('remove/file', as(bob, { fileid: picture })), 'TARGET_RANK_TOO_HIGH');

      expect(await host.server.uploads.avatar(avatarId)).toBeDefined();
      expect(await host.server.uploads.world(worldId)).toBeDefined();
      expect((await host.server.users.get(alice.id))!.Avatars).toEqual([avatarId]);
      expect(await blobTree(host.dir)).toEqual(files);
      expect((await log(alice)).Total).toBe(0);
      // A user below Moderator is refused as before.
      expectFail(await host.post('remove/file', as(carol, { fileid: picture })), 'NOT_OWNER');
    });

    it("logs a moderator removing a lower-ranked user's avatar, world and file as moderation", async () => {
      const avatarId = expectOk(
        await upload(host, carol, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      const worldId = await world(carol, []);
      const picture = (
        expectOk(await upload(host, carol, { name: 'p.png', data: 'png' })).UploadData as { FileId: string }
      ).FileId;

      expectOk(await host.post('remove/avatar', as(bob, { avatarid: avatarId })), 'Removed avatar!');
      expectOk(await host.post('remove/world', as(bob, { worldid: worldId })), 'Removed world!');
      expectOk(await host.post('remove/file', as(bob, { fileid: picture })), 'Deleted file!');

      expect((await host.server.users.get(carol.id))!.Avatars).toEqual([]);
      expect((await host.server.users.get(carol.id))!.Worlds).toEqual([]);
      expect(await blobTree(host.dir)).toEqual([]);
      const entries = (await log(bob)).Entries;
      expect(entries.map((e) => [e.action, e.moderatorId, e.targetUserId, e.fields])).toEqual([
        ['deletefile', bob.id, carol.id, { fileId: picture }],
        ['deleteworld', bob.id, carol.id, { worldId }],
        ['deleteavatar', bob.id, carol.id, { avatarId }],
      ]);
      // A build stays until its avatar goes, for a moderator too; the refusal logs nothing.
      const kept = expectOk(
        await upload(host, carol, { name: 'b.hna', data: 'y' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      const build = (await host.server.uploads.avatar(kept))!.Builds[0]!.FileId;
      expectFail(await host.post('remove/file', as(bob, { fileid: build })), 'FILE_IN_USE');
      expect((await log(bob)).Total).toBe(3);
      // The owner's own removals are no moderation: nothing more is logged.
      const own = (
        expectOk(await upload(host, carol, { name: 'q.png', data: 'png' })).UploadData as { FileId: string }
      ).FileId;
      expectOk(await host.post('remove/file', as(carol, { fileid: own })), 'Deleted file!');
      expect((await log(bob)).Total).toBe(3);
    });
  });

  describe('a moderator removing content on a failing disk', () => {
    it('removes nothing and logs nothing when the commit cannot be written, then goes through whole', async () => {
      const fs = new FaultyFs();
      host = await startHost({}, { logFileSystem: fs });
      alice = await signUp(host, 'alice');
      bob = await signUp(host, 'bob');
      await editUser(host, bob.id, (draft) => {
        draft.Rank = 4;
      });
      const picture = (
        expectOk(await upload(host, alice, { name: 'p.png', data: 'png' })).UploadData as { FileId: string }
      ).FileId;
      const files = await blobTree(host.dir);
      fs.fault = 'enospc';
      expectFail(await host.post('remove/file', as(bob, { fileid: picture })), 'STORAGE_FULL');
      fs.fault = null;
      expect(await blobTree(host.dir)).toEqual(files);
      expect(expectOk(await host.post('moderationLog', as(bob))).Total).toBe(0);
      expectOk(await host.post('remove/file', as(bob, { fileid: picture })), 'Deleted file!');
      expect(await blobTree(host.dir)).toEqual([]);
      expect(expectOk(await host.post('moderationLog', as(bob))).Total).toBe(1);
    });
  });

  describe('pinning', () => {
    beforeEach(async () => {
      await start();
    });

    it("refuses a world listing someone else's server script, so its owner can still delete it", async () => {
      const scriptId = await script(alice);
      const refused = expectFail(
        await upload(
          host,
          bob,
          { name: 'w.hnw', data: 'w' },
          { worldMeta: worldMeta({ ServerScripts: [fileUrl(alice.id, scriptId)] }) },
        ),
        'INVALID_META',
      );
      expect(refused.result?.error?.fields).toHaveProperty(['worldMeta.ServerScripts.0']);
      expect((await host.server.users.get(bob.id))!.Worlds).toEqual([]);
      expect(await blobTree(host.dir)).toEqual([`files/${alice.id}/${scriptId}.js`]);
      expectOk(await host.post('remove/file', as(alice, { fileid: scriptId })), 'Deleted file!');
    });

    it('refuses a server script that is not a script, or does not exist', async () => {
      const picture = (
        expectOk(await upload(host, bob, { name: 'p.png', data: 'png' })).UploadData as { FileId: string }
      ).FileId;
      for (const url of [
        fileUrl(bob.id, picture),
        fileUrl(bob.id, 'file_00000000-0000-4000-8000-000000000000'),
      ]) {
        expectFail(
          await upload(
            host,
            bob,
            { name: 'w.hnw', data: 'w' },
            { worldMeta: worldMeta({ ServerScripts: [url] }) },
          ),
          'INVALID_META',
        );
      }
    });

    it("never lets a world stored before this rule block its script's owner", async () => {
      const scriptId = await script(alice);
      const bobWorld = await world(bob, []);
      // A world saved by an earlier version could list anyone's script.
      await host.server.store.tx(async (t) => {
        const repo = t.repo<{ Builds: Array<{ ServerScripts: string[] }> }>('worlds');
        const stored = (await repo.get(bobWorld))!;
        repo.put(bobWorld, {
          ...stored,
          Builds: stored.Builds.map((b) => ({ ...b, ServerScripts: [fileUrl(alice.id, scriptId)] })),
        });
      });
      const dir = host.dir;
      await host.server.close();
      host = await startHost({ gameServerTokens: [GS_TOKEN] }, { dir });
      expectOk(await host.post('remove/file', as(alice, { fileid: scriptId })), 'Deleted file!');
    });
  });

  describe('identity confirmation', () => {
    let clock: ReturnType<typeof manualClock>;
    beforeEach(async () => {
      clock = await start({ limits: { loginFailures: 3 } });
    });

    async function turnOn2fa(account: Account): Promise<() => string> {
      const { otpauth_url } = expectOk(await host.post('enable2fa', as(account))) as { otpauth_url: string };
      const secret = new URL(otpauth_url).searchParams.get('secret')!;
      const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 });
      const code = () => totp.generate({ timestamp: clock.now() });
      expectOk(await host.post('verify2fa', as(account, { code: code() })), 'Verified 2FA!');
      return code;
    }

    it('refuses remove2fa with only the session token, and asks for the password and a code', async () => {
      const code = await turnOn2fa(alice);
      const still = async () => expect((await host.server.users.get(alice.id))!.is2FAVerified).toBe(true);

      let answer = expectFail(await host.post('remove2fa', as(alice)), 'CONFIRMATION_REQUIRED');
      expect(answer.result?.error?.fields).toHaveProperty('currentPassword');
      await still();
      answer = expectFail(
        await host.post('remove2fa', as(alice, { currentPassword: PASSWORD })),
        'CONFIRMATION_REQUIRED',
      );
      expect(answer.result?.error?.fields).toHaveProperty('twofacode');
      await still();
      expectFail(
        await host.post('remove2fa', as(alice, { currentPassword: 'Wr0ng-pass', twofacode: code() })),
        'INCORRECT_CREDENTIALS',
      );
      await still();
      expectFail(
        await host.post('remove2fa', as(alice, { currentPassword: PASSWORD, twofacode: '000000' })),
        'INVALID_2FA_CODE',
      );
      await still();
      expectOk(
        await host.post('remove2fa', as(alice, { currentPassword: PASSWORD, twofacode: code() })),
        'Removed 2FA!',
      );
      expect((await host.server.users.get(alice.id))!.is2FAVerified).toBe(false);
    });

    it('refuses a signed-in resetPassword without the current password (and the code when 2FA is on)', async () => {
      // Sessions older than limits.recentSignInSeconds: the token alone no longer confirms it is the owner.
      clock.advance(601);
      const hashBefore = (await host.server.users.get(alice.id))!.HashedPassword;
      expectFail(
        await host.post('resetPassword', as(alice, { newPassword: 'N3w-password!' })),
        'CONFIRMATION_REQUIRED',
      );
      expectFail(
        await host.post(
          'resetPassword',
          as(alice, { newPassword: 'N3w-password!', currentPassword: 'nope' }),
        ),
        'INCORRECT_CREDENTIALS',
      );
      expect((await host.server.users.get(alice.id))!.HashedPassword).toBe(hashBefore);
      expect(expectOk(await host.post('isValidToken', as(alice))).isValidToken).toBe(true);

      const code = await turnOn2fa(bob);
      expectFail(
        await host.post(
          'resetPassword',
          as(bob, { newPassword: 'N3w-password!', currentPassword: PASSWORD }),
        ),
        'CONFIRMATION_REQUIRED',
      );
      expectFail(
        await host.post(
          'changePassword',
          as(bob, { newPassword: 'N3w-password!', currentPassword: PASSWORD }),
        ),
        'CONFIRMATION_REQUIRED',
      );
      expectOk(
        await host.post(
          'resetPassword',
          as(bob, { newPassword: 'N3w-password!', currentPassword: PASSWORD, twofacode: code() }),
        ),
        'Reset password!',
      );
      expectOk(
        await host.post('login', { username: 'bob', password: 'N3w-password!', twofacode: code() }),
        'Login Successful',
      );
    });

    it('slows down guessing the current password with a stolen session', async () => {
      for (let i = 0; i < 3; i++) {
        expectFail(
          await host.post('remove2fa', as(alice, { currentPassword: `Guess-${i}!` })),
          'INCORRECT_CREDENTIALS',
        );
      }
      expectFail(await host.post('remove2fa', as(alice, { currentPassword: PASSWORD })), 'RATE_LIMITED');
      clock.advance(601);
      expectOk(await host.post('remove2fa', as(alice, { currentPassword: PASSWORD })), 'Removed 2FA!');
    });
  });

  describe('OwnerOnly meta', () => {
    let clock: ReturnType<typeof manualClock>;
    let avatarId: string;
    let avatarFile: string;
    let worldId: string;
    let worldFile: string;
    let scriptId: string;

    beforeEach(async () => {
      clock = await start();
      avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta({ Publicity: 1 }) }),
      ).AvatarId as string;
      avatarFile = (await host.server.uploads.avatar(avatarId))!.Builds[0]!.FileId;
      scriptId = await script(alice);
      worldId = await world(alice, [scriptId], 1);
      worldFile = (await host.server.uploads.world(worldId))!.Builds[0]!.FileId;
    });

    const meta = async (kind: 'avatar' | 'world', id: string, from?: string, headers = {}) =>
      expectOk(json(await getFrom(host, `meta/${kind}/${id}`, from, headers))).Meta as {
        Id: string;
        Name: string;
        Builds: Array<{ FileId: string; ServerScripts?: string[] }>;
      };
    const headersOf = (account: Account) => ({
      'x-hypernex-userid': account.id,
      'x-hypernex-token': account.token,
    });
    const assetToken = async (id: string) =>
      (
        expectOk(await host.post('manageAssetToken', as(alice, { action: 0, assetId: id }))).token as {
          content: string;
        }
      ).content;

    it('answers others the public part only, without build file ids', async () => {
      for (const [kind, id, file] of [
        ['avatar', avatarId, avatarFile],
        ['world', worldId, worldFile],
      ] as const) {
        for (const headers of [{}, headersOf(bob)]) {
          const reply = await getFrom(host, `meta/${kind}/${id}`, STRANGER_MACHINE, headers);
          const shown = expectOk(json(reply)).Meta as { Id: string; Name: string; Builds: unknown[] };
          expect(shown).toMatchObject({ Id: id, Builds: [] });
          expect(reply.text).not.toContain(file);
          expect(reply.text).not.toContain(scriptId);
        }
        const full = await meta(kind, id, STRANGER_MACHINE, headersOf(alice));
        expect(full.Builds[0]!.FileId).toBe(file);
      }
    });

    it('gives the full meta to whoever presents a live asset token for it', async () => {
      const token = await assetToken(avatarId);
      const full = expectOk(json(await getFrom(host, `meta/avatar/${avatarId}/${token}`, STRANGER_MACHINE)))
        .Meta as { Builds: Array<{ FileId: string }> };
      expect(full.Builds[0]!.FileId).toBe(avatarFile);
      expect(
        (
          expectOk(json(await getFrom(host, `meta/avatar/${avatarId}/wrong`, STRANGER_MACHINE))).Meta as {
            Builds: unknown[];
          }
        ).Builds,
      ).toEqual([]);
      // A token of another asset opens nothing here.
      const worldToken = await assetToken(worldId);
      expect(
        (
          expectOk(json(await getFrom(host, `meta/avatar/${avatarId}/${worldToken}`, STRANGER_MACHINE)))
            .Meta as {
            Builds: unknown[];
          }
        ).Builds,
      ).toEqual([]);
      clock.advance(3601);
      expect(
        (
          expectOk(json(await getFrom(host, `meta/avatar/${avatarId}/${token}`, STRANGER_MACHINE))).Meta as {
            Builds: unknown[];
          }
        ).Builds,
      ).toEqual([]);
    });

    it('gives a game client the full meta of an OwnerOnly avatar shared with it, asked as Unity asks (no credentials)', async () => {
      const aliceSocket = await socketFrom(host, alice, OWNER_MACHINE);
      const bobSocket = await socketFrom(host, bob, FRIEND_MACHINE);
      const carolSocket = await socketFrom(host, carol, STRANGER_MACHINE);
      closers.push(aliceSocket, bobSocket, carolSocket);
      // The owner's own game client loads its avatar this way.
      expect((await meta('avatar', avatarId, OWNER_MACHINE)).Builds[0]!.FileId).toBe(avatarFile);
      expect((await meta('avatar', avatarId, FRIEND_MACHINE)).Builds).toEqual([]);

      const token = await assetToken(avatarId);
      aliceSocket.sendJson({
        userId: alice.id,
        tokenContent: alice.token,
        message: 'ShareAvatarToken',
        args: { targetUserId: bob.id, avatarId, avatarToken: token },
      });
      await bobSocket.next('sharedavatartoken');
      const shared = await meta('avatar', avatarId, FRIEND_MACHINE);
      expect(shared.Builds[0]!.FileId).toBe(avatarFile);
      // Then it downloads the build with the token, as before.
      const download = await getFrom(host, `file/${alice.id}/${avatarFile}/${token}`, FRIEND_MACHINE);
      expect(download.text).toBe('x');
      // Someone else connected from elsewhere still sees the public part; so does bob once the token expired.
      expect((await meta('avatar', avatarId, STRANGER_MACHINE)).Builds).toEqual([]);
      clock.advance(3601);
      expect((await meta('avatar', avatarId, FRIEND_MACHINE)).Builds).toEqual([]);
    });

    it("gives the full meta to players in the owner's instance before the share arrives (Unity asks first)", async () => {
      const publicWorld = await world(alice, []);
      const gs = await gameServer();
      const aliceSocket = await socketFrom(host, alice, OWNER_MACHINE);
      const bobSocket = await socketFrom(host, bob, FRIEND_MACHINE);
      closers.push(aliceSocket, bobSocket);
      expect((await meta('avatar', avatarId, FRIEND_MACHINE)).Builds).toEqual([]);
      const { instanceId } = await openInstance(alice, aliceSocket, gs, publicWorld);
      bobSocket.sendJson({
        userId: bob.id,
        tokenContent: bob.token,
        message: 'JoinInstance',
        args: { gameServerId: gs.gameServerId, instanceId },
      });
      await bobSocket.next('joinedinstance');
      expect((await meta('avatar', avatarId, FRIEND_MACHINE)).Builds[0]!.FileId).toBe(avatarFile);
      bobSocket.sendJson({
        userId: bob.id,
        tokenContent: bob.token,
        message: 'LeaveInstance',
        args: { gameServerId: gs.gameServerId, instanceId },
      });
      await bobSocket.next('leftinstance');
      expect((await meta('avatar', avatarId, FRIEND_MACHINE)).Builds).toEqual([]);
    });

    it('gives the world meta to an invited player and to the game server hosting the world', async () => {
      const gs = await gameServer({ localAddress: GAME_SERVER_MACHINE });
      const aliceSocket = await socketFrom(host, alice, OWNER_MACHINE);
      const bobSocket = await socketFrom(host, bob, FRIEND_MACHINE);
      closers.push(aliceSocket, bobSocket);
      expect((await meta('world', worldId, GAME_SERVER_MACHINE)).Builds).toEqual([]);
      const { instanceId } = await openInstance(alice, aliceSocket, gs, worldId);
      // Hypernex.Networking.Server reads the world meta (no credentials) for its server scripts.
      const seen = await meta('world', worldId, GAME_SERVER_MACHINE);
      expect(seen.Builds[0]!.ServerScripts).toEqual([fileUrl(alice.id, scriptId)]);

      // bob and alice are friends, and alice invites bob with an asset token, as the Unity client does.
      expectOk(await host.post('sendFriendRequest', as(alice, { targetUserId: bob.id })));
      expectOk(await host.post('acceptFriendRequest', as(bob, { targetUserId: alice.id })));
      expect((await meta('world', worldId, FRIEND_MACHINE)).Builds).toEqual([]);
      const token = await assetToken(worldId);
      aliceSocket.sendJson({
        userId: alice.id,
        tokenContent: alice.token,
        message: 'SendInvite',
        args: {
          targetUserId: bob.id,
          gameServerId: gs.gameServerId,
          toInstanceId: instanceId,
          assetToken: token,
        },
      });
      await bobSocket.next('gotinvite');
      expect((await meta('world', worldId, FRIEND_MACHINE)).Builds[0]!.FileId).toBe(worldFile);
      expect((await meta('world', worldId, STRANGER_MACHINE)).Builds).toEqual([]);
    });
  });
});
