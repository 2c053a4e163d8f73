import { UploadType } from '../../protocol/enums.js';
import { ErrorCode } from '../../protocol/errors.js';
import type { AvatarMetaInput } from '../../protocol/uploads.js';
import { AppError } from '../../errors.js';
import type { StoredUser } from '../../store/users.js';
import { saveAvatar, saveWorld } from './assets.js';
import { parseMeta, validateAvatar, validateWorld } from './meta.js';
import { discardPlaced, place, typeOrThrow } from './place.js';
import { FILES, uploadData, type StoredFile, type UploadAnswer } from './records.js';
import type { TempFile } from './receive.js';
import type { UploadsShared } from './shared.js';

/** The metas an upload came with, parsed; each only with the file type it describes. */
function metasFor(
  type: UploadType,
  metas: { avatarMeta?: unknown; worldMeta?: unknown },
): { avatarRaw: unknown; worldRaw: unknown } {
  const avatarRaw =
    metas.avatarMeta === undefined || metas.avatarMeta === ''
      ? undefined
      : parseMeta(metas.avatarMeta, 'avatarMeta');
  const worldRaw =
    metas.worldMeta === undefined || metas.worldMeta === ''
      ? undefined
      : parseMeta(metas.worldMeta, 'worldMeta');
  if (avatarRaw !== undefined && type !== UploadType.Avatar) {
    throw new AppError(
      ErrorCode.META_TYPE_MISMATCH,
      'Failed to upload Avatar! avatarMeta needs a .hna file.',
      {
        avatarMeta: 'only goes with a .hna file',
      },
    );
  }
  if (worldRaw !== undefined && type !== UploadType.World) {
    throw new AppError(ErrorCode.META_TYPE_MISMATCH, 'Failed to upload World! worldMeta needs a .hnw file.', {
      worldMeta: 'only goes with a .hnw file',
    });
  }
  return { avatarRaw, worldRaw };
}

/** Places a finished temp file and applies its meta; everything or nothing is kept. */
export async function finish(
  up: UploadsShared,
  user: StoredUser,
  temp: TempFile,
  originalName: string,
  metas: { avatarMeta?: unknown; worldMeta?: unknown },
): Promise<UploadAnswer> {
  const type = typeOrThrow(originalName);
  const { avatarRaw, worldRaw } = metasFor(type, metas);
  const { maxFileBytes } = up.deps;
  if (temp.size > maxFileBytes) {
    throw new AppError(
      ErrorCode.FILE_TOO_LARGE,
      `Failed to upload file! The file is over ${maxFileBytes} bytes.`,
    );
  }
  if (avatarRaw !== undefined) return finishAvatar(up, user, temp, originalName, avatarRaw);
  if (worldRaw !== undefined) return finishWorld(up, user, temp, originalName, worldRaw);
  const record = await place(up, user, temp, originalName, type);
  try {
    await up.deps.store.tx((t) => t.repo<StoredFile>(FILES).put(record.FileId, record));
  } catch (error) {
    await discardPlaced(up.folders, record);
    throw error;
  }
  return { message: 'Uploaded File!', result: { UploadData: uploadData(record) } };
}

async function finishAvatar(
  up: UploadsShared,
  user: StoredUser,
  temp: TempFile,
  originalName: string,
  avatarRaw: unknown,
): Promise<UploadAnswer> {
  const first = await validateAvatar(up, avatarRaw, user);
  const key = first.Id ? first.Id : `new:${user.Id}`;
  return up.serial(key, async () => {
    // Validate again inside the lock: the avatar may have changed or gone while we waited.
    const meta = (await validateAvatar(up, avatarRaw, user)) as AvatarMetaInput;
    const record = await place(up, user, temp, originalName, UploadType.Avatar);
    try {
      const avatarId = await saveAvatar(up, user, meta, record);
      return {
        message: 'Uploaded Avatar!',
        result: { UploadData: uploadData(record), AvatarId: avatarId },
      };
    } catch (error) {
      await discardPlaced(up.folders, record);
      throw error;
    }
  });
}

async function finishWorld(
  up: UploadsShared,
  user: StoredUser,
  temp: TempFile,
  originalName: string,
  worldRaw: unknown,
): Promise<UploadAnswer> {
  const first = await validateWorld(up, worldRaw, user);
  const key = first.Id ? first.Id : `new:${user.Id}`;
  return up.serial(key, async () => {
    const meta = await validateWorld(up, worldRaw, user);
    const record = await place(up, user, temp, originalName, UploadType.World);
    try {
      const worldId = await saveWorld(up, user, meta, record);
      return { message: 'Uploaded World!', result: { UploadData: uploadData(record), WorldId: worldId } };
    } catch (error) {
      await discardPlaced(up.folders, record);
      throw error;
    }
  });
}
