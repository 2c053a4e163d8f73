import { ErrorCode } from '../protocol/errors.js';
import { Rank } from '../protocol/enums.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { AccountsService } from './accounts.js';
import { appendStaffEntry, userTarget } from './audit-log.js';
import type { Clock, Ids } from './context.js';

/**
 * Password help without email (issue 18): a signed-in user changes their own password with the current one, and
 * the owner or an admin sets a new password for a user ranked strictly below them. Either signs the user out
 * everywhere (accounts.changePassword); an admin's reset is in the audit log, in the same commit.
 */
export function createPasswordAdmin(deps: {
  accounts: Pick<AccountsService, 'changePassword' | 'confirmIdentity'>;
  users: { get(id: string): Promise<StoredUser | undefined> };
  /** What the reset's audit-log entry needs. */
  staff: { clock: Clock; ids: Ids };
}) {
  const { accounts, users, staff } = deps;
  return {
    /** The current password (and the 2FA code when 2FA is on) confirms it is the owner, not a stolen session. */
    async changeOwn(
      user: StoredUser,
      proof: { currentPassword: string; twofacode?: string },
      newPassword: string,
    ): Promise<void> {
      await accounts.confirmIdentity(user, proof, 'change password');
      await accounts.changePassword(user, newPassword);
    },

    async resetFor(actor: StoredUser, targetUserId: string, newPassword: string): Promise<StoredUser> {
      if (actor.Rank < Rank.Admin) {
        throw new AppError(ErrorCode.FORBIDDEN, 'Invalid permissions! This is for admins and the owner.');
      }
      const target = await users.get(targetUserId);
      if (!target) {
        throw new AppError(ErrorCode.USER_NOT_FOUND, 'No user has that id.', {
          targetUserId: 'No user has that id',
        });
      }
      if (target.Id === actor.Id || target.Rank >= actor.Rank) {
        throw new AppError(
          ErrorCode.TARGET_RANK_TOO_HIGH,
          'You can only reset the password of users ranked below you; change your own from your Account screen.',
          { targetUserId: 'Ranked the same as or above you' },
        );
      }
      // The entry names who and whom, never the password.
      await accounts.changePassword(target, newPassword, (t) =>
        appendStaffEntry(t, staff, actor.Id, 'resetpassword', userTarget(target), {}),
      );
      return target;
    },
  };
}

export type PasswordAdmin = ReturnType<typeof createPasswordAdmin>;
