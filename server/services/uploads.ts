import { randomBytes } from 'node:crypto';
import { Publicity } from '../protocol/enums.js';
import type { StoredUser } from '../store/users.js';
import { createKeyedSerial } from './serial.js';
import { saveAssetTokens } from './uploads/assets.js';
import { chunkRoomOrThrow } from './uploads/chunk-quota.js';
import { chunk } from './uploads/chunk-receive.js';
import { chunkStatus, sweepChunkSets } from './uploads/chunk-sets.js';
import { finish } from './uploads/finish.js';
import { pathOf, tempPath, uploadFolders } from './uploads/folders.js';
import { buildOf, BY_OWNER, indexUploads, ownWorldsUsing, searchMatch } from './uploads/indexes.js';
import type { KeyHit } from '../store/key-search.js';
import { removeFiles, typeOrThrow } from './uploads/place.js';
import { openUploadsRecords, uploadData, type ChunkInput, type StoredFile } from './uploads/records.js';
import type { TempFile } from './uploads/receive.js';
import {
  deleteAsset,
  deleteAssetIn,
  deleteFileIn,
  removeOwnAsset,
  removeOwnFile,
} from './uploads/removal.js';
import type { UploadsDeps, UploadsShared } from './uploads/shared.js';
import { closeUploads, initUploads } from './uploads/startup.js';
import { update } from './uploads/update.js';

// Re-exported so the importers of services/uploads.js (routes, host, tests) keep working unchanged; each name lives
// in the part that owns it.
export {
  AVATARS,
  CHUNK_OWNERS,
  CHUNK_SETS,
  FILES,
  WORLDS,
  type ChunkInput,
  type StoredFile,
  type UpdateAnswer,
  type UploadAnswer,
} from './uploads/records.js';
export { streamToFile, type TempFile } from './uploads/receive.js';

/**
 * Uploads, avatars and worlds (SPEC section 3): files on disk under files/, records in the store. Wires the
 * parts in server/services/uploads/ (receiving, placing and indexing, meta, chunked sets, removal, startup) to
 * one shared state object.
 */
export function createUploadsService(deps: UploadsDeps) {
  const up: UploadsShared = {
    deps,
    records: openUploadsRecords(deps.store),
    folders: uploadFolders(deps.config),
    serial: createKeyedSerial(),
    chunks: { processId: randomBytes(8).toString('hex'), placing: new Map() },
  };
  indexUploads(up.records);
  const { files, avatars, worlds } = up.records;
  return {
    filesDir: up.folders.filesDir,
    get tmpDir() {
      return up.folders.tmpDir;
    },
    tempPath: (): string => tempPath(up.folders),
    typeOrThrow,
    finish: (user: StoredUser, temp: TempFile, originalName: string, metas: UploadMetas) =>
      finish(up, user, temp, originalName, metas),
    update: (user: StoredUser, kind: AssetKind, input: { fileId?: string; rawMeta: unknown }) =>
      update(up, user, kind, input),
    init: (): Promise<void> => initUploads(up),
    close: (): Promise<void> => closeUploads(up),
    chunk: (user: StoredUser, temp: TempFile, input: ChunkInput) => chunk(up, user, temp, input),
    chunkRoomOrThrow: (user: StoredUser, chunkId: unknown, incomingBytes?: number): Promise<void> =>
      chunkRoomOrThrow(up, user, chunkId, incomingBytes),
    chunkStatus: (user: StoredUser, chunkId: string) => chunkStatus(up, user, chunkId),
    sweepChunkSets: (): Promise<number> => sweepChunkSets(up),
    deleteAvatar: (id: string) => deleteAsset(up, 'avatar', id),
    deleteWorld: (id: string) => deleteAsset(up, 'world', id),
    removeOwnAsset: (caller: StoredUser, kind: AssetKind, id: string) => removeOwnAsset(up, caller, kind, id),
    removeOwnFile: (caller: StoredUser, fileId: string) => removeOwnFile(up, caller, fileId),
    fileRecordById: (fileId: string): Promise<StoredFile | undefined> => files.get(fileId),
    async fileRecord(userId: string, fileId: string): Promise<StoredFile | undefined> {
      const record = await files.get(fileId);
      return record && record.UserId === userId ? record : undefined;
    },
    pathOf: (file: Pick<StoredFile, 'UserId' | 'FileName'>): string => pathOf(up.folders, file),
    uploadData,
    buildOf: (fileId: string) => buildOf(up.records, fileId),
    avatar: (id: string) => avatars.get(id),
    world: (id: string) => worlds.get(id),
    /** The avatars of these ids that exist, in that order. */
    avatars: (ids: readonly string[]) => avatars.getMany(ids),
    /** The worlds of these ids that exist, in that order. */
    worlds: (ids: readonly string[]) => worlds.getMany(ids),
    /**
     * Public avatars or worlds whose name holds `text`, or with tag `text` (any case), in name order then id, each
     * with its key: `offset` skipped, at most `limit`. A query on PostgreSQL.
     */
    search(
      kind: AssetKind,
      by: 'name' | 'tag',
      text: string,
      offset: number,
      limit: number,
    ): Promise<KeyHit[]> {
      const { index, match } = searchMatch(by, text);
      return (kind === 'avatar' ? avatars : worlds).searchKeys(index, match, offset, limit);
    },
    /**
     * Stores asset-token changes on an avatar or world (their hashes only): `change` gets the newest list and
     * returns the new one.
     */
    saveAssetTokens: <T>(
      kind: AssetKind,
      id: string,
      change: (tokens: readonly T[]) => T[],
    ): Promise<boolean> => saveAssetTokens(up, kind, id, change),
    deleteAssetIn,
    deleteFileIn,
    removeFiles: (records: StoredFile[]): Promise<void> => removeFiles(up.folders, records),
    /** The worlds of the script's owner whose builds list the server script `fileId`. */
    async worldsUsingScript(fileId: string): Promise<string[]> {
      const record = await files.get(fileId);
      return record ? ownWorldsUsing(fileId, record.UserId, worlds) : [];
    },
    async filesOf(userId: string): Promise<StoredFile[]> {
      const found = await files.list(BY_OWNER, userId);
      return found.filter((f) => f.UserId === userId).sort((a, b) => b.DateUploaded - a.DateUploaded);
    },
    isPublic: (asset: { Publicity: number }) => asset.Publicity === Publicity.Anyone,
  };
}

type AssetKind = 'avatar' | 'world';
type UploadMetas = { avatarMeta?: unknown; worldMeta?: unknown };

export type UploadsService = ReturnType<typeof createUploadsService>;
