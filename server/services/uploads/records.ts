import type { AvatarMetaDto, UploadDataDto, WorldMetaDto } from '../../protocol/uploads.js';
import type { HostStore, ReadCollection as Collection } from '../../store/seam.js';

export const FILES = 'uploads';
export const AVATARS = 'avatars';
export const WORLDS = 'worlds';
export const CHUNK_SETS = 'chunksets';
export const CHUNK_OWNERS = 'chunkowners';

export interface StoredFile extends UploadDataDto {
  OriginalName: string;
  DateUploaded: number;
}

/** One chunk held: its size and its file in chunks/<chunkId>/ (N.<random>.part; N.part when imported). */
export interface ChunkPart {
  bytes: number;
  file: string;
}

/** A chunked upload in progress: a record in CHUNK_SETS, by chunk id; its parts are files in chunks/<chunkId>/. */
export interface ChunkSet {
  chunkId: string;
  userId: string;
  originalFileName: string;
  amountOfChunks: number;
  createdAt: number;
  updatedAt: number;
  /** chunk number -> the part held */
  parts: Record<string, ChunkPart>;
  avatarMeta?: unknown;
  worldMeta?: unknown;
  /** Every chunk arrived; the request that completed it is putting the file together, no chunk may change it. */
  assembling?: boolean;
  /** The host process putting it together, and when it last renewed that claim (Unix seconds). */
  assemblingBy?: string;
  assemblingAt?: number;
}

/**
 * The chunk sets of one user (CHUNK_OWNERS, by user id), so a transaction that counts them against the user's
 * limits reads (and conflicts with) every set started meanwhile, on any host.
 */
export interface ChunkOwner {
  userId: string;
  sets: string[];
}

export interface UploadAnswer {
  message: string;
  result: { UploadData: UploadDataDto; AvatarId?: string; WorldId?: string };
}

/** The answer to update/avatar and update/world (wire reference 12.3). */
export interface UpdateAnswer {
  message: string;
  /**
   * With a file: `UploadData` and its fields repeated at the root (HypernexSharp's AvatarUpdateResult reads them
   * there), and the asset's id; details only: the asset's id.
   */
  result: Partial<UploadDataDto> & { UploadData?: UploadDataDto; AvatarId?: string; WorldId?: string };
}

export interface ChunkInput {
  chunkId: unknown;
  chunkNumber: unknown;
  amountOfChunks: unknown;
  originalFileName: unknown;
  avatarMeta?: unknown;
  worldMeta?: unknown;
}

/** The store's collections the uploads service reads (this host's copy; transactions read the newest). */
export interface UploadsRecords {
  files: Collection<StoredFile>;
  avatars: Collection<AvatarMetaDto>;
  worlds: Collection<WorldMetaDto>;
  chunkSets: Collection<ChunkSet>;
  chunkOwners: Collection<ChunkOwner>;
}

export function openUploadsRecords(store: HostStore): UploadsRecords {
  return {
    files: store.collection<StoredFile>(FILES),
    avatars: store.collection<AvatarMetaDto>(AVATARS),
    worlds: store.collection<WorldMetaDto>(WORLDS),
    chunkSets: store.collection<ChunkSet>(CHUNK_SETS),
    chunkOwners: store.collection<ChunkOwner>(CHUNK_OWNERS),
  };
}

/** A file record as the wire shows it (no original name or upload date). */
export function uploadData(record: StoredFile): UploadDataDto {
  return {
    UserId: record.UserId,
    FileId: record.FileId,
    FileName: record.FileName,
    UploadType: record.UploadType,
    FileType: record.FileType,
    Key: record.Key,
    Hash: record.Hash,
    Size: record.Size,
  };
}
