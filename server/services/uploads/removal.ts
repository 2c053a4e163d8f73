import { ErrorCode } from '../../protocol/errors.js';
import type { AvatarMetaDto, WorldMetaDto } from '../../protocol/uploads.js';
import { AppError } from '../../errors.js';
import type { Tx } from '../../store/seam.js';
import { UsersRepo, type StoredUser } from '../../store/users.js';
import { buildIn, fileIdOfUrl, filesIn, ownWorldsUsing, scriptsOnlyIn } from './indexes.js';
import { removeFiles } from './place.js';
import { AVATARS, FILES, WORLDS, type StoredFile } from './records.js';
import type { UploadsShared } from './shared.js';

/**
 * Removes an avatar or world, its build files and the scripts no other world uses, and its id from its owner,
 * in transaction `t`. Returns the files to delete from disk once the commit is durable, or null when there is
 * no such asset.
 */
export async function deleteAssetIn(
  t: Tx,
  kind: 'avatar' | 'world',
  id: string,
): Promise<StoredFile[] | null> {
  const assets = t.repo<AvatarMetaDto | WorldMetaDto>(kind === 'avatar' ? AVATARS : WORLDS);
  const fileRepo = t.repo<StoredFile>(FILES);
  const asset = await assets.get(id);
  if (!asset) return null;
  const scriptIds =
    kind === 'world'
      ? await scriptsOnlyIn(
          t.repo<WorldMetaDto>(WORLDS),
          asset as WorldMetaDto,
          (asset as WorldMetaDto).Builds.flatMap((b) => b.ServerScripts.map(fileIdOfUrl)),
        )
      : [];
  const doomed = (await filesIn(fileRepo, [...asset.Builds.map((b) => b.FileId), ...scriptIds])).filter(
    (f) => f.UserId === asset.OwnerId,
  );
  await assets.remove(id);
  for (const file of doomed) await fileRepo.remove(file.FileId);
  const owners = UsersRepo.in(t);
  if (await owners.has(asset.OwnerId)) {
    await owners.update(asset.OwnerId, (draft) => {
      if (kind === 'avatar') draft.Avatars = draft.Avatars.filter((a) => a !== id);
      else draft.Worlds = draft.Worlds.filter((w) => w !== id);
    });
  }
  return doomed;
}

/**
 * Removes the record of `ownerId`'s file `fileId` in transaction `t`, refusing a build file (remove its avatar
 * or world instead) and a server script one of the owner's worlds uses. Returns the file to delete from disk
 * once the commit is durable, or null when `ownerId` has no such file.
 */
export async function deleteFileIn(t: Tx, fileId: string, ownerId: string): Promise<StoredFile[] | null> {
  const repo = t.repo<StoredFile>(FILES);
  const record = await repo.get(fileId);
  if (!record || record.UserId !== ownerId) return null;
  // Read through the transaction: an avatar or world given this build meanwhile makes it run again.
  const build = await buildIn(t, fileId);
  if (build) {
    throw new AppError(
      ErrorCode.FILE_IN_USE,
      `Failed to delete file! It is a build of ${build.kind} ${build.id}; remove the ${build.kind} instead.`,
    );
  }
  if ((await ownWorldsUsing(fileId, ownerId, t.repo<WorldMetaDto>(WORLDS))).length > 0) {
    throw new AppError(
      ErrorCode.FILE_IN_USE,
      'Failed to delete file! A world build uses this server script.',
    );
  }
  await repo.remove(fileId);
  return [record];
}

/** Removes an avatar or world and then its files; false when there was none. */
export async function deleteAsset(up: UploadsShared, kind: 'avatar' | 'world', id: string): Promise<boolean> {
  return up.serial(id, async () => {
    const doomed = await up.deps.store.tx((t) => deleteAssetIn(t, kind, id));
    if (!doomed) return false;
    await removeFiles(up.folders, doomed);
    return true;
  });
}

/**
 * remove/avatar and remove/world by the owner. Someone else's content is moderation
 * (server/services/content-removal.ts): ranks checked and logged.
 */
export async function removeOwnAsset(
  up: UploadsShared,
  caller: StoredUser,
  kind: 'avatar' | 'world',
  id: string,
): Promise<void> {
  const asset = await (kind === 'avatar' ? up.records.avatars.get(id) : up.records.worlds.get(id));
  if (!asset) throw new AppError(ErrorCode.CONTENT_NOT_FOUND, `Failed to remove ${kind}! It does not exist.`);
  if (asset.OwnerId !== caller.Id) {
    throw new AppError(ErrorCode.NOT_OWNER, `Failed to remove ${kind}! It is not yours.`);
  }
  if (!(await deleteAsset(up, kind, id)))
    throw new AppError(ErrorCode.CONTENT_NOT_FOUND, `Failed to remove ${kind}!`);
}

/** remove/file by the owner: a media or script file of theirs that none of their builds uses. */
export async function removeOwnFile(up: UploadsShared, caller: StoredUser, fileId: string): Promise<void> {
  await up.serial(fileId, async () => {
    const removed = await up.deps.store.tx((t) => deleteFileIn(t, fileId, caller.Id));
    if (!removed) {
      throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to delete file! You have no file with that id.');
    }
    await removeFiles(up.folders, removed);
  });
}
