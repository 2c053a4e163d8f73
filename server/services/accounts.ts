import type { ErrorCode } from '../protocol/errors.js';
import type { Rank } from '../protocol/enums.js';
import type { CreateUserRequest, LoginRequest } from '../protocol/schemas.js';
import type { PrivateUserDto, PublicUserDto, TokenDto } from '../protocol/types.js';
import type { StoredUser } from '../store/users.js';
import type { Tx } from '../store/seam.js';
import {
  authenticate,
  authenticateUser,
  isBanned,
  requireRank,
  requireUser,
  tokenExpiry,
} from './accounts/authentication.js';
import { changePassword, confirmIdentity } from './accounts/credentials.js';
import { updateBio } from './accounts/profile.js';
import { login, logout, type LoginOutcome } from './accounts/sign-in.js';
import { createUser } from './accounts/sign-up.js';
import { createAccountsShared, type AccountsDeps } from './accounts/state.js';
import { enable2fa, remove2fa, verify2fa } from './accounts/two-factor.js';
import { privateView, publicView } from './accounts/views.js';

export { hashToken } from './accounts/tokens.js';
export type { LoginOutcome } from './accounts/sign-in.js';

export interface AccountsService {
  createUser(
    input: CreateUserRequest,
    options?: { rank?: Rank; skipInviteCode?: boolean; inTx?: (t: Tx, user: StoredUser) => Promise<unknown> },
  ): Promise<{
    user: StoredUser;
    token: TokenDto;
  }>;
  /** `remote` is the caller's address; wrong passwords from it are throttled per username. */
  login(input: LoginRequest, remote?: string): Promise<LoginOutcome>;
  /** The user with this id, as stored (undefined when there is none); no token checked. */
  findUser(userId: string): Promise<StoredUser | undefined>;
  /** The user with this username (case-insensitive), as stored, or undefined; no token checked. */
  findUserByName(username: string): Promise<StoredUser | undefined>;
  /** The users among these ids that exist, as stored, in the order asked (one read for all); no token checked. */
  findUsers(userIds: readonly string[]): Promise<StoredUser[]>;
  /** The user whose live token this is, or null (unknown user, wrong or expired token, banned, warned). */
  authenticate(userId: string, tokenContent: string): Promise<StoredUser | null>;
  /** `authenticate` for a user record this request already read. */
  authenticateUser(user: StoredUser, tokenContent: string): StoredUser | null;
  /** Unix seconds at which this live token expires (0 when it is not a live token of the user). */
  tokenExpiry(userId: string, tokenContent: string): Promise<number>;
  /** Like authenticate, but throws the envelope's "Failed to authenticate user!" error. */
  requireUser(userId: string, tokenContent: string, message?: string): Promise<StoredUser>;
  /** Like requireUser, and refuses (with `refusal`) a user ranked below `rank`. */
  requireRank(
    userId: string,
    tokenContent: string,
    rank: Rank,
    refusal: { code: ErrorCode; message: string; tokenMessage?: string },
  ): Promise<StoredUser>;
  logout(userId: string, tokenContent: string): Promise<boolean>;
  isBanned(user: StoredUser): boolean;
  privateView(user: StoredUser, currentToken: string | null): PrivateUserDto;
  publicView(user: StoredUser): PublicUserDto;
  /** Returns the new Bio. */
  updateBio(user: StoredUser, bio: unknown): Promise<StoredUser['Bio']>;
  enable2fa(user: StoredUser): Promise<string>;
  verify2fa(user: StoredUser, code: string): Promise<boolean>;
  remove2fa(user: StoredUser): Promise<void>;
  /**
   * Refuses unless `proof` shows the account's owner is the one asking (the current password, and the current 2FA
   * code when 2FA is on), so a stolen session cannot take the account over. Wrong passwords are throttled per user
   * as sign-ins are. `what` names the action in messages ("remove 2FA"). Without a password, the session's token
   * (`tokenContent`) confirms it when a password sign-in made it within `limits.recentSignInSeconds`.
   */
  confirmIdentity(
    user: StoredUser,
    proof: { currentPassword?: string; twofacode?: string; tokenContent?: string },
    what: string,
  ): Promise<void>;
  changePassword(
    user: StoredUser,
    newPassword: string,
    alsoInCommit?: (t: Tx) => Promise<unknown>,
  ): Promise<void>;
}

/**
 * Accounts: sign-up, sign-in and tokens, 2FA, the Bio, password changes and the views of a user. Wires the parts
 * in server/services/accounts/ to one shared state object (dependencies and wrong-password throttles).
 */
export function createAccountsService(deps: AccountsDeps): AccountsService {
  const up = createAccountsShared(deps);
  const { users } = deps;
  return {
    isBanned: (user) => isBanned(up, user),
    findUser: (userId) => users.get(userId),
    findUserByName: (username) => users.byUsername(username),
    findUsers: (userIds) => users.getMany(userIds),
    authenticate: (userId, tokenContent) => authenticate(up, userId, tokenContent),
    authenticateUser: (user, tokenContent) => authenticateUser(up, user, tokenContent),
    tokenExpiry: (userId, tokenContent) => tokenExpiry(up, userId, tokenContent),
    requireUser: (userId, tokenContent, message) => requireUser(up, userId, tokenContent, message),
    requireRank: (userId, tokenContent, rank, refusal) =>
      requireRank(up, userId, tokenContent, rank, refusal),
    createUser: (input, options) => createUser(up, input, options),
    login: (input, remote) => login(up, input, remote),
    logout: (userId, tokenContent) => logout(up, userId, tokenContent),
    privateView: (user, currentToken) => privateView(user, currentToken),
    publicView: (user) => publicView(up, user),
    updateBio: (user, bio) => updateBio(up, user, bio),
    enable2fa: (user) => enable2fa(up, user),
    verify2fa: (user, code) => verify2fa(up, user, code),
    remove2fa: (user) => remove2fa(up, user),
    confirmIdentity: (user, proof, what) => confirmIdentity(up, user, proof, what),
    changePassword: (user, newPassword, alsoInCommit) => changePassword(up, user, newPassword, alsoInCommit),
  };
}
