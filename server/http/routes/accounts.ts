import type Router from '@koa/router';
import { ErrorCode } from '../../protocol/errors.js';
import { LoginResult } from '../../protocol/enums.js';
import { withAnsweredPronouns } from '../../protocol/pronouns.js';
import {
  AuthRequest,
  ChangePasswordRequest,
  CreateUserRequest,
  DoesUserExistQuery,
  GetUserQuery,
  GetUserRequest,
  IsValidTokenRequest,
  LoginRequest,
  Remove2faRequest,
  TargetRequest,
  UpdateBioRequest,
  Verify2faRequest,
} from '../../protocol/schemas.js';
import { AppError } from '../../errors.js';
import type { AccountsService } from '../../services/accounts.js';
import { SOCIAL_MESSAGES, type SocialAction, type SocialService } from '../../services/social.js';
import { parse, reply } from '../envelope.js';
import type { ClientAddresses } from '../../socket/forwarded-address.js';

export function accountRoutes(
  router: Router,
  deps: { accounts: AccountsService; social: SocialService; addresses: ClientAddresses },
): void {
  const { accounts, social } = deps;

  router.post('/createUser', async (ctx) => {
    const input = parse(CreateUserRequest, ctx.request.body);
    const { user, token } = await accounts.createUser(input);
    reply(ctx, `Created user ${user.Username}`, { UserData: accounts.privateView(user, token.content) });
  });

  router.post('/login', async (ctx) => {
    const input = parse(LoginRequest, ctx.request.body);
    const outcome = await accounts.login(input, deps.addresses.of(ctx.req));
    switch (outcome.kind) {
      case 'correct':
        return reply(ctx, 'Login Successful', { LoginResult: LoginResult.Correct, token: outcome.token });
      case 'warned':
        return reply(ctx, 'Warned', {
          LoginResult: LoginResult.Warned,
          WarnStatus: outcome.warnStatus,
          token: outcome.token,
        });
      case 'banned':
        return reply(ctx, 'Banned', { LoginResult: LoginResult.Banned, BanStatus: outcome.banStatus });
      case 'missing2fa':
        return reply(ctx, 'Missing 2FA', { LoginResult: LoginResult.Missing2FA });
      case 'incorrect2fa':
        // The real server breaks here (reference 10 #1); clients map LoginResult 0 to "Incorrect credentials".
        return reply(ctx, 'Incorrect credentials', { LoginResult: LoginResult.Incorrect });
    }
  });

  router.post('/logout', async (ctx) => {
    const { userid, tokenContent } = parse(AuthRequest, ctx.request.body);
    if (!(await accounts.logout(userid, tokenContent))) {
      throw new AppError(ErrorCode.INVALID_TOKEN, 'Could not find a valid userid or token!');
    }
    reply(ctx, 'Logged out!');
  });

  router.post('/isValidToken', async (ctx) => {
    const input = parse(IsValidTokenRequest, ctx.request.body);
    if (input.username !== undefined) {
      const user = await accounts.findUserByName(input.username);
      return reply(ctx, 'Completed Operation', {
        isValidToken: user ? accounts.authenticateUser(user, input.tokenContent) !== null : false,
      });
    }
    const userId = input.userid as string;
    if (!(await accounts.findUser(userId)))
      throw new AppError(ErrorCode.USER_NOT_FOUND, 'Failed to validate token!');
    reply(ctx, 'Completed Operation', {
      isValidToken: (await accounts.authenticate(userId, input.tokenContent)) !== null,
    });
  });

  router.post('/getUser', async (ctx) => {
    const input = parse(GetUserRequest, ctx.request.body);
    const byName = input.username !== undefined;
    const user = await (byName
      ? accounts.findUserByName(input.username as string)
      : accounts.findUser(input.userid as string));
    if (input.tokenContent !== undefined) {
      const self = user ? accounts.authenticateUser(user, input.tokenContent) : null;
      if (!self) {
        throw new AppError(ErrorCode.INVALID_TOKEN, byName ? 'Failed to getUser!' : 'Invalid token!');
      }
      return reply(ctx, `Got user ${self.Username}`, {
        UserData: accounts.privateView(self, input.tokenContent),
      });
    }
    if (!user) throw new AppError(ErrorCode.USER_NOT_FOUND, 'Failed to getUser!');
    reply(ctx, `Got user ${user.Username}`, { UserData: accounts.publicView(user) });
  });
  // Browsers and simple clients may ask with a query string.
  router.get('/getUser', async (ctx) => {
    const input = parse(GetUserQuery, ctx.query);
    const user = await (input.username !== undefined
      ? accounts.findUserByName(input.username)
      : accounts.findUser(input.userid ?? ''));
    if (!user) throw new AppError(ErrorCode.USER_NOT_FOUND, 'Failed to getUser!');
    reply(ctx, `Got user ${user.Username}`, { UserData: accounts.publicView(user) });
  });

  router.get('/doesUserExist', async (ctx) => {
    const { userid } = parse(DoesUserExistQuery, ctx.query);
    reply(ctx, 'Completed Search', { doesUserExist: (await accounts.findUser(userid)) !== undefined });
  });

  router.post('/updateBio', async (ctx) => {
    const input = parse(UpdateBioRequest, ctx.request.body);
    const user = await accounts.requireUser(input.userid, input.tokenContent);
    const bio = await accounts.updateBio(user, input.bio);
    reply(ctx, 'Updated Bio!', { Bio: withAnsweredPronouns({ ...bio }) });
  });

  router.post('/enable2fa', async (ctx) => {
    const { userid, tokenContent } = parse(AuthRequest, ctx.request.body);
    const user = await accounts.requireUser(userid, tokenContent);
    reply(ctx, 'Enabled 2FA!', { otpauth_url: await accounts.enable2fa(user) });
  });

  router.post('/verify2fa', async (ctx) => {
    const { userid, tokenContent, code } = parse(Verify2faRequest, ctx.request.body);
    const user = await accounts.requireUser(userid, tokenContent);
    if (!(await accounts.verify2fa(user, code))) {
      throw new AppError(ErrorCode.INVALID_2FA_CODE, 'Invalid 2FA Code!', {
        code: 'does not match the current code',
      });
    }
    reply(ctx, 'Verified 2FA!');
  });

  // A session alone does not turn 2FA off or change the password (a stolen token must not take the account
  // over): the current password, and the 2FA code when 2FA is on, confirm it is the owner, or a password sign-in
  // within limits.recentSignInSeconds made this session (how every official client calls them).
  router.post('/remove2fa', async (ctx) => {
    const input = parse(Remove2faRequest, ctx.request.body);
    const user = await accounts.requireUser(input.userid, input.tokenContent);
    await accounts.confirmIdentity(user, input, 'remove 2FA');
    await accounts.remove2fa(user);
    reply(ctx, 'Removed 2FA!');
  });

  // Changing the password while signed in needs no email; the reset-by-email path answers below.
  router.post('/resetPassword', async (ctx) => {
    const body = ctx.request.body as Record<string, unknown> | undefined;
    if (body && typeof body.tokenContent === 'string') {
      const input = parse(ChangePasswordRequest, body);
      const user = await accounts.requireUser(input.userid, input.tokenContent, 'Failed to reset password!');
      await accounts.confirmIdentity(user, input, 'reset password');
      await accounts.changePassword(user, input.newPassword);
      return reply(ctx, 'Reset password!');
    }
    throw emailNotConfigured();
  });

  for (const path of [
    '/sendVerificationEmail',
    '/verifyEmailToken',
    '/changeEmail',
    '/requestPasswordReset',
  ]) {
    router.post(path, () => {
      throw emailNotConfigured();
    });
  }

  const socialActions = Object.keys(SOCIAL_MESSAGES) as SocialAction[];
  for (const action of socialActions) {
    router.post(`/${action}`, async (ctx) => {
      const { userid, tokenContent, targetUserId } = parse(TargetRequest, ctx.request.body);
      const me = await accounts.requireUser(userid, tokenContent);
      await social.act(action, me, targetUserId);
      reply(ctx, SOCIAL_MESSAGES[action].ok);
    });
  }
}

function emailNotConfigured(): AppError {
  return new AppError(
    ErrorCode.EMAIL_NOT_CONFIGURED,
    'Email is not configured on this host: it sends no email. Ask the host owner for help with your account.',
  );
}
