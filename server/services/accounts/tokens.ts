import type { TokenDto } from '../../protocol/types.js';
import type { StoredToken, StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { hashMatches, sha256 } from '../secrets.js';
import type { AccountsShared } from './state.js';

let lastHashed: { content: string; digest: Buffer } | null = null;

/** SHA-256 of a token. The last one is remembered: a request checks and then shows the same token. */
export function hashToken(content: string): Buffer {
  if (lastHashed?.content === content) return lastHashed.digest;
  const digest = sha256(content);
  lastHashed = { content, digest };
  return digest;
}

export function newToken(
  up: AccountsShared,
  app: string,
  signIn: StoredToken['signIn'],
): { dto: TokenDto; stored: StoredToken } {
  const { clock, ids, config } = up.deps;
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

/** The live (unexpired) token of `user` whose content this is, if any. */
export function findToken(
  up: AccountsShared,
  user: StoredUser,
  tokenContent: string,
): StoredToken | undefined {
  const candidate = hashToken(tokenContent);
  const now = unixSeconds(up.deps.clock);
  let found: StoredToken | undefined;
  // Compare every token in constant time; do not stop at the first match.
  for (const token of user.AccountTokens) {
    if (hashMatches(token.hash, candidate) && token.dateExpire > now) {
      found = token;
    }
  }
  return found;
}

/** Drops expired tokens and keeps at most `maxTokensPerUser - 1`, making room for one more. */
export function pruneTokens(up: AccountsShared, user: StoredUser): void {
  const now = unixSeconds(up.deps.clock);
  user.AccountTokens = user.AccountTokens.filter((token) => token.dateExpire > now);
  const keep = Math.max(0, up.deps.config.maxTokensPerUser - 1);
  if (user.AccountTokens.length > keep) {
    user.AccountTokens.sort((a, b) => a.dateCreated - b.dateCreated);
    user.AccountTokens = user.AccountTokens.slice(user.AccountTokens.length - keep);
  }
}

/**
 * Whether `tokenContent` is a live token of `user` that a password sign-in made within
 * `limits.recentSignInSeconds`, with its 2FA code when 2FA is on now (a sign-in from before 2FA was turned on
 * does not count). A token made any other way, or before this was recorded, never counts.
 */
export function isRecentSignIn(up: AccountsShared, user: StoredUser, tokenContent: string): boolean {
  const token = findToken(up, user, tokenContent);
  if (!token?.signIn) return false;
  const age = unixSeconds(up.deps.clock) - token.dateCreated;
  if (age < 0 || age >= up.deps.config.limits.recentSignInSeconds) return false;
  const twoFactor = user.is2FAVerified && user.TwoFA !== null;
  return !twoFactor || token.signIn === 'password+2fa';
}

/** The token list of a private view: only the request's own token keeps its content. */
export function sanitizeTokenList(user: StoredUser, currentToken: string | null): TokenDto[] {
  const current = currentToken === null ? null : hashToken(currentToken).toString('hex');
  return user.AccountTokens.map((token) => ({
    // Only the request's own token comes back with its content: HypernexSharp's token login looks for it here.
    content: token.hash === current && currentToken !== null ? currentToken : '',
    dateCreated: token.dateCreated,
    dateExpire: token.dateExpire,
    app: token.app,
  }));
}
