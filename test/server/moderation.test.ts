import { readFile, stat, writeFile } from 'node:fs/promises';
import { UsersRepo } from '../../server/store/users.js';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  expectFail,
  expectOk,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  tempDir,
  type Account,
  type TestHost,
  editUser,
} from './helpers.js';
import { TestSocket } from './socket-client.js';
import { FaultyFs } from './faulty-fs.js';
import { avatarMeta, blobTree, upload } from './upload-helpers.js';

describe('moderation', () => {
  let host: TestHost;
  let owner: Account;
  let admin: Account;
  let mod: Account;
  let mod2: Account;
  let user: Account;
  const clock = manualClock();
  const now = () => Math.floor(clock.now() / 1000);

  async function setRank(account: Account, rank: number): Promise<void> {
    await host.server.store.tx((t) =>
      UsersRepo.in(t).update(account.id, (draft) => {
        draft.Rank = rank as 0;
      }),
    );
  }
  const act = (caller: Account, action: string, targetUserId: string, fields: Record<string, unknown> = {}) =>
    host.post('moderation', {
      userid: caller.id,
      tokenContent: caller.token,
      action,
      targetUserId,
      ...fields,
    });
  const onDisk = async (account: Account) => {
    await host.server.store.checkpoint();
    return readFile(join(host.dir, 'users', `${account.id}.json`), 'utf8');
  };
  const logSize = async () => (await stat(join(host.dir, 'moderation-log.jsonl'))).size;

  beforeEach(async () => {
    host = await startHost({}, { clock });
    owner = await signUp(host, 'owner');
    admin = await signUp(host, 'admin');
    mod = await signUp(host, 'mod');
    mod2 = await signUp(host, 'mod2');
    user = await signUp(host, 'user');
    await setRank(owner, 6);
    await setRank(admin, 5);
    await setRank(mod, 4);
    await setRank(mod2, 4);
  });
  afterEach(async () => {
    await host.close();
  });

  describe('actions', () => {
    it('adds and removes a normalised badge, answering with the new state and the log entry', async () => {
      const added = expectOk(await act(mod, 'AddBadge', user.id, { badgeName: '  Tester ' }), 'Done!');
      expect(added.ModerationState).toMatchObject({ Id: user.id, Badges: ['tester'] });
      expect(added.LogEntry).toMatchObject({
        action: 'addbadge',
        moderatorId: mod.id,
        targetUserId: user.id,
        fields: { badgeName: 'tester' },
        before: { Badges: [] },
        after: { Badges: ['tester'] },
      });
      const view = expectOk(await host.post('getUser', { userid: user.id })).UserData as { Badges: string[] };
      expect(view.Badges).toEqual(['tester']);
      expectOk(await act(mod, 'removebadge', user.id, { badgeName: 'TESTER' }), 'Done!');
      expect((await host.server.users.get(user.id))!.Badges).toEqual([]);
    });

    it('sets a rank below the caller', async () => {
      const done = expectOk(await act(admin, 'setrank', user.id, { newRank: 4 }), 'Done!');
      expect(done.ModerationState).toMatchObject({ Rank: 4 });
      expect(JSON.parse(await onDisk(user)).data.Rank).toBe(4);
    });

    it('warns: tokens refused and sockets closed until the next login, which says so once', async () => {
      const socket = await TestSocket.verified(host.server.url, user.id, user.token);
      const done = expectOk(
        await act(mod, 'warnuser', user.id, { warnReason: 'Rude', warnDescription: 'Be nice.' }),
      );
      expect(done.ModerationState).toMatchObject({
        WarnStatus: { isWarned: true, TimeWarned: now(), WarnReason: 'Rude', WarnDescription: 'Be nice.' },
        WarnCount: 1,
      });
      expect((await socket.waitClosed()).code).toBe(4001);
      expect((await host.post('isValidToken', { userid: user.id, tokenContent: user.token })).result).toEqual(
        { isValidToken: false },
      );
      const login = expectOk(await host.post('login', { username: 'user', password: PASSWORD }), 'Warned');
      expect(login).toMatchObject({ LoginResult: 3, WarnStatus: { WarnReason: 'Rude' } });
      expect(expectOk(await host.post('login', { username: 'user', password: PASSWORD })).LoginResult).toBe(
        4,
      );
      expectOk(await act(mod, 'warnuser', user.id, { warnReason: 'Again', warnDescription: '' }));
      expect((await host.server.users.get(user.id))!.WarnCount).toBe(2);
      expectOk(await act(mod, 'unwarnuser', user.id));
      expect((await host.post('isValidToken', { userid: user.id, tokenContent: user.token })).result).toEqual(
        { isValidToken: true },
      );
    });

    it('bans until timeEnd: login refused with the BanStatus, every token refused, sockets closed; it lifts by itself', async () => {
      const socket = await TestSocket.verified(host.server.url, user.id, user.token);
      const timeEnd = now() + 3600;
      const done = expectOk(
        await act(mod, 'banuser', user.id, {
          banReason: 'Spam',
          banDescription: 'Links everywhere',
          timeEnd,
        }),
        'Done!',
      );
      expect(done.ModerationState).toMatchObject({
        isBanned: true,
        BanCount: 1,
        BanStatus: {
          isBanned: true,
          BanBegin: now(),
          BanEnd: timeEnd,
          BanReason: 'Spam',
          BanDescription: 'Links everywhere',
        },
      });
      expect((await socket.waitClosed()).code).toBe(4001);
      expect((await host.post('isValidToken', { userid: user.id, tokenContent: user.token })).result).toEqual(
        { isValidToken: false },
      );
      const login = await host.post('login', { username: 'user', password: PASSWORD });
      expect(login).toEqual({
        success: true,
        message: 'Banned',
        result: { LoginResult: 2, BanStatus: (done.ModerationState as { BanStatus: unknown }).BanStatus },
      });
      clock.advance(3601);
      expect(expectOk(await host.post('login', { username: 'user', password: PASSWORD })).LoginResult).toBe(
        4,
      );
      // Tokens from before the ban stay dead.
      expect((await host.post('isValidToken', { userid: user.id, tokenContent: user.token })).result).toEqual(
        { isValidToken: false },
      );
    });

    it('accepts "ban" as an alias and lifts a ban with unbanuser', async () => {
      expectOk(
        await act(mod, 'ban', user.id, { banReason: 'x', banDescription: 'y', timeEnd: now() + 60 }),
        'Done!',
      );
      const lifted = expectOk(await act(mod, 'UnbanUser', user.id), 'Done!');
      expect(lifted.ModerationState).toMatchObject({
        isBanned: false,
        BanCount: 1,
        BanStatus: { isBanned: false, BanReason: 'x' },
      });
      expect(expectOk(await host.post('login', { username: 'user', password: PASSWORD })).LoginResult).toBe(
        4,
      );
    });
  });

  describe('refusals leave the target untouched', () => {
    async function refused(answer: Parameters<typeof expectFail>[0], code: string, target: Account = user) {
      expectFail(answer, code);
      return target;
    }

    const cases: Array<[string, () => Promise<[Parameters<typeof expectFail>[0], string, Account?]>]> = [
      [
        'a caller below Moderator',
        async () => [
          await act(user, 'warnuser', mod2.id, { warnReason: 'x', warnDescription: '' }),
          'NOT_A_MODERATOR',
          mod2,
        ],
      ],
      [
        'a verified user (rank 3) as caller',
        async () => {
          await setRank(mod2, 3);
          return [await act(mod2, 'addbadge', user.id, { badgeName: 'x' }), 'NOT_A_MODERATOR'];
        },
      ],
      ['an unknown action', async () => [await act(mod, 'smite', user.id), 'UNKNOWN_ACTION']],
      [
        'an unknown target',
        async () => [await act(mod, 'addbadge', 'user_ghost', { badgeName: 'x' }), 'USER_NOT_FOUND'],
      ],
      [
        'a target of equal rank',
        async () => [
          await act(mod, 'warnuser', mod2.id, { warnReason: 'x', warnDescription: '' }),
          'TARGET_RANK_TOO_HIGH',
          mod2,
        ],
      ],
      [
        'a target of higher rank',
        async () => [
          await act(mod, 'banuser', admin.id, { banReason: 'x', banDescription: '', timeEnd: now() + 60 }),
          'TARGET_RANK_TOO_HIGH',
          admin,
        ],
      ],
      [
        'acting on oneself',
        async () => [await act(admin, 'setrank', admin.id, { newRank: 4 }), 'CANNOT_MODERATE_SELF', admin],
      ],
      [
        'setrank to the caller rank',
        async () => [await act(admin, 'setrank', user.id, { newRank: 5 }), 'RANK_NOT_GRANTABLE'],
      ],
      [
        'setrank above the caller rank',
        async () => [await act(mod, 'setrank', user.id, { newRank: 6 }), 'RANK_NOT_GRANTABLE'],
      ],
      [
        'newRank "3"',
        async () => [await act(admin, 'setrank', user.id, { newRank: '3' }), 'INVALID_PARAMETERS'],
      ],
      ['newRank 3.5', async () => [await act(admin, 'setrank', user.id, { newRank: 3.5 }), 'INVALID_RANK']],
      ['newRank -1', async () => [await act(admin, 'setrank', user.id, { newRank: -1 }), 'INVALID_RANK']],
      ['newRank 7', async () => [await act(owner, 'setrank', user.id, { newRank: 7 }), 'INVALID_RANK']],
      [
        'newRank null',
        async () => [await act(admin, 'setrank', user.id, { newRank: null }), 'INVALID_PARAMETERS'],
      ],
      [
        'setrank to the current rank',
        async () => [await act(admin, 'setrank', user.id, { newRank: 2 }), 'RANK_UNCHANGED'],
      ],
      [
        'timeEnd in the past',
        async () => [
          await act(mod, 'banuser', user.id, { banReason: 'x', banDescription: '', timeEnd: now() - 1 }),
          'INVALID_TIME_END',
        ],
      ],
      [
        'timeEnd 0',
        async () => [
          await act(mod, 'banuser', user.id, { banReason: 'x', banDescription: '', timeEnd: 0 }),
          'INVALID_TIME_END',
        ],
      ],
      [
        'timeEnd as a string',
        async () => [
          await act(mod, 'banuser', user.id, {
            banReason: 'x',
            banDescription: '',
            timeEnd: String(now() + 60),
          }),
          'INVALID_PARAMETERS',
        ],
      ],
      [
        'an absurdly large timeEnd',
        async () => [
          await act(mod, 'banuser', user.id, { banReason: 'x', banDescription: '', timeEnd: 1e15 }),
          'INVALID_TIME_END',
        ],
      ],
      [
        'a ban with no reason',
        async () => [
          await act(mod, 'banuser', user.id, { banReason: '  ', banDescription: '', timeEnd: now() + 60 }),
          'INVALID_REASON',
        ],
      ],
      [
        'an empty badge name',
        async () => [await act(mod, 'addbadge', user.id, { badgeName: '   ' }), 'INVALID_BADGE'],
      ],
      [
        'a 10 KB badge name',
        async () => [await act(mod, 'addbadge', user.id, { badgeName: 'b'.repeat(10_000) }), 'INVALID_BADGE'],
      ],
      [
        'removing a badge the user lacks',
        async () => [await act(mod, 'removebadge', user.id, { badgeName: 'vip' }), 'BADGE_NOT_PRESENT'],
      ],
      [
        'unbanning a user who is not banned',
        async () => [await act(mod, 'unbanuser', user.id), 'NOT_BANNED'],
      ],
      [
        'unwarning a user who is not warned',
        async () => [await act(mod, 'unwarnuser', user.id), 'NOT_WARNED'],
      ],
      [
        'the seed ban example sent as addbadge',
        async () => [
          await act(mod, 'addbadge', user.id, { banReason: 'x', banDescription: 'y', timeEnd: now() + 60 }),
          'USE_BANUSER',
        ],
      ],
      [
        'a caller token of another user',
        async () => [
          await host.post('moderation', {
            userid: mod.id,
            tokenContent: user.token,
            action: 'warnuser',
            targetUserId: user.id,
            warnReason: 'x',
            warnDescription: '',
          }),
          'INVALID_TOKEN',
        ],
      ],
      [
        'an expired caller token',
        async () => {
          clock.advance(31 * 24 * 3600);
          return [
            await act(mod, 'warnuser', user.id, { warnReason: 'x', warnDescription: '' }),
            'INVALID_TOKEN',
          ];
        },
      ],
      [
        'a banned moderator',
        async () => {
          expectOk(
            await act(admin, 'banuser', mod.id, { banReason: 'x', banDescription: '', timeEnd: now() + 600 }),
          );
          return [
            await act(mod, 'warnuser', user.id, { warnReason: 'x', warnDescription: '' }),
            'INVALID_TOKEN',
          ];
        },
      ],
      [
        'a missing action',
        async () => [
          await host.post('moderation', { userid: mod.id, tokenContent: mod.token, targetUserId: user.id }),
          'INVALID_PARAMETERS',
        ],
      ],
    ];

    it.each(cases)('refuses %s', async (_name, run) => {
      // Read every target's state after setup but before the refused action.
      const targets = [user, mod2, admin];
      const before = await Promise.all(targets.map(onDisk));
      const memory = JSON.stringify(await Promise.all(targets.map((t) => host.server.users.get(t.id))));
      const sizeBefore = await logSize();
      const [answer, code, target = user] = await run();
      await refused(answer, code, target);
      expect(typeof answer.message).toBe('string');
      expect(answer.message.length).toBeGreaterThan(5);
      const index = targets.indexOf(target);
      if (_name !== 'a banned moderator' && _name !== 'a verified user (rank 3) as caller') {
        expect(await Promise.all(targets.map(onDisk))).toEqual(before);
        expect(JSON.stringify(await Promise.all(targets.map((t) => host.server.users.get(t.id))))).toBe(
          memory,
        );
        expect(await logSize()).toBe(sizeBefore);
      } else {
        expect(await onDisk(targets[index]!)).toBe(before[index]);
      }
    });

    it('points the seed ban example to banuser in its message', async () => {
      const answer = expectFail(
        await act(mod, 'addbadge', user.id, { banReason: 'x', banDescription: 'y', timeEnd: now() + 60 }),
        'USE_BANUSER',
      );
      expect(answer.message).toMatch(/banuser/);
    });

    it('bounds the number of badges', async () => {
      await editUser(host, user.id, (draft) => {
        draft.Badges = Array.from({ length: 50 }, (_, i) => `b${i}`);
      });
      expectFail(await act(mod, 'addbadge', user.id, { badgeName: 'one-more' }), 'TOO_MANY_BADGES');
      expectFail(await act(mod, 'addbadge', user.id, { badgeName: 'b1' }), 'BADGE_ALREADY_PRESENT');
    });
  });

  describe('log and lookup', () => {
    it('reads the log newest first, filtered and paged, for moderators only', async () => {
      expectOk(await act(mod, 'addbadge', user.id, { badgeName: 'a' }));
      expectOk(await act(mod, 'addbadge', user.id, { badgeName: 'b' }));
      expectOk(await act(admin, 'warnuser', mod2.id, { warnReason: 'r', warnDescription: '' }));
      expectOk(await act(mod, 'removebadge', user.id, { badgeName: 'a' }));
      const ask = (filter: Record<string, unknown>) =>
        host.post('moderationLog', { userid: admin.id, tokenContent: admin.token, ...filter });
      const all = expectOk(await ask({}), 'Got moderation log');
      expect(all.Total).toBe(4);
      expect((all.Entries as Array<{ action: string }>).map((e) => e.action)).toEqual([
        'removebadge',
        'warnuser',
        'addbadge',
        'addbadge',
      ]);
      const byTarget = expectOk(await ask({ targetUserId: user.id, itemsPerPage: 2, page: 1 }));
      expect(byTarget.Total).toBe(3);
      expect(
        (byTarget.Entries as Array<{ fields: { badgeName: string } }>).map((e) => e.fields.badgeName),
      ).toEqual(['a']);
      expect(expectOk(await ask({ moderatorId: admin.id })).Total).toBe(1);
      expect(expectOk(await ask({ action: 'addbadge' })).Total).toBe(2);
      expect((expectOk(await ask({ page: 9 })).Entries as unknown[]).length).toBe(0);
      expectFail(await ask({ action: 'smite' }), 'INVALID_PARAMETERS');
      expectFail(
        await host.post('moderationLog', { userid: user.id, tokenContent: user.token }),
        'NOT_A_MODERATOR',
      );
    });

    it('looks users up by name prefix or id with their state and recent actions', async () => {
      const plain = await signUp(host, 'plain');
      expectOk(await act(mod, 'warnuser', user.id, { warnReason: 'r', warnDescription: 'd' }));
      const found = expectOk(
        await host.post('moderationLookup', { userid: mod.id, tokenContent: mod.token, query: 'MO' }),
      );
      expect((found.Users as Array<{ Username: string }>).map((u) => u.Username)).toEqual(['mod', 'mod2']);
      const byId = expectOk(
        await host.post('moderationLookup', { userid: mod.id, tokenContent: mod.token, query: user.id }),
      );
      expect(byId.Users).toEqual([
        expect.objectContaining({
          Id: user.id,
          Rank: 2,
          WarnCount: 1,
          isBanned: false,
          RecentActions: [expect.objectContaining({ action: 'warnuser' })],
        }),
      ]);
      expectFail(
        await host.post('moderationLookup', { userid: plain.id, tokenContent: plain.token, query: 'm' }),
        'NOT_A_MODERATOR',
      );
    });

    it('keeps the log across restarts, and a lifted warning stays lifted however often the host restarts', async () => {
      expectOk(await act(mod, 'addbadge', user.id, { badgeName: 'kept' }));
      expectOk(await act(mod, 'warnuser', user.id, { warnReason: 'rude', warnDescription: '' }));
      expectOk(await act(mod, 'unwarnuser', user.id));
      const dir = host.dir;
      for (let restart = 0; restart < 3; restart++) {
        await host.server.close();
        host = await startHost({}, { clock, dir });
        const stored = (await host.server.users.get(user.id))!;
        expect(stored.Badges).toEqual(['kept']);
        expect(stored.WarnStatus.isWarned).toBe(false);
        // New commits are numbered after every log entry, old and new.
        expectOk(await act(mod, 'addbadge', user.id, { badgeName: `r${restart}` }));
        expectOk(await act(mod, 'removebadge', user.id, { badgeName: `r${restart}` }));
      }
      const all = expectOk(await host.post('moderationLog', { userid: admin.id, tokenContent: admin.token }));
      expect(all.Total).toBe(9);
      const seqs = (all.Entries as Array<{ seq: number }>).map((entry) => entry.seq);
      expect(new Set(seqs).size).toBe(9);
    });
  });
});

describe('moderation log file', () => {
  it('cuts a torn last line left by a crash but stops on a corrupt line in the middle', async () => {
    const dir = await tempDir();
    let host = await startHost({}, { dir });
    const a = await signUp(host, 'alice');
    await host.server.close();
    const path = join(dir, 'moderation-log.jsonl');
    // A whole entry as the host writes it (startup checks each against its schema).
    const state = {
      Id: 'x',
      Username: 'target',
      Rank: 2,
      Badges: [],
      BanStatus: { isBanned: false, BanBegin: 0, BanEnd: 0, BanReason: '', BanDescription: '' },
      BanCount: 0,
      WarnStatus: { isWarned: false, TimeWarned: 0, WarnReason: '', WarnDescription: '' },
      WarnCount: 0,
      isBanned: false,
    };
    const entry = JSON.stringify({
      id: 'modlog_1',
      seq: 0,
      time: 0,
      moderatorId: 'y',
      moderatorName: 'mod',
      action: 'addbadge',
      targetUserId: 'x',
      targetName: 'target',
      fields: { badgeName: 'tester' },
      before: state,
      after: { ...state, Badges: ['tester'] },
    });
    await writeFile(path, `${entry}\n{"id":"modlog_2","tar`);
    host = await startHost({}, { dir });
    await host.server.close();
    // Cut before the next write (here: the clean stop), never before everything was read and checked.
    expect(await readFile(path, 'utf8')).toBe(`${entry}\n`);
    await writeFile(path, `garbage\n${entry}\n`);
    await expect(startHost({}, { dir })).rejects.toThrow(/moderation-log\.jsonl is corrupt/);
    expect(a.id).toMatch(/^user_/);
  });
});

describe('moderation on a failing disk', () => {
  it('deletes nothing, changes nobody and logs nothing when the commit cannot be written', async () => {
    const fs = new FaultyFs();
    const host = await startHost({}, { logFileSystem: fs });
    try {
      const alice = await signUp(host, 'alice');
      const bob = await signUp(host, 'bob');
      await editUser(host, bob.id, (draft) => {
        draft.Rank = 4;
      });
      const avatarId = expectOk(
        await upload(host, alice, { name: 'a.hna', data: 'x' }, { avatarMeta: avatarMeta() }),
      ).AvatarId as string;
      const act = (action: string, fields: Record<string, unknown>) =>
        host.post('moderation', {
          userid: bob.id,
          tokenContent: bob.token,
          action,
          targetUserId: alice.id,
          ...fields,
        });
      const files = await blobTree(host.dir);
      fs.fault = 'enospc';
      expectFail(await act('deleteavatar', { avatarId }), 'STORAGE_FULL');
      expectFail(await act('warnuser', { warnReason: 'spam', warnDescription: '' }), 'STORAGE_FULL');
      fs.fault = null;
      // The avatar, its file and the owner's list are all there; nobody is warned; the log is empty.
      expect(await host.server.uploads.avatar(avatarId)).toBeDefined();
      expect((await host.server.users.get(alice.id))!.Avatars).toEqual([avatarId]);
      expect((await host.server.users.get(alice.id))!.WarnStatus.isWarned).toBe(false);
      expect(await blobTree(host.dir)).toEqual(files);
      const log = expectOk(await host.post('moderationLog', { userid: bob.id, tokenContent: bob.token }));
      expect(log.Total).toBe(0);
      // Once the disk works again, the same action goes through whole.
      expectOk(await act('deleteavatar', { avatarId }), 'Removed avatar!');
      expect(await host.server.uploads.avatar(avatarId)).toBeUndefined();
      expect(await blobTree(host.dir)).toEqual([]);
      expect(
        expectOk(await host.post('moderationLog', { userid: bob.id, tokenContent: bob.token })).Total,
      ).toBe(1);
    } finally {
      await host.close();
    }
  });
});
