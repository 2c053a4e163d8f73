import { ShareAvatarRefusal, type SharedAvatarTokenDto } from '../protocol/socket.js';
import type { UsersRepo } from '../store/users.js';
import type { AssetAccess } from './asset-access.js';
import type { AssetTokens } from './asset-tokens.js';
import type { Presence } from './context.js';
import type { UploadsService } from './uploads.js';

export type ShareOutcome =
  | { ok: true; shared: SharedAvatarTokenDto }
  | {
      ok: false;
      reason: ShareAvatarRefusal;
      /** As the real server answers: what was asked, with empty strings for what was not a string. */
      asked: { targetUserId: string; avatarId: string; avatarToken: string };
    };

/**
 * `shareavatartoken` on the user socket (reference 8.4): the owner of an OwnerOnly avatar hands another player an
 * asset token for it (the game client does this for everyone in its instance, so others can load the avatar).
 * The real server checks only that the target is connected; we also check that the avatar is the sender's and the
 * token is a live asset token of it, so the socket cannot carry anything else under that name. There is no friend
 * check, as on the real server: the game client shares with everyone in the instance, friends or not.
 */
export function createAvatarSharing(deps: {
  users: UsersRepo;
  presence: Presence;
  uploads: Pick<UploadsService, 'avatar'>;
  assetTokens: Pick<AssetTokens, 'allows'>;
  /** Told of every token handed on, so the target may read the avatar's whole meta while it lasts. */
  assetAccess?: Pick<AssetAccess, 'delivered'>;
}) {
  const { users, presence, uploads, assetTokens } = deps;
  return {
    async share(fromUserId: string, args: Record<string, unknown>): Promise<ShareOutcome> {
      const str = (value: unknown): string => (typeof value === 'string' ? value : '');
      const asked = {
        targetUserId: str(args.targetUserId),
        avatarId: str(args.avatarId),
        avatarToken: str(args.avatarToken),
      };
      const refuse = (reason: ShareAvatarRefusal): ShareOutcome => ({ ok: false, reason, asked });
      if (!asked.targetUserId || !asked.avatarId || !asked.avatarToken)
        return refuse(ShareAvatarRefusal.INVALID_ARGS);
      if (asked.targetUserId === fromUserId) return refuse(ShareAvatarRefusal.SELF);
      const target = await users.get(asked.targetUserId);
      if (!target) return refuse(ShareAvatarRefusal.UNKNOWN_USER);
      const avatar = await uploads.avatar(asked.avatarId);
      if (!avatar) return refuse(ShareAvatarRefusal.UNKNOWN_AVATAR);
      if (avatar.OwnerId !== fromUserId) return refuse(ShareAvatarRefusal.NOT_OWNER);
      if (!(await assetTokens.allows(asked.avatarId, asked.avatarToken)))
        return refuse(ShareAvatarRefusal.INVALID_ASSET_TOKEN);
      if (target.BlockedUsers.includes(fromUserId)) return refuse(ShareAvatarRefusal.BLOCKED);
      if (!presence.isConnected(target.Id)) return refuse(ShareAvatarRefusal.OFFLINE);
      await deps.assetAccess?.delivered(asked.avatarId, target.Id, asked.avatarToken);
      return { ok: true, shared: { fromUserId, ...asked } };
    },
  };
}

export type AvatarSharing = ReturnType<typeof createAvatarSharing>;
