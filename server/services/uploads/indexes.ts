import type { AvatarMetaDto, WorldMetaDto } from '../../protocol/uploads.js';
import { Publicity } from '../../protocol/enums.js';
import type { KeyMatch } from '../../store/key-search.js';
import type { ReadCollection as Collection, Tx, TxRepo } from '../../store/seam.js';
import { AVATARS, WORLDS, type StoredFile, type UploadsRecords } from './records.js';

/** List indexes of avatars and worlds: the build files they use; of worlds: the server scripts they use. */
const BY_BUILD_FILE = 'buildFile';
const BY_SCRIPT = 'script';
/** List index of files: their owner. */
export const BY_OWNER = 'owner';
/** List index of public avatars and worlds (Publicity Anyone): their lower-cased name, for search. */
export const SEARCH_NAME = 'searchName';
/** List index of public avatars and worlds: `<tag>` US `<name>`, lower-cased, so a tag's items list in name order. */
export const SEARCH_TAG = 'searchTag';
/** Between a tag and a name in SEARCH_TAG keys (never in either: taken out of both). */
export const TAG_NAME_SEPARATOR = '\u001f';

const searchable = (text: string): string => text.toLowerCase().replaceAll(TAG_NAME_SEPARATOR, ' ');

/** What a search of public avatars or worlds matches: names holding `text`, or a tag (any case). */
export function searchMatch(by: 'name' | 'tag', text: string): { index: string; match: KeyMatch } {
  return by === 'name'
    ? { index: SEARCH_NAME, match: { contains: searchable(text) } }
    : { index: SEARCH_TAG, match: { prefix: `${searchable(text)}${TAG_NAME_SEPARATOR}` } };
}

/** The SEARCH_NAME keys of an avatar or world: its name while anyone may see it. */
export function searchNameKeys(asset: AvatarMetaDto | WorldMetaDto): string[] {
  return asset.Publicity === Publicity.Anyone ? [searchable(asset.Name)] : [];
}

/** The SEARCH_TAG keys of an avatar or world while anyone may see it: each tag once, with its name. */
export function searchTagKeys(asset: AvatarMetaDto | WorldMetaDto): string[] {
  if (asset.Publicity !== Publicity.Anyone) return [];
  const name = searchable(asset.Name);
  return [...new Set(asset.Tags.map((tag) => `${searchable(tag)}${TAG_NAME_SEPARATOR}${name}`))];
}

export type AssetRef = { kind: 'avatar' | 'world'; id: string };

function isString(value: string | null): value is string {
  return value !== null;
}

/**
 * Adds the indexes the uploads service reads to the store's collections. Which avatar or world a build file
 * belongs to, which worlds use a server script, public avatars and worlds by name and tag: indexes of the store,
 * so they follow every change whichever host made it.
 */
export function indexUploads(records: UploadsRecords): void {
  records.files.addListIndex(BY_OWNER, (file) => [file.UserId]);
  records.avatars.addListIndex(BY_BUILD_FILE, (avatar) => avatar.Builds.map((build) => build.FileId));
  records.worlds.addListIndex(BY_BUILD_FILE, (world) => world.Builds.map((build) => build.FileId));
  for (const assets of [records.avatars, records.worlds] as Array<Collection<AvatarMetaDto | WorldMetaDto>>) {
    assets.addListIndex(SEARCH_NAME, searchNameKeys);
    assets.addListIndex(SEARCH_TAG, searchTagKeys);
  }
  records.worlds.addListIndex(BY_SCRIPT, (world) => [
    ...new Set(world.Builds.flatMap((build) => build.ServerScripts.map(fileIdOfUrl).filter(isString))),
  ]);
}

export function fileIdOfUrl(url: string): string | null {
  const last = url.split(/[?#]/)[0]!.split('/').filter(Boolean).pop();
  return last && /^file_[0-9a-f-]{36}$/.test(last) ? last : null;
}

/** The owner and file id of a `.../file/<userId>/<fileId>` URL, or null. */
export function fileRefOfUrl(url: string): { userId: string; fileId: string } | null {
  const parts = url.split(/[?#]/)[0]!.split('/').filter(Boolean);
  const [marker, userId, fileId] = parts.slice(-3);
  if (marker !== 'file' || !userId || !fileId || fileIdOfUrl(fileId) === null) return null;
  return { userId, fileId };
}

/** The avatar or world a build file belongs to. */
export async function buildOf(
  records: Pick<UploadsRecords, 'avatars' | 'worlds'>,
  fileId: string,
): Promise<AssetRef | undefined> {
  const avatar = (await records.avatars.list(BY_BUILD_FILE, fileId))[0];
  if (avatar) return { kind: 'avatar', id: avatar.Id };
  const world = (await records.worlds.list(BY_BUILD_FILE, fileId))[0];
  return world ? { kind: 'world', id: world.Id } : undefined;
}

/** The avatar or world whose build `fileId` is, as transaction `t` sees them. */
export async function buildIn(t: Tx, fileId: string): Promise<AssetRef | undefined> {
  const avatar = (await t.repo<AvatarMetaDto>(AVATARS).list(BY_BUILD_FILE, fileId))[0];
  if (avatar) return { kind: 'avatar', id: avatar.Id };
  const world = (await t.repo<WorldMetaDto>(WORLDS).list(BY_BUILD_FILE, fileId))[0];
  return world ? { kind: 'world', id: world.Id } : undefined;
}

/**
 * Pinning rule: a world lists only its owner's own server scripts, so nobody can keep someone else's file from
 * being deleted by listing it. The worlds of `ownerId` whose builds use the script `fileId` (worlds stored before
 * this rule may list others' scripts: those never count).
 */
export async function ownWorldsUsing(
  fileId: string,
  ownerId: string,
  repo: Pick<TxRepo<WorldMetaDto>, 'list'>,
): Promise<string[]> {
  return (await repo.list(BY_SCRIPT, fileId)).filter((w) => w.OwnerId === ownerId).map((w) => w.Id);
}

/**
 * Of the script file ids `candidates` (nulls: not a script of this host), those no other world of `world`'s
 * owner uses: they go with it.
 */
export async function scriptsOnlyIn(
  worldRepo: Pick<TxRepo<WorldMetaDto>, 'list'>,
  world: WorldMetaDto,
  candidates: ReadonlyArray<string | null>,
): Promise<string[]> {
  const only: string[] = [];
  for (const fid of new Set(candidates)) {
    if (fid === null) continue;
    const users = await ownWorldsUsing(fid, world.OwnerId, worldRepo);
    if (users.every((w) => w === world.Id)) only.push(fid);
  }
  return only;
}

/** The file records of these ids that exist, as the transaction sees them. */
export async function filesIn(repo: TxRepo<StoredFile>, fileIds: readonly string[]): Promise<StoredFile[]> {
  const found: StoredFile[] = [];
  for (const id of fileIds) {
    const file = await repo.get(id);
    if (file) found.push(file);
  }
  return found;
}
