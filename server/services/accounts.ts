import { Secret, TOTP } from 'otpauth';
import { ErrorCode } from '../protocol/errors.js';
import { LoginResult, Rank, Status } from '../protocol/enums.js';
import {
  BioInput,
  emailProblem,
  fieldErrorsOf,
  passwordProblem,
  usernameProblem,
  type CreateUserRequest,
  type LoginRequest,
} from '../protocol/schemas.js';
import type { PrivateUserDto, PublicUserDto, TokenDto } from '../protocol/types.js';
import { pronounsFromIds, withAnsweredPronouns } from '../protocol/pronouns.js';
import { AppError } from '../errors.js';
import {
  BY_EMAIL,
  BY_NAME,
  newUserRecord,
  UsersRepo,
  type StoredToken,
  type StoredUser,
} from '../store/users.js';
import type { Tx } from '../store/seam.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import { isUrlAllowed } from '../protocol/urls.js';
import type { InviteCodes } from './invite-codes.js';
import { hashMatches, sha256 } from './secrets.js';

let lastHashed: { content: string; digest: Buffer } | null = null;

/** SHA-256 of a token. The last one is remembered: a request checks and then shows the same token. */
export function hashToken(content: string): Buffer {
  if (lastHashed?.content === content) return lastHashed.digest;
  const digest = sha256(content);
  lastHashed = { content, digest };
  return digest;
}

export type LoginOutcome =
  | { kind: 'correct'; token: TokenDto; user: StoredUser }
  | { kind: 'warned'; token: TokenDto; user: StoredUser; warnStatus: StoredUser['WarnStatus'] }
  | { kind: 'banned'; banStatus: StoredUser['BanStatus'] }
  | { kind: 'missing2fa' }
  | { kind: 'incorrect2fa' };

export interface AccountsService {
  createUser(
    input: CreateUserRequest,
    options?: { rank?: Rank; skipInviteCode?: boolean; inTx?: (t: Tx) => Promise<void> },
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
  changePassword(user: StoredUser, newPassword: string): Promise<void>;
}

const TOTP_PERIOD = 30;

export function createAccountsService(
  deps: ServiceDeps & {
    localHosts: () => string[];
    inviteCodes: InviteCodes;
    /** Whether sign-up needs an invite code right now (a host setting the owner can change). */
    requireInviteCode: () => Promise<boolean>;
  },
): AccountsService {
  const { users, store, clock, ids, config, passwords, presence, events } = deps;
  // Shared by every host process of the community, so another process behind the proxy is no way around it.
  const throttle = deps.limits.throttle('login', {
    maxFailures: config.limits.loginFailures,
    windowSeconds: config.limits.loginFailureWindowSeconds,
  });
  const accountThrottle = deps.limits.throttle('login-account', {
    maxFailures: config.limits.loginFailures * 10,
    windowSeconds: config.limits.loginFailureWindowSeconds,
  });

  /**
   * A sign-in attempt counted for the username from this address and, at a tenth of the pace, for the username
   * from anywhere (guesses from one address never lock the owner out elsewhere; many addresses are slowed too).
   * Throws RATE_LIMITED when either is spent; else the way to give the attempt back once it succeeded.
   */
  async function loginAttempt(name: string, remote: string): Promise<{ succeeded(): Promise<void> }> {
    const pair = await throttle.attempt(`${remote}|${name}`);
    if (!pair.allowed) throw loginLimited(pair.retryAfter);
    const account = await accountThrottle.attempt(`account|${name}`);
    // The pair's attempt stays counted: refused here or not, it was one more try.
    if (!account.allowed) throw loginLimited(account.retryAfter);
    return {
      succeeded: async () => {
        await pair.succeeded();
        await account.succeeded();
      },
    };
  }

  function newToken(app: string, signIn: StoredToken['signIn']): { dto: TokenDto; stored: StoredToken } {
    const now = unixSeconds(clock);
    const content = ids.secret();
    const dto: TokenDto = { content, dateCreated: now, dateExpire: now + config.tokenLifetimeSeconds, app };
    return {
      dto,
      stored: {
        hash: hashToken(content).toString('hex'),
        dateCreated: dto.dateCreated,
        dateExpire: dto.dateExpire,
        app,
        ...(signIn && { signIn }),
      },
    };
  }

  /**
   * Whether `tokenContent` is a live token of `user` that a password sign-in made within
   * `limits.recentSignInSeconds`, with its 2FA code when 2FA is on now (a sign-in from before 2FA was turned on
   * does not count). A token made any other way, or before this was recorded, never counts.
   */
  function isRecentSignIn(user: StoredUser, tokenContent: string): boolean {
    const token = findToken(user, tokenContent);
    if (!token?.signIn) return false;
    const age = unixSeconds(clock) - token.dateCreated;
    if (age < 0 || age >= config.limits.recentSignInSeconds) return false;
    const twoFactor = user.is2FAVerified && user.TwoFA !== null;
    return !twoFactor || token.signIn === 'password+2fa';
  }

  /** Drops expired tokens and keeps at most `maxTokensPerUser - 1`, making room for one more. */
  function pruneTokens(user: StoredUser): void {
    const now = unixSeconds(clock);
    user.AccountTokens = user.AccountTokens.filter((token) => token.dateExpire > now);
    const keep = Math.max(0, config.maxTokensPerUser - 1);
    if (user.AccountTokens.length > keep) {
      user.AccountTokens.sort((a, b) => a.dateCreated - b.dateCreated);
      user.AccountTokens = user.AccountTokens.slice(user.AccountTokens.length - keep);
    }
  }

  function findToken(user: StoredUser, tokenContent: string): StoredToken | undefined {
    const candidate = hashToken(tokenContent);
    const now = unixSeconds(clock);
    let found: StoredToken | undefined;
    // Compare every token in constant time; do not stop at the first match.
    for (const token of user.AccountTokens) {
      if (hashMatches(token.hash, candidate) && token.dateExpire > now) {
        found = token;
      }
    }
    return found;
  }

  function isBanned(user: StoredUser): boolean {
    return user.BanStatus.isBanned && user.BanStatus.BanEnd > unixSeconds(clock);
  }

  async function authenticate(userId: string, tokenContent: string): Promise<StoredUser | null> {
    const user = await users.get(userId);
    return user ? authenticateUser(user, tokenContent) : null;
  }

  /** `authenticate` for a user already read in this request (no second read of the same record). */
  function authenticateUser(user: StoredUser, tokenContent: string): StoredUser | null {
    if (!findToken(user, tokenContent)) return null;
    if (isBanned(user) || user.WarnStatus.isWarned) return null;
    return user;
  }

  /** `t` given: the uniqueness checks read through the transaction (so a concurrent sign-up conflicts). */
  /**
   * `codeNeeded`: whether sign-up needs an invite code (read before any transaction: a transaction reads nothing
   * through a second connection while it holds one).
   */
  async function checkNewAccount(input: CreateUserRequest, codeNeeded: boolean, t?: Tx): Promise<void> {
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
        await deps.inviteCodes.claim(t ?? null, input.inviteCode ?? '', null);
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

  function sanitizeTokenList(user: StoredUser, currentToken: string | null): TokenDto[] {
    const current = currentToken === null ? null : hashToken(currentToken).toString('hex');
    return user.AccountTokens.map((token) => ({
      // Only the request's own token comes back with its content: HypernexSharp's token login looks for it here.
      content: token.hash === current && currentToken !== null ? currentToken : '',
      dateCreated: token.dateCreated,
      dateExpire: token.dateExpire,
      app: token.app,
    }));
  }

  return {
    isBanned,
    findUser: (userId) => users.get(userId),
    findUserByName: (username) => users.byUsername(username),
    authenticate,
    authenticateUser,

    async tokenExpiry(userId, tokenContent) {
      const user = await users.get(userId);
      return user ? (findToken(user, tokenContent)?.dateExpire ?? 0) : 0;
    },

    async requireUser(userId, tokenContent, message = 'Failed to authenticate user!') {
      const user = await authenticate(userId, tokenContent);
      if (!user) throw new AppError(ErrorCode.INVALID_TOKEN, message);
      return user;
    },

    async requireRank(userId, tokenContent, rank, refusal) {
      const user = await authenticate(userId, tokenContent);
      if (!user)
        throw new AppError(ErrorCode.INVALID_TOKEN, refusal.tokenMessage ?? 'Failed to authenticate user!');
      if (user.Rank < rank) throw new AppError(refusal.code, refusal.message);
      return user;
    },

    async createUser(input, options = {}) {
      const codeNeeded = !options.skipInviteCode && (await deps.requireInviteCode());
      await checkNewAccount(input, codeNeeded);
      const hashed = await passwords.hash(input.password);
      // The account's password was just chosen: a sign-up counts as a password sign-in.
      const token = newToken('account-create', 'password');
      const user = newUserRecord({
        id: ids.id('user'),
        username: input.username,
        email: input.email,
        hashed,
        rank: options.rank ?? Rank.Registered,
        token: token.stored,
        now: unixSeconds(clock),
      });
      const stored = await store.tx(async (t) => {
        // Checked again in the commit: another sign-up may have taken the name while the password hashed.
        await checkNewAccount(input, codeNeeded, t);
        if (codeNeeded) {
          await deps.inviteCodes.claim(t, input.inviteCode ?? '', user.Id);
        }
        await options.inTx?.(t);
        const created = UsersRepo.in(t).put(user.Id, user);
        t.afterCommit(() => events.emit('accountCreated', { user: created }));
        return created;
      });
      return { user: stored, token: token.dto };
    },

    async login(input, remote = 'local') {
      // Counted before the password is checked: attempts sent at once all count (a wrong one stays counted).
      const counted = await loginAttempt(input.username.toLowerCase(), remote);
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
      const token = newToken(normaliseApp(input.app), twoFactor ? 'password+2fa' : 'password');
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
          pruneTokens(draft);
          draft.AccountTokens.push(token.stored);
          if (draft.WarnStatus.isWarned) {
            warned = { ...draft.WarnStatus };
            draft.WarnStatus.isWarned = false;
          }
        });
        if (warned) return { kind: 'warned', token: token.dto, user: updated, warnStatus: warned };
        return { kind: 'correct', token: token.dto, user: updated };
      });
    },

    async logout(userId, tokenContent) {
      const user = await users.get(userId);
      if (!user) return false;
      if (!findToken(user, tokenContent)) return false;
      return store.tx(async (t) => {
        const current = await UsersRepo.in(t).get(userId);
        const token = current && findToken(current, tokenContent);
        if (!token) return false;
        await UsersRepo.in(t).update(userId, (draft) => {
          draft.AccountTokens = draft.AccountTokens.filter((stored) => stored.hash !== token.hash);
        });
        t.afterCommit(() => events.emit('tokensRevoked', { userId }));
        return true;
      });
    },

    privateView(user, currentToken) {
      // Stored records are deeply frozen and the view is serialised at once: it shares their lists, no copies.
      return {
        Id: user.Id,
        Username: user.Username,
        Email: user.Email,
        isEmailVerified: user.isEmailVerified,
        AccountTokens: sanitizeTokenList(user, currentToken),
        is2FAVerified: user.is2FAVerified,
        BlockedUsers: user.BlockedUsers,
        Following: user.Following,
        Followers: user.Followers,
        OutgoingFriendRequests: user.OutgoingFriendRequests,
        FriendRequests: user.FriendRequests,
        Friends: user.Friends,
        Badges: user.Badges,
        Bio: withAnsweredPronouns(user.Bio),
        Rank: user.Rank,
        AccountCreationDate: user.AccountCreationDate,
        BanStatus: user.BanStatus,
        BanCount: user.BanCount,
        WarnStatus: user.WarnStatus,
        WarnCount: user.WarnCount,
        Avatars: user.Avatars,
        Worlds: user.Worlds,
      };
    },

    publicView(user) {
      const { isPrivateAccount, ...bio } = user.Bio;
      const connected = presence.isConnected(user.Id);
      const view: PublicUserDto = {
        Id: user.Id,
        Username: user.Username,
        Badges: [...user.Badges],
        Bio: withAnsweredPronouns({ ...bio, Status: connected ? user.Bio.Status : Status.Offline }),
        Rank: user.Rank,
        isInWorld:
          presence.isInWorld(user.Id) &&
          user.Bio.Status !== Status.DoNotDisturb &&
          user.Bio.Status !== Status.Offline,
      };
      if (!isPrivateAccount) {
        view.Following = [...user.Following];
        view.Followers = [...user.Followers];
      }
      return view;
    },

    async updateBio(user, rawBio) {
      let bio: unknown = rawBio;
      if (typeof bio === 'string') {
        try {
          bio = JSON.parse(bio);
        } catch {
          throw new AppError(ErrorCode.INVALID_BIO, 'Failed to update bio! bio is not JSON.', {
            bio: 'is not JSON',
          });
        }
      }
      const parsed = BioInput.safeParse(bio);
      if (!parsed.success) {
        throw new AppError(
          ErrorCode.INVALID_BIO,
          'Failed to update bio! Check the marked fields.',
          prefix(fieldErrorsOf(parsed.error)),
        );
      }
      const input = parsed.data;
      const urlOpts = { allowedDomains: config.allowedDomains, localHosts: deps.localHosts() };
      const fields: Record<string, string> = {};
      for (const key of ['PfpURL', 'BannerURL'] as const) {
        const value = input[key];
        if (value !== undefined && value !== '' && !isUrlAllowed(value, urlOpts)) {
          fields[`bio.${key}`] = 'must be empty, on this host, or on an allowed image domain';
        }
      }
      if (Object.keys(fields).length > 0) {
        throw new AppError(ErrorCode.INVALID_BIO, 'Failed to update bio! Check the marked fields.', fields);
      }
      const { Pronouns, ...rest } = input;
      return store.tx(async (t) => {
        const updated = await UsersRepo.in(t).update(user.Id, (draft) => {
          Object.assign(draft.Bio, rest);
          if (Pronouns === 'remove') delete draft.Bio.Pronouns;
          else if (Pronouns !== undefined) draft.Bio.Pronouns = pronounsFromIds(Pronouns);
        });
        t.afterCommit(() => events.emit('bioUpdated', { userId: user.Id }));
        return updated.Bio;
      });
    },

    async enable2fa(user) {
      if (user.is2FAVerified) {
        throw new AppError(
          ErrorCode.TWO_FA_ALREADY_ENABLED,
          'Failed to enable 2FA! It is already on; remove it first.',
        );
      }
      const secret = new Secret({ size: 20 });
      await store.tx(async (t) => {
        await UsersRepo.in(t).update(user.Id, (draft) => {
          draft.TwoFA = { base32: secret.base32 };
        });
      });
      return totpFor(secret.base32, user.Username).toString();
    },

    async verify2fa(user, code) {
      if (!user.TwoFA)
        throw new AppError(ErrorCode.TWO_FA_NOT_ENABLED, 'Invalid 2FA Code! Call enable2fa first.');
      const base32 = user.TwoFA.base32;
      if (!checkTotp(base32, code, clock.now())) return false;
      return store.tx(async (t) => {
        // The secret checked must still be the pending one (enable2fa may have run again meanwhile).
        if ((await UsersRepo.in(t).get(user.Id))?.TwoFA?.base32 !== base32) return false;
        await UsersRepo.in(t).update(user.Id, (draft) => {
          draft.is2FAVerified = true;
        });
        return true;
      });
    },

    async confirmIdentity(user, proof, what) {
      // A password that is sent is always checked; without one, a fresh password sign-in vouches for its session.
      if (!proof.currentPassword && proof.tokenContent && isRecentSignIn(user, proof.tokenContent)) return;
      const key = `confirm|${user.Id}`;
      const wait = await throttle.retryAfter(key);
      if (wait > 0) throw confirmLimited(what, wait);
      const twoFactor = user.is2FAVerified && user.TwoFA !== null;
      const missing: Record<string, string> = {};
      if (!proof.currentPassword) missing.currentPassword = 'Enter your current password';
      if (twoFactor && !proof.twofacode?.trim())
        missing.twofacode = 'Enter the code from your authenticator app';
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
      const counted = await throttle.attempt(key);
      if (!counted.allowed) throw confirmLimited(what, counted.retryAfter);
      if (!(await passwords.verify(user.HashedPassword, proof.currentPassword!))) {
        throw new AppError(
          ErrorCode.INCORRECT_CREDENTIALS,
          `Failed to ${what}! The current password is wrong.`,
          {
            currentPassword: 'Not your current password',
          },
        );
      }
      if (twoFactor && !checkTotp(user.TwoFA!.base32, proof.twofacode!, clock.now())) {
        throw new AppError(ErrorCode.INVALID_2FA_CODE, `Failed to ${what}! That 2FA code is not right.`, {
          twofacode: 'Does not match the current code',
        });
      }
      await counted.succeeded();
    },

    async remove2fa(user) {
      await store.tx(async (t) => {
        await UsersRepo.in(t).update(user.Id, (draft) => {
          draft.TwoFA = null;
          draft.is2FAVerified = false;
        });
      });
    },

    async changePassword(user, newPassword) {
      const issue = passwordProblem(newPassword);
      if (issue) {
        throw new AppError(ErrorCode.WEAK_PASSWORD, `Failed to reset password! Password ${issue}.`, {
          newPassword: `Password ${issue}`,
        });
      }
      const hashed = await passwords.hash(newPassword);
      await store.tx(async (t) => {
        await UsersRepo.in(t).update(user.Id, (draft) => {
          draft.HashedPassword = hashed;
          // As the real server: a password change signs out every session.
          draft.AccountTokens = [];
        });
        t.afterCommit(() => events.emit('tokensRevoked', { userId: user.Id }));
      });
    },
  };

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

  function checkTotp(base32: string, code: string, nowMs: number): boolean {
    return totpFor(base32, '').validate({ token: code.trim(), timestamp: nowMs, window: 1 }) !== null;
  }
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

function confirmLimited(what: string, wait: number): AppError {
  return new AppError(
    ErrorCode.RATE_LIMITED,
    `Failed to ${what}! Too many wrong passwords. Try again in ${wait} seconds.`,
    undefined,
    { retryAfter: wait },
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

function prefix(fields: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [`bio.${key}`, value]));
}
