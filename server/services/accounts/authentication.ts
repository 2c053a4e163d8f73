import { ErrorCode } from '../../protocol/errors.js';
import type { Rank } from '../../protocol/enums.js';
import { AppError } from '../../errors.js';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import type { AccountsShared } from './state.js';
import { findToken } from './tokens.js';

export function isBanned(up: AccountsShared, user: StoredUser): boolean {
  return user.BanStatus.isBanned && user.BanStatus.BanEnd > unixSeconds(up.deps.clock);
}

/** The user whose live token this is, or null (unknown user, wrong or expired token, banned, warned). */
export async function authenticate(
  up: AccountsShared,
  userId: string,
  tokenContent: string,
): Promise<StoredUser | null> {
  const user = await up.deps.users.get(userId);
  return user ? authenticateUser(up, user, tokenContent) : null;
}

/** `authenticate` for a user already read in this request (no second read of the same record). */
export function authenticateUser(
  up: AccountsShared,
  user: StoredUser,
  tokenContent: string,
): StoredUser | null {
  if (!findToken(up, user, tokenContent)) return null;
  if (isBanned(up, user) || user.WarnStatus.isWarned) return null;
  return user;
}

export async function tokenExpiry(up: AccountsShared, userId: string, tokenContent: string): Promise<number> {
  const user = await up.deps.users.get(userId);
  return user ? (findToken(up, user, tokenContent)?.dateExpire ?? 0) : 0;
}

export async function requireUser(
  up: AccountsShared,
  userId: string,
  tokenContent: string,
  message = 'Failed to authenticate user!',
): Promise<StoredUser> {
  const user = await authenticate(up, userId, tokenContent);
  if (!user) throw new AppError(ErrorCode.INVALID_TOKEN, message);
  return user;
}

export async function requireRank(
  up: AccountsShared,
  userId: string,
  tokenContent: string,
  rank: Rank,
  refusal: { code: ErrorCode; message: string; tokenMessage?: string },
): Promise<StoredUser> {
  const user = await authenticate(up, userId, tokenContent);
  if (!user)
    throw new AppError(ErrorCode.INVALID_TOKEN, refusal.tokenMessage ?? 'Failed to authenticate user!');
  if (user.Rank < rank) throw new AppError(refusal.code, refusal.message);
  return user;
}
