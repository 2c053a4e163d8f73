import { ErrorCode } from '../../protocol/errors.js';
import { Rank } from '../../protocol/enums.js';
import {
  emailProblem,
  passwordProblem,
  usernameProblem,
  type CreateUserRequest,
} from '../../protocol/schemas.js';
import type { TokenDto } from '../../protocol/types.js';
import { AppError } from '../../errors.js';
import { BY_EMAIL, BY_NAME, newUserRecord, UsersRepo, type StoredUser } from '../../store/users.js';
import type { Tx } from '../../store/seam.js';
import { unixSeconds } from '../context.js';
import type { AccountsShared } from './state.js';
import { newToken } from './tokens.js';

export interface CreateUserOptions {
  rank?: Rank;
  skipInviteCode?: boolean;
  /** More to write in the account's own commit (the new account given). */
  inTx?: (t: Tx, user: StoredUser) => Promise<unknown>;
}

/** A new account (sign-up, first-run owner, CLI), signed in with a fresh token. */
export async function createUser(
  up: AccountsShared,
  input: CreateUserRequest,
  options: CreateUserOptions = {},
): Promise<{ user: StoredUser; token: TokenDto }> {
  const { deps } = up;
  const codeNeeded = !options.skipInviteCode && (await deps.requireInviteCode());
  await checkNewAccount(up, input, codeNeeded);
  const hashed = await deps.passwords.hash(input.password);
  // The account's password was just chosen: a sign-up counts as a password sign-in.
  const token = newToken(up, 'account-create', 'password');
  const user = newUserRecord({
    id: deps.ids.id('user'),
    username: input.username,
    email: input.email,
    hashed,
    rank: options.rank ?? Rank.Registered,
    token: token.stored,
    now: unixSeconds(deps.clock),
  });
  const stored = await deps.store.tx(async (t) => {
    // Checked again in the commit: another sign-up may have taken the name while the password hashed.
    await checkNewAccount(up, input, codeNeeded, t);
    if (codeNeeded) {
      await deps.inviteCodes.claim(t, input.inviteCode ?? '', user.Id);
    }
    await options.inTx?.(t, user);
    const created = UsersRepo.in(t).put(user.Id, user);
    await deps.webhookOutbox.signup(t, created);
    return created;
  });
  return { user: stored, token: token.dto };
}

/**
 * `codeNeeded`: whether sign-up needs an invite code (read before any transaction: a transaction reads nothing
 * through a second connection while it holds one). `t` given: the uniqueness checks read through the transaction
 * (so a concurrent sign-up conflicts).
 */
async function checkNewAccount(
  up: AccountsShared,
  input: CreateUserRequest,
  codeNeeded: boolean,
  t?: Tx,
): Promise<void> {
  const fields: Record<string, string> = {};
  const usernameIssue = usernameProblem(input.username);
  if (usernameIssue) fields.username = `Username ${usernameIssue}`;
  const passwordIssue = passwordProblem(input.password);
  if (passwordIssue) fields.password = `Password ${passwordIssue}`;
  const emailIssue = emailProblem(input.email);
  if (emailIssue) fields.email = `Email ${emailIssue}`;
  if (Object.keys(fields).length > 0) {
    const code = fields.username
      ? ErrorCode.INVALID_USERNAME
      : fields.password
        ? ErrorCode.WEAK_PASSWORD
        : ErrorCode.INVALID_EMAIL;
    throw new AppError(code, `Failed to create user! ${Object.values(fields).join('; ')}.`, fields);
  }
  const { users } = up.deps;
  const inTx = t ? UsersRepo.in(t) : null;
  const nameTaken = await (inTx
    ? inTx.find(BY_NAME, input.username.toLowerCase())
    : users.byUsername(input.username));
  const emailTaken = await (inTx
    ? inTx.find(BY_EMAIL, input.email.toLowerCase())
    : users.byEmail(input.email));
  // Every problem at once, so a sign-up form can show them all together.
  const taken: Record<string, string> = {};
  if (nameTaken) taken.username = 'Username is taken';
  if (emailTaken) taken.email = 'Email is already used by another account';
  let inviteRefusal: AppError | null = null;
  if (codeNeeded) {
    try {
      // Configured codes and codes made on the Host screen alike; the use is recorded in the commit.
      await up.deps.inviteCodes.claim(t ?? null, input.inviteCode ?? '', null);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      inviteRefusal = error;
      taken.inviteCode = error.fields?.inviteCode ?? 'Invite code is not valid';
    }
  }
  if (Object.keys(taken).length === 0) return;
  const [code, message] = nameTaken
    ? [ErrorCode.USERNAME_TAKEN, 'Failed to create user! That username is taken.']
    : emailTaken
      ? [ErrorCode.EMAIL_TAKEN, 'Failed to create user! That email is already used.']
      : [inviteRefusal!.code, inviteRefusal!.message];
  throw new AppError(code, message, taken);
}
