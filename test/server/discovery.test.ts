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

describe('search, popularity, asset tokens, invite codes', () => {
  let host: TestHost;
  let alice: Account;
  let bob: Account;
  const clock = manualClock();

  async function avatar(
    owner: Account,
    name: string,
    tags: string[] = [],
    publicity = 0,
  ): Promise<{ id: string; fileId: string }> {
    const result = expectOk(
      await host.post('upload', {
        userid: owner.id,
        tokenContent: owner.token,
        file: { name: 'a.hna', data: Buffer.from(name).toString('base64') },
        avatarMeta: {
          Publicity: publicity,
          Name: name,
          Description: '',
          Tags: tags,
          ImageURL: '',
          BuildPlatform: 0,
        },
      }),
    );
    return { id: result.AvatarId as string, fileId: (result.UploadData as { FileId: string }).FileId };
  }

  beforeEach(async () => {
    host = await startHost({}, { clock });
    alice = await signUp(host, 'alice');
    bob = await signUp(host, 'bob');
  });
  afterEach(async () => {
    await host.close();
  });

  describe('search', () => {
    it('finds users, avatars and tags case-insensitively, paginated for real', async () => {
      const names = ['Robot', 'robo cat', 'Big Robot', 'Tree'];
      const ids: string[] = [];
      for (const name of names)
        ids.push((await avatar(alice, name, name === 'Tree' ? ['Nature'] : ['bots'])).id);
      const search = (path: string) => host.get(path);
      expect(expectOk(await search('search/user/ALI/10/0'), 'Got search results')).toEqual({
        Candidates: [alice.id],
      });
      const all = expectOk(await search('search/avatar/ROBO/10/0')).Candidates as string[];
      expect(all.sort()).toEqual([ids[0], ids[1], ids[2]].sort());
      const first = expectOk(await search('search/avatar/robo/2/0')).Candidates as string[];
      const second = expectOk(await search('search/avatar/robo/2/1')).Candidates as string[];
      expect(first).toHaveLength(2);
      expect(second).toHaveLength(1);
      expect([...first, ...second].sort()).toEqual(all.sort());
      expect(expectOk(await search('search/avatar/robo/2/5')).Candidates).toEqual([]);
      expect(expectOk(await search('tag/avatar/NATURE/10/0')).Candidates).toEqual([ids[3]]);
      expect(expectOk(await search('tag/world/nature/10/0')).Candidates).toEqual([]);
    });

    it('matches within one name only, in name order, a page at a time', async () => {
      // Names are scanned as one joined string: a needle must never match across two of them.
      const ids: string[] = [];
      for (const name of ['kit', 'kite', 'akita', 'tikka']) ids.push((await avatar(alice, name)).id);
      const find = async (text: string, per = 10, page = 0) =>
        expectOk(await host.get(`search/avatar/${encodeURIComponent(text)}/${per}/${page}`))
          .Candidates as string[];
      expect(await find('kit')).toEqual([ids[2], ids[0], ids[1]]);
      expect(await find('ite')).toEqual([ids[1]]);
      expect(await find('atik')).toEqual([]);
      expect(await find('a\u0000k')).toEqual([]);
      expect(await find('\u0000')).toEqual([]);
      expect(await find('kit', 1, 1)).toEqual([ids[0]]);
      expect(await find('kit', 2, 1)).toEqual([ids[1]]);
      expect(expectOk(await host.get('search/user/e%00b/10/0')).Candidates).toEqual([]);
    });

    it('treats regex metacharacters as text', async () => {
      const weird = await avatar(alice, 'a.*(b)[c]');
      await avatar(alice, 'abc');
      expect(
        expectOk(await host.get(`search/avatar/${encodeURIComponent('.*(b)[')}/10/0`)).Candidates,
      ).toEqual([weird.id]);
      expect(expectOk(await host.get(`search/avatar/${encodeURIComponent('.*')}/10/0`)).Candidates).toEqual([
        weird.id,
      ]);
    });

    it('never lists OwnerOnly items, and hides banned owners\u2019 content', async () => {
      await avatar(alice, 'Secret Bot', [], 1);
      const shown = await avatar(bob, 'Shown Bot');
      expect(expectOk(await host.get('search/avatar/bot/10/0')).Candidates).toEqual([shown.id]);
      const now = Math.floor(clock.now() / 1000);
      await editUser(host, bob.id, (draft) => {
        draft.BanStatus = {
          isBanned: true,
          BanBegin: now,
          BanEnd: now + 60,
          BanReason: 'x',
          BanDescription: '',
        };
      });
      host.server.events.emit('tokensRevoked', { userId: bob.id });
      expect(expectOk(await host.get('search/avatar/bot/10/0')).Candidates).toEqual([]);
    });

    it.each([
      ['itemsPerPage 0', 'search/avatar/x/0/0', 'itemsPerPage'],
      ['itemsPerPage -1', 'search/avatar/x/-1/0', 'itemsPerPage'],
      ['itemsPerPage 10,000', 'search/avatar/x/10000/0', 'itemsPerPage'],
      ['itemsPerPage "abc"', 'search/avatar/x/abc/0', 'itemsPerPage'],
      ['a negative page', 'search/avatar/x/10/-1', 'page'],
      ['a 1,000-character name', `search/avatar/${'n'.repeat(1000)}/10/0`, 'name'],
      ['popularity type 9', 'popularity/avatar/9/10/0', 'type'],
    ])('refuses %s, naming the field', async (_name, path, field) => {
      const answer = expectFail(await host.get(path), 'INVALID_PARAMETERS', 'Invalid parameters!');
      expect(answer.result?.error?.fields).toHaveProperty(field);
    });
  });

  describe('popularity', () => {
    it('counts public downloads in rolling windows, newest most used first', async () => {
      const one = await avatar(alice, 'One');
      const two = await avatar(alice, 'Two');
      const get = (a: { fileId: string }) =>
        fetch(`${host.server.url}/api/v1/file/${alice.id}/${a.fileId}`).then((r) => r.arrayBuffer());
      await get(one);
      await get(two);
      await get(two);
      const top = expectOk(await host.get('popularity/avatar/0/10/0'), 'Got popularity').Popularity as Array<
        Record<string, unknown>
      >;
      expect(top).toEqual([
        {
          Id: two.id,
          Hourly: { Usages: 2 },
          Daily: { Usages: 2 },
          Weekly: { Usages: 2 },
          Monthly: { Usages: 2 },
          Yearly: { Usages: 2 },
        },
        {
          Id: one.id,
          Hourly: { Usages: 1 },
          Daily: { Usages: 1 },
          Weekly: { Usages: 1 },
          Monthly: { Usages: 1 },
          Yearly: { Usages: 1 },
        },
      ]);
      clock.advance(2 * 3600);
      const later = expectOk(await host.get('popularity/avatar/1/10/0')).Popularity as Array<{
        Hourly: { Usages: number };
        Daily: { Usages: number };
      }>;
      expect(later[0]).toMatchObject({ Hourly: { Usages: 0 }, Daily: { Usages: 2 } });
      expect(expectOk(await host.get('popularity/avatar/0/10/0')).Popularity).toEqual([]);
      expect(expectOk(await host.get('popularity/world/4/10/0')).Popularity).toEqual([]);
    });
  });

  describe('asset tokens', () => {
    it('lets the owner share an OwnerOnly build for an hour with a token', async () => {
      const secret = await avatar(alice, 'Private', [], 1);
      const url = (token: string) => `${host.server.url}/api/v1/file/${alice.id}/${secret.fileId}/${token}`;
      const added = expectOk(
        await host.post('manageAssetToken', {
          userid: alice.id,
          tokenContent: alice.token,
          action: 0,
          assetId: secret.id,
        }),
        'Added Token!',
      );
      const token = added.token as { content: string; dateCreated: number; dateExpire: number };
      expect(token.dateExpire - token.dateCreated).toBe(3600);
      expect(await (await fetch(url(token.content))).text()).toBe('Private');
      expect(JSON.stringify(await host.get(`meta/avatar/${secret.id}`))).not.toContain(token.content);
      expect(((await (await fetch(url('wrong'))).json()) as { message: string }).message).toBe(
        'Failed to Authenticate FileToken',
      );
      clock.advance(3601);
      expect(((await (await fetch(url(token.content))).json()) as { success: boolean }).success).toBe(false);
    });

    it('removes a token', async () => {
      const secret = await avatar(alice, 'Private', [], 1);
      const token = (
        expectOk(
          await host.post('manageAssetToken', {
            userid: alice.id,
            tokenContent: alice.token,
            action: 0,
            assetId: secret.id,
          }),
        ).token as { content: string }
      ).content;
      expectOk(
        await host.post('manageAssetToken', {
          userid: alice.id,
          tokenContent: alice.token,
          action: 1,
          assetId: secret.id,
          assetToken: token,
        }),
        'Removed Token!',
      );
      const res = await fetch(`${host.server.url}/api/v1/file/${alice.id}/${secret.fileId}/${token}`);
      expect(((await res.json()) as { success: boolean }).success).toBe(false);
    });

    it.each([
      ["someone else's asset", 'bob', 0, 'NOT_OWNER'],
      ['a string action "0"', 'alice', '0', 'INVALID_PARAMETERS'],
      ['an unknown asset', 'alice', 0, 'CONTENT_NOT_FOUND'],
    ])('refuses a token for %s', async (_name, who, action, code) => {
      const secret = await avatar(alice, 'Private', [], 1);
      const caller = who === 'bob' ? bob : alice;
      const assetId = code === 'CONTENT_NOT_FOUND' ? 'avatar_nope' : secret.id;
      expectFail(
        await host.post('manageAssetToken', {
          userid: caller.id,
          tokenContent: caller.token,
          action,
          assetId,
        }),
        code,
      );
    });
  });

  describe('invite codes', () => {
    it('lets admins require codes and make single-use and expiring ones', async () => {
      await editUser(host, alice.id, (draft) => {
        draft.Rank = 5;
      });
      expectFail(
        await host.post('createInviteCode', { userid: bob.id, tokenContent: bob.token }),
        'FORBIDDEN',
      );
      const settings = expectOk(
        await host.post('hostSettings', {
          userid: alice.id,
          tokenContent: alice.token,
          requireInviteCode: true,
        }),
      );
      expect(settings).toEqual({ requireInviteCode: true });
      expect(expectOk(await host.get('isInviteCodeRequired'))).toEqual({ inviteCodeRequired: true });
      const once = expectOk(
        await host.post('createInviteCode', {
          userid: alice.id,
          tokenContent: alice.token,
          label: 'for carol',
          singleUse: true,
        }),
      );
      const code = once.code as string;
      const signUpWith = (name: string, inviteCode?: string) =>
        host.post('createUser', {
          username: name,
          password: PASSWORD,
          email: `${name}@x.io`,
          ...(inviteCode !== undefined && { inviteCode }),
        });
      expectFail(await signUpWith('nocode'), 'INVITE_CODE_REQUIRED');
      expectOk(await signUpWith('carol', code));
      const reused = expectFail(await signUpWith('dave', code), 'INVITE_CODE_REQUIRED');
      expect(reused.result?.error?.fields?.inviteCode).toMatch(/already used/);
      expect(await host.server.users.byUsername('dave')).toBeUndefined();

      const expiring = expectOk(
        await host.post('createInviteCode', {
          userid: alice.id,
          tokenContent: alice.token,
          singleUse: false,
          expiresInSeconds: 60,
        }),
      ).code as string;
      expectOk(await signUpWith('erin', expiring));
      expectOk(await signUpWith('frank', expiring));
      clock.advance(61);
      expect(
        expectFail(await signUpWith('gina', expiring), 'INVITE_CODE_REQUIRED').result?.error?.fields
          ?.inviteCode,
      ).toMatch(/expired/);
      const listed = expectOk(await host.post('inviteCodes', { userid: alice.id, tokenContent: alice.token }))
        .InviteCodes as Array<{ id: string; uses: unknown[]; active: boolean }>;
      expect(listed.map((c) => c.uses.length).sort()).toEqual([1, 2]);
      expect(JSON.stringify(listed)).not.toContain(code);
      const reusable = expectOk(
        await host.post('createInviteCode', {
          userid: alice.id,
          tokenContent: alice.token,
          singleUse: false,
        }),
      );
      expectOk(
        await host.post('revokeInviteCode', {
          userid: alice.id,
          tokenContent: alice.token,
          codeId: (reusable.InviteCode as { id: string }).id,
        }),
      );
      expect(
        expectFail(await signUpWith('hank', reusable.code as string), 'INVITE_CODE_REQUIRED').result?.error
          ?.fields?.inviteCode,
      ).toMatch(/revoked/);
    });
  });

  describe('info endpoints', () => {
    it('answers what 1.4-era clients ask at start', async () => {
      expect(expectOk(await host.get('authForBuilds'))).toEqual({ authForBuilds: false });
      // Client builds (issue 20, test/server/builds.test.ts): a name with none answers an empty list.
      expect(expectOk(await host.get('getVersions/unity'), 'Got versions!')).toEqual({
        Name: 'unity',
        Versions: [],
      });
      expectFail(await host.get('getBuild/unity/1.0/0'), 'BUILD_NOT_FOUND');
    });
  });
});
