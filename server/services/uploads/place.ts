import { mkdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { UploadType } from '../../protocol/enums.js';
import { ErrorCode } from '../../protocol/errors.js';
import { ALLOWED_EXTENSIONS, extensionOf, uploadTypeOf } from '../../protocol/uploads.js';
import { AppError } from '../../errors.js';
import { syncDir } from '../../store/durable-file.js';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { pathOf, type UploadFolders } from './folders.js';
import type { StoredFile } from './records.js';
import type { TempFile } from './receive.js';
import type { UploadsDeps } from './shared.js';

/** The upload type of a file name, or FILE_TYPE_NOT_ALLOWED. */
export function typeOrThrow(name: string): UploadType {
  const type = uploadTypeOf(name);
  if (type === null) {
    throw new AppError(
      ErrorCode.FILE_TYPE_NOT_ALLOWED,
      `Failed to upload file! "${extensionOf(name) || 'no extension'}" files are not allowed; use ${ALLOWED_EXTENSIONS.join(' ')}.`,
      { file: 'file type not allowed' },
    );
  }
  return type;
}

/**
 * Moves a finished temp file into files/<userId>/ under a new file id, durably; the record it returns is not
 * stored yet (the caller commits it, or discards the placed file).
 */
export async function place(
  up: { deps: Pick<UploadsDeps, 'config' | 'clock' | 'ids'>; folders: UploadFolders },
  user: StoredUser,
  temp: TempFile,
  originalName: string,
  type: UploadType,
): Promise<StoredFile> {
  const { config, clock, ids } = up.deps;
  const { filesDir } = up.folders;
  const fileId = ids.id('file');
  const ext = extensionOf(originalName);
  const record: StoredFile = {
    UserId: user.Id,
    FileId: fileId,
    FileName: `${fileId}${ext}`,
    UploadType: type,
    FileType: type,
    Key: `${user.Id}/${fileId}${ext}`,
    Hash: temp.hash,
    Size: temp.size,
    OriginalName: originalName.split(/[\\/]/).pop()!.slice(0, 255),
    DateUploaded: unixSeconds(clock),
  };
  const userDir = join(filesDir, user.Id);
  const created = await mkdir(userDir, { recursive: true });
  await rename(temp.path, pathOf(up.folders, record));
  // The rename lives in the folder: synced before the record commits, or a power cut could leave a record
  // whose file is gone.
  if (config.fsync) {
    await syncDir(userDir);
    if (created !== undefined) await syncDir(filesDir);
  }
  return record;
}

export async function discardPlaced(folders: UploadFolders, record: StoredFile): Promise<void> {
  // A file already gone is what this wants; one that cannot be removed is an orphan the next start's sweep
  // removes.
  await unlink(pathOf(folders, record)).catch(() => undefined);
}

export async function removeFiles(folders: UploadFolders, records: StoredFile[]): Promise<void> {
  // Missing files are fine here (reference 10 #16): the record is what mattered.
  await Promise.all(records.map((r) => unlink(pathOf(folders, r)).catch(() => undefined)));
}
