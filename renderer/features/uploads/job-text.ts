import { UploadType } from '../../../server/protocol/enums.js';
import { ErrorCode } from '../../../server/protocol/errors.js';
import { uploadTypeOf } from '../../../server/protocol/uploads.js';
import { formatBytes } from '../../shared/bytes.js';
import { mapServerFields, type AssetKind } from './meta-form.js';
import type { UploadKind } from './resume-store.js';

/** Words for upload failures and kinds, shared by the form and the upload list. */

export function kindOfName(name: string): UploadKind | null {
  switch (uploadTypeOf(name)) {
    case UploadType.Avatar:
      return 'avatar';
    case UploadType.World:
      return 'world';
    case UploadType.Media:
      return 'media';
    case UploadType.ServerScript:
      return 'script';
    default:
      return null;
  }
}

export const KIND_NAMES: Record<UploadKind, string> = {
  avatar: 'Avatar build',
  world: 'World build',
  media: 'Image or video',
  script: 'Server script',
};

export const ACCEPTED_TEXT =
  'avatars (.hna), worlds (.hnw), images and videos (.jpg .jpeg .png .gif .mp4) and server scripts (.js .lua)';

export function isAssetKind(kind: UploadKind): kind is AssetKind {
  return kind === 'avatar' || kind === 'world';
}

/** The host's sentence without the real server's "Failed to upload X! " lead-in. */
export function plainMessage(message: string): string {
  const text = message.replace(/^Failed to [^!]*! */, '').trim();
  return text === '' ? message : text.charAt(0).toUpperCase() + text.slice(1);
}

/** One or two sentences for a failed upload, naming the fields the host refused. */
export function failureText(
  kind: UploadKind,
  error: { code: string; message: string; fields: Record<string, string> },
  chunked: boolean,
): string {
  if (Object.keys(error.fields).length > 0 && isAssetKind(kind)) {
    const { fields, rest } = mapServerFields(kind, error.fields);
    const sentences = [...Object.values(fields), ...rest];
    if (sentences.length > 0) return sentences.join('. ') + '.';
  }
  switch (error.code) {
    case 'NETWORK_ERROR':
      return chunked
        ? 'The connection to the host broke off. Retry continues from the last part the host received.'
        : 'The connection to the host broke off before the upload finished.';
    case ErrorCode.INVALID_TOKEN:
      return 'Your session ended, so the host refused the upload. Sign in again and retry.';
    case ErrorCode.FILE_TOO_LARGE: {
      const limit = /(\d+) bytes/.exec(error.message)?.[1];
      return `This file is larger than the host allows${limit ? ` (at most ${formatBytes(Number(limit))})` : ''}.`;
    }
    case ErrorCode.FILE_TYPE_NOT_ALLOWED:
      return plainMessage(error.message);
    default:
      return plainMessage(error.message);
  }
}

/** Refusals that the same file would get again: retrying them only wastes the upload. */
export function isFinalRefusal(code: string): boolean {
  return code === ErrorCode.FILE_TOO_LARGE || code === ErrorCode.FILE_TYPE_NOT_ALLOWED;
}
