import { ErrorCode } from '../../protocol/errors.js';
import { passwordProblem } from '../../protocol/schemas.js';
import { AppError } from '../../errors.js';
import type { Tx } from '../../store/seam.js';
import { UsersRepo, type StoredUser } from '../../store/users.js';
import type { AccountsShared } from './state.js';
import { isRecentSignIn } from './tokens.js';
import { checkTotp } from './two-factor.js';

/**
 * Refuses unless `proof` shows the account's owner is the one asking (the current password, and the current 2FA
 * code when 2FA is on); a fresh password sign-in (`proof.tokenContent`) vouches for its session when no password
 * is sent. Wrong passwords are throttled per user.
 */
export async function confirmIdentity(
  up: AccountsShared,
  user: StoredUser,
  proof: { currentPassword?: string; twofacode?: string; tokenContent?: string },
  what: string,
): Promise<void> {
  const { config, passwords, clock } = up.deps;
  // A password that is sent is always checked; without one, a fresh password sign-in vouches for its session.
  if (!proof.currentPassword && proof.tokenContent && isRecentSignIn(up, user, proof.tokenContent)) return;
  const key = `confirm|${user.Id}`;
  const wait = await up.throttle.retryAfter(key);
  if (wait > 0) throw confirmLimited(what, wait);
  const twoFactor = user.is2FAVerified && user.TwoFA !== null;
  const missing: Record<string, string> = {};
  if (!proof.currentPassword) missing.currentPassword = 'Enter your current password';
  if (twoFactor && !proof.twofacode?.trim()) missing.twofacode = 'Enter the code from your authenticator app';
  if (Object.keys(missing).length > 0) {
    throw new AppError(
      ErrorCode.CONFIRMATION_REQUIRED,
      `Failed to ${what}! Confirm it is you: send your current password (currentPassword)${
        twoFactor ? ' and the code from your authenticator app (twofacode)' : ''
      }, or sign in again with your password and retry within ${Math.round(
        config.limits.recentSignInSeconds / 60,
      )} minutes.`,
      missing,
    );
  }
  // Counted before the password is checked, so confirmations sent at once all count.
  const counted = await up.throttle.attempt(key);
  if (!counted.allowed) throw confirmLimited(what, counted.retryAfter);
  if (!(await passwords.verify(user.HashedPassword, proof.currentPassword!))) {
    throw new AppError(ErrorCode.INCORRECT_CREDENTIALS, `Failed to ${what}! The current password is wrong.`, {
      currentPassword: 'Not your current password',
    });
  }
  if (twoFactor && !checkTotp(user.TwoFA!.base32, proof.twofacode!, clock.now())) {
    throw new AppError(ErrorCode.INVALID_2FA_CODE, `Failed to ${what}! That 2FA code is not right.`, {
      twofacode: 'Does not match the current code',
    });
  }
  await counted.succeeded();
}

/** Sets a new password and, as the real server does, signs out every session. */
export async function changePassword(
  up: AccountsShared,
  user: StoredUser,
  newPassword: string,
  /** More to write in the same commit (an admin's reset: its audit-log entry). */
  alsoInCommit?: (t: Tx) => Promise<unknown>,
): Promise<void> {
  const issue = passwordProblem(newPassword);
  if (issue) {
    throw new AppError(ErrorCode.WEAK_PASSWORD, `Failed to reset password! Password ${issue}.`, {
      newPassword: `Password ${issue}`,
    });
  }
  const hashed = await up.deps.passwords.hash(newPassword);
  await up.deps.store.tx(async (t) => {
    await UsersRepo.in(t).update(user.Id, (draft) => {
      draft.HashedPassword = hashed;
      // As the real server: a password change signs out every session.
      draft.AccountTokens = [];
    });
    await alsoInCommit?.(t);
    t.afterCommit(() => up.deps.events.emit('tokensRevoked', { userId: user.Id }));
  });
}

function confirmLimited(what: string, wait: number): AppError {
  return new AppError(
    ErrorCode.RATE_LIMITED,
    `Failed to ${what}! Too many wrong passwords. Try again in ${wait} seconds.`,
    undefined,
    { retryAfter: wait },
  );
}
