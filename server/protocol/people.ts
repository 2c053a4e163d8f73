import { z } from 'zod';
import { AuthRequest } from './schemas.js';
import type { PublicUserDto } from './types.js';

/** Most ids one `getUsers` call answers. */
export const GET_USERS_MAX = 500;

const id = z.string().min(1).max(200);

/** `getUsers`: public views of many users in one call (issue 18: no screen asks per friend). */
export const GetUsersRequest = z.object({ userids: z.array(id).max(GET_USERS_MAX) });

export interface GetUsersResult {
  /** Public views of the users found, in the order asked (each id once). */
  Users: PublicUserDto[];
  /** Ids asked for that no user has. */
  NotFound: string[];
}

/**
 * `changePassword`: a signed-in user changes their own password; the current one is required (and the 2FA code
 * when 2FA is on).
 */
export const ChangeOwnPasswordRequest = AuthRequest.extend({
  currentPassword: z.string().max(4096),
  newPassword: z.string().max(4096),
  twofacode: z.string().max(32).optional(),
});

/** `resetUserPassword`: the owner or an admin sets a new password for a user ranked below them. */
export const ResetUserPasswordRequest = AuthRequest.extend({
  targetUserId: id,
  newPassword: z.string().max(4096),
});

/** `sentInviteRequests`: the invite requests you sent, with their state. */
export const SentInviteRequestsRequest = AuthRequest;
