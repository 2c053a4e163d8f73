import { ErrorCode } from '../protocol/errors.js';
import { Rank } from '../protocol/enums.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { ModerationService } from './moderation.js';
import type { UploadsService } from './uploads.js';

/**
 * remove/avatar, remove/world and remove/file. Your own content is yours to remove. Someone else's is moderation,
 * whichever route asks: the same rules as the moderation actions (rank Moderator or higher, the owner ranked
 * strictly lower) and the removal and its moderation-log entry are one commit (deleteavatar, deleteworld,
 * deletefile).
 */
export function createContentRemoval(deps: {
  uploads: Pick<UploadsService, 'avatar' | 'world' | 'fileRecordById' | 'removeOwnAsset' | 'removeOwnFile'>;
  moderation: Pick<ModerationService, 'act'>;
}) {
  const { uploads, moderation } = deps;

  function requireModerator(caller: StoredUser, what: string): void {
    if (caller.Rank < Rank.Moderator) {
      throw new AppError(ErrorCode.NOT_OWNER, `Failed to ${what}! Only its owner or a moderator can.`);
    }
  }

  return {
    async removeAsset(caller: StoredUser, kind: 'avatar' | 'world', id: string): Promise<void> {
      const asset = await (kind === 'avatar' ? uploads.avatar(id) : uploads.world(id));
      if (!asset)
        throw new AppError(ErrorCode.CONTENT_NOT_FOUND, `Failed to remove ${kind}! It does not exist.`);
      if (asset.OwnerId === caller.Id) return uploads.removeOwnAsset(caller, kind, id);
      requireModerator(caller, `remove ${kind}`);
      await moderation.act(
        caller,
        kind === 'avatar' ? 'deleteavatar' : 'deleteworld',
        asset.OwnerId,
        kind === 'avatar' ? { avatarId: id } : { worldId: id },
      );
    },

    async removeFile(caller: StoredUser, fileId: string): Promise<void> {
      const record = await uploads.fileRecordById(fileId);
      if (!record) throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to delete file! It does not exist.');
      if (record.UserId === caller.Id) return uploads.removeOwnFile(caller, fileId);
      requireModerator(caller, 'delete file');
      await moderation.act(caller, 'deletefile', record.UserId, { fileId });
    },
  };
}

export type ContentRemoval = ReturnType<typeof createContentRemoval>;
