import { BuildPlatform, Publicity } from '../../../server/protocol/enums.js';
import type { FieldErrors } from '../../../server/protocol/errors.js';
import type { UploadRulesDto } from '../../../server/protocol/host-info.js';
import { fieldErrorsOf } from '../../../server/protocol/schemas.js';
import { isUrlAllowed } from '../../../server/protocol/urls.js';
import {
  AvatarMetaInput,
  DESCRIPTION_MAX,
  ICONS_MAX,
  NAME_MAX,
  TAG_MAX,
  TAGS_MAX,
  WorldMetaInput,
  type AvatarMetaDto,
  type WorldMetaDto,
} from '../../../server/protocol/uploads.js';

/**
 * The avatar/world details form as plain data, and everything that turns it into what the host checks: the shared
 * zod rules (server/protocol/uploads.ts) with the field names people see, the host's own refusals mapped back onto
 * those fields, and what an overwrite would change. Pure: tests run it in Node.
 */

export type AssetKind = 'avatar' | 'world';

export interface MetaValues {
  /** '' creates a new avatar/world; an id overwrites that one's build for `platform`. */
  targetId: string;
  name: string;
  description: string;
  /** As typed: comma-separated. */
  tags: string;
  publicity: Publicity;
  platform: BuildPlatform;
  /** ImageURL of an avatar, ThumbnailURL of a world. */
  image: string;
  /** Worlds only. */
  icons: string[];
  /** Worlds only: file URLs of server scripts on this host, for this platform's build. */
  scripts: string[];
}

/**
 * Form field keys: `name`, `description`, `tags`, `publicity`, `platform`, `image`, `icons`, `icons.N`, `scripts`,
 * `scripts.N`, `target` (the avatar/world to overwrite) and `file`.
 */
export type MetaErrors = Record<string, string>;

export function emptyMeta(): MetaValues {
  return {
    targetId: '',
    name: '',
    description: '',
    tags: '',
    publicity: Publicity.Anyone,
    platform: BuildPlatform.Windows,
    image: '',
    icons: [],
    scripts: [],
  };
}

export const PLATFORM_NAMES: Record<BuildPlatform, string> = {
  [BuildPlatform.Windows]: 'Windows',
  [BuildPlatform.Android]: 'Android',
};

export const PUBLICITY_NAMES: Record<Publicity, string> = {
  [Publicity.Anyone]: 'Anyone',
  [Publicity.OwnerOnly]: 'Only me',
};

export function platformName(platform: number): string {
  return PLATFORM_NAMES[platform as BuildPlatform] ?? `Platform ${platform}`;
}

export function publicityName(publicity: number): string {
  return PUBLICITY_NAMES[publicity as Publicity] ?? `Publicity ${publicity}`;
}

/** Tags as sent: trimmed, no empties, each once (ignoring case, first spelling wins). */
export function parseTags(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const tag = raw.trim();
    if (tag === '' || seen.has(tag.toLowerCase())) continue;
    seen.add(tag.toLowerCase());
    out.push(tag);
  }
  return out;
}

function common(values: MetaValues) {
  return {
    ...(values.targetId ? { Id: values.targetId } : {}),
    Publicity: values.publicity,
    Name: values.name.trim(),
    Description: values.description,
    Tags: parseTags(values.tags),
    BuildPlatform: values.platform,
  };
}

export function toAvatarMeta(values: MetaValues): AvatarMetaInput {
  return { ...common(values), ImageURL: values.image.trim() };
}

export function toWorldMeta(values: MetaValues): WorldMetaInput {
  return {
    ...common(values),
    ThumbnailURL: values.image.trim(),
    IconURLs: values.icons.map((url) => url.trim()),
    ServerScripts: [...values.scripts],
  };
}

/** The multipart field and JSON string the host expects beside the file. */
export function metaField(
  kind: AssetKind,
  values: MetaValues,
): { field: 'avatarMeta' | 'worldMeta'; json: string } {
  return kind === 'avatar'
    ? { field: 'avatarMeta', json: JSON.stringify(toAvatarMeta(values)) }
    : { field: 'worldMeta', json: JSON.stringify(toWorldMeta(values)) };
}

function isWebUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/** What the host publishes about where images may live (`uploadRules`), as the URL checks need it. */
export type ImageRules = Pick<UploadRulesDto, 'allowedImageDomains' | 'localHosts'>;

/** The host's own sentence for an image URL it does not allow (server/services/uploads.ts). */
export function domainReason(rules: ImageRules, allowEmpty: boolean): string {
  return `must be ${allowEmpty ? 'empty, ' : ''}on this host or on an allowed image domain (${rules.allowedImageDomains.join(', ') || 'none'})`;
}

/**
 * Problems the host would refuse, found before sending: the shared zod rules, the URL shape and, once the host's
 * published rules are known (`uploadRules`), its allowed image domains and that server scripts are its own files.
 * Without the rules (an older host, or the call failed) the host's refusal comes back after sending instead.
 */
export function metaProblems(
  kind: AssetKind,
  values: MetaValues,
  rules: ImageRules | null = null,
): MetaErrors {
  const errors: MetaErrors = {};
  const parsed =
    kind === 'avatar'
      ? AvatarMetaInput.safeParse(toAvatarMeta(values))
      : WorldMetaInput.safeParse(toWorldMeta(values));
  if (!parsed.success) {
    for (const [key, reason] of Object.entries(fieldErrorsOf(parsed.error))) {
      const mapped = fieldOf(kind, key, reason);
      if (mapped && errors[mapped.field] === undefined) errors[mapped.field] = mapped.message;
    }
  }
  if (values.name.trim() === '' && errors.name === undefined) {
    errors.name = `Give the ${kind} a name`;
  }
  const urlRules = rules ? { allowedDomains: rules.allowedImageDomains, localHosts: rules.localHosts } : null;
  const image = values.image.trim();
  if (image !== '' && errors.image === undefined) {
    if (!isWebUrl(image)) {
      errors.image = `${imageLabel(kind)} must be a web address starting with https:// or http://`;
    } else if (rules && urlRules && !isUrlAllowed(image, urlRules)) {
      errors.image = `${imageLabel(kind)} ${domainReason(rules, true)}`;
    }
  }
  if (kind === 'world') {
    values.icons.forEach((raw, i) => {
      const url = raw.trim();
      const key = `icons.${i}`;
      if (errors[key] !== undefined) return;
      if (url === '') errors[key] = `Icon ${i + 1}: enter its URL or remove the row`;
      else if (!isWebUrl(url))
        errors[key] = `Icon ${i + 1} must be a web address starting with https:// or http://`;
      else if (rules && urlRules && !isUrlAllowed(url, urlRules))
        errors[key] = `Icon ${i + 1} ${domainReason(rules, false)}`;
    });
    if (urlRules && errors.scripts === undefined) {
      const i = values.scripts.findIndex((url) => !isUrlAllowed(url, { ...urlRules, onlyLocal: true }));
      if (i >= 0) errors.scripts = `Server script ${i + 1} must be a file URL on this host`;
    }
  }
  return errors;
}

export function imageLabel(kind: AssetKind): string {
  return kind === 'avatar' ? 'Image URL' : 'Thumbnail URL';
}

/**
 * The host's field errors (`avatarMeta.Name`, `worldMeta.IconURLs.3`, `file`…) as form fields with sentences;
 * whatever belongs to no field comes back in `rest`.
 */
export function mapServerFields(
  kind: AssetKind,
  fields: FieldErrors,
): { fields: MetaErrors; rest: string[] } {
  const out: MetaErrors = {};
  const rest: string[] = [];
  for (const [key, reason] of Object.entries(fields)) {
    // The 1.5 calls (update/avatar, update/world) name the meta in lower case: `avatarmeta.Name`.
    const bare = key.replace(/^(avatarMeta|worldMeta)\./i, '').replace(/^avatarmeta$/, 'avatarMeta');
    const mapped = fieldOf(kind, bare.replace(/^worldmeta$/, 'worldMeta'), reason);
    if (mapped && out[mapped.field] === undefined) out[mapped.field] = mapped.message;
    else if (!mapped) rest.push(`${key} ${reason}`);
  }
  return { fields: out, rest };
}

/** One rule key (`Name`, `Tags.2`, `IconURLs.0`, `Id`…) with its reason, as a form field and a sentence. */
function fieldOf(kind: AssetKind, key: string, reason: string): { field: string; message: string } | null {
  const [head, index] = key.split('.') as [string, string | undefined];
  const n = index !== undefined && /^\d+$/.test(index) ? Number(index) : null;
  switch (head) {
    case 'Name':
      return { field: 'name', message: `Name ${reason}` };
    case 'Description':
      return { field: 'description', message: `Description ${reason}` };
    case 'Tags':
      return n === null
        ? { field: 'tags', message: `Tags: ${reason}` }
        : { field: 'tags', message: `Tag ${n + 1} ${reason.replace(/^a tag /, '')}` };
    case 'Publicity':
      return { field: 'publicity', message: `Who can use it ${reason}` };
    case 'BuildPlatform':
      return { field: 'platform', message: `Build platform ${reason}` };
    case 'ImageURL':
    case 'ThumbnailURL':
      return { field: 'image', message: `${imageLabel(kind)} ${reason}` };
    case 'IconURLs':
      return n === null
        ? { field: 'icons', message: `Icons: ${reason}` }
        : { field: `icons.${n}`, message: `Icon ${n + 1} ${reason}` };
    case 'ServerScripts':
      return n === null
        ? { field: 'scripts', message: `Server scripts: ${reason}` }
        : { field: 'scripts', message: `Server script ${n + 1} ${reason}` };
    case 'Id':
      return { field: 'target', message: `The ${kind} to update ${reason}` };
    case 'avatarMeta':
    case 'worldMeta':
      return {
        field: 'file',
        message: reason.startsWith('only goes with')
          ? `Details for ${head === 'avatarMeta' ? 'an avatar' : 'a world'} ${reason}`
          : `The details ${reason}`,
      };
    case 'file':
      return { field: 'file', message: `The file: ${reason}` };
    default:
      return null;
  }
}

/** The rules as hints, shown under the fields before anything is wrong. */
export const RULES = {
  name: NAME_MAX,
  description: DESCRIPTION_MAX,
  tags: TAGS_MAX,
  tag: TAG_MAX,
  icons: ICONS_MAX,
} as const;

export function valuesFromAvatar(meta: AvatarMetaDto, platform: BuildPlatform): MetaValues {
  return {
    targetId: meta.Id,
    name: meta.Name,
    description: meta.Description,
    tags: meta.Tags.join(', '),
    publicity: meta.Publicity === Publicity.OwnerOnly ? Publicity.OwnerOnly : Publicity.Anyone,
    platform,
    image: meta.ImageURL,
    icons: [],
    scripts: [],
  };
}

export function valuesFromWorld(meta: WorldMetaDto, platform: BuildPlatform): MetaValues {
  return {
    targetId: meta.Id,
    name: meta.Name,
    description: meta.Description,
    tags: meta.Tags.join(', '),
    publicity: meta.Publicity === Publicity.OwnerOnly ? Publicity.OwnerOnly : Publicity.Anyone,
    platform,
    image: meta.ThumbnailURL,
    icons: [...meta.IconURLs],
    scripts: [...(meta.Builds.find((b) => b.BuildPlatform === platform)?.ServerScripts ?? [])],
  };
}

export interface MetaChange {
  label: string;
  before: string;
  after: string;
  /** For list-valued fields: what appears and what goes. */
  added?: string[];
  removed?: string[];
}

function listChange(label: string, before: string[], after: string[], noun: string): MetaChange | null {
  const added = after.filter((x) => !before.includes(x));
  const removed = before.filter((x) => !after.includes(x));
  if (added.length === 0 && removed.length === 0 && before.length === after.length) return null;
  const count = (list: string[]) =>
    list.length === 0 ? 'none' : `${list.length} ${noun}${list.length === 1 ? '' : 's'}`;
  return { label, before: count(before), after: count(after), added, removed };
}

function shown(text: string): string {
  return text === '' ? '(empty)' : text;
}

/** What an overwrite replaces in the stored details (the host replaces all of them with what is sent). */
export function diffMeta(
  kind: AssetKind,
  existing: AvatarMetaDto | WorldMetaDto,
  values: MetaValues,
): MetaChange[] {
  const changes: MetaChange[] = [];
  const name = values.name.trim();
  if (existing.Name !== name)
    changes.push({ label: 'Name', before: shown(existing.Name), after: shown(name) });
  if (existing.Description !== values.description) {
    changes.push({
      label: 'Description',
      before: shown(existing.Description),
      after: shown(values.description),
    });
  }
  const tags = listChange('Tags', existing.Tags, parseTags(values.tags), 'tag');
  if (tags) {
    tags.before = shown(existing.Tags.join(', '));
    tags.after = shown(parseTags(values.tags).join(', '));
    changes.push(tags);
  }
  if (existing.Publicity !== values.publicity) {
    changes.push({
      label: 'Who can use it',
      before: publicityName(existing.Publicity),
      after: publicityName(values.publicity),
    });
  }
  const image = values.image.trim();
  if (kind === 'avatar') {
    const before = (existing as AvatarMetaDto).ImageURL;
    if (before !== image)
      changes.push({ label: imageLabel(kind), before: shown(before), after: shown(image) });
  } else {
    const world = existing as WorldMetaDto;
    if (world.ThumbnailURL !== image) {
      changes.push({ label: imageLabel(kind), before: shown(world.ThumbnailURL), after: shown(image) });
    }
    const icons = listChange(
      'Icons',
      world.IconURLs,
      values.icons.map((u) => u.trim()),
      'icon',
    );
    if (icons) changes.push(icons);
    const before = world.Builds.find((b) => b.BuildPlatform === values.platform)?.ServerScripts ?? [];
    const scripts = listChange(
      `Server scripts (${platformName(values.platform)} build)`,
      before,
      values.scripts,
      'script',
    );
    if (scripts) changes.push(scripts);
  }
  return changes;
}

export type BuildEffect =
  | { kind: 'replace'; platform: string; fileId: string; others: string[] }
  | { kind: 'add'; platform: string; others: string[] };

/** What happens to the builds: the chosen platform's build is replaced (and its file deleted) or added. */
export function buildEffect(
  existing: { Builds: { FileId: string; BuildPlatform: number }[] },
  platform: BuildPlatform,
): BuildEffect {
  const current = existing.Builds.find((b) => b.BuildPlatform === platform);
  const others = existing.Builds.filter((b) => b.BuildPlatform !== platform).map((b) =>
    platformName(b.BuildPlatform),
  );
  return current
    ? { kind: 'replace', platform: platformName(platform), fileId: current.FileId, others }
    : { kind: 'add', platform: platformName(platform), others };
}

/** An "Upload as" choice: which asset, and what the file does to it on the platform chosen for it. */
export function updateOptionLabel(
  asset: { Name: string; Builds: { FileId: string; BuildPlatform: number }[] },
  platform: BuildPlatform,
): string {
  const effect = buildEffect(asset, platform);
  const name = `Update “${asset.Name || 'Untitled'}”`;
  if (effect.kind === 'replace') {
    const kept = effect.others.length > 0 ? ` (keeps ${effect.others.join(' + ')})` : '';
    return `${name}: replace its ${effect.platform} build${kept}`;
  }
  const has = effect.others.length > 0 ? `has ${effect.others.join(' + ')}` : 'no builds yet';
  return `${name}: add ${/^[aeiou]/i.test(effect.platform) ? 'an' : 'a'} ${effect.platform} build (${has})`;
}
