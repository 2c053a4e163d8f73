import { readdir, readFile } from 'node:fs/promises';
import { UsersRepo } from '../../server/store/users.js';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
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
} from './helpers.js';

/** Every file of the data folder's users/ with its content, to show a refusal wrote nothing. */
async function usersOnDisk(host: TestHost): Promise<Record<string, string>> {
  // Commits are acknowledged from the write-ahead log; a checkpoint brings the record files up to date.
  await host.server.store.checkpoint();
  const dir = join(host.dir, 'users');
  const out: Record<string, string> = {};
  for (const name of await readdir(dir)) out[name] = await readFile(join(dir, name), 'utf8');
  return out;
}

const SECRET_KEYS = ['HashedPassword', 'TwoFA', 'emailVerificationToken', 'passwordResetToken'];

describe('accounts', () => {
  let host: TestHost;
  const clock = manualClock();

  beforeEach(async () => {
    host = await startHost({}, { clock });
  });
  afterEach(async () => {
    await host.close();
  });

  describe('createUser', () => {
    it('creates a Registered, Online user and returns the signup token in AccountTokens', async () => {
      const result = expectOk(
        await host.post('createUser', {
          username: 'alice',
          password: PASSWORD,
          email: 'a@x.io',
          inviteCode: '',
        }),
        'Created user alice',
      );
      const user = result.UserData as Record<string, unknown>;
      expect(user.Id).toMatch(/^user_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(user).toMatchObject({
        Username: 'alice',
        Email: 'a@x.io',
        isEmailVerified: false,
        is2FAVerified: false,
        Rank: 2,
        Bio: { Status: 1, isPrivateAccount: false },
        BanStatus: { isBanned: false, BanBegin: 0, BanEnd: 0, BanReason: '', BanDescription: '' },
        WarnStatus: { isWarned: false, TimeWarned: 0, WarnReason: '', WarnDescription: '' },
        BanCount: 0,
        WarnCount: 0,
        Friends: [],
        Avatars: [],
        Worlds: [],
      });
      const tokens = user.AccountTokens as Array<Record<string, unknown>>;
      expect(tokens).toHaveLength(1);
      expect(tokens[0]).toMatchObject({ app: 'account-create' });
      expect((tokens[0]!.content as string).length).toBeGreaterThanOrEqual(43);
      expect((tokens[0]!.dateExpire as number) - (tokens[0]!.dateCreated as number)).toBe(30 * 24 * 3600);
      for (const key of SECRET_KEYS) expect(user).not.toHaveProperty(key);
    });

    it('stores only a hash of the token and of the password', async () => {
      const alice = await signUp(host, 'alice');
      const disk = Object.values(await usersOnDisk(host)).join('');
      expect(disk).not.toContain(alice.token);
      expect(disk).not.toContain(PASSWORD);
      expect(disk).toContain('$argon2id$');
    });

    it('accepts a missing inviteCode when the host needs none (HypernexSharp drops empty codes)', async () => {
      expectOk(await host.post('createUser', { username: 'bob', password: PASSWORD, email: 'b@x.io' }));
    });

    it.each([
      ['a null username', { username: null, password: PASSWORD, email: 'a@x.io' }, 'username'],
      ['a numeric username', { username: 12345, password: PASSWORD, email: 'a@x.io' }, 'username'],
      ['a missing password', { username: 'alice', email: 'a@x.io' }, 'password'],
      [
        'a null inviteCode',
        { username: 'alice', password: PASSWORD, email: 'a@x.io', inviteCode: null },
        'inviteCode',
      ],
    ])('refuses %s as invalid parameters and writes nothing', async (_name, body, field) => {
      const before = await usersOnDisk(host);
      const answer = expectFail(
        await host.post('createUser', body),
        'INVALID_PARAMETERS',
        'Invalid parameters!',
      );
      expect(answer.result?.error?.fields).toHaveProperty(field);
      expect(await usersOnDisk(host)).toEqual(before);
    });

    it.each([
      ['Passw0rd', 'needs a symbol'],
      ['passw0rd!', 'needs an uppercase letter'],
      ['PASSW0RD!', 'needs a lowercase letter'],
      ['Password!', 'needs a digit'],
      ['Pa0!', 'at least 8'],
    ])('refuses the weak password %s, saying why', async (password, why) => {
      const answer = expectFail(
        await host.post('createUser', { username: 'alice', password, email: 'a@x.io' }),
        'WEAK_PASSWORD',
      );
      expect(answer.result?.error?.fields?.password).toContain(why);
      expect(await usersOnDisk(host)).toEqual({});
    });

    it.each(['ab', 'a'.repeat(21), 'has space', 'two__under', 'a_b_c', 'émile'])(
      'refuses the username %j',
      async (username) => {
        expectFail(
          await host.post('createUser', { username, password: PASSWORD, email: 'a@x.io' }),
          'INVALID_USERNAME',
        );
        expect(await usersOnDisk(host)).toEqual({});
      },
    );

    it('refuses an invalid email', async () => {
      expectFail(
        await host.post('createUser', { username: 'alice', password: PASSWORD, email: 'nope' }),
        'INVALID_EMAIL',
      );
    });

    it('refuses a username taken in another case, and a reused email, leaving the first account intact', async () => {
      await signUp(host, 'Alice', 'a@x.io');
      const before = await usersOnDisk(host);
      expectFail(
        await host.post('createUser', { username: 'aLICE', password: PASSWORD, email: 'z@x.io' }),
        'USERNAME_TAKEN',
      );
      expectFail(
        await host.post('createUser', { username: 'other', password: PASSWORD, email: 'A@X.io' }),
        'EMAIL_TAKEN',
      );
      expect(await usersOnDisk(host)).toEqual(before);
    });

    it('gives one of two simultaneous sign-ups of the same name the account, the other a refusal', async () => {
      const answers = await Promise.all(
        [1, 2].map((n) =>
          host.post('createUser', { username: 'racer', password: PASSWORD, email: `r${n}@x.io` }),
        ),
      );
      expect(answers.filter((a) => a.success)).toHaveLength(1);
      expect(Object.keys(await usersOnDisk(host))).toHaveLength(1);
    });
  });

  describe('invite codes', () => {
    it('requires a listed invite code when the host says so', async () => {
      const strict = await startHost({ requireInviteCode: true, globalInviteCodes: ['lan-party'] });
      try {
        expectOk(await strict.get('isInviteCodeRequired'), 'Got Information');
        expect((await strict.get('isInviteCodeRequired')).result).toEqual({ inviteCodeRequired: true });
        expectFail(
          await strict.post('createUser', { username: 'alice', password: PASSWORD, email: 'a@x.io' }),
          'INVITE_CODE_REQUIRED',
        );
        expectFail(
          await strict.post('createUser', {
            username: 'alice',
            password: PASSWORD,
            email: 'a@x.io',
            inviteCode: 'x',
          }),
          'INVITE_CODE_REQUIRED',
        );
        expectOk(
          await strict.post('createUser', {
            username: 'alice',
            password: PASSWORD,
            email: 'a@x.io',
            inviteCode: 'lan-party',
          }),
        );
      } finally {
        await strict.close();
      }
    });
  });

  describe('login', () => {
    let alice: Account;
    beforeEach(async () => {
      alice = await signUp(host, 'alice');
    });

    it('answers LoginResult 4 with a fresh token, matching the username in any case', async () => {
      const result = expectOk(
        await host.post('login', { username: 'ALICE', password: PASSWORD }),
        'Login Successful',
      );
      expect(result.LoginResult).toBe(4);
      expect(result.token).toMatchObject({ app: 'unknown' });
      const token = (result.token as { content: string }).content;
      expect(token).not.toBe(alice.token);
      expect((await host.post('isValidToken', { userid: alice.id, tokenContent: token })).result).toEqual({
        isValidToken: true,
      });
    });

    it('refuses a wrong password or an unknown user with LoginResult 0 and no token', async () => {
      for (const body of [
        { username: 'alice', password: 'Wrong0ne!' },
        { username: 'nobody', password: PASSWORD },
      ]) {
        const answer = expectFail(
          await host.post('login', body),
          'INCORRECT_CREDENTIALS',
          'Incorrect credentials',
        );
        expect(answer.result?.LoginResult).toBe(0);
        expect(answer.result).not.toHaveProperty('token');
      }
    });

    it('refuses null or wrong-typed fields as invalid parameters', async () => {
      expectFail(await host.post('login', { username: 'alice', password: null }), 'INVALID_PARAMETERS');
      expectFail(await host.post('login', { username: ['alice'], password: PASSWORD }), 'INVALID_PARAMETERS');
    });

    it('refuses a banned user with LoginResult 2 and the BanStatus, and no token, until the ban ends', async () => {
      const before = await usersOnDisk(host);
      const now = Math.floor(clock.now() / 1000);
      const user = await host.server.store.tx((t) =>
        UsersRepo.in(t).update(alice.id, (draft) => {
          draft.BanStatus = {
            isBanned: true,
            BanBegin: now,
            BanEnd: now + 3600,
            BanReason: 'Spam',
            BanDescription: 'Links',
          };
        }),
      );
      const banned = await host.post('login', { username: 'alice', password: PASSWORD });
      expect(banned).toEqual({
        success: true,
        message: 'Banned',
        result: { LoginResult: 2, BanStatus: user.BanStatus },
      });
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: false,
      });
      expect(Object.keys(await usersOnDisk(host))).toEqual(Object.keys(before));
      clock.advance(3601);
      expect(expectOk(await host.post('login', { username: 'alice', password: PASSWORD })).LoginResult).toBe(
        4,
      );
      expect((await host.server.users.get(alice.id))!.BanStatus.isBanned).toBe(false);
    });

    it('tells a warned user once (LoginResult 3) and refuses their tokens until they log in', async () => {
      await host.server.store.tx((t) =>
        UsersRepo.in(t).update(alice.id, (draft) => {
          draft.WarnStatus = {
            isWarned: true,
            TimeWarned: 1,
            WarnReason: 'Rude',
            WarnDescription: 'Be nice',
          };
        }),
      );
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: false,
      });
      const warned = expectOk(await host.post('login', { username: 'alice', password: PASSWORD }), 'Warned');
      expect(warned).toMatchObject({
        LoginResult: 3,
        WarnStatus: { isWarned: true, WarnReason: 'Rude', WarnDescription: 'Be nice', TimeWarned: 1 },
      });
      expect(warned.token).toBeDefined();
      expect(expectOk(await host.post('login', { username: 'alice', password: PASSWORD })).LoginResult).toBe(
        4,
      );
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: true,
      });
    });

    it('asks for a missing 2FA code, refuses a wrong one and accepts the right one', async () => {
      const enabled = expectOk(await host.post('enable2fa', { userid: alice.id, tokenContent: alice.token }));
      const url = new URL(enabled.otpauth_url as string);
      const totp = new TOTP({
        secret: Secret.fromBase32(url.searchParams.get('secret')!),
        period: 30,
        digits: 6,
      });
      const code = () => totp.generate({ timestamp: clock.now() });
      expectFail(
        await host.post('verify2fa', {
          userid: alice.id,
          tokenContent: alice.token,
          code: '000000' === code() ? '111111' : '000000',
        }),
        'INVALID_2FA_CODE',
        'Invalid 2FA Code!',
      );
      expectOk(
        await host.post('verify2fa', { userid: alice.id, tokenContent: alice.token, code: code() }),
        'Verified 2FA!',
      );

      const missing = expectOk(
        await host.post('login', { username: 'alice', password: PASSWORD }),
        'Missing 2FA',
      );
      expect(missing).toEqual({ LoginResult: 1 });
      const wrong = await host.post('login', { username: 'alice', password: PASSWORD, twofacode: '12345x' });
      expect(wrong).toEqual({ success: true, message: 'Incorrect credentials', result: { LoginResult: 0 } });
      const right = expectOk(
        await host.post('login', { username: 'alice', password: PASSWORD, twofacode: code() }),
      );
      expect(right.LoginResult).toBe(4);

      const me = expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }));
      expect(me.UserData).toMatchObject({ is2FAVerified: true });
      expect(me.UserData).not.toHaveProperty('TwoFA');
      expect(JSON.stringify(me)).not.toContain(url.searchParams.get('secret')!);

      expectOk(
        await host.post('remove2fa', {
          userid: alice.id,
          tokenContent: alice.token,
          currentPassword: PASSWORD,
          twofacode: code(),
        }),
        'Removed 2FA!',
      );
      expect(expectOk(await host.post('login', { username: 'alice', password: PASSWORD })).LoginResult).toBe(
        4,
      );
    });
  });

  describe('tokens', () => {
    let alice: Account;
    beforeEach(async () => {
      alice = await signUp(host, 'alice');
    });

    it('refuses a token once it expired (30 days by default)', async () => {
      clock.advance(30 * 24 * 3600 - 10);
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: true,
      });
      clock.advance(11);
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: false,
      });
      expectFail(
        await host.post('getUser', { userid: alice.id, tokenContent: alice.token }),
        'INVALID_TOKEN',
        'Invalid token!',
      );
    });

    it('uses the configured token lifetime', async () => {
      const short = await startHost({ tokenLifetimeSeconds: 3600 });
      try {
        const bob = await signUp(short, 'bob');
        const me = expectOk(await short.post('getUser', { userid: bob.id, tokenContent: bob.token }));
        const [token] = (me.UserData as { AccountTokens: Array<{ dateCreated: number; dateExpire: number }> })
          .AccountTokens;
        expect(token!.dateExpire - token!.dateCreated).toBe(3600);
      } finally {
        await short.close();
      }
    });

    it('answers isValidToken by username too, false for an unknown username and a failure for an unknown id', async () => {
      expect(
        (await host.post('isValidToken', { username: 'alice', tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: true,
      });
      expect(
        expectOk(
          await host.post('isValidToken', { username: 'ghost', tokenContent: alice.token }),
          'Completed Operation',
        ),
      ).toEqual({ isValidToken: false });
      expectFail(
        await host.post('isValidToken', { userid: 'user_nope', tokenContent: alice.token }),
        'USER_NOT_FOUND',
        'Failed to validate token!',
      );
    });

    it('logs out one token and leaves the others', async () => {
      const login = expectOk(await host.post('login', { username: 'alice', password: PASSWORD }));
      const second = (login.token as { content: string }).content;
      expectOk(await host.post('logout', { userid: alice.id, tokenContent: alice.token }), 'Logged out!');
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: false,
      });
      expect((await host.post('isValidToken', { userid: alice.id, tokenContent: second })).result).toEqual({
        isValidToken: true,
      });
      expectFail(
        await host.post('logout', { userid: alice.id, tokenContent: alice.token }),
        'INVALID_TOKEN',
        'Could not find a valid userid or token!',
      );
    });

    it('keeps a bounded number of tokens per user', async () => {
      const small = await startHost({ maxTokensPerUser: 3 });
      try {
        const bob = await signUp(small, 'bob');
        for (let i = 0; i < 5; i++)
          expectOk(await small.post('login', { username: 'bob', password: PASSWORD }));
        expect((await small.server.users.get(bob.id))!.AccountTokens).toHaveLength(3);
      } finally {
        await small.close();
      }
    });
  });

  describe('getUser', () => {
    let alice: Account;
    let bob: Account;
    beforeEach(async () => {
      alice = await signUp(host, 'alice');
      bob = await signUp(host, 'bob');
    });

    it('shows anyone exactly the censored view, Offline while not connected', async () => {
      for (const body of [{ userid: alice.id }, { username: 'ALICE' }]) {
        const result = expectOk(await host.post('getUser', body), 'Got user alice');
        expect(result.UserData).toEqual({
          Id: alice.id,
          Username: 'alice',
          Badges: [],
          Bio: { Status: 0, StatusText: '', Description: '', PfpURL: '', BannerURL: '', DisplayName: '' },
          Rank: 2,
          Following: [],
          Followers: [],
          isInWorld: false,
        });
      }
      const viaGet = expectOk(await host.get(`getUser?userid=${alice.id}`));
      expect(viaGet.UserData).toMatchObject({ Id: alice.id, isInWorld: false });
    });

    it('shows your own private view with the request token content and no secret', async () => {
      expectOk(await host.post('login', { username: 'alice', password: PASSWORD }));
      const result = expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }));
      const user = result.UserData as Record<string, unknown>;
      for (const key of SECRET_KEYS) expect(user).not.toHaveProperty(key);
      const tokens = user.AccountTokens as Array<{ content: string }>;
      expect(tokens).toHaveLength(2);
      expect(tokens.filter((t) => t.content === alice.token)).toHaveLength(1);
      expect(tokens.filter((t) => t.content === '')).toHaveLength(1);
      expect(user).toHaveProperty('BanStatus');
      expect(user).toHaveProperty('WarnStatus');
      const byName = expectOk(await host.post('getUser', { username: 'alice', tokenContent: alice.token }));
      expect(byName.UserData).toMatchObject({ Id: alice.id, Email: 'alice@example.com' });
    });

    it("refuses someone else's token instead of showing their private data", async () => {
      expectFail(
        await host.post('getUser', { userid: alice.id, tokenContent: bob.token }),
        'INVALID_TOKEN',
        'Invalid token!',
      );
      expectFail(
        await host.post('getUser', { username: 'alice', tokenContent: bob.token }),
        'INVALID_TOKEN',
        'Failed to getUser!',
      );
    });

    it('fails for an unknown user or when neither id nor name is given', async () => {
      expectFail(
        await host.post('getUser', { userid: 'user_ghost' }),
        'USER_NOT_FOUND',
        'Failed to getUser!',
      );
      expectFail(await host.post('getUser', {}), 'INVALID_PARAMETERS', 'Invalid parameters!');
    });

    it('answers doesUserExist', async () => {
      expect(expectOk(await host.get(`doesUserExist?userid=${alice.id}`), 'Completed Search')).toEqual({
        doesUserExist: true,
      });
      expect(expectOk(await host.get('doesUserExist?userid=user_ghost')).doesUserExist).toBe(false);
      expectFail(await host.get('doesUserExist'), 'INVALID_PARAMETERS');
    });
  });

  describe('updateBio', () => {
    let alice: Account;
    beforeEach(async () => {
      alice = await signUp(host, 'alice');
    });

    it('changes the status and text and keeps the rest', async () => {
      const result = expectOk(
        await host.post('updateBio', {
          userid: alice.id,
          tokenContent: alice.token,
          bio: { Status: 4, StatusText: 'busy', PfpURL: 'https://i.imgur.com/a.png' },
        }),
        'Updated Bio!',
      );
      expect(result.Bio).toMatchObject({
        Status: 4,
        StatusText: 'busy',
        Description: '',
        PfpURL: 'https://i.imgur.com/a.png',
      });
      await host.server.store.checkpoint();
      const onDisk = JSON.parse(await readFile(join(host.dir, 'users', `${alice.id}.json`), 'utf8'));
      expect(onDisk.data.Bio).toMatchObject({ Status: 4, StatusText: 'busy' });
    });

    it('accepts an image on the host itself', async () => {
      const url = `${host.server.url}/api/v1/file/${alice.id}/file_x`;
      expectOk(
        await host.post('updateBio', {
          userid: alice.id,
          tokenContent: alice.token,
          bio: { BannerURL: url },
        }),
      );
    });

    it.each([
      ['Status 0 (Offline cannot be chosen)', { Status: 0 }, 'bio.Status'],
      ['Status 7', { Status: 7 }, 'bio.Status'],
      ['a string Status', { Status: '1' }, 'bio.Status'],
      ['a Description over 1000 characters', { Description: 'x'.repeat(1001) }, 'bio.Description'],
      ['a DisplayName over 20 characters', { DisplayName: 'x'.repeat(21) }, 'bio.DisplayName'],
      ['a PfpURL on a foreign host', { PfpURL: 'https://evil.example/x.png' }, 'bio.PfpURL'],
      ['a javascript: URL', { BannerURL: 'javascript:alert(1)' }, 'bio.BannerURL'],
      ['a non-boolean isPrivateAccount', { isPrivateAccount: 'yes' }, 'bio.isPrivateAccount'],
    ])('refuses %s, naming the field, and writes nothing', async (_name, bio, field) => {
      const before = await usersOnDisk(host);
      const answer = expectFail(
        await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio }),
        'INVALID_BIO',
      );
      expect(answer.result?.error?.fields).toHaveProperty(field);
      expect(await usersOnDisk(host)).toEqual(before);
      expect((await host.server.users.get(alice.id))!.Bio.Status).toBe(1);
    });

    it('refuses a wrong token and a null bio', async () => {
      expectFail(
        await host.post('updateBio', { userid: alice.id, tokenContent: 'nope', bio: { Status: 2 } }),
        'INVALID_TOKEN',
        'Failed to authenticate user!',
      );
      expectFail(
        await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio: null }),
        'INVALID_PARAMETERS',
      );
    });

    it('hides Following and Followers of a private account from others', async () => {
      expectOk(
        await host.post('updateBio', {
          userid: alice.id,
          tokenContent: alice.token,
          bio: { isPrivateAccount: true },
        }),
      );
      const view = expectOk(await host.post('getUser', { userid: alice.id })).UserData as Record<
        string,
        unknown
      >;
      expect(view).not.toHaveProperty('Following');
      expect(view).not.toHaveProperty('Followers');
      expect(view.Bio).not.toHaveProperty('isPrivateAccount');
    });
  });

  describe('password change', () => {
    it('changes the password while signed in and signs every session out; email resets are refused clearly', async () => {
      const alice = await signUp(host, 'alice');
      expectFail(
        await host.post('resetPassword', {
          userid: alice.id,
          tokenContent: alice.token,
          currentPassword: PASSWORD,
          newPassword: 'weak',
        }),
        'WEAK_PASSWORD',
      );
      expectOk(
        await host.post('resetPassword', {
          userid: alice.id,
          tokenContent: alice.token,
          currentPassword: PASSWORD,
          newPassword: 'N3w-Passw0rd',
        }),
        'Reset password!',
      );
      expect(
        (await host.post('isValidToken', { userid: alice.id, tokenContent: alice.token })).result,
      ).toEqual({
        isValidToken: false,
      });
      expectFail(
        await host.post('login', { username: 'alice', password: PASSWORD }),
        'INCORRECT_CREDENTIALS',
      );
      expect(
        expectOk(await host.post('login', { username: 'alice', password: 'N3w-Passw0rd' })).LoginResult,
      ).toBe(4);
      for (const path of ['sendVerificationEmail', 'requestPasswordReset', 'resetPassword', 'changeEmail']) {
        const answer = expectFail(
          await host.post(path, { email: 'alice@example.com' }),
          'EMAIL_NOT_CONFIGURED',
        );
        expect(answer.message).toMatch(/email is not configured/i);
      }
    });
  });
});

describe('login throttling', () => {
  it('pauses logins for a username from one address after repeated wrong passwords, then lets them through', async () => {
    const clock = manualClock();
    const host = await startHost({ limits: { loginFailures: 3, loginFailureWindowSeconds: 60 } }, { clock });
    try {
      await signUp(host, 'alice');
      for (let i = 0; i < 3; i++) {
        expectFail(
          await host.post('login', { username: 'alice', password: 'Wrong0ne!' }),
          'INCORRECT_CREDENTIALS',
        );
      }
      const limited = expectFail(
        await host.post('login', { username: 'alice', password: PASSWORD }),
        'RATE_LIMITED',
      );
      expect(limited.result?.LoginResult).toBe(0);
      expect(limited.result?.retryAfter).toBe(60);
      expect(limited.message).toMatch(/Try again in 60 seconds/);
      // Another name from the same address is not affected.
      await signUp(host, 'bob');
      expect(expectOk(await host.post('login', { username: 'bob', password: PASSWORD })).LoginResult).toBe(4);
      clock.advance(61);
      expect(expectOk(await host.post('login', { username: 'alice', password: PASSWORD })).LoginResult).toBe(
        4,
      );
    } finally {
      await host.close();
    }
  });
});
