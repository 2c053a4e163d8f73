import { ErrorCode } from '../protocol/errors.js';
import { Rank } from '../protocol/enums.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { AccountsService } from './accounts.js';
import type { PasswordHasher } from './passwords.js';

/**
 * Password help without email (issue 18): a signed-in user changes their own password with the current one, and
 * the owner or an admin sets a new password for a user ranked strictly below them. Either signs the user out
 * everywhere (accounts.changePassword).
 */
export function createPasswordAdmin(deps: {
  accounts: Pick<AccountsService, 'changePassword'>;
  users: { get(id: string): StoredUser | undefined };
  passwords: Pick<PasswordHasher, 'verify'>;
}) {
  const { accounts, users, passwords } = deps;
  return {
    async changeOwn(user: StoredUser, currentPassword: string, newPassword: string): Promise<void> {
      if (!(await passwords.verify(user.HashedPassword, currentPassword))) {
        throw new AppError(
          ErrorCode.INCORRECT_CREDENTIALS,
          'Failed to change password! The current password is wrong.',
          {
            currentPassword: 'Not your current password',
          },
        );
      }
      await accounts.changePassword(user, newPassword);
    },

    async resetFor(actor: StoredUser, targetUserId: string, newPassword: string): Promise<StoredUser> {
      if (actor.Rank < Rank.Admin) {
        throw new AppError(ErrorCode.FORBIDDEN, 'Invalid permissions! This is for admins and the owner.');
      }
      const target = users.get(targetUserId);
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
      await accounts.changePassword(target, newPassword);
      return target;
    },
  };
}

export type PasswordAdmin = ReturnType<typeof createPasswordAdmin>;
