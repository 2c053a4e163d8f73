import { ErrorCode } from '../../protocol/errors.js';
import { LoginResult } from '../../protocol/enums.js';
import type { LoginRequest } from '../../protocol/schemas.js';
import type { TokenDto } from '../../protocol/types.js';
import { AppError } from '../../errors.js';
import { UsersRepo, type StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import type { AccountsShared } from './state.js';
import { findToken, newToken, pruneTokens } from './tokens.js';
import { checkTotp } from './two-factor.js';

export type LoginOutcome =
  | { kind: 'correct'; token: TokenDto; user: StoredUser }
  | { kind: 'warned'; token: TokenDto; user: StoredUser; warnStatus: StoredUser['WarnStatus'] }
  | { kind: 'banned'; banStatus: StoredUser['BanStatus'] }
  | { kind: 'missing2fa' }
  | { kind: 'incorrect2fa' };

/** `remote` is the caller's address; wrong passwords from it are throttled per username. */
export async function login(
  up: AccountsShared,
  input: LoginRequest,
  remote = 'local',
): Promise<LoginOutcome> {
  const { users, passwords, clock, store } = up.deps;
  // Counted before the password is checked: attempts sent at once all count (a wrong one stays counted).
  const counted = await loginAttempt(up, input.username.toLowerCase(), remote);
  const user = await users.byUsername(input.username);
  if (!user) {
    await passwords.verifyDummy(input.password);
    throw incorrect();
  }
  if (!(await passwords.verify(user.HashedPassword, input.password))) throw incorrect();
  const now = unixSeconds(clock);
  if (user.BanStatus.isBanned && user.BanStatus.BanEnd > now) {
    await counted.succeeded();
    return { kind: 'banned', banStatus: { ...user.BanStatus } };
  }
  const twoFactor = user.is2FAVerified && user.TwoFA !== null;
  if (twoFactor) {
    // The password was right: asking for the code costs nothing; a wrong code stays counted.
    if (!input.twofacode) {
      await counted.succeeded();
      return { kind: 'missing2fa' };
    }
    if (!checkTotp(user.TwoFA!.base32, input.twofacode, clock.now())) return { kind: 'incorrect2fa' };
  }
  await counted.succeeded();
  const token = newToken(up, normaliseApp(input.app), twoFactor ? 'password+2fa' : 'password');
  return store.tx(async (t): Promise<LoginOutcome> => {
    const current = await UsersRepo.in(t).get(user.Id);
    if (!current) throw incorrect();
    // A ban may have come while the password was checked.
    if (current.BanStatus.isBanned && current.BanStatus.BanEnd > now) {
      return { kind: 'banned', banStatus: { ...current.BanStatus } };
    }
    let warned: StoredUser['WarnStatus'] | null = null;
    const updated = await UsersRepo.in(t).update(user.Id, (draft) => {
      if (draft.BanStatus.isBanned) draft.BanStatus.isBanned = false;
      pruneTokens(up, draft);
      draft.AccountTokens.push(token.stored);
      if (draft.WarnStatus.isWarned) {
        warned = { ...draft.WarnStatus };
        draft.WarnStatus.isWarned = false;
      }
    });
    if (warned) return { kind: 'warned', token: token.dto, user: updated, warnStatus: warned };
    return { kind: 'correct', token: token.dto, user: updated };
  });
}

/** Revokes this one token; false when it is not a live token of the user. */
export async function logout(up: AccountsShared, userId: string, tokenContent: string): Promise<boolean> {
  const user = await up.deps.users.get(userId);
  if (!user) return false;
  if (!findToken(up, user, tokenContent)) return false;
  return up.deps.store.tx(async (t) => {
    const current = await UsersRepo.in(t).get(userId);
    const token = current && findToken(up, current, tokenContent);
    if (!token) return false;
    await UsersRepo.in(t).update(userId, (draft) => {
      draft.AccountTokens = draft.AccountTokens.filter((stored) => stored.hash !== token.hash);
    });
    t.afterCommit(() => up.deps.events.emit('tokensRevoked', { userId }));
    return true;
  });
}

/**
 * A sign-in attempt counted for the username from this address and, at a tenth of the pace, for the username
 * from anywhere (guesses from one address never lock the owner out elsewhere; many addresses are slowed too).
 * Throws RATE_LIMITED when either is spent; else the way to give the attempt back once it succeeded.
 */
async function loginAttempt(
  up: AccountsShared,
  name: string,
  remote: string,
): Promise<{ succeeded(): Promise<void> }> {
  const pair = await up.throttle.attempt(`${remote}|${name}`);
  if (!pair.allowed) throw loginLimited(pair.retryAfter);
  const account = await up.accountThrottle.attempt(`account|${name}`);
  // The pair's attempt stays counted: refused here or not, it was one more try.
  if (!account.allowed) throw loginLimited(account.retryAfter);
  return {
    succeeded: async () => {
      await pair.succeeded();
      await account.succeeded();
    },
  };
}

function loginLimited(wait: number): AppError {
  return new AppError(
    ErrorCode.RATE_LIMITED,
    `Too many wrong passwords. Try again in ${wait} seconds.`,
    undefined,
    {
      LoginResult: LoginResult.Incorrect,
      retryAfter: wait,
    },
  );
}

function incorrect(): AppError {
  return new AppError(ErrorCode.INCORRECT_CREDENTIALS, 'Incorrect credentials', undefined, {
    LoginResult: LoginResult.Incorrect,
  });
}

function normaliseApp(app: string | undefined): string {
  if (app === undefined || app === '' || app.toLowerCase() === 'api') return 'unknown';
  return app;
}
