import { afterEach, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import {
  editUser,
  expectFail,
  expectOk,
  PASSWORD,
  signUp,
  startHost,
  type Account,
  type TestHost,
} from './helpers.js';

/** Issue 18: the Host screen's calls, served to the owner and admins in any window and refused to everyone else. */
describe('host administration over the API', () => {
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    host = undefined;
  });
  const as = (me: Account, extra: Record<string, unknown> = {}) => ({
    userid: me.id,
    tokenContent: me.token,
    ...extra,
  });
  const signUpWith = (h: TestHost, username: string, inviteCode?: string) =>
    h.post('createUser', {
      username,
      password: PASSWORD,
      email: `${username}@example.com`,
      ...(inviteCode === undefined ? {} : { inviteCode }),
    });

  it('refuses every host-administration call to a moderator, a player and a wrong token, changing nothing', async () => {
    const h = (host = await startHost());
    const admin = await signUp(h, 'admin');
    const moderator = await signUp(h, 'moddy');
    const player = await signUp(h, 'player');
    await editUser(h, admin.id, (d) => void (d.Rank = Rank.Admin));
    await editUser(h, moderator.id, (d) => void (d.Rank = Rank.Moderator));
    const code = expectOk(await h.post('createInviteCode', as(admin, { maxUses: 3 })));
    const codeId = (code.InviteCode as { id: string }).id;
    const token = expectOk(await h.post('addGameServerToken', as(admin, { label: 'Basement' })));
    const tokenId = (token.GameServerToken as { id: string }).id;

    const calls: Array<[string, Record<string, unknown>]> = [
      ['hostStatus', {}],
      ['inviteCodes', {}],
      ['createInviteCode', { maxUses: 5, expiresInSeconds: 3600 }],
      ['revokeInviteCode', { codeId }],
      ['hostSettings', { requireInviteCode: true }],
      ['gameServerTokens', {}],
      ['addGameServerToken', { label: 'sneaky' }],
      ['revokeGameServerToken', { tokenId }],
    ];
    for (const [path, body] of calls) {
      for (const who of [moderator, player]) {
        const answer = await h.post(path, as(who, body));
        expect(answer.result?.error?.code, `${path} as ${who.username}`).toBe('FORBIDDEN');
      }
      expectFail(await h.post(path, as(admin, { ...body, tokenContent: 'not-a-token' })), 'INVALID_TOKEN');
    }
    // Nothing changed: one code, still active; one token; codes still optional.
    const codes = expectOk(await h.post('inviteCodes', as(admin))).InviteCodes as Array<{ active: boolean }>;
    expect(codes.map((c) => c.active)).toEqual([true]);
    const tokens = expectOk(await h.post('gameServerTokens', as(admin))).GameServerTokens as unknown[];
    expect(tokens).toHaveLength(1);
    expect(expectOk(await h.get('isInviteCodeRequired')).inviteCodeRequired).toBe(false);
  });

  it('lets a code allow a chosen number of sign-ups, then refuses the next one', async () => {
    const h = (host = await startHost({ requireInviteCode: true }));
    const owner = await h.server.accounts.createUser(
      { username: 'owner', password: PASSWORD, email: 'owner@example.com' },
      { skipInviteCode: true, rank: Rank.Owner },
    );
    const me = { id: owner.user.Id, username: 'owner', token: owner.token.content };
    const made = expectOk(await h.post('createInviteCode', as(me, { label: 'party', maxUses: 2 })));
    expect(made.InviteCode).toMatchObject({ label: 'party', maxUses: 2, singleUse: false, active: true });
    const code = made.code as string;
    // A code made on the Host screen works although codes are required by the host's configuration.
    expectOk(await signUpWith(h, 'first', code));
    expectOk(await signUpWith(h, 'second', code));
    const third = expectFail(await signUpWith(h, 'third', code), 'INVITE_CODE_REQUIRED');
    expect(third.result?.error?.fields?.inviteCode).toBe(
      'Invite code has been used as many times as it allows',
    );
    expect(await h.server.users.byUsername('third')).toBeUndefined();
    const listed = expectOk(await h.post('inviteCodes', as(me))).InviteCodes as Array<{
      maxUses: number;
      uses: unknown[];
      active: boolean;
    }>;
    expect(listed).toEqual([expect.objectContaining({ maxUses: 2, active: false })]);
    expect(listed[0]!.uses).toHaveLength(2);

    // maxUses 0 is unlimited, and the older singleUse still means one.
    const unlimited = expectOk(await h.post('createInviteCode', as(me, { maxUses: 0 })));
    expect(unlimited.InviteCode).toMatchObject({ maxUses: 0, singleUse: false });
    const once = expectOk(await h.post('createInviteCode', as(me, { singleUse: true })));
    expect(once.InviteCode).toMatchObject({ maxUses: 1, singleUse: true });
    for (const bad of [-1, 1.5, 10_001, '3']) {
      expectFail(await h.post('createInviteCode', as(me, { maxUses: bad })), 'INVALID_PARAMETERS');
    }
  });

  it('names every sign-up problem at once: a taken name, a used email and a wrong invite code', async () => {
    const h = (host = await startHost({ requireInviteCode: true, globalInviteCodes: ['lan-party'] }));
    expectOk(await signUpWith(h, 'alice', 'lan-party'));
    const answer = expectFail(
      await h.post('createUser', {
        username: 'ALICE',
        password: PASSWORD,
        email: 'alice@example.com',
        inviteCode: 'wrong',
      }),
      'USERNAME_TAKEN',
    );
    expect(answer.result?.error?.fields).toEqual({
      username: 'Username is taken',
      email: 'Email is already used by another account',
      inviteCode: 'Invite code is not valid',
    });
    const onlyCode = expectFail(await signUpWith(h, 'bob'), 'INVITE_CODE_REQUIRED');
    expect(onlyCode.result?.error?.fields).toEqual({ inviteCode: 'This host requires an invite code' });
  });
});
