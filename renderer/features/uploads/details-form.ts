import { BuildPlatform } from '../../../server/protocol/enums.js';
import type { FieldErrors } from '../../../server/protocol/errors.js';
import type { AvatarMetaDto, WorldMetaDto } from '../../../server/protocol/uploads.js';
import {
  mapServerFields,
  metaProblems,
  toAvatarMeta,
  toWorldMeta,
  valuesFromAvatar,
  valuesFromWorld,
  type AssetKind,
  type ImageRules,
  type MetaErrors,
  type MetaValues,
} from './meta-form.js';

/**
 * "Edit details" of an avatar or world without a new build: the 1.5 calls `update/avatar` / `update/world` with
 * no `fileid` (reference 12.3, 6.8). Built on the upload form's model (meta-form.ts), so both check the same shared
 * rules and the host's published ones. Pure: tests run it in Node.
 */

/** The fields the edit form shows; a problem with anything else is said in the form's one message. */
export const DETAILS_FIELDS = ['name', 'description', 'tags', 'publicity', 'image', 'icons'] as const;

/**
 * The build a details-only request names. The host takes the avatar's details whatever it says; for a world it
 * keeps the server scripts of that build as sent, so we name one the world has and send its scripts unchanged.
 */
export function detailsPlatform(asset: AvatarMetaDto | WorldMetaDto): BuildPlatform {
  const platforms = asset.Builds.map((b) => b.BuildPlatform);
  return platforms.includes(BuildPlatform.Windows)
    ? BuildPlatform.Windows
    : ((platforms[0] as BuildPlatform | undefined) ?? BuildPlatform.Windows);
}

/** The form's starting values: the details as stored. */
export function detailsValues(kind: AssetKind, asset: AvatarMetaDto | WorldMetaDto): MetaValues {
  const platform = detailsPlatform(asset);
  return kind === 'avatar'
    ? valuesFromAvatar(asset as AvatarMetaDto, platform)
    : valuesFromWorld(asset as WorldMetaDto, platform);
}

/** The body beside the credentials: the meta as a JSON string under its lower-case key, and no `fileid`. */
export function detailsBody(
  kind: AssetKind,
  values: MetaValues,
): { avatarmeta: string } | { worldmeta: string } {
  return kind === 'avatar'
    ? { avatarmeta: JSON.stringify(toAvatarMeta(values)) }
    : { worldmeta: JSON.stringify(toWorldMeta(values)) };
}

function isShown(key: string): boolean {
  const head = key.split('.')[0] ?? key;
  return (DETAILS_FIELDS as readonly string[]).includes(head);
}

/** Splits field errors into the ones shown next to a field of this form and one sentence for the rest. */
function split(errors: MetaErrors, rest: string[] = []): { fields: MetaErrors; message: string | null } {
  const fields: MetaErrors = {};
  const others = [...rest];
  for (const [key, reason] of Object.entries(errors)) {
    if (isShown(key)) fields[key] = reason;
    else others.push(reason);
  }
  return { fields, message: others.length > 0 ? others.join('. ') + '.' : null };
}

/**
 * What the host would refuse, found before sending (the upload form's checks). A stored server script the host
 * no longer counts as its own cannot be fixed here, so it is said in the form's message.
 */
export function detailsProblems(
  kind: AssetKind,
  values: MetaValues,
  rules: ImageRules | null,
): { fields: MetaErrors; message: string | null } {
  return split(metaProblems(kind, values, rules));
}

/** The host's field errors (`avatarmeta.Name`, `worldmeta.IconURLs.1`…) on this form's fields, the rest in words. */
export function detailsFailure(
  kind: AssetKind,
  fields: FieldErrors,
): { fields: MetaErrors; message: string | null } {
  const mapped = mapServerFields(kind, fields);
  return split(mapped.fields, mapped.rest);
}
