import type { AvatarMetaInput, AvatarMetaDto, WorldMetaDto, WorldMetaInput } from '../../protocol/uploads.js';
import type { Tx } from '../../store/seam.js';
import { UsersRepo, type StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { fileIdOfUrl, filesIn } from './indexes.js';
import { avatarDetails, checkOwnScripts, ownedIn, worldDetails } from './meta.js';
import { removeFiles } from './place.js';
import { AVATARS, FILES, WORLDS, type StoredFile } from './records.js';
import type { UploadsShared } from './shared.js';

/**
 * Stores `record` and makes it the build of a new avatar, or of `meta.Id`'s platform. `check` runs first in the
 * transaction (update/avatar: the file is still the caller's and no build yet).
 */
export async function saveAvatar(
  up: UploadsShared,
  user: StoredUser,
  meta: AvatarMetaInput,
  record: StoredFile,
  check?: (t: Tx) => Promise<void>,
): Promise<string> {
  const { store, clock, ids } = up.deps;
  const now = unixSeconds(clock);
  const { avatar, replaced } = await store.tx(async (t) => {
    await check?.(t);
    const fileRepo = t.repo<StoredFile>(FILES);
    fileRepo.put(record.FileId, record);
    let replaced: StoredFile[] = [];
    let avatar: AvatarMetaDto;
    const existing = meta.Id ? await ownedIn<AvatarMetaDto>(t, 'avatar', meta.Id, user) : undefined;
    if (existing) {
      const old = existing.Builds.filter((b) => b.BuildPlatform === meta.BuildPlatform);
      replaced = await filesIn(
        fileRepo,
        old.map((b) => b.FileId),
      );
      avatar = {
        ...existing,
        ...avatarDetails(meta),
        Builds: [
          ...existing.Builds.filter((b) => b.BuildPlatform !== meta.BuildPlatform),
          { FileId: record.FileId, BuildPlatform: meta.BuildPlatform },
        ],
        DateUpdated: now,
      };
    } else {
      avatar = {
        Id: ids.id('avatar'),
        OwnerId: user.Id,
        ...avatarDetails(meta),
        Builds: [{ FileId: record.FileId, BuildPlatform: meta.BuildPlatform }],
        DateCreated: now,
        DateUpdated: now,
      };
      const avatarId = avatar.Id;
      await UsersRepo.in(t).update(user.Id, (draft) => {
        draft.Avatars.push(avatarId);
      });
    }
    const saved = t.repo<AvatarMetaDto>(AVATARS).put(avatar.Id, avatar);
    for (const file of replaced) await fileRepo.remove(file.FileId);
    return { avatar: saved, replaced };
  });
  await removeFiles(up.folders, replaced);
  return avatar.Id;
}

/** As saveAvatar, for a world build and its server scripts. */
export async function saveWorld(
  up: UploadsShared,
  user: StoredUser,
  meta: WorldMetaInput,
  record: StoredFile,
  check?: (t: Tx) => Promise<void>,
): Promise<string> {
  const { store, clock, ids } = up.deps;
  const now = unixSeconds(clock);
  const build = {
    FileId: record.FileId,
    BuildPlatform: meta.BuildPlatform,
    ServerScripts: [...meta.ServerScripts],
  };
  const { world, replaced } = await store.tx(async (t) => {
    await check?.(t);
    const fileRepo = t.repo<StoredFile>(FILES);
    // Checked again in the commit: a script may have been deleted since the meta was validated.
    await checkOwnScripts(meta.ServerScripts, user, (id) => fileRepo.get(id));
    fileRepo.put(record.FileId, record);
    let replaced: StoredFile[] = [];
    let world: WorldMetaDto;
    const existing = meta.Id ? await ownedIn<WorldMetaDto>(t, 'world', meta.Id, user) : undefined;
    if (existing) {
      const old = existing.Builds.filter((b) => b.BuildPlatform === meta.BuildPlatform);
      const keptScripts = new Set(
        [...existing.Builds.filter((b) => b.BuildPlatform !== meta.BuildPlatform), build]
          .flatMap((b) => b.ServerScripts)
          .map(fileIdOfUrl),
      );
      const doomedIds = old.flatMap((b) => [
        b.FileId,
        // The old build's scripts go too, unless a remaining build still uses them.
        ...b.ServerScripts.map(fileIdOfUrl).filter((id): id is string => id !== null && !keptScripts.has(id)),
      ]);
      replaced = (await filesIn(fileRepo, doomedIds)).filter((f) => f.UserId === existing.OwnerId);
      world = {
        ...existing,
        ...worldDetails(meta),
        Builds: [...existing.Builds.filter((b) => b.BuildPlatform !== meta.BuildPlatform), build],
        DateUpdated: now,
      };
    } else {
      world = {
        Id: ids.id('world'),
        OwnerId: user.Id,
        ...worldDetails(meta),
        Builds: [build],
        DateCreated: now,
        DateUpdated: now,
      };
      const worldId = world.Id;
      await UsersRepo.in(t).update(user.Id, (draft) => {
        draft.Worlds.push(worldId);
      });
    }
    const saved = t.repo<WorldMetaDto>(WORLDS).put(world.Id, world);
    for (const file of replaced) await fileRepo.remove(file.FileId);
    return { world: saved, replaced };
  });
  await removeFiles(up.folders, replaced);
  return world.Id;
}

/**
 * Stores asset-token changes on an avatar or world (their hashes only): `change` gets the newest list and
 * returns the new one.
 */
export async function saveAssetTokens<T>(
  up: UploadsShared,
  kind: 'avatar' | 'world',
  id: string,
  change: (tokens: readonly T[]) => T[],
): Promise<boolean> {
  return up.deps.store.tx(async (t) => {
    const repo = t.repo<AvatarMetaDto & { Tokens?: T[] }>(kind === 'avatar' ? AVATARS : WORLDS);
    const asset = await repo.get(id);
    if (!asset) return false;
    repo.put(id, { ...asset, Tokens: change(asset.Tokens ?? []) });
    return true;
  });
}
