import { ErrorCode } from '../../../server/protocol/errors.js';
import { LoginResult } from '../../../server/protocol/enums.js';
import type {
  BanStatusDto,
  PrivateUserDto,
  TokenDto,
  WarnStatusDto,
} from '../../../server/protocol/types.js';
import { ApiError, call } from '../../shared/api-client.js';
import { FormProblem } from '../../shared/form.js';
import { storeSession, type Session } from '../../shared/session.js';

export interface SignedIn {
  session: Session;
  user: PrivateUserDto;
  /** Set when this sign-in delivered a warning; the host clears it, so it is shown this once. */
  warning: WarnStatusDto | null;
}

export type LoginOutcome =
  ({ kind: 'signedIn' } & SignedIn) | { kind: 'needs2fa' } | { kind: 'banned'; ban: BanStatusDto };

interface LoginResponse {
  LoginResult: LoginResult;
  token?: TokenDto;
  WarnStatus?: WarnStatusDto;
  BanStatus?: BanStatusDto;
}

// Recorded on the token so a token list can tell this UI's sessions from game clients'.
const APP_NAME = 'Hypernex Companion';

export async function login(username: string, password: string, twofacode?: string): Promise<LoginOutcome> {
  let answer: LoginResponse;
  try {
    answer = await call<LoginResponse>('login', {
      username,
      password,
      app: APP_NAME,
      ...(twofacode ? { twofacode } : {}),
    });
  } catch (error) {
    if (error instanceof ApiError && error.code === ErrorCode.INCORRECT_CREDENTIALS) {
      throw new FormProblem('That username and password do not match an account on this host.');
    }
    throw error;
  }

  switch (answer.LoginResult) {
    case LoginResult.Correct:
    case LoginResult.Warned: {
      if (!answer.token) throw new FormProblem('The host signed you in but sent no token. Try again.');
      const signedIn = await begin(username, answer.token.content);
      return { kind: 'signedIn', ...signedIn, warning: answer.WarnStatus ?? null };
    }
    case LoginResult.Banned:
      if (!answer.BanStatus) throw new FormProblem('This account is banned.');
      return { kind: 'banned', ban: answer.BanStatus };
    case LoginResult.Missing2FA:
      return { kind: 'needs2fa' };
    case LoginResult.Incorrect:
      // Only a refused 2FA code comes back as success with LoginResult 0 (a wrong password is a failure).
      throw new FormProblem('That code is not right. Codes change every 30 seconds; use the current one.', {
        code: 'Code does not match',
      });
    default:
      throw new FormProblem('The host answered with an unknown sign-in result.');
  }
}

/** Login answers no user id, so ask for our own user by name with the new token, then keep the session. */
async function begin(username: string, tokenContent: string): Promise<Omit<SignedIn, 'warning'>> {
  const { UserData } = await call<{ UserData: PrivateUserDto }>('getUser', { username, tokenContent });
  const session = { userid: UserData.Id, tokenContent };
  storeSession(session);
  return { session, user: UserData };
}

/** createUser and setupOwner answer the private user with its first token's content (reference 3.1). */
function adopt(user: PrivateUserDto): SignedIn {
  const token = user.AccountTokens.find((t) => t.content !== '');
  if (!token) throw new FormProblem('The account was created, but the host sent no token. Sign in instead.');
  const session = { userid: user.Id, tokenContent: token.content };
  storeSession(session);
  return { session, user, warning: null };
}

export async function createAccount(input: {
  username: string;
  password: string;
  email: string;
  inviteCode: string;
}): Promise<SignedIn> {
  const { inviteCode, ...rest } = input;
  const body = inviteCode.trim() === '' ? rest : { ...rest, inviteCode: inviteCode.trim() };
  const { UserData } = await call<{ UserData: PrivateUserDto }>('createUser', body);
  return adopt(UserData);
}

export async function setupOwner(input: {
  setupSecret: string;
  username: string;
  password: string;
  email: string;
}): Promise<SignedIn> {
  const { UserData } = await call<{ UserData: PrivateUserDto }>('setupOwner', {
    ...input,
    setupSecret: input.setupSecret.trim(),
  });
  return adopt(UserData);
}

export async function isInviteCodeRequired(): Promise<boolean> {
  const { inviteCodeRequired } = await call<{ inviteCodeRequired: boolean }>('isInviteCodeRequired');
  return inviteCodeRequired;
}
