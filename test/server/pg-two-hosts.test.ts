import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import { TestGameServer } from '../../server/tools/test-game-server.js';
import {
  editUser,
  expectFail,
  expectOk,
  PASSWORD,
  signUp,
  startHost,
  tempDir,
  type Account,
  type TestHost,
} from './helpers.js';
import { dropSchemas, freshDatabaseUrl, queryAt } from './pg-helpers.js';
import { TestSocket } from './socket-client.js';
import { avatarMeta, md5, upload } from './upload-helpers.js';

/**
 * Two hosts on one PostgreSQL database and one folder, without Redis: everything a request reads comes from the
 * database, so what one host acknowledged the other serves at once (issue 25). Cross-host socket delivery needs
 * Redis and is tested in cluster.test.ts.
 */

let a: TestHost;
let b: TestHost;
let dir: string;

beforeEach(async () => {
  dir = await tempDir('hnx-two-hosts-');
  const database = await freshDatabaseUrl();
  a = await startHost({ database }, { dir });
  b = await startHost({ database }, { dir });
});

afterEach(async () => {
  await a.close().catch(() => undefined);
  await b.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
  await dropSchemas();
});

const as = (me: Account, more: Record<string, unknown> = {}) => ({
  userid: me.id,
  tokenContent: me.token,
  ...more,
});

async function uploadAvatar(host: TestHost, owner: Account, data: string, name = 'Robot'): Promise<string> {
  const answer = expectOk(
    await upload(host, owner, { name: 'bot.hna', data }, { avatarMeta: avatarMeta({ Name: name }) }),
    'Uploaded Avatar!',
  );
  return answer.AvatarId as string;
}

describe('two hosts on one database', () => {
  it('serves through B an avatar uploaded through A: its meta, its build, search and an asset token', async () => {
    const alice = await signUp(a, 'alice');
    const avatarId = await uploadAvatar(a, alice, 'avatar bytes', 'Lighthouse Keeper');
    const meta = expectOk(await b.get(`meta/avatar/${avatarId}`)).Meta as {
      Builds: Array<{ FileId: string }>;
    };
    const fileId = meta.Builds[0]!.FileId;
    const download = await b.raw(`file/${alice.id}/${fileId}`);
    expect(download.status).toBe(200);
    expect(md5(new Uint8Array(await download.arrayBuffer()))).toBe(md5('avatar bytes'));
    expect(expectOk(await b.get('search/avatar/lighthouse/10/0')).Candidates).toEqual([avatarId]);
    const token = expectOk(await b.post('manageAssetToken', as(alice, { action: 0, assetId: avatarId })))
      .token as { content: string };
    expect(token.content).toEqual(expect.any(String));
    // B's own answer to the owner lists it too.
    const mine = expectOk(await b.post('getMyContent', as(alice))).Avatars as Array<{ Id: string }>;
    expect(mine.map((avatar) => avatar.Id)).toEqual([avatarId]);
  });

  it.each([
    ['the keys B keeps', undefined],
    ['queries alone (postgres.searchCacheKeys 0)', 0],
  ])(
    'searches through B what A changed (%s): names, tags, users, a rename, OwnerOnly, a removal, a ban',
    async (_how, keys) => {
      if (keys !== undefined) {
        await b.close();
        b = await startHost(
          { database: a.server.config.database, postgres: { searchCacheKeys: keys } },
          { dir },
        );
      }
      const alice = await signUp(a, 'alice');
      const bob = await signUp(a, 'bob');
      const up = async (owner: Account, name: string, tags: string[]) =>
        expectOk(
          await upload(
            a,
            owner,
            { name: 'x.hna', data: name },
            { avatarMeta: avatarMeta({ Name: name, Tags: tags }) },
          ),
        ).AvatarId as string;
      const robot = await up(alice, 'Robot', ['bots']);
      const cat = await up(alice, 'Robo Cat', ['bots']);
      const tree = await up(alice, 'Tree', ['Nature']);
      const bobs = await up(bob, 'Robo Bob', ['bots']);
      const odd = await up(alice, 'Odd_Name 50%\\x', []);
      const find = async (path: string) => expectOk(await b.get(path)).Candidates as string[];
      // In name order, a page at a time; tags whole and in any case; users by any part of their name.
      expect(await find('search/avatar/ROBO/10/0')).toEqual([bobs, cat, robot]);
      expect(await find('search/avatar/robo/2/1')).toEqual([robot]);
      expect(await find('tag/avatar/BOTS/10/0')).toEqual([bobs, cat, robot]);
      expect(await find('tag/avatar/bot/10/0')).toEqual([]);
      expect(await find('search/user/LIC/10/0')).toEqual([alice.id]);
      // LIKE's wildcards and escape are text like any other.
      for (const text of ['d_n', '_', '50%25', '%25', '%5C', '%5Cx'])
        expect(await find(`search/avatar/${text}/10/0`)).toEqual([odd]);
      expect(await find('search/avatar/d%25n/10/0')).toEqual([]);
      // A NUL can be in no name (PostgreSQL's text cannot hold one): no match, not an error.
      expect(await find('search/avatar/a%00b/10/0')).toEqual([]);
      expect(await find('search/user/e%00b/10/0')).toEqual([]);
      // Changes through A show through B at once: a rename, OwnerOnly, a removal.
      const edit = (id: string, meta: Record<string, unknown>) =>
        a.post(
          'update/avatar',
          as(alice, { avatarMeta: avatarMeta({ Id: id, OwnerId: alice.id, ...meta }) }),
        );
      expectOk(await edit(tree, { Name: 'Robot Tree', Tags: ['Nature'] }));
      expectOk(await edit(robot, { Name: 'Robot', Tags: ['bots'], Publicity: 1 }));
      expectOk(await a.post('remove/avatar', as(alice, { avatarid: cat })));
      expect(await find('search/avatar/robo/10/0')).toEqual([bobs, tree]);
      expect(await find('tag/avatar/nature/10/0')).toEqual([tree]);
      // A banned owner's content is left out, pages counted without it.
      const now = Math.floor(Date.now() / 1000);
      await editUser(a, bob.id, (draft) => {
        draft.BanStatus = {
          isBanned: true,
          BanBegin: now,
          BanEnd: now + 600,
          BanReason: 'x',
          BanDescription: '',
        };
      });
      await expect.poll(() => find('search/avatar/robo/1/0'), { timeout: 3000 }).toEqual([tree]);
      expect(await find('search/avatar/robo/1/1')).toEqual([]);
    },
  );

  it('makes one owner for the community: both hosts set up at once make one, and setup closes on both', async () => {
    const secrets = [a.server.setupSecret, b.server.setupSecret];
    expect(secrets.every((secret) => typeof secret === 'string')).toBe(true);
    const owner = (name: string, secret: string | null) => ({
      username: name,
      password: PASSWORD,
      email: `${name}@lan.example`,
      setupSecret: secret,
    });
    // Each host shows a secret of its own; both are used at once.
    const answers = await Promise.all([
      a.post('setupOwner', owner('first', secrets[0]!)),
      b.post('setupOwner', owner('second', secrets[1]!)),
    ]);
    expect(answers.map((answer) => answer.success).sort()).toEqual([false, true]);
    expectFail(
      answers.find((answer) => !answer.success)!,
      'SETUP_ALREADY_DONE',
    );
    for (const host of [a, b])
      await expect
        .poll(async () => expectOk(await host.get('setupStatus')))
        .toEqual({ needsOwnerSetup: false });
    const owners = await queryAt(
      b.server.config.database!,
      "SELECT id FROM hx_records WHERE collection = 'users' AND (data->>'Rank')::int = $1",
      [Rank.Owner],
    );
    expect(owners).toHaveLength(1);
  });

  it('refuses through B the removal of a file that an avatar made through A uses', async () => {
    const alice = await signUp(a, 'alice');
    const avatarId = await uploadAvatar(a, alice, 'in use');
    const meta = expectOk(await b.get(`meta/avatar/${avatarId}`)).Meta as {
      Builds: Array<{ FileId: string }>;
    };
    expectFail(await b.post('remove/file', as(alice, { fileid: meta.Builds[0]!.FileId })), 'FILE_IN_USE');
    expect((await a.raw(`file/${alice.id}/${meta.Builds[0]!.FileId}`)).status).toBe(200);
  });

  it('accepts through B at once a friend request sent through A', async () => {
    const alice = await signUp(a, 'alice');
    const bob = await signUp(b, 'bob');
    expectOk(await a.post('sendFriendRequest', as(alice, { targetUserId: bob.id })));
    expectOk(await b.post('acceptFriendRequest', as(bob, { targetUserId: alice.id })));
    const seen = expectOk(await a.post('getUser', { userid: alice.id, tokenContent: alice.token }))
      .UserData as {
      Friends: string[];
    };
    expect(seen.Friends).toEqual([bob.id]);
  });

  it('closes on B the game server of a token revoked through A, without Redis', async () => {
    const admin = await signUp(a, 'admin');
    await editUser(a, admin.id, (draft) => {
      draft.Rank = Rank.Admin;
    });
    const added = expectOk(await a.post('addGameServerToken', as(admin, { label: 'Basement PC' })));
    const tokenId = (added.GameServerToken as { id: string }).id;
    const server = await TestGameServer.connect({ url: b.server.url, serverToken: added.token as string });
    try {
      const closed = new Promise<number>((resolve) => server.on('close', resolve));
      expectOk(await a.post('revokeGameServerToken', as(admin, { tokenId })));
      expect(await closed).toBe(4004);
    } finally {
      server.close();
    }
  });

  it('enforces on B a ban made through A: B refuses the token and closes the socket, without Redis', async () => {
    const mod = await signUp(a, 'mod');
    const carol = await signUp(a, 'carol');
    await editUser(a, mod.id, (draft) => {
      draft.Rank = Rank.Moderator;
    });
    const socket = await TestSocket.verified(b.server.url, carol.id, carol.token);
    try {
      expectOk(
        await a.post(
          'moderation',
          as(mod, {
            action: 'banuser',
            targetUserId: carol.id,
            banReason: 'spam',
            banDescription: '',
            timeEnd: Math.floor(Date.now() / 1000) + 3600,
          }),
        ),
      );
      expectFail(await b.post('getUser', { userid: carol.id, tokenContent: carol.token }), 'INVALID_TOKEN');
      expect((await socket.waitClosed(5000)).code).toBe(4001);
    } finally {
      socket.close();
    }
  });

  it('counts downloads through both hosts once each, adding them in the database', async () => {
    const alice = await signUp(a, 'alice');
    const avatarId = await uploadAvatar(a, alice, 'popular');
    const meta = expectOk(await b.get(`meta/avatar/${avatarId}`)).Meta as {
      Builds: Array<{ FileId: string }>;
    };
    const path = `file/${alice.id}/${meta.Builds[0]!.FileId}`;
    // Public avatars count their downloads (Publicity 0 is Anyone).
    for (let i = 0; i < 3; i++) expect((await a.raw(path)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await b.raw(path)).status).toBe(200);
    await a.server.popularity.flush();
    await b.server.popularity.flush();
    const stored = (await a.server.store
      .collection<{ days: Record<string, number> }>('popularity')
      .get(avatarId))!;
    expect(Object.values(stored.days).reduce((sum, n) => sum + n, 0)).toBe(5);
    // Each host's ranking follows the other's counts too (the hourly window: type 0).
    for (const host of [a, b]) {
      await expect
        .poll(async () => {
          const top = expectOk(await host.get('popularity/avatar/0/10/0')).Popularity as Array<{
            Hourly: { Usages: number };
          }>;
          return top[0]?.Hourly.Usages;
        })
        .toBe(5);
    }
    // A counts one more download it has not saved yet; then the avatar is removed through B: its counts go with
    // the next saves, A's unsaved one too, for every host.
    expect((await a.raw(path)).status).toBe(200);
    expectOk(await b.post('remove/avatar', as(alice, { avatarid: avatarId })));
    const popularity = a.server.store.collection('popularity');
    await expect
      .poll(async () => {
        await b.server.popularity.flush();
        return popularity.get(avatarId);
      })
      .toBeUndefined();
    await expect
      .poll(async () => {
        await a.server.popularity.flush();
        return popularity.get(avatarId);
      })
      .toBeUndefined();
  });
});

describe('one host with fewer connections than requests', () => {
  it('takes more sign-ups at once than it has connections: no transaction waits for a second connection', async () => {
    const database = await freshDatabaseUrl();
    const dir2 = await tempDir('hnx-small-pool-');
    const small = await startHost(
      { database, postgres: { poolSize: 2, connectTimeoutMs: 2000 } },
      { dir: dir2 },
    );
    try {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          small.post('createUser', {
            username: `storm${i}`,
            password: 'Passw0rd!',
            email: `storm${i}@example.com`,
          }),
        ),
      );
      for (const answer of answers) expectOk(answer);
    } finally {
      await small.close();
      await rm(dir2, { recursive: true, force: true });
    }
  });
});
