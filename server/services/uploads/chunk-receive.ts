import { randomBytes } from 'node:crypto';
import { mkdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../../protocol/errors.js';
import { CHUNK_ID } from '../../protocol/uploads.js';
import { AppError } from '../../errors.js';
import { syncDir } from '../../store/durable-file.js';
import type { Tx } from '../../store/seam.js';
import type { StoredUser } from '../../store/users.js';
import { unixSeconds } from '../context.js';
import { assembleAndFinish, assemblyAbandoned } from './chunk-assembly.js';
import {
  chunkBytesPerUser,
  chunkQuotaError,
  chunkRoomOrThrow,
  countInFlight,
  newSetRoomOrThrow,
  usageFrom,
  type ChunkUsage,
} from './chunk-quota.js';
import {
  chunkSetExpired,
  dropChunkFiles,
  dropChunkSet,
  newestSet,
  removeSetIn,
  unknownChunkSet,
} from './chunk-sets.js';
import { typeOrThrow } from './place.js';
import {
  CHUNK_OWNERS,
  CHUNK_SETS,
  type ChunkInput,
  type ChunkOwner,
  type ChunkSet,
  type UploadAnswer,
} from './records.js';
import type { TempFile } from './receive.js';
import type { UploadsShared } from './shared.js';

const SAFE_CHUNK_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function newChunkId(): string {
  // 50 characters of 0-9A-Za-z as the reference; rejection sampling keeps it uniform.
  let out = '';
  while (out.length < 50) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && out.length < 50) out += SAFE_CHUNK_ALPHABET[byte % 62];
    }
  }
  return out;
}

function intField(value: unknown, name: string, min: number, max: number): number {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,9}$/.test(text)) {
    throw new AppError(ErrorCode.INVALID_CHUNK, `Invalid parameters! ${name} must be a whole number.`, {
      [name]: 'must be a whole number',
    });
  }
  const n = Number(text);
  if (n < min || n > max) {
    throw new AppError(ErrorCode.INVALID_CHUNK, `Invalid parameters! ${name} must be ${min} to ${max}.`, {
      [name]: `must be ${min} to ${max}`,
    });
  }
  return n;
}

/** One chunk on its way into its set: what it says, and where its part goes. */
interface IncomingChunk {
  user: StoredUser;
  temp: TempFile;
  input: ChunkInput;
  originalFileName: string;
  amount: number;
  number: number;
  chunkId: string;
  /** The chunk starts a new set (it came with no chunkId). */
  fresh: boolean;
  /** The part's file name in chunks/<chunkId>/. */
  file: string;
}

type Outcome =
  { kind: 'stored'; set: ChunkSet; replaced: string | null } | { kind: 'dropped'; error: AppError };

export type ChunkAnswer = UploadAnswer | { message: string; result: Record<string, unknown> };

/**
 * Stores one chunk; the chunk that completes a set gets the whole upload answer. The set's state is a record in
 * the store, so any host sharing the store and the folder takes the next chunk: the part is renamed into
 * chunks/<id>/ first, then one transaction adds it (a conflicting commit runs again, so chunks arriving at once
 * on several hosts all land); the transaction that sees the set complete marks it `assembling`, and only its
 * caller puts the file together.
 */
export async function chunk(
  up: UploadsShared,
  user: StoredUser,
  temp: TempFile,
  input: ChunkInput,
): Promise<ChunkAnswer> {
  const { originalFileName, amount, number } = chunkParams(input);
  const { chunkId, fresh } = await setToJoin(up, user, temp, input);
  const file = `${number}.${randomBytes(8).toString('hex')}.part`;
  const c: IncomingChunk = { user, temp, input, originalFileName, amount, number, chunkId, fresh, file };
  const dir = join(up.folders.chunksDir, chunkId);
  const inFlight = countInFlight(up, user.Id, temp.size);
  let outcome: Outcome;
  try {
    await storePart(up, c);
    outcome = await up.deps.store.tx((t) => commitChunk(up, t, c));
  } catch (error) {
    // Not committed: the part is nobody's. A set refused at its first chunk holds nothing either.
    await unlink(join(dir, file)).catch(() => undefined);
    if (fresh) await dropChunkFiles(up, chunkId);
    throw error;
  } finally {
    inFlight.settle();
  }
  if (outcome.kind === 'dropped') {
    await dropChunkFiles(up, chunkId);
    throw outcome.error;
  }
  const { set, replaced } = outcome;
  // A chunk sent again replaces the one held; the file it replaced is no part of the set any more.
  if (replaced !== null) await unlink(join(dir, replaced)).catch(() => undefined);
  if (!set.assembling) return progress(chunkId, number, set);
  // Complete, and this call marked it so.
  return assembleAndFinish(up, user, chunkId, set);
}

/** The chunk's own fields, checked. */
function chunkParams(input: ChunkInput): { originalFileName: string; amount: number; number: number } {
  if (typeof input.originalFileName !== 'string' || input.originalFileName.length === 0) {
    throw new AppError(ErrorCode.INVALID_PARAMETERS, 'Invalid parameters! originalFileName is required.', {
      originalFileName: 'is required',
    });
  }
  const originalFileName = input.originalFileName.slice(0, 255);
  typeOrThrow(originalFileName);
  const amount = intField(input.amountOfChunks, 'amountOfChunks', 1, 100_000);
  const number = intField(input.chunkNumber, 'chunkNumber', 0, amount - 1);
  return { originalFileName, amount, number };
}

/**
 * The set the chunk goes into: a new id when it came without one (after a first look at the user's room), or
 * the caller's live set of that id.
 */
async function setToJoin(
  up: UploadsShared,
  user: StoredUser,
  temp: TempFile,
  input: ChunkInput,
): Promise<{ chunkId: string; fresh: boolean }> {
  if (input.chunkId === undefined || input.chunkId === '') {
    // A first look, before anything is written; the commit decides.
    await chunkRoomOrThrow(up, user, input.chunkId, temp.size);
    return { chunkId: newChunkId(), fresh: true };
  }
  if (typeof input.chunkId !== 'string' || !CHUNK_ID.test(input.chunkId)) {
    throw new AppError(
      ErrorCode.INVALID_CHUNK,
      'Failed to upload chunk! chunkId is not one this host gave out.',
      {
        chunkId: 'not a valid chunk id',
      },
    );
  }
  const chunkId = input.chunkId;
  const set = await newestSet(up, chunkId);
  if (!set || set.userId !== user.Id) throw unknownChunkSet('unknown or expired');
  if (chunkSetExpired(up, set)) {
    await dropChunkSet(up, chunkId, (s) => chunkSetExpired(up, s));
    throw unknownChunkSet('expired');
  }
  return { chunkId, fresh: false };
}

/** Renames the chunk's temp file into its set's folder, durably (a new set's folder is made first). */
async function storePart(up: UploadsShared, c: IncomingChunk): Promise<void> {
  const { chunksDir } = up.folders;
  const dir = join(chunksDir, c.chunkId);
  try {
    if (c.fresh) await mkdir(dir);
    await rename(c.temp.path, join(dir, c.file));
    // The rename lives in the folder: synced before the record commits, or a power cut could leave a record
    // naming a part that is gone.
    if (up.deps.config.fsync) {
      await syncDir(dir);
      if (c.fresh) await syncDir(chunksDir);
    }
  } catch (error) {
    // The set was dropped meanwhile (its folder with it).
    if (!c.fresh && (error as NodeJS.ErrnoException).code === 'ENOENT')
      throw unknownChunkSet('unknown or expired');
    throw error;
  }
}

/** What the user holds, as transaction `t` reads it, with their other chunks still on their way on this host. */
function usageIn(up: UploadsShared, t: Tx, c: IncomingChunk): Promise<ChunkUsage> {
  const sets = t.repo<ChunkSet>(CHUNK_SETS);
  const owners = t.repo<ChunkOwner>(CHUNK_OWNERS);
  return usageFrom(
    up,
    { owner: (id) => owners.get(id), set: (id) => sets.get(id) },
    c.user.Id,
    // Other chunks of this user still on their way on this host; this one is counted by the caller.
    (up.chunks.placing.get(c.user.Id) ?? 0) - c.temp.size,
  );
}

/** Adds the stored part to its set in transaction `t`, or starts the set with it. */
async function commitChunk(up: UploadsShared, t: Tx, c: IncomingChunk): Promise<Outcome> {
  const sets = t.repo<ChunkSet>(CHUNK_SETS);
  const owners = t.repo<ChunkOwner>(CHUNK_OWNERS);
  const now = unixSeconds(up.deps.clock);
  const set = c.fresh ? await newSetIn(up, t, c, now) : await joinedSetIn(up, t, c);
  if ('kind' in set) return set;
  const previous = set.parts[String(c.number)];
  const others = Object.entries(set.parts).reduce(
    (sum, [n, part]) => (Number(n) === c.number ? sum : sum + part.bytes),
    0,
  );
  const { maxFileBytes } = up.deps;
  if (others + c.temp.size > maxFileBytes) {
    await removeSetIn(t, c.chunkId);
    return {
      kind: 'dropped',
      error: new AppError(
        ErrorCode.FILE_TOO_LARGE,
        `Failed to upload chunk! The file would be over ${maxFileBytes} bytes.`,
      ),
    };
  }
  if (!c.fresh) {
    const held = await usageIn(up, t, c);
    const maxBytes = chunkBytesPerUser(up);
    if (held.bytes - (previous?.bytes ?? 0) + c.temp.size > maxBytes) {
      throw chunkQuotaError(
        up,
        `Your unfinished chunked uploads hold ${held.bytes} bytes; with this chunk they would be over the ${maxBytes} this host allows.`,
        held,
      );
    }
  }
  const next = withPart(up, set, c, now);
  sets.put(c.chunkId, next);
  if (c.fresh) {
    const owner = await owners.get(c.user.Id);
    owners.put(c.user.Id, { userId: c.user.Id, sets: [...(owner?.sets ?? []), c.chunkId] });
  }
  return { kind: 'stored', set: next, replaced: previous?.file ?? null };
}

/** A new set for the chunk, when the user has room for one. */
async function newSetIn(up: UploadsShared, t: Tx, c: IncomingChunk, now: number): Promise<ChunkSet> {
  newSetRoomOrThrow(up, await usageIn(up, t, c), c.temp.size);
  return {
    chunkId: c.chunkId,
    userId: c.user.Id,
    originalFileName: c.originalFileName,
    amountOfChunks: c.amount,
    createdAt: now,
    updatedAt: now,
    parts: {},
  };
}

/** The set the chunk joins, as `t` reads it; refused when it is gone, complete or of another file. */
async function joinedSetIn(up: UploadsShared, t: Tx, c: IncomingChunk): Promise<ChunkSet | Outcome> {
  const found = await t.repo<ChunkSet>(CHUNK_SETS).get(c.chunkId);
  if (!found || found.userId !== c.user.Id) throw unknownChunkSet('unknown or expired');
  if (chunkSetExpired(up, found)) {
    await removeSetIn(t, c.chunkId);
    return { kind: 'dropped', error: unknownChunkSet('expired') };
  }
  if (found.assembling && !assemblyAbandoned(up, found)) {
    throw new AppError(
      ErrorCode.UNKNOWN_CHUNK_SET,
      'Failed to upload chunk! That chunk set is complete and its file is being put together; its last chunk gets the upload answer.',
      { chunkId: 'complete' },
    );
  }
  if (found.amountOfChunks !== c.amount || found.originalFileName !== c.originalFileName) {
    throw new AppError(
      ErrorCode.INVALID_CHUNK,
      'Failed to upload chunk! amountOfChunks and originalFileName must match the first chunk.',
    );
  }
  return found;
}

/** `set` holding the chunk's part; the part that completes it marks it this host's to put together. */
function withPart(up: UploadsShared, set: ChunkSet, c: IncomingChunk, now: number): ChunkSet {
  const parts = { ...set.parts, [String(c.number)]: { bytes: c.temp.size, file: c.file } };
  const next: ChunkSet = { ...set, parts, updatedAt: now };
  if (c.input.avatarMeta !== undefined && c.input.avatarMeta !== '') next.avatarMeta = c.input.avatarMeta;
  if (c.input.worldMeta !== undefined && c.input.worldMeta !== '') next.worldMeta = c.input.worldMeta;
  if (Object.keys(parts).length === c.amount) {
    next.assembling = true;
    next.assemblingBy = up.chunks.processId;
    next.assemblingAt = now;
  }
  return next;
}

/** The answer to a chunk that did not complete its set: what is held, and the first missing chunks. */
function progress(chunkId: string, number: number, set: ChunkSet): ChunkAnswer {
  const missing: number[] = [];
  for (let n = 0; n < set.amountOfChunks && missing.length < 100; n++)
    if (!(String(n) in set.parts)) missing.push(n);
  return {
    message: 'Uploaded Chunk!',
    result: { chunkNumber: number, chunkId, received: Object.keys(set.parts).length, missingChunks: missing },
  };
}
