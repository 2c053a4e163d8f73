import { readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../../protocol/errors.js';
import { AppError } from '../../errors.js';
import type { Tx } from '../../store/seam.js';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { CHUNK_OWNERS, CHUNK_SETS, type ChunkOwner, type ChunkSet } from './records.js';
import type { UploadsShared } from './shared.js';

/** Names that prove a file is a chunk set's: its parts, and a legacy meta.json (and its temp file). */
const CHUNK_FILE = /^(\d{1,6}(\.[0-9a-f]{16})?\.part|meta\.json|meta\.json\.tmp)$/;

export function chunkSetExpired(up: Pick<UploadsShared, 'deps'>, set: ChunkSet): boolean {
  return unixSeconds(up.deps.clock) - set.updatedAt > up.deps.chunkSetTtlSeconds;
}

export const unknownChunkSet = (detail: 'unknown or expired' | 'expired') =>
  new AppError(
    ErrorCode.UNKNOWN_CHUNK_SET,
    detail === 'expired'
      ? 'Failed to upload chunk! That chunk set expired; start again with an empty chunkId.'
      : 'Failed to upload chunk! Unknown or expired chunk set; start again with an empty chunkId.',
    { chunkId: detail },
  );

/**
 * Deletes the files of a chunk set whose record is gone (or was never committed): its parts and a legacy
 * meta.json, only files of ours (a stranger's file stays, and so does the folder).
 */
export async function dropChunkFiles(
  up: Pick<UploadsShared, 'deps' | 'folders'>,
  chunkId: string,
): Promise<void> {
  const dir = join(up.folders.chunksDir, chunkId);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const strangers = names.filter((name) => !CHUNK_FILE.test(name));
  // Chunks already gone are what this wants; any left are swept with their set at the next start.
  await Promise.all(
    names
      .filter((name) => CHUNK_FILE.test(name))
      .map((name) => unlink(join(dir, name)).catch(() => undefined)),
  );
  if (strangers.length > 0) {
    up.deps.log.warn(
      { folder: dir, files: strangers },
      'left files a chunk set folder should not hold (not ours to delete)',
    );
  } else {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Removes a set's record and its owner's mention of it, in `t`; the removed set, or null when there was none. */
export async function removeSetIn(
  t: Tx,
  chunkId: string,
  when?: (set: ChunkSet) => boolean,
): Promise<ChunkSet | null> {
  const sets = t.repo<ChunkSet>(CHUNK_SETS);
  const set = await sets.get(chunkId);
  if (!set || (when && !when(set))) return null;
  await sets.remove(chunkId);
  const owners = t.repo<ChunkOwner>(CHUNK_OWNERS);
  const owner = await owners.get(set.userId);
  if (owner) {
    const rest = owner.sets.filter((id) => id !== chunkId);
    if (rest.length > 0) owners.put(set.userId, { userId: set.userId, sets: rest });
    else await owners.remove(set.userId);
  }
  return set;
}

/**
 * Drops a chunk set: its record in one transaction (when `when` still holds for the newest version), then its
 * files. True when this call dropped it (when two hosts drop one set at once, one of them does).
 */
export async function dropChunkSet(
  up: UploadsShared,
  chunkId: string,
  when?: (set: ChunkSet) => boolean,
): Promise<boolean> {
  const removed = await up.deps.store.tx((t) => removeSetIn(t, chunkId, when));
  if (removed) await dropChunkFiles(up, chunkId);
  return removed !== null;
}

/** Drops chunk sets nobody touched within the time limit (each host sweeps; a set is dropped by one of them). */
export async function sweepChunkSets(up: UploadsShared): Promise<number> {
  const expired = (set: ChunkSet): boolean => chunkSetExpired(up, set);
  let dropped = 0;
  for await (const set of up.records.chunkSets.scan()) {
    if (expired(set) && (await dropChunkSet(up, set.chunkId, expired))) dropped++;
  }
  return dropped;
}

/** The set `chunkId` as this host's copy has it, caught up first when that copy may be behind. */
export async function newestSet(up: UploadsShared, chunkId: string): Promise<ChunkSet | undefined> {
  const { chunkSets } = up.records;
  const known = await chunkSets.get(chunkId);
  // Started or touched on another host: this host's copy may not have that commit yet.
  if (!known || chunkSetExpired(up, known)) await up.deps.store.refresh();
  return chunkSets.get(chunkId);
}

/** What a set holds so far, for a client resuming an upload. */
export async function chunkStatus(up: UploadsShared, user: StoredUser, chunkId: string) {
  const set = await newestSet(up, chunkId);
  if (!set || set.userId !== user.Id || chunkSetExpired(up, set)) {
    throw new AppError(ErrorCode.UNKNOWN_CHUNK_SET, 'Unknown or expired chunk set.', {
      chunkId: 'unknown or expired',
    });
  }
  const received = Object.keys(set.parts)
    .map(Number)
    .sort((a, b) => a - b);
  return {
    chunkId,
    originalFileName: set.originalFileName,
    amountOfChunks: set.amountOfChunks,
    received,
    receivedBytes: Object.values(set.parts).reduce((sum, part) => sum + part.bytes, 0),
    expiresAt: set.updatedAt + up.deps.chunkSetTtlSeconds,
  };
}
