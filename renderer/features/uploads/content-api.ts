import { UploadType } from '../../../server/protocol/enums.js';
import type { AvatarMetaDto, UploadDataDto, WorldMetaDto } from '../../../server/protocol/uploads.js';
import { API_BASE } from '../../shared/api-client.js';

/** What `getMyContent` answers: your files, avatars and worlds. */
export interface MyUpload extends UploadDataDto {
  OriginalName: string;
  DateUploaded: number;
}

export interface MyContent {
  Uploads: MyUpload[];
  Avatars: AvatarMetaDto[];
  Worlds: WorldMetaDto[];
}

/**
 * The address of an uploaded file on this host, as image and script URLs name it. The page's own origin is one
 * the host counts as itself (it served this page).
 */
export function fileUrl(userId: string, fileId: string): string {
  return `${window.location.origin}${API_BASE}file/${encodeURIComponent(userId)}/${encodeURIComponent(fileId)}`;
}

/** The file id at the end of a host file URL, or null. */
export function fileIdOfUrl(url: string): string | null {
  const last = url.split(/[?#]/)[0]?.split('/').filter(Boolean).pop();
  return last && /^file_[0-9a-f-]{36}$/.test(last) ? decodeURIComponent(last) : null;
}

export const TYPE_NAMES: Record<UploadType, string> = {
  [UploadType.Media]: 'Image or video',
  [UploadType.Avatar]: 'Avatar build',
  [UploadType.World]: 'World build',
  [UploadType.ServerScript]: 'Server script',
};

export function isImageName(name: string): boolean {
  return /\.(png|jpe?g|gif)$/i.test(name);
}

/** File ids that are builds of your avatars and worlds (listed with them, not as loose files). */
export function buildFileIds(content: MyContent): Set<string> {
  const ids = new Set<string>();
  for (const asset of [...content.Avatars, ...content.Worlds])
    for (const b of asset.Builds) ids.add(b.FileId);
  return ids;
}

/** Script file id to the names of the worlds whose builds use it. */
export function scriptUsers(content: MyContent): Map<string, string[]> {
  const users = new Map<string, string[]>();
  for (const world of content.Worlds) {
    for (const build of world.Builds) {
      for (const url of build.ServerScripts) {
        const id = fileIdOfUrl(url);
        if (!id) continue;
        const names = users.get(id) ?? [];
        if (!names.includes(world.Name)) names.push(world.Name);
        users.set(id, names);
      }
    }
  }
  return users;
}
