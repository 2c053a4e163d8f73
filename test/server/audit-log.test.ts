import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsersRepo } from '../../server/store/users.js';
import { BAN_UNTIL_LIFTED } from '../../server/protocol/audit.js';
import {
  expectOk,
  expectFail,
  manualClock,
  PASSWORD,
  signUp,
  startHost,
  tempDir,
  type Account,
  type TestHost,
} from './helpers.js';
import { dropSchemas, freshDatabaseUrl } from './pg-helpers.js';

type Entry = {
  action: string;
  moderatorId: string;
  moderatorName: string;
  targetUserId?: string;
  targetId?: string;
  targetName: string;
  time: number;
  fields: Record<string, unknown>;
};

/** Secrets the log must never hold. */
const SECRETS: string[] = [];

function suite(name: string, database: () => Promise<string | null>) {
  describe(name, () => {
    let host: TestHost;
    let dir: string;
    let owner: Account;
    let admin: Account;
    let mod: Account;
    let user: Account;
    const clock = manualClock();

    const setRank = (account: Account, rank: number) =>
      host.server.store.tx((t) =>
        UsersRepo.in(t).update(account.id, (draft) => {
          draft.Rank = rank as 0;
        }),
      );
    const as = (who: Account, body: Record<string, unknown> = {}) => ({
      userid: who.id,
      tokenContent: who.token,
      ...body,
    });
    const audit = async (who: Account, filter: Record<string, unknown> = {}) =>
      expectOk(await host.post('auditLog', as(who, filter))) as { Entries: Entry[]; Total: number };

    beforeEach(async () => {
      dir = await tempDir('hnx-audit-');
      host = await startHost({ database: await database() }, { clock, dir });
      owner = await signUp(host, 'owner');
      admin = await signUp(host, 'admin');
      mod = await signUp(host, 'mod');
      user = await signUp(host, 'user');
      await setRank(owner, 6);
      await setRank(admin, 5);
      await setRank(mod, 4);
    });
    afterEach(async () => {
      await host.close();
      await rm(dir, { recursive: true, force: true });
      if (name.includes('PostgreSQL')) await dropSchemas();
    });

    it('records every staff action with who, when, on what and its fields, and no secret', async () => {
      expectOk(
        await host.post(
          'resetUserPassword',
          as(admin, { targetUserId: user.id, newPassword: 'N3w-Passw0rd!' }),
        ),
      );
      SECRETS.push('N3w-Passw0rd!');
      const made = expectOk(
        await host.post('createInviteCode', as(admin, { label: 'friends', singleUse: true })),
      );
      const code = made.code as string;
      const codeId = (made.InviteCode as { id: string }).id;
      expectOk(await host.post('revokeInviteCode', as(admin, { codeId })));
      const gs = expectOk(await host.post('addGameServerToken', as(admin, { label: 'box' })));
      const gsToken = gs.token as string;
      const tokenId = (gs.GameServerToken as { id: string }).id;
      expectOk(await host.post('revokeGameServerToken', as(admin, { tokenId })));
      expectOk(await host.post('hostSettings', as(admin, { requireInviteCode: true })));
      const hookUrl = 'https://discord.example/api/webhooks/123/SECRETPART';
      expectOk(await host.post('webhookSettings', as(owner, { url: hookUrl })));
      const form = new FormData();
      for (const [k, v] of Object.entries(as(owner, { name: 'Launcher', version: '1.0.0' })))
        form.append(k, v);
      form.append('file', new Blob([Buffer.from('exe')]), 'launcher.exe');
      const pub = (await (await host.raw('builds/publish', { method: 'POST', body: form })).json()) as never;
      expectOk(pub);
      expectOk(await host.post('builds/remove', as(owner, { name: 'Launcher', version: '1.0.0' })));

      const { Entries, Total } = await audit(owner);
      expect(Total).toBe(9);
      expect(Entries.map((e) => e.action)).toEqual([
        'removebuild',
        'publishbuild',
        'changewebhook',
        'changehostsettings',
        'revokegameservertoken',
        'addgameservertoken',
        'revokeinvitecode',
        'createinvitecode',
        'resetpassword',
      ]);
      const byAction = Object.fromEntries(Entries.map((e) => [e.action, e]));
      expect(byAction.resetpassword).toMatchObject({
        moderatorId: admin.id,
        moderatorName: 'admin',
        targetUserId: user.id,
        targetName: 'user',
        fields: {},
        time: Math.floor(clock.now() / 1000),
      });
      expect(byAction.createinvitecode).toMatchObject({
        targetId: codeId,
        fields: { label: 'friends', maxUses: 1 },
      });
      expect(byAction.revokegameservertoken).toMatchObject({ targetId: tokenId, fields: { label: 'box' } });
      expect(byAction.changehostsettings).toMatchObject({ fields: { requireInviteCode: true } });
      expect(byAction.changewebhook).toMatchObject({
        moderatorId: owner.id,
        fields: { configured: true, urlChanged: true },
      });
      expect(byAction.publishbuild).toMatchObject({
        targetId: 'Launcher@1.0.0',
        fields: { name: 'Launcher', version: '1.0.0', files: 1 },
      });
      const text = JSON.stringify(Entries);
      for (const secret of [code, gsToken, hookUrl, 'SECRETPART', 'N3w-Passw0rd!']) {
        expect(text).not.toContain(secret);
      }
      // The password reset is one commit with its entry: the new password works.
      expectOk(await host.post('login', { username: 'user', password: 'N3w-Passw0rd!' }));
    });

    it('keeps staff actions out of moderationLog and lookups (the old routes answer as before)', async () => {
      expectOk(
        await host.post(
          'resetUserPassword',
          as(admin, { targetUserId: user.id, newPassword: 'N3w-Passw0rd!' }),
        ),
      );
      expectOk(
        await host.post(
          'moderation',
          as(mod, { action: 'warnuser', targetUserId: user.id, warnReason: 'x', warnDescription: '' }),
        ),
      );
      const log = expectOk(await host.post('moderationLog', as(mod))) as { Entries: Entry[]; Total: number };
      expect(log.Entries.map((e) => e.action)).toEqual(['warnuser']);
      expect(Object.keys(log.Entries[0]!)).toEqual([
        'id',
        'seq',
        'time',
        'moderatorId',
        'moderatorName',
        'action',
        'targetUserId',
        'targetName',
        'fields',
        'before',
        'after',
      ]);
      const found = expectOk(await host.post('moderationLookup', as(mod, { query: user.id }))) as {
        Users: Array<{ RecentActions: Entry[] }>;
      };
      expect(found.Users[0]!.RecentActions.map((e) => e.action)).toEqual(['warnuser']);
      expect((await audit(mod)).Total).toBe(2);
    });

    it('filters by action, group, moderator (id or name), target and time range, paged', async () => {
      const warn = (who: Account) =>
        host.post(
          'moderation',
          as(who, { action: 'warnuser', targetUserId: user.id, warnReason: 'r', warnDescription: '' }),
        );
      expectOk(await warn(mod));
      clock.advance(3600);
      const t1 = Math.floor(clock.now() / 1000);
      expectOk(await host.post('createInviteCode', as(admin, { label: 'a' })));
      expectOk(await warn(admin));
      clock.advance(3600);
      expectOk(await host.post('addGameServerToken', as(admin, { label: 'g' })));

      expect((await audit(mod, { action: 'warnuser' })).Total).toBe(2);
      expect((await audit(mod, { group: 'moderation' })).Total).toBe(2);
      expect((await audit(mod, { group: 'invites' })).Entries.map((e) => e.action)).toEqual([
        'createinvitecode',
      ]);
      expect((await audit(mod, { group: 'invites', action: 'warnuser' })).Total).toBe(0);
      expect((await audit(mod, { moderator: 'admin' })).Total).toBe(3);
      expect((await audit(mod, { moderator: mod.id })).Total).toBe(1);
      expect((await audit(mod, { target: 'user' })).Total).toBe(2);
      expect((await audit(mod, { from: t1, to: t1 })).Entries.map((e) => e.action)).toEqual([
        'warnuser',
        'createinvitecode',
      ]);
      expect((await audit(mod, { from: t1 + 1 })).Entries.map((e) => e.action)).toEqual([
        'addgameservertoken',
      ]);
      const page = await audit(mod, { page: 1, itemsPerPage: 2 });
      expect(page.Total).toBe(4);
      expect(page.Entries.map((e) => e.action)).toEqual(['createinvitecode', 'warnuser']);
      const plain = await signUp(host, 'plain');
      expectFail(await host.post('auditLog', as(plain)), 'NOT_A_MODERATOR');
      expectFail(await host.post('auditLog', as(mod, { action: 'nope' })), 'INVALID_PARAMETERS');
    });

    it('bans until lifted: BanEnd is 2^31-1, login answers Banned, the log says so', async () => {
      expectOk(
        await host.post(
          'moderation',
          as(mod, {
            action: 'banuser',
            targetUserId: user.id,
            banReason: 'spam',
            banDescription: '',
            timeEnd: BAN_UNTIL_LIFTED,
          }),
        ),
      );
      const { Entries } = await audit(mod, { action: 'banuser' });
      expect(Entries[0]!.fields.timeEnd).toBe(2_147_483_647);
      clock.advance(5 * 365 * 86_400);
      const login = expectOk(await host.post('login', { username: 'user', password: PASSWORD }), 'Banned');
      expect(login).toEqual({
        LoginResult: 2,
        BanStatus: {
          isBanned: true,
          BanBegin: expect.any(Number),
          BanEnd: 2_147_483_647,
          BanReason: 'spam',
          BanDescription: '',
        },
      });
    });
  });
}

suite('audit log', async () => null);
suite('audit log on PostgreSQL', freshDatabaseUrl);
