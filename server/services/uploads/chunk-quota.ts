import { ErrorCode } from '../../protocol/errors.js';
import { AppError } from '../../errors.js';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { chunkSetExpired } from './chunk-sets.js';
import type { ChunkOwner, ChunkSet } from './records.js';
import type { UploadsShared } from './shared.js';

export type ChunkUsage = { sets: number; bytes: number; oldestTouched: number | null };

/** Where usage is read: the store (this host's copy) or a transaction, so the sets other hosts started count. */
export interface ChunkReads {
  owner(id: string): Promise<ChunkOwner | undefined>;
  set(id: string): Promise<ChunkSet | undefined>;
}

/** What a user holds in live (unexpired) chunk sets, read through `read`, plus `inFlight` bytes. */
export async function usageFrom(
  up: Pick<UploadsShared, 'deps'>,
  read: ChunkReads,
  userId: string,
  inFlight: number,
): Promise<ChunkUsage> {
  let sets = 0;
  let bytes = inFlight;
  let oldestTouched: number | null = null;
  for (const chunkId of (await read.owner(userId))?.sets ?? []) {
    const set = await read.set(chunkId);
    if (!set || set.userId !== userId || chunkSetExpired(up, set)) continue;
    sets++;
    for (const part of Object.values(set.parts)) bytes += part.bytes;
    oldestTouched = Math.min(oldestTouched ?? set.updatedAt, set.updatedAt);
  }
  return { sets, bytes, oldestTouched };
}

/** What a user holds, as this host's copy of the store has it. */
function chunkUsage(up: UploadsShared, userId: string): Promise<ChunkUsage> {
  const { chunkOwners, chunkSets } = up.records;
  return usageFrom(
    up,
    { owner: (id) => chunkOwners.get(id), set: (id) => chunkSets.get(id) },
    userId,
    up.chunks.placing.get(userId) ?? 0,
  );
}

/** One whole file always fits, whatever the setting says. */
export const chunkBytesPerUser = (up: Pick<UploadsShared, 'deps'>): number =>
  Math.max(up.deps.config.uploads.chunkBytesPerUser, up.deps.maxFileBytes);

export function chunkQuotaError(up: Pick<UploadsShared, 'deps'>, what: string, usage: ChunkUsage): AppError {
  const { clock, chunkSetTtlSeconds } = up.deps;
  const minutes =
    usage.oldestTouched === null
      ? null
      : Math.max(1, Math.ceil((usage.oldestTouched + chunkSetTtlSeconds - unixSeconds(clock)) / 60));
  return new AppError(
    ErrorCode.CHUNK_QUOTA_EXCEEDED,
    `Failed to upload chunk! ${what} Finish an unfinished chunked upload, or wait until one expires` +
      (minutes === null ? '.' : ` (the one untouched longest expires in about ${minutes} min).`),
  );
}

/** Refuses a new set beyond the user's limits: `chunkSetsPerUser` sets held, or as many bytes as allowed. */
export function newSetRoomOrThrow(
  up: Pick<UploadsShared, 'deps'>,
  usage: ChunkUsage,
  incomingBytes: number,
): void {
  const maxSets = up.deps.config.uploads.chunkSetsPerUser;
  if (usage.sets >= maxSets) {
    throw chunkQuotaError(
      up,
      `You have ${usage.sets} unfinished chunked uploads, as many as this host allows (${maxSets}).`,
      usage,
    );
  }
  const maxBytes = chunkBytesPerUser(up);
  if (usage.bytes + Math.max(incomingBytes, 1) > maxBytes) {
    throw chunkQuotaError(
      up,
      `Your unfinished chunked uploads hold ${usage.bytes} bytes; this host allows ${maxBytes}.`,
      usage,
    );
  }
}

/**
 * Refuses a chunk that would start a set beyond the user's limits, before its bytes are stored: when they
 * already hold `chunkSetsPerUser` sets, or as many bytes as allowed. A first look at this host's copy; the
 * transaction that starts the set checks again against the newest records.
 */
export async function chunkRoomOrThrow(
  up: UploadsShared,
  user: StoredUser,
  chunkId: unknown,
  incomingBytes = 0,
): Promise<void> {
  if (chunkId !== undefined && chunkId !== '') return;
  newSetRoomOrThrow(up, await chunkUsage(up, user.Id), incomingBytes);
}

/** Counts `bytes` of `userId`'s as on their way into a set on this host, until `settle` gives them back. */
export function countInFlight(up: UploadsShared, userId: string, bytes: number): { settle(): void } {
  const { placing } = up.chunks;
  placing.set(userId, (placing.get(userId) ?? 0) + bytes);
  return {
    settle() {
      const left = (placing.get(userId) ?? 0) - bytes;
      if (left > 0) placing.set(userId, left);
      else placing.delete(userId);
    },
  };
}
