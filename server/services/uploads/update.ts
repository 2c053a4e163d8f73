import { UploadType } from '../../protocol/enums.js';
import { ErrorCode } from '../../protocol/errors.js';
import {
  AvatarDetailsInput,
  type AvatarMetaDto,
  type AvatarMetaInput,
  type WorldMetaDto,
  type WorldMetaInput,
} from '../../protocol/uploads.js';
import { AppError } from '../../errors.js';
import type { Tx } from '../../store/seam.js';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { saveAvatar, saveWorld } from './assets.js';
import { buildIn, buildOf, fileIdOfUrl, filesIn, scriptsOnlyIn } from './indexes.js';
import {
  avatarDetails,
  checkOwnScripts,
  ownedIn,
  parseMeta,
  validateAvatar,
  validateWorld,
  worldDetails,
} from './meta.js';
import { removeFiles } from './place.js';
import { AVATARS, FILES, uploadData, WORLDS, type StoredFile, type UpdateAnswer } from './records.js';
import type { UploadsShared } from './shared.js';

const labelOf = (kind: 'avatar' | 'world'): 'Avatar' | 'World' => (kind === 'avatar' ? 'Avatar' : 'World');

/**
 * update/avatar and update/world (wire reference 12.3, 6.8): with `fileId`, a file the caller uploaded becomes
 * the build of a new avatar/world or of a platform of one of theirs; without, the details only. `rawMeta` is the
 * meta as sent (a JSON string or an object). Every rule of the 1.4 upload applies; a refusal writes nothing.
 */
export async function update(
  up: UploadsShared,
  user: StoredUser,
  kind: 'avatar' | 'world',
  input: { fileId?: string; rawMeta: unknown },
): Promise<UpdateAnswer> {
  const raw = parseMeta(input.rawMeta, kind === 'avatar' ? 'avatarMeta' : 'worldMeta');
  if (input.fileId !== undefined && input.fileId !== '') return attachFile(up, user, kind, input.fileId, raw);
  return kind === 'avatar' ? updateAvatarDetails(up, user, raw) : updateWorldDetails(up, user, raw);
}

/**
 * Refuses a file update/avatar or update/world cannot make a build of `kind`: unknown, someone else's, of
 * another type, or already a build (of any avatar or world). With `t`, read through the transaction.
 */
async function attachableOrThrow(
  up: UploadsShared,
  kind: 'avatar' | 'world',
  fileId: string,
  user: StoredUser,
  t?: Tx,
): Promise<StoredFile> {
  const record = await (t ? t.repo<StoredFile>(FILES).get(fileId) : up.records.files.get(fileId));
  if (!record) {
    throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to find file! No file has that id.', {
      fileid: 'no file with this id',
    });
  }
  if (record.UserId !== user.Id) {
    throw new AppError(ErrorCode.NOT_OWNER, 'Failed to find file! That file is not yours.', {
      fileid: 'belongs to someone else',
    });
  }
  const wanted = kind === 'avatar' ? UploadType.Avatar : UploadType.World;
  if (record.UploadType !== wanted) {
    const ext = kind === 'avatar' ? '.hna' : '.hnw';
    throw new AppError(
      ErrorCode.META_TYPE_MISMATCH,
      `Failed to verify ${labelOf(kind)}! fileid must name a ${kind} file (${ext}) you uploaded.`,
      { fileid: `must be a ${kind} file (${ext})` },
    );
  }
  const build = t ? await buildIn(t, fileId) : await buildOf(up.records, fileId);
  if (build) {
    throw new AppError(
      ErrorCode.FILE_IN_USE,
      `Failed to verify ${labelOf(kind)}! That file is already a build of ${build.kind} ${build.id}; upload it again for another build.`,
      { fileid: 'is already a build' },
    );
  }
  return record;
}

/** update/avatar or update/world with a file: the 1.4 upload's rules, for a file uploaded beforehand. */
async function attachFile(
  up: UploadsShared,
  user: StoredUser,
  kind: 'avatar' | 'world',
  fileId: string,
  raw: unknown,
): Promise<UpdateAnswer> {
  await attachableOrThrow(up, kind, fileId, user);
  const validate = (): Promise<AvatarMetaInput | WorldMetaInput> =>
    kind === 'avatar'
      ? (validateAvatar(up, raw, user) as Promise<AvatarMetaInput>)
      : validateWorld(up, raw, user);
  const first = await validate();
  const key = first.Id ? first.Id : `new:${user.Id}`;
  return up.serial(key, async () => {
    // Validated again inside the lock: the asset may have changed or gone while we waited.
    const meta = await validate();
    let record = await attachableOrThrow(up, kind, fileId, user);
    // Checked once more in the commit: the file may have been deleted or attached meanwhile.
    const check = async (t: Tx): Promise<void> => {
      record = await attachableOrThrow(up, kind, fileId, user, t);
    };
    const id =
      kind === 'avatar'
        ? await saveAvatar(up, user, meta as AvatarMetaInput, record, check)
        : await saveWorld(up, user, meta as WorldMetaInput, record, check);
    const data = uploadData(record);
    return {
      message: `Uploaded ${labelOf(kind)}!`,
      result: { ...data, UploadData: data, ...(kind === 'avatar' ? { AvatarId: id } : { WorldId: id }) },
    };
  });
}

/** A details-only update needs the Id of an avatar or world of the caller's. */
function detailsIdOrThrow(kind: 'avatar' | 'world', id: string | undefined): string {
  if (id === undefined || id === '') {
    throw new AppError(
      ErrorCode.INVALID_META,
      `Failed to update ${kind}! Without a fileid, ${kind}Meta.Id must name one of your ${kind}s.`,
      { [`${kind}Meta.Id`]: 'is required without a fileid' },
    );
  }
  return id;
}

/** update/avatar without a file: Publicity, Name, Description, Tags and ImageURL; the builds stay. */
async function updateAvatarDetails(up: UploadsShared, user: StoredUser, raw: unknown): Promise<UpdateAnswer> {
  const first = await validateAvatar(up, raw, user, AvatarDetailsInput);
  const id = detailsIdOrThrow('avatar', first.Id);
  return up.serial(id, async () => {
    const meta = await validateAvatar(up, raw, user, AvatarDetailsInput);
    await up.deps.store.tx(async (t) => {
      const existing = await ownedIn<AvatarMetaDto>(t, 'avatar', id, user);
      t.repo<AvatarMetaDto>(AVATARS).put(id, {
        ...existing,
        ...avatarDetails(meta),
        DateUpdated: unixSeconds(up.deps.clock),
      });
    });
    return { message: 'Updated Avatar!', result: { AvatarId: id } };
  });
}

/**
 * update/world without a file: the avatar's details plus ThumbnailURL and IconURLs, and the ServerScripts of the
 * build of BuildPlatform (a world with no such build takes no scripts). Scripts the world no longer lists are
 * deleted unless another world of the owner still uses them.
 */
async function updateWorldDetails(up: UploadsShared, user: StoredUser, raw: unknown): Promise<UpdateAnswer> {
  const first = await validateWorld(up, raw, user);
  const id = detailsIdOrThrow('world', first.Id);
  return up.serial(id, async () => {
    const meta = await validateWorld(up, raw, user);
    const doomed = await up.deps.store.tx((t) => saveWorldDetailsIn(up, t, user, id, meta));
    await removeFiles(up.folders, doomed);
    return { message: 'Updated World!', result: { WorldId: id } };
  });
}

/** The details-only world update in transaction `t`; returns the script files to delete once it is durable. */
async function saveWorldDetailsIn(
  up: UploadsShared,
  t: Tx,
  user: StoredUser,
  id: string,
  meta: WorldMetaInput,
): Promise<StoredFile[]> {
  const fileRepo = t.repo<StoredFile>(FILES);
  const worldRepo = t.repo<WorldMetaDto>(WORLDS);
  await checkOwnScripts(meta.ServerScripts, user, (fid) => fileRepo.get(fid));
  const existing = await ownedIn<WorldMetaDto>(t, 'world', id, user);
  const target = existing.Builds.find((b) => b.BuildPlatform === meta.BuildPlatform);
  if (!target && meta.ServerScripts.length > 0) {
    throw new AppError(
      ErrorCode.INVALID_META,
      'Failed to update world! It has no build for that BuildPlatform to give the server scripts to.',
      { 'worldMeta.BuildPlatform': 'this world has no build for this platform' },
    );
  }
  const builds = existing.Builds.map((b) =>
    b === target ? { ...b, ServerScripts: [...meta.ServerScripts] } : b,
  );
  const kept = new Set(builds.flatMap((b) => b.ServerScripts.map(fileIdOfUrl)));
  const dropped = await scriptsOnlyIn(
    worldRepo,
    existing,
    (target?.ServerScripts ?? []).map(fileIdOfUrl).filter((fid) => fid === null || !kept.has(fid)),
  );
  const scripts = (await filesIn(fileRepo, dropped)).filter((f) => f.UserId === existing.OwnerId);
  worldRepo.put(id, {
    ...existing,
    ...worldDetails(meta),
    Builds: builds,
    DateUpdated: unixSeconds(up.deps.clock),
  });
  for (const file of scripts) await fileRepo.remove(file.FileId);
  return scripts;
}
