import { UploadType } from '../../protocol/enums.js';
import { ErrorCode } from '../../protocol/errors.js';
import { fieldErrorsOf } from '../../protocol/schemas.js';
import {
  AvatarDetailsInput,
  AvatarMetaInput,
  WorldMetaInput,
  type AvatarMetaDto,
  type WorldMetaDto,
} from '../../protocol/uploads.js';
import { isUrlAllowed } from '../../protocol/urls.js';
import { AppError } from '../../errors.js';
import type { Tx } from '../../store/seam.js';
import type { StoredUser } from '../../store/users.js';
import { fileRefOfUrl } from './indexes.js';
import { AVATARS, WORLDS, type StoredFile, type UploadsRecords } from './records.js';
import type { UploadsDeps } from './shared.js';

/** What checking an avatar's or a world's meta reads. */
export interface MetaChecks {
  deps: Pick<UploadsDeps, 'config' | 'localHosts'>;
  records: Pick<UploadsRecords, 'files' | 'avatars' | 'worlds'>;
}

/** The meta as sent: a JSON string is parsed, anything else is taken as it is. */
export function parseMeta(raw: unknown, field: 'avatarMeta' | 'worldMeta'): unknown {
  if (typeof raw === 'string') {
    try {
      return JSON.parse(raw);
    } catch {
      throw new AppError(ErrorCode.INVALID_META, `Failed to upload! ${field} is not valid JSON.`, {
        [field]: 'is not valid JSON',
      });
    }
  }
  return raw;
}

/** What an avatar's meta sets besides its builds (an upload, or update/avatar without a file). */
export function avatarDetails(
  meta: Pick<AvatarMetaInput, 'Publicity' | 'Name' | 'Description' | 'Tags' | 'ImageURL'>,
) {
  const { Publicity, Name, Description, ImageURL } = meta;
  return { Publicity, Name, Description, Tags: [...meta.Tags], ImageURL };
}

/** What a world's meta sets besides its builds. */
export function worldDetails(
  meta: Pick<WorldMetaInput, 'Publicity' | 'Name' | 'Description' | 'Tags' | 'ThumbnailURL' | 'IconURLs'>,
) {
  const { Publicity, Name, Description, ThumbnailURL } = meta;
  return { Publicity, Name, Description, Tags: [...meta.Tags], ThumbnailURL, IconURLs: [...meta.IconURLs] };
}

/** An INVALID_META refusal naming each field (under `prefix`, when given). */
export function invalidMeta(label: string, prefix: string, fields: Record<string, string>): AppError {
  const named = prefix
    ? Object.fromEntries(Object.entries(fields).map(([k, v]) => [`${prefix}.${k}`, v]))
    : fields;
  return new AppError(
    ErrorCode.INVALID_META,
    `Failed to upload ${label}! Check: ${Object.keys(named).join(', ')}.`,
    named,
  );
}

function checkUrls(
  up: MetaChecks,
  fields: Record<string, string>,
  key: string,
  value: string,
  allowEmpty: boolean,
  onlyLocal = false,
) {
  if (allowEmpty && value === '') return;
  const { config, localHosts } = up.deps;
  if (!isUrlAllowed(value, { allowedDomains: config.allowedDomains, localHosts: localHosts(), onlyLocal })) {
    fields[key] = onlyLocal
      ? 'must be a file URL on this host'
      : `must be ${allowEmpty ? 'empty, ' : ''}on this host or on an allowed image domain (${config.allowedDomains.join(', ') || 'none'})`;
  }
}

/** An avatar's meta checked (schema, URLs, and that an Id names an avatar of `user`), or refused. */
export async function validateAvatar(
  up: MetaChecks,
  raw: unknown,
  user: StoredUser,
  schema: typeof AvatarMetaInput | typeof AvatarDetailsInput = AvatarMetaInput,
): Promise<AvatarDetailsInput> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw invalidMeta('Avatar', 'avatarMeta', fieldErrorsOf(parsed.error));
  const fields: Record<string, string> = {};
  checkUrls(up, fields, 'avatarMeta.ImageURL', parsed.data.ImageURL, true);
  if (Object.keys(fields).length > 0) throw invalidMeta('Avatar', '', fields);
  await checkOwnership(up, 'avatar', parsed.data.Id, user);
  return parsed.data;
}

/** A world's meta checked (schema, URLs, own server scripts, and that an Id names a world of `user`), or refused. */
export async function validateWorld(up: MetaChecks, raw: unknown, user: StoredUser): Promise<WorldMetaInput> {
  const parsed = WorldMetaInput.safeParse(raw);
  if (!parsed.success) throw invalidMeta('World', 'worldMeta', fieldErrorsOf(parsed.error));
  const fields: Record<string, string> = {};
  checkUrls(up, fields, 'worldMeta.ThumbnailURL', parsed.data.ThumbnailURL, true);
  parsed.data.IconURLs.forEach((url, i) => checkUrls(up, fields, `worldMeta.IconURLs.${i}`, url, false));
  parsed.data.ServerScripts.forEach((url, i) =>
    checkUrls(up, fields, `worldMeta.ServerScripts.${i}`, url, false, true),
  );
  if (Object.keys(fields).length > 0) throw invalidMeta('World', '', fields);
  await checkOwnScripts(parsed.data.ServerScripts, user, (id) => up.records.files.get(id));
  await checkOwnership(up, 'world', parsed.data.Id, user);
  return parsed.data;
}

/** Refuses (as a meta error) a server script URL that is not a script file `owner` uploaded here. */
export async function checkOwnScripts(
  urls: readonly string[],
  owner: StoredUser,
  read: (id: string) => Promise<StoredFile | undefined>,
): Promise<void> {
  const fields: Record<string, string> = {};
  for (const [i, url] of urls.entries()) {
    const ref = fileRefOfUrl(url);
    const record = ref ? await read(ref.fileId) : undefined;
    if (
      !ref ||
      ref.userId !== owner.Id ||
      !record ||
      record.UserId !== owner.Id ||
      record.UploadType !== UploadType.ServerScript
    ) {
      fields[`worldMeta.ServerScripts.${i}`] =
        'must be the address of a server script (.js or .lua) you uploaded to this host';
    }
  }
  if (Object.keys(fields).length > 0) throw invalidMeta('World', '', fields);
}

async function checkOwnership(
  up: MetaChecks,
  kind: 'avatar' | 'world',
  id: string | undefined,
  user: StoredUser,
) {
  if (id === undefined || id === '') return;
  const asset = await (kind === 'avatar' ? up.records.avatars.get(id) : up.records.worlds.get(id));
  ownedOrThrow(asset, kind, id, user);
}

/** The asset `id` as the transaction sees it, refused unless `user` still owns it. */
export async function ownedIn<T extends AvatarMetaDto | WorldMetaDto>(
  t: Tx,
  kind: 'avatar' | 'world',
  id: string,
  user: StoredUser,
): Promise<T> {
  return ownedOrThrow(await t.repo<T>(kind === 'avatar' ? AVATARS : WORLDS).get(id), kind, id, user);
}

/** Refuses an upload naming an asset `id` that does not exist or that `user` does not own. */
function ownedOrThrow<T extends { OwnerId: string }>(
  asset: T | undefined,
  kind: 'avatar' | 'world',
  id: string,
  user: StoredUser,
): T {
  const label = kind === 'avatar' ? 'Avatar' : 'World';
  if (!asset) {
    throw new AppError(
      ErrorCode.CONTENT_NOT_FOUND,
      `Failed to upload ${label}! No ${kind} has the Id ${id}.`,
      {
        [`${kind}Meta.Id`]: `no ${kind} with this id`,
      },
    );
  }
  if (asset.OwnerId !== user.Id) {
    throw new AppError(ErrorCode.NOT_OWNER, `Failed to upload ${label}! You do not own that ${kind}.`, {
      [`${kind}Meta.Id`]: `belongs to someone else`,
    });
  }
  return asset;
}
