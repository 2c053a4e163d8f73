import { createContext, useContext } from 'react';
import { ErrorCode } from '../../server/protocol/errors.js';
import type { PrivateUserDto } from '../../server/protocol/types.js';
import { ApiError, call } from './api-client.js';

/** What proves who we are on every authenticated call (credentials travel in the body, reference 2.5). */
export interface Session {
  userid: string;
  tokenContent: string;
}

export const SESSION_STORAGE_KEY = 'hypernex-companion.session';

/** The stored session, or null when there is none or storage is unavailable (private mode, blocked). */
export function loadStoredSession(): Session | null {
  let raw: string | null;
  try {
    raw = localStorage.getItem(SESSION_STORAGE_KEY);
  } catch {
    return null;
  }
  return raw === null ? null : parseSession(raw);
}

export function parseSession(raw: string): Session | null {
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== 'object' || value === null) return null;
    const { userid, tokenContent } = value as Record<string, unknown>;
    if (typeof userid !== 'string' || typeof tokenContent !== 'string' || !userid || !tokenContent)
      return null;
    return { userid, tokenContent };
  } catch {
    return null;
  }
}

export function storeSession(session: Session): void {
  try {
    localStorage.setItem(SESSION_STORAGE_KEY, JSON.stringify(session));
  } catch {
    // Without storage the session still works until the page closes; nothing else to do.
  }
}

export function forgetStoredSession(): void {
  try {
    localStorage.removeItem(SESSION_STORAGE_KEY);
  } catch {
    // Nothing stored that could outlive us.
  }
}

/** Your own private user; throws ApiError INVALID_TOKEN when the token no longer works. */
export async function fetchSelf(session: Session): Promise<PrivateUserDto> {
  const { UserData } = await call<{ UserData: PrivateUserDto }>('getUser', session);
  return UserData;
}

export type RestoreOutcome =
  | { kind: 'none' }
  /** A session was stored but the host no longer accepts it (signed out elsewhere, expired, restricted). */
  | { kind: 'expired' }
  | { kind: 'restored'; session: Session; user: PrivateUserDto };

/**
 * Checks the stored session with the host. Network failures are rethrown and the stored session is kept, so a
 * host that is briefly down does not sign anyone out.
 */
export async function restoreSession(): Promise<RestoreOutcome> {
  const session = loadStoredSession();
  if (!session) return { kind: 'none' };
  try {
    const { isValidToken } = await call<{ isValidToken: boolean }>('isValidToken', session);
    if (isValidToken) return { kind: 'restored', session, user: await fetchSelf(session) };
  } catch (error) {
    if (!isRejectedCredential(error)) throw error;
  }
  forgetStoredSession();
  return { kind: 'expired' };
}

/** Ends the session on the host (best effort) and always forgets it here. */
export async function endSession(session: Session): Promise<void> {
  forgetStoredSession();
  try {
    await call('logout', session);
  } catch {
    // An already invalid token or an unreachable host must not keep anyone signed in locally.
  }
}

/** True for the answers that mean "these credentials are no good", as opposed to "could not ask". */
export function isRejectedCredential(error: unknown): boolean {
  return (
    error instanceof ApiError &&
    (error.code === ErrorCode.INVALID_TOKEN ||
      error.code === ErrorCode.USER_NOT_FOUND ||
      error.code === ErrorCode.INVALID_PARAMETERS)
  );
}

export interface SessionValue {
  session: Session;
  user: PrivateUserDto;
  /** Replaces the signed-in user after a change the server confirmed. */
  setUser(update: (user: PrivateUserDto) => PrivateUserDto): void;
  /**
   * Calls an authenticated endpoint with this session's credentials. When the host refuses the token (signed
   * out elsewhere, expired, banned or warned meanwhile) the app returns to sign-in with a notice.
   */
  authedCall<R extends object = Record<string, unknown>>(path: string, body?: object): Promise<R>;
  signOut(): Promise<void>;
  /**
   * Runs `work`, which ends this session on the host (a password change signs every session out), and continues
   * with the session it returns, or goes to sign-in with `notice` when it returns null. If `work` throws, nothing
   * changes and the error comes back.
   */
  replaceSession(
    work: () => Promise<{ session: Session; user: PrivateUserDto } | null>,
    notice: string,
  ): Promise<void>;
}

export const SessionContext = createContext<SessionValue | null>(null);

export function useSession(): SessionValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession is only available inside the signed-in app');
  return value;
}
