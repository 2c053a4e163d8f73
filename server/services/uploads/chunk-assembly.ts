import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { dropChunkSet } from './chunk-sets.js';
import { finish } from './finish.js';
import { tempPath } from './folders.js';
import { CHUNK_SETS, type ChunkSet, type UploadAnswer } from './records.js';
import { streamToFile, type TempFile } from './receive.js';
import type { UploadsShared } from './shared.js';

/**
 * Whether the host that claimed a complete set died before putting it together: its claim was not renewed in
 * time, or (the embedded store, one process per folder) it was an earlier run of this host.
 */
export function assemblyAbandoned(up: UploadsShared, set: ChunkSet): boolean {
  if (set.assemblingBy === up.chunks.processId) return false;
  if (!up.folders.shared) return true;
  return unixSeconds(up.deps.clock) - (set.assemblingAt ?? 0) > up.deps.config.uploads.assemblyLeaseSeconds;
}

/** Renews this host's claim on a set it puts together, a third of the lease at a time, until cleared. */
function renewAssembly(up: UploadsShared, chunkId: string): NodeJS.Timeout {
  const { store, clock, config, log } = up.deps;
  const timer = setInterval(
    () => {
      store
        .tx(async (t) => {
          const sets = t.repo<ChunkSet>(CHUNK_SETS);
          const set = await sets.get(chunkId);
          if (set?.assemblingBy === up.chunks.processId)
            sets.put(chunkId, { ...set, assemblingAt: unixSeconds(clock) });
        })
        .catch((error: unknown) => log.warn({ err: error, chunkId }, 'renewing a chunk set assembly failed'));
    },
    (config.uploads.assemblyLeaseSeconds * 1000) / 3,
  );
  timer.unref();
  return timer;
}

async function assemble(up: UploadsShared, set: ChunkSet): Promise<TempFile> {
  const temp = tempPath(up.folders);
  const parts = Array.from({ length: set.amountOfChunks }, (_, n) =>
    join(up.folders.chunksDir, set.chunkId, set.parts[String(n)]!.file),
  );
  async function* concat() {
    for (const part of parts) yield* createReadStream(part);
  }
  const { Readable } = await import('node:stream');
  return streamToFile(Readable.from(concat()), temp);
}

/**
 * A complete set this host marked `assembling`: puts the file together, then runs the same path as a single
 * upload. The set is spent either way.
 */
export async function assembleAndFinish(
  up: UploadsShared,
  user: StoredUser,
  chunkId: string,
  set: ChunkSet,
): Promise<UploadAnswer> {
  const lease = renewAssembly(up, chunkId);
  try {
    const whole = await assemble(up, set);
    try {
      return await finish(up, user, whole, set.originalFileName, {
        avatarMeta: set.avatarMeta,
        worldMeta: set.worldMeta,
      });
    } finally {
      // The assembled file was moved into place or the upload failed (that failure is thrown); a temp file
      // left behind is swept at the next start.
      await unlink(whole.path).catch(() => undefined);
    }
  } finally {
    clearInterval(lease);
    await dropChunkSet(up, chunkId);
  }
}
