import { stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readJsonFile } from '../../store/durable-file.js';
import { isSafeId } from '../../store/store.js';
import { chunkSetExpired, dropChunkFiles } from './chunk-sets.js';
import { CHUNK_OWNERS, CHUNK_SETS, type ChunkOwner, type ChunkPart, type ChunkSet } from './records.js';
import type { UploadsShared } from './shared.js';

/** A set as the earlier layout kept it, in chunks/<chunkId>/meta.json (imported at startup). */
type LegacyChunkSet = Omit<ChunkSet, 'parts' | 'assembling'> & {
  /** chunk number -> size in bytes, in N.part */
  received: Record<string, number>;
};

/** A set reading `legacy` (a meta.json of the earlier layout) as a record, or null when it is not one. */
function importedSet(chunkId: string, legacy: unknown): ChunkSet | null {
  if (!legacy || typeof legacy !== 'object') return null;
  const old = legacy as Partial<LegacyChunkSet>;
  const amount = old.amountOfChunks;
  if (
    old.chunkId !== chunkId ||
    typeof old.userId !== 'string' ||
    !isSafeId(old.userId) ||
    typeof old.originalFileName !== 'string' ||
    typeof amount !== 'number' ||
    !Number.isInteger(amount) ||
    amount < 1 ||
    typeof old.createdAt !== 'number' ||
    typeof old.updatedAt !== 'number' ||
    !old.received ||
    typeof old.received !== 'object'
  ) {
    return null;
  }
  const parts: Record<string, ChunkPart> = {};
  for (const [n, bytes] of Object.entries(old.received)) {
    if (!/^\d{1,6}$/.test(n) || Number(n) >= amount || typeof bytes !== 'number') return null;
    parts[n] = { bytes, file: `${n}.part` };
  }
  const set: ChunkSet = {
    chunkId,
    userId: old.userId,
    originalFileName: old.originalFileName,
    amountOfChunks: amount,
    createdAt: old.createdAt,
    updatedAt: old.updatedAt,
    parts,
  };
  if (old.avatarMeta !== undefined) set.avatarMeta = old.avatarMeta;
  if (old.worldMeta !== undefined) set.worldMeta = old.worldMeta;
  return set;
}

/**
 * Startup, for each folder under chunks/: a legacy meta.json of a live set not yet in the store is imported
 * (once, whichever host gets there first), then deleted. A folder with no record and nothing to import is left
 * over from a set that never committed or was dropped: removed, except in a folder hosts share while it may
 * still be another host's set in the making (younger than the time limit).
 */
export async function initChunkFolder(up: UploadsShared, chunkId: string): Promise<void> {
  const { chunkSets } = up.records;
  const { store, chunkSetTtlSeconds } = up.deps;
  const dir = join(up.folders.chunksDir, chunkId);
  const legacy = await readJsonFile<unknown>(join(dir, 'meta.json')).catch(() => undefined);
  const legacyFiles = async () => {
    for (const name of ['meta.json', 'meta.json.tmp']) await unlink(join(dir, name)).catch(() => undefined);
  };
  // undefined: a meta.json that cannot be read; null: none.
  if (legacy !== null) {
    if (await chunkSets.has(chunkId)) return legacyFiles();
    const set = legacy === undefined ? null : importedSet(chunkId, legacy);
    if (!set || chunkSetExpired(up, set)) return dropChunkFiles(up, chunkId);
    await store.tx(async (t) => {
      const sets = t.repo<ChunkSet>(CHUNK_SETS);
      if (await sets.has(chunkId)) return;
      sets.put(chunkId, set);
      const owners = t.repo<ChunkOwner>(CHUNK_OWNERS);
      const owner = await owners.get(set.userId);
      owners.put(set.userId, { userId: set.userId, sets: [...(owner?.sets ?? []), chunkId] });
    });
    // Imported: the record is what counts from now on (one left behind is removed next time).
    return legacyFiles();
  }
  if (await chunkSets.has(chunkId)) return;
  if (up.folders.shared) {
    const made = await stat(dir).catch(() => null);
    // File times are wall-clock times.
    if (!made || Date.now() - made.mtimeMs <= chunkSetTtlSeconds * 1000) return;
    await store.refresh();
    if (await chunkSets.has(chunkId)) return;
  }
  await dropChunkFiles(up, chunkId);
}
