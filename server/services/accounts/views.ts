import { Status } from '../../protocol/enums.js';
import { withAnsweredPronouns } from '../../protocol/pronouns.js';
import type { PrivateUserDto, PublicUserDto } from '../../protocol/types.js';
import type { StoredUser } from '../../store/users.js';
import type { AccountsShared } from './state.js';
import { sanitizeTokenList } from './tokens.js';

/** The account as its owner sees it; of the tokens, only `currentToken` keeps its content. */
export function privateView(user: StoredUser, currentToken: string | null): PrivateUserDto {
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
}

/** The account as anyone sees it: status Offline unless connected, social lists only when not private. */
export function publicView(up: AccountsShared, user: StoredUser): PublicUserDto {
  const { presence } = up.deps;
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
}
