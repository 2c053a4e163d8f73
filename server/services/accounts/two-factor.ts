import { Secret, TOTP } from 'otpauth';
import { ErrorCode } from '../../protocol/errors.js';
import { AppError } from '../../errors.js';
import { UsersRepo, type StoredUser } from '../../store/users.js';
import type { AccountsShared } from './state.js';

const TOTP_PERIOD = 30;

/** Stores a new pending 2FA secret; returns its otpauth:// URI for the authenticator app. */
export async function enable2fa(up: AccountsShared, user: StoredUser): Promise<string> {
  if (user.is2FAVerified) {
    throw new AppError(
      ErrorCode.TWO_FA_ALREADY_ENABLED,
      'Failed to enable 2FA! It is already on; remove it first.',
    );
  }
  const secret = new Secret({ size: 20 });
  await up.deps.store.tx(async (t) => {
    await UsersRepo.in(t).update(user.Id, (draft) => {
      draft.TwoFA = { base32: secret.base32 };
    });
  });
  return totpFor(secret.base32, user.Username).toString();
}

/** Turns 2FA on when `code` matches the pending secret; false when it does not. */
export async function verify2fa(up: AccountsShared, user: StoredUser, code: string): Promise<boolean> {
  if (!user.TwoFA)
    throw new AppError(ErrorCode.TWO_FA_NOT_ENABLED, 'Invalid 2FA Code! Call enable2fa first.');
  const base32 = user.TwoFA.base32;
  if (!checkTotp(base32, code, up.deps.clock.now())) return false;
  return up.deps.store.tx(async (t) => {
    // The secret checked must still be the pending one (enable2fa may have run again meanwhile).
    if ((await UsersRepo.in(t).get(user.Id))?.TwoFA?.base32 !== base32) return false;
    await UsersRepo.in(t).update(user.Id, (draft) => {
      draft.is2FAVerified = true;
    });
    return true;
  });
}

export async function remove2fa(up: AccountsShared, user: StoredUser): Promise<void> {
  await up.deps.store.tx(async (t) => {
    await UsersRepo.in(t).update(user.Id, (draft) => {
      draft.TwoFA = null;
      draft.is2FAVerified = false;
    });
  });
}

/** Whether `code` is the current (or an adjacent period's) code of the secret `base32`. */
export function checkTotp(base32: string, code: string, nowMs: number): boolean {
  return totpFor(base32, '').validate({ token: code.trim(), timestamp: nowMs, window: 1 }) !== null;
}

function totpFor(base32: string, label: string): TOTP {
  return new TOTP({
    issuer: 'Hypernex Companion',
    label,
    algorithm: 'SHA1',
    digits: 6,
    period: TOTP_PERIOD,
    secret: Secret.fromBase32(base32),
  });
}
