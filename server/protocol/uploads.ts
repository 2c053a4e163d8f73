import { z } from 'zod';
import { UploadType } from './enums.js';
import { lineText, multilineText } from './text-rules.js';

/** Allowed uploads by extension (SPEC section 3); anything else is refused. */
export const EXTENSION_TYPES: Record<string, UploadType> = {
  '.jpg': UploadType.Media,
  '.jpeg': UploadType.Media,
  '.gif': UploadType.Media,
  '.png': UploadType.Media,
  '.mp4': UploadType.Media,
  '.hna': UploadType.Avatar,
  '.hnw': UploadType.World,
  '.js': UploadType.ServerScript,
  '.lua': UploadType.ServerScript,
};
export const ALLOWED_EXTENSIONS = Object.keys(EXTENSION_TYPES);

/** The extension of a file name, lowercased, with its dot ('' when none). */
export function extensionOf(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot).toLowerCase();
}

export function uploadTypeOf(name: string): UploadType | null {
  return EXTENSION_TYPES[extensionOf(name)] ?? null;
}

export const NAME_MAX = 50;
export const DESCRIPTION_MAX = 1000;
export const TAGS_MAX = 50;
export const TAG_MAX = 64;
export const ICONS_MAX = 10;
export const SCRIPTS_MAX = 50;

const url = z.string().max(2048);
const common = {
  Id: z.string().max(200).optional(),
  OwnerId: z.unknown().optional(),
  Publicity: z
    .number()
    .int()
    .min(0, 'must be 0 (Anyone) or 1 (OwnerOnly)')
    .max(1, 'must be 0 (Anyone) or 1 (OwnerOnly)'),
  Name: lineText(z.string().max(NAME_MAX, `must be at most ${NAME_MAX} characters`)),
  Description: multilineText(
    z.string().max(DESCRIPTION_MAX, `must be at most ${DESCRIPTION_MAX} characters`),
  ),
  Tags: z
    .array(lineText(z.string().max(TAG_MAX, `a tag must be at most ${TAG_MAX} characters`)))
    .max(TAGS_MAX, `at most ${TAGS_MAX} tags`),
  BuildPlatform: z
    .number()
    .int()
    .min(0, 'must be 0 (Windows) or 1 (Android)')
    .max(1, 'must be 0 (Windows) or 1 (Android)'),
};

/** avatarMeta as HypernexSharp and the CCK send it (reference 5.3). */
export const AvatarMetaInput = z.object({ ...common, ImageURL: url });
export type AvatarMetaInput = z.infer<typeof AvatarMetaInput>;

/** avatarmeta of a details-only update/avatar (no fileid, reference 6.8): BuildPlatform is not needed. */
export const AvatarDetailsInput = AvatarMetaInput.extend({ BuildPlatform: common.BuildPlatform.optional() });
export type AvatarDetailsInput = z.infer<typeof AvatarDetailsInput>;

/** worldMeta (reference 5.4). */
export const WorldMetaInput = z.object({
  ...common,
  ThumbnailURL: url,
  IconURLs: z.array(url).max(ICONS_MAX, `at most ${ICONS_MAX} icons`),
  ServerScripts: z.array(url).max(SCRIPTS_MAX, `at most ${SCRIPTS_MAX} server scripts`),
});
export type WorldMetaInput = z.infer<typeof WorldMetaInput>;

export interface UploadDataDto {
  UserId: string;
  FileId: string;
  FileName: string;
  UploadType: UploadType;
  /** Same as UploadType: HypernexSharp reads this key (reference 5.1). */
  FileType: UploadType;
  Key: string;
  /** MD5 hex of the whole file. */
  Hash: string;
  Size: number;
}

export interface AvatarBuildDto {
  FileId: string;
  BuildPlatform: number;
}

export interface WorldBuildDto extends AvatarBuildDto {
  ServerScripts: string[];
}

export interface AvatarMetaDto {
  Id: string;
  OwnerId: string;
  Publicity: number;
  Name: string;
  Description: string;
  Tags: string[];
  ImageURL: string;
  Builds: AvatarBuildDto[];
  /** Our additions: Unix seconds. */
  DateCreated: number;
  DateUpdated: number;
}

export interface WorldMetaDto {
  Id: string;
  OwnerId: string;
  Publicity: number;
  Name: string;
  Description: string;
  Tags: string[];
  ThumbnailURL: string;
  IconURLs: string[];
  Builds: WorldBuildDto[];
  DateCreated: number;
  DateUpdated: number;
}

/** Chunk ids are ours: 50 characters of 0-9A-Za-z (reference 5.5), so they can never name a path. */
export const CHUNK_ID = /^[0-9A-Za-z]{50}$/;
