import type { ContentAssetDto, ContentFileDto, UserContentDto } from '../protocol/moderation-tools.js';
import type { AvatarMetaDto, WorldMetaDto } from '../protocol/uploads.js';
import type { StoredUser } from '../store/users.js';
import type { StoredFile, UploadsService } from './uploads.js';

type Uploads = Pick<UploadsService, 'avatars' | 'worlds' | 'filesOf'>;

function assetRow(asset: AvatarMetaDto | WorldMetaDto, sizes: Map<string, number>): ContentAssetDto {
  const fileIds = [...new Set(asset.Builds.map((b) => b.FileId))];
  return {
    Id: asset.Id,
    Name: asset.Name,
    Publicity: asset.Publicity,
    DateCreated: asset.DateCreated,
    DateUpdated: asset.DateUpdated,
    Size: fileIds.reduce((sum, f) => sum + (sizes.get(f) ?? 0), 0),
    FileIds: fileIds,
  };
}

function fileRow(file: StoredFile, buildOf: Map<string, string>): ContentFileDto {
  return {
    FileId: file.FileId,
    OriginalName: file.OriginalName,
    UploadType: file.UploadType,
    Size: file.Size,
    DateUploaded: file.DateUploaded,
    BuildOf: buildOf.get(file.FileId) ?? null,
  };
}

/**
 * Everything `user` uploaded, for the moderation Content tab (issue 28): their avatars and worlds (from their own
 * lists) and their files (the uploads' per-owner index), newest first, with sizes.
 */
export async function listUserContent(uploads: Uploads, user: StoredUser): Promise<UserContentDto> {
  const [avatars, worlds, files] = await Promise.all([
    uploads.avatars(user.Avatars),
    uploads.worlds(user.Worlds),
    uploads.filesOf(user.Id),
  ]);
  const sizes = new Map(files.map((f) => [f.FileId, f.Size]));
  const buildOf = new Map<string, string>();
  for (const asset of [...avatars, ...worlds]) for (const b of asset.Builds) buildOf.set(b.FileId, asset.Id);
  const newest = (a: { DateUpdated: number }, b: { DateUpdated: number }): number =>
    b.DateUpdated - a.DateUpdated;
  return {
    Avatars: avatars
      .filter((a) => a.OwnerId === user.Id)
      .map((a) => assetRow(a, sizes))
      .sort(newest),
    Worlds: worlds
      .filter((w) => w.OwnerId === user.Id)
      .map((w) => assetRow(w, sizes))
      .sort(newest),
    Files: files.map((f) => fileRow(f, buildOf)),
  };
}

/** One thing the "remove all" job removes, in the order it removes them (avatars and worlds take their files). */
export type ContentItem = { kind: 'avatar' | 'world' | 'file'; id: string };

export function contentItems(content: UserContentDto): ContentItem[] {
  return [
    ...content.Avatars.map((a) => ({ kind: 'avatar' as const, id: a.Id })),
    ...content.Worlds.map((w) => ({ kind: 'world' as const, id: w.Id })),
    ...content.Files.filter((f) => f.BuildOf === null).map((f) => ({ kind: 'file' as const, id: f.FileId })),
  ];
}
