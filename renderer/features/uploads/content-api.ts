import { UploadType } from '../../../server/protocol/enums.js';
import type { AvatarMetaDto, UploadDataDto, WorldMetaDto } from '../../../server/protocol/uploads.js';
import { isLoopbackHost } from '../../../server/protocol/host-info.js';
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
 * The address of an uploaded file on this host, as image and script URLs name it, under `origin` (what
 * `shareableOrigin` picks: an address other machines can load, not the loopback one the page may be open on).
 */
export function fileUrl(origin: string, userId: string, fileId: string): string {
  return `${origin}${API_BASE}file/${encodeURIComponent(userId)}/${encodeURIComponent(fileId)}`;
}

/** What `shareableOrigin` reads of the page's address (`window.location` has all of it). */
export interface PageAddress {
  protocol: string;
  hostname: string;
  port: string;
  origin: string;
}

function isLoopbackName(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '');
  return isLoopbackHost(bare.toLowerCase());
}

/**
 * The origin to put in the file URLs we store (avatar images, thumbnails, icons, scripts). A page opened on
 * 127.0.0.1 or localhost would store an address only this computer can load, so then it is one of the host's LAN
 * addresses: the `localHosts` it publishes in `uploadRules` (any user may ask) that is neither loopback nor a
 * wildcard and has this port. The host counts all of them as itself, so it accepts such URLs. Without one (the host
 * listens on loopback only, nobody else could reach it anyway) it is the page's own origin.
 */
export function shareableOrigin(page: PageAddress, localHosts: readonly string[]): string {
  if (!isLoopbackName(page.hostname)) return page.origin;
  for (const entry of localHosts) {
    let url: URL;
    try {
      url = new URL(`${page.protocol}//${entry}`);
    } catch {
      continue;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isLoopbackName(host) || host === '0.0.0.0' || host === '::' || url.port !== page.port) continue;
    return url.origin;
  }
  return page.origin;
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

/** Your images on this host, as the image URL fields suggest them. */
export function imageChoices(content: MyContent | null, fileOrigin: string): { url: string; name: string }[] {
  return (content?.Uploads ?? [])
    .filter((u) => isImageName(u.FileName))
    .map((u) => ({ url: fileUrl(fileOrigin, u.UserId, u.FileId), name: u.OriginalName }));
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
