import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { Publicity, UploadType } from '../protocol/enums.js';
import { ErrorCode } from '../protocol/errors.js';
import { fieldErrorsOf } from '../protocol/schemas.js';
import {
  ALLOWED_EXTENSIONS,
  AvatarDetailsInput,
  AvatarMetaInput,
  CHUNK_ID,
  extensionOf,
  uploadTypeOf,
  WorldMetaInput,
  type AvatarMetaDto,
  type UploadDataDto,
  type WorldMetaDto,
} from '../protocol/uploads.js';
import { AppError } from '../errors.js';
import { readJsonFile, syncDir } from '../store/durable-file.js';
import { isSafeId } from '../store/store.js';
import { acquireLock, DataFolderInUseError } from '../store/lock.js';
import type { ReadCollection as Collection, Tx, TxRepo } from '../store/seam.js';
import { UsersRepo, type StoredUser } from '../store/users.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import { createKeyedSerial } from './serial.js';
import { isUrlAllowed } from '../protocol/urls.js';

export const FILES = 'uploads';
export const AVATARS = 'avatars';
export const WORLDS = 'worlds';

export interface StoredFile extends UploadDataDto {
  OriginalName: string;
  DateUploaded: number;
}

/** A finished upload waiting in the data folder's tmp/: streamed, hashed and fsynced, not yet placed. */
export interface TempFile {
  path: string;
  size: number;
  hash: string;
}

export const CHUNK_SETS = 'chunksets';
export const CHUNK_OWNERS = 'chunkowners';

/** One chunk held: its size and its file in chunks/<chunkId>/ (N.<random>.part; N.part when imported). */
interface ChunkPart {
  bytes: number;
  file: string;
}

/** A chunked upload in progress: a record in CHUNK_SETS, by chunk id; its parts are files in chunks/<chunkId>/. */
interface ChunkSet {
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
interface ChunkOwner {
  userId: string;
  sets: string[];
}

/** A set as the earlier layout kept it, in chunks/<chunkId>/meta.json (imported at startup). */
type LegacyChunkSet = Omit<ChunkSet, 'parts' | 'assembling'> & {
  /** chunk number -> size in bytes, in N.part */
  received: Record<string, number>;
};

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

const SAFE_CHUNK_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Names that prove a file is ours: temp uploads, per-user folders, stored files, chunk-set contents. */
const TEMP_FILE = /^[0-9a-f]{32}\.part$/;
const USER_FOLDER = /^user_[A-Za-z0-9-]{1,64}$/;
const STORED_FILE = /^(file_[A-Za-z0-9-]{1,64})(\.[A-Za-z0-9]{1,8})?$/;
const CHUNK_FILE = /^(\d{1,6}(\.[0-9a-f]{16})?\.part|meta\.json|meta\.json\.tmp)$/;

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

/**
 * Early writeback: while a file arrives, what is written so far is synced in the background every
 * EARLY_SYNC_BYTES, so the fsync before the answer only has the last stretch left to flush (a 1 GiB upload was
 * otherwise answered half a second after its last byte, all of it spent writing back the page cache). One at a
 * time for the whole process, as each holds one of the few threads of libuv's pool that the writes also need.
 */
const EARLY_SYNC_BYTES = 32 * 1024 * 1024;
let earlySyncRunning = false;

/**
 * Streams `source` into a new file at `path` (never replacing one) with its MD5; durable once it resolves. With
 * `limit`, a source longer than `limit.bytes` fails with `limit.error()` before more than that is written.
 */
export async function streamToFile(
  source: NodeJS.ReadableStream,
  path: string,
  limit?: { bytes: number; error: () => Error },
): Promise<TempFile> {
  const md5 = createHash('md5');
  let size = 0;
  let syncedUpTo = 0;
  let early: Promise<void> = Promise.resolve();
  const handle = await open(path, 'wx');
  // Hashed as it arrives, while earlier chunks are being written in the thread pool.
  const hasher = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (limit && size + chunk.length > limit.bytes) return done(limit.error());
      md5.update(chunk);
      size += chunk.length;
      if (size - syncedUpTo >= EARLY_SYNC_BYTES && !earlySyncRunning) {
        syncedUpTo = size;
        earlySyncRunning = true;
        // A failure here is not final: the fsync below decides.
        early = handle
          .datasync()
          .catch(() => undefined)
          .finally(() => {
            earlySyncRunning = false;
          });
      }
      done(null, chunk);
    },
  });
  try {
    await pipeline(source, hasher, fileSink(handle));
    await early;
    await handle.sync();
    await handle.close();
  } catch (error) {
    await early;
    // A write still on its way in the thread pool holds the handle open until it completes.
    await handle.close().catch(() => undefined);
    // The upload failed already and that failure is what the caller gets; a temp file left behind is removed at the
    // next start.
    await unlink(path).catch(() => undefined);
    throw error;
  }
  return { path, size, hash: md5.digest('hex') };
}

/**
 * How an upload goes to disk: chunks are gathered to WRITE_BYTES and each batch is written at its own offset at
 * once, up to WRITES_IN_FLIGHT batches. One write at a time set the pace (the pool idle between writes, a large
 * batch's first bytes already out of the CPU cache), and one write per 64 KiB chunk cost the event loop ~20 us
 * each just to hand it to the thread pool.
 */
const WRITE_BYTES = 256 * 1024;
const WRITES_IN_FLIGHT = 4;

/**
 * A writable stream onto `handle` that leaves it open (the caller syncs and closes it), writing as described
 * above; a short write continues where it stopped. It finishes once every write has; after a failed write it
 * refuses the rest.
 */
function fileSink(handle: FileHandle): Writable {
  let offset = 0;
  let inFlight = 0;
  let failed: Error | null = null;
  let batch: Buffer[] = [];
  let batchBytes = 0;
  /** Called when a write completes and the stream was waiting for room (or for the last write, at the end). */
  let waiting: (() => void) | null = null;
  async function writeAt(buffers: Buffer[], position: number): Promise<void> {
    let rest = buffers;
    let at = position;
    while (rest.length > 0) {
      const { bytesWritten } = await handle.writev(rest, at);
      if (bytesWritten === 0) throw new Error('the disk accepted no bytes');
      at += bytesWritten;
      let skip = bytesWritten;
      let first = 0;
      while (first < rest.length && skip >= rest[first]!.length) skip -= rest[first++]!.length;
      rest = rest.slice(first);
      if (skip > 0) rest[0] = rest[0]!.subarray(skip);
    }
  }
  function settle(error?: Error): void {
    inFlight--;
    if (error) failed ??= error;
    const wake = waiting;
    waiting = null;
    wake?.();
  }
  function writeBatch(): void {
    if (batchBytes === 0) return;
    const buffers = batch;
    const position = offset;
    offset += batchBytes;
    batch = [];
    batchBytes = 0;
    inFlight++;
    writeAt(buffers, position).then(() => settle(), settle);
  }
  return new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, done) {
      if (failed) return done(failed);
      if (chunk.length === 0) return done();
      batch.push(chunk);
      batchBytes += chunk.length;
      if (batchBytes >= WRITE_BYTES) writeBatch();
      if (inFlight < WRITES_IN_FLIGHT) done();
      else waiting = () => done(failed ?? undefined);
    },
    final(done) {
      if (!failed) writeBatch();
      const check = (): void => {
        if (inFlight === 0) done(failed ?? undefined);
        else waiting = check;
      };
      check();
    },
  });
}

function parseMeta(raw: unknown, field: 'avatarMeta' | 'worldMeta'): unknown {
  if (typeof raw === 'string') {
    try {
      return JSON.parse(raw);
    } catch {
      throw new AppError(ErrorCode.INVALID_META, `Failed to upload! ${field} is not valid JSON.`, {
        [field]: 'is not valid JSON',
      });
    }
  }
  return raw;
}

/**
 * A temporary folder of this host's own under `root` (tmp/HOSTNAME-N), for a data folder several hosts share:
 * the first whose lock no live process holds. What a dead holder left in it is this host's to sweep.
 */
async function claimTempFolder(root: string): Promise<{ dir: string; release: () => Promise<void> }> {
  const base =
    hostname()
      .replace(/[^A-Za-z0-9_-]/g, '_')
      .slice(0, 40) || 'host';
  for (let n = 0; ; n++) {
    const dir = join(root, `${base}-${n}`);
    await mkdir(dir, { recursive: true });
    try {
      return { dir, release: await acquireLock(dir) };
    } catch (error) {
      if (!(error instanceof DataFolderInUseError) || n >= 1000) throw error;
    }
  }
}

/** List indexes of avatars and worlds: the build files they use; of worlds: the server scripts they use. */
const BY_BUILD_FILE = 'buildFile';
const BY_SCRIPT = 'script';
/** List index of files: their owner. */
const BY_OWNER = 'owner';

function isString(value: string | null): value is string {
  return value !== null;
}

/** What an avatar's meta sets besides its builds (an upload, or update/avatar without a file). */
function avatarDetails(
  meta: Pick<AvatarMetaInput, 'Publicity' | 'Name' | 'Description' | 'Tags' | 'ImageURL'>,
) {
  const { Publicity, Name, Description, ImageURL } = meta;
  return { Publicity, Name, Description, Tags: [...meta.Tags], ImageURL };
}

/** What a world's meta sets besides its builds. */
function worldDetails(
  meta: Pick<WorldMetaInput, 'Publicity' | 'Name' | 'Description' | 'Tags' | 'ThumbnailURL' | 'IconURLs'>,
) {
  const { Publicity, Name, Description, ThumbnailURL } = meta;
  return { Publicity, Name, Description, Tags: [...meta.Tags], ThumbnailURL, IconURLs: [...meta.IconURLs] };
}

/** Uploads, avatars and worlds (SPEC section 3): files on disk under files/, records in the store. */
export function createUploadsService(
  deps: Pick<ServiceDeps, 'config' | 'store' | 'users' | 'clock' | 'ids'> & {
    log: Logger;
    localHosts: () => string[];
    maxFileBytes: number;
    chunkSetTtlSeconds: number;
  },
) {
  const { config, store, clock, ids, log } = deps;
  const files: Collection<StoredFile> = store.collection<StoredFile>(FILES);
  const avatars: Collection<AvatarMetaDto> = store.collection<AvatarMetaDto>(AVATARS);
  const worlds: Collection<WorldMetaDto> = store.collection<WorldMetaDto>(WORLDS);
  const filesDir = join(config.dataDir, 'files');
  // With records in PostgreSQL several hosts share the folder: each keeps its temporary files in a folder of
  // its own under tmp/ (claimed in init), and none may sweep uploaded files another host is about to commit.
  const shared = config.database !== null;
  let tmpDir = join(config.dataDir, 'tmp');
  let releaseTmp: (() => Promise<void>) | null = null;
  const chunksDir = join(config.dataDir, 'chunks');
  /** This host process, as named in the chunk sets it puts together. */
  const processId = randomBytes(8).toString('hex');
  /** Bumped on every avatar or world change (by any host), so search indexes know when to rebuild. */
  let contentVersion = 0;
  const chunkSets: Collection<ChunkSet> = store.collection<ChunkSet>(CHUNK_SETS);
  const chunkOwners: Collection<ChunkOwner> = store.collection<ChunkOwner>(CHUNK_OWNERS);
  files.addListIndex(BY_OWNER, (file) => [file.UserId]);
  // Search indexes rebuild when an avatar or world changed, whichever host changed it.
  const changed = (): void => {
    contentVersion++;
  };
  store.watch(AVATARS, changed);
  store.watch(WORLDS, changed);
  // Which avatar or world a build file belongs to, and which worlds use a server script: indexes of the store, so
  // they follow every change whichever host made it.
  avatars.addListIndex(BY_BUILD_FILE, (avatar) => avatar.Builds.map((build) => build.FileId));
  worlds.addListIndex(BY_BUILD_FILE, (world) => world.Builds.map((build) => build.FileId));
  worlds.addListIndex(BY_SCRIPT, (world) => [
    ...new Set(world.Builds.flatMap((build) => build.ServerScripts.map(fileIdOfUrl).filter(isString))),
  ]);

  /** The avatar or world a build file belongs to. */
  async function buildOf(fileId: string): Promise<{ kind: 'avatar' | 'world'; id: string } | undefined> {
    const avatar = (await avatars.list(BY_BUILD_FILE, fileId))[0];
    if (avatar) return { kind: 'avatar', id: avatar.Id };
    const world = (await worlds.list(BY_BUILD_FILE, fileId))[0];
    return world ? { kind: 'world', id: world.Id } : undefined;
  }

  function fileIdOfUrl(url: string): string | null {
    const last = url.split(/[?#]/)[0]!.split('/').filter(Boolean).pop();
    return last && /^file_[0-9a-f-]{36}$/.test(last) ? last : null;
  }

  /** The owner and file id of a `.../file/<userId>/<fileId>` URL, or null. */
  function fileRefOfUrl(url: string): { userId: string; fileId: string } | null {
    const parts = url.split(/[?#]/)[0]!.split('/').filter(Boolean);
    const [marker, userId, fileId] = parts.slice(-3);
    if (marker !== 'file' || !userId || !fileId || fileIdOfUrl(fileId) === null) return null;
    return { userId, fileId };
  }

  /**
   * Pinning rule: a world lists only its owner's own server scripts, so nobody can keep someone else's file from
   * being deleted by listing it. The worlds of `ownerId` whose builds use the script `fileId` (worlds stored before
   * this rule may list others' scripts: those never count).
   */
  async function ownWorldsUsing(
    fileId: string,
    ownerId: string,
    repo: Pick<TxRepo<WorldMetaDto>, 'list'>,
  ): Promise<string[]> {
    return (await repo.list(BY_SCRIPT, fileId)).filter((w) => w.OwnerId === ownerId).map((w) => w.Id);
  }

  /** Refuses (as a meta error) a server script URL that is not a script file `owner` uploaded here. */
  async function checkOwnScripts(
    urls: readonly string[],
    owner: StoredUser,
    read: (id: string) => Promise<StoredFile | undefined>,
  ): Promise<void> {
    const fields: Record<string, string> = {};
    for (const [i, url] of urls.entries()) {
      const ref = fileRefOfUrl(url);
      const record = ref ? await read(ref.fileId) : undefined;
      if (
        !ref ||
        ref.userId !== owner.Id ||
        !record ||
        record.UserId !== owner.Id ||
        record.UploadType !== UploadType.ServerScript
      ) {
        fields[`worldMeta.ServerScripts.${i}`] =
          'must be the address of a server script (.js or .lua) you uploaded to this host';
      }
    }
    if (Object.keys(fields).length > 0) throw invalidMeta('World', '', fields);
  }

  /**
   * Of the script file ids `candidates` (nulls: not a script of this host), those no other world of `world`'s
   * owner uses: they go with it.
   */
  async function scriptsOnlyIn(
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
  async function filesIn(repo: TxRepo<StoredFile>, fileIds: readonly string[]): Promise<StoredFile[]> {
    const found: StoredFile[] = [];
    for (const id of fileIds) {
      const file = await repo.get(id);
      if (file) found.push(file);
    }
    return found;
  }

  function pathOf(file: Pick<StoredFile, 'UserId' | 'FileName'>): string {
    return join(filesDir, file.UserId, file.FileName);
  }

  const serial = createKeyedSerial();

  function typeOrThrow(name: string): UploadType {
    const type = uploadTypeOf(name);
    if (type === null) {
      throw new AppError(
        ErrorCode.FILE_TYPE_NOT_ALLOWED,
        `Failed to upload file! "${extensionOf(name) || 'no extension'}" files are not allowed; use ${ALLOWED_EXTENSIONS.join(' ')}.`,
        { file: 'file type not allowed' },
      );
    }
    return type;
  }

  const urlOptions = () => ({ allowedDomains: config.allowedDomains, localHosts: deps.localHosts() });

  function checkUrls(
    fields: Record<string, string>,
    key: string,
    value: string,
    allowEmpty: boolean,
    onlyLocal = false,
  ) {
    if (allowEmpty && value === '') return;
    if (!isUrlAllowed(value, { ...urlOptions(), onlyLocal })) {
      fields[key] = onlyLocal
        ? 'must be a file URL on this host'
        : `must be ${allowEmpty ? 'empty, ' : ''}on this host or on an allowed image domain (${config.allowedDomains.join(', ') || 'none'})`;
    }
  }

  async function validateAvatar(
    raw: unknown,
    user: StoredUser,
    schema: typeof AvatarMetaInput | typeof AvatarDetailsInput = AvatarMetaInput,
  ): Promise<AvatarDetailsInput> {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw invalidMeta('Avatar', 'avatarMeta', fieldErrorsOf(parsed.error));
    const fields: Record<string, string> = {};
    checkUrls(fields, 'avatarMeta.ImageURL', parsed.data.ImageURL, true);
    if (Object.keys(fields).length > 0) throw invalidMeta('Avatar', '', fields);
    await checkOwnership('avatar', parsed.data.Id, user);
    return parsed.data;
  }

  async function validateWorld(raw: unknown, user: StoredUser): Promise<WorldMetaInput> {
    const parsed = WorldMetaInput.safeParse(raw);
    if (!parsed.success) throw invalidMeta('World', 'worldMeta', fieldErrorsOf(parsed.error));
    const fields: Record<string, string> = {};
    checkUrls(fields, 'worldMeta.ThumbnailURL', parsed.data.ThumbnailURL, true);
    parsed.data.IconURLs.forEach((url, i) => checkUrls(fields, `worldMeta.IconURLs.${i}`, url, false));
    parsed.data.ServerScripts.forEach((url, i) =>
      checkUrls(fields, `worldMeta.ServerScripts.${i}`, url, false, true),
    );
    if (Object.keys(fields).length > 0) throw invalidMeta('World', '', fields);
    await checkOwnScripts(parsed.data.ServerScripts, user, (id) => files.get(id));
    await checkOwnership('world', parsed.data.Id, user);
    return parsed.data;
  }

  async function checkOwnership(kind: 'avatar' | 'world', id: string | undefined, user: StoredUser) {
    if (id === undefined || id === '') return;
    const asset = await (kind === 'avatar' ? avatars.get(id) : worlds.get(id));
    const label = kind === 'avatar' ? 'Avatar' : 'World';
    if (!asset) {
      throw new AppError(
        ErrorCode.CONTENT_NOT_FOUND,
        `Failed to upload ${label}! No ${kind} has the Id ${id}.`,
        {
          [`${kind}Meta.Id`]: `no ${kind} with this id`,
        },
      );
    }
    if (asset.OwnerId !== user.Id) {
      throw new AppError(ErrorCode.NOT_OWNER, `Failed to upload ${label}! You do not own that ${kind}.`, {
        [`${kind}Meta.Id`]: `belongs to someone else`,
      });
    }
  }

  function invalidMeta(label: string, prefix: string, fields: Record<string, string>): AppError {
    const named = prefix
      ? Object.fromEntries(Object.entries(fields).map(([k, v]) => [`${prefix}.${k}`, v]))
      : fields;
    return new AppError(
      ErrorCode.INVALID_META,
      `Failed to upload ${label}! Check: ${Object.keys(named).join(', ')}.`,
      named,
    );
  }

  async function place(
    user: StoredUser,
    temp: TempFile,
    originalName: string,
    type: UploadType,
  ): Promise<StoredFile> {
    const fileId = ids.id('file');
    const ext = extensionOf(originalName);
    const record: StoredFile = {
      UserId: user.Id,
      FileId: fileId,
      FileName: `${fileId}${ext}`,
      UploadType: type,
      FileType: type,
      Key: `${user.Id}/${fileId}${ext}`,
      Hash: temp.hash,
      Size: temp.size,
      OriginalName: originalName.split(/[\\/]/).pop()!.slice(0, 255),
      DateUploaded: unixSeconds(clock),
    };
    const userDir = join(filesDir, user.Id);
    const created = await mkdir(userDir, { recursive: true });
    await rename(temp.path, pathOf(record));
    // The rename lives in the folder: synced before the record commits, or a power cut could leave a record
    // whose file is gone.
    if (config.fsync) {
      await syncDir(userDir);
      if (created !== undefined) await syncDir(filesDir);
    }
    return record;
  }

  async function discardPlaced(record: StoredFile): Promise<void> {
    // A file already gone is what this wants; one that cannot be removed is an orphan the next start's sweep
    // removes.
    await unlink(pathOf(record)).catch(() => undefined);
  }

  async function removeFiles(records: StoredFile[]): Promise<void> {
    // Missing files are fine here (reference 10 #16): the record is what mattered.
    await Promise.all(records.map((r) => unlink(pathOf(r)).catch(() => undefined)));
  }

  function uploadData(record: StoredFile): UploadDataDto {
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

  /** The asset `id` as the transaction sees it, refused unless `user` still owns it. */
  async function ownedIn<T extends AvatarMetaDto | WorldMetaDto>(
    t: Tx,
    kind: 'avatar' | 'world',
    id: string,
    user: StoredUser,
  ): Promise<T> {
    const asset = await t.repo<T>(kind === 'avatar' ? AVATARS : WORLDS).get(id);
    const label = kind === 'avatar' ? 'Avatar' : 'World';
    if (!asset) {
      throw new AppError(
        ErrorCode.CONTENT_NOT_FOUND,
        `Failed to upload ${label}! No ${kind} has the Id ${id}.`,
        {
          [`${kind}Meta.Id`]: `no ${kind} with this id`,
        },
      );
    }
    if (asset.OwnerId !== user.Id) {
      throw new AppError(ErrorCode.NOT_OWNER, `Failed to upload ${label}! You do not own that ${kind}.`, {
        [`${kind}Meta.Id`]: `belongs to someone else`,
      });
    }
    return asset;
  }

  /**
   * Stores `record` and makes it the build of a new avatar, or of `meta.Id`'s platform. `check` runs first in the
   * transaction (update/avatar: the file is still the caller's and no build yet).
   */
  async function saveAvatar(
    user: StoredUser,
    meta: AvatarMetaInput,
    record: StoredFile,
    check?: (t: Tx) => Promise<void>,
  ): Promise<string> {
    const now = unixSeconds(clock);
    const { avatar, replaced } = await store.tx(async (t) => {
      await check?.(t);
      const fileRepo = t.repo<StoredFile>(FILES);
      fileRepo.put(record.FileId, record);
      let replaced: StoredFile[] = [];
      let avatar: AvatarMetaDto;
      const existing = meta.Id ? await ownedIn<AvatarMetaDto>(t, 'avatar', meta.Id, user) : undefined;
      if (existing) {
        const old = existing.Builds.filter((b) => b.BuildPlatform === meta.BuildPlatform);
        replaced = await filesIn(
          fileRepo,
          old.map((b) => b.FileId),
        );
        avatar = {
          ...existing,
          ...avatarDetails(meta),
          Builds: [
            ...existing.Builds.filter((b) => b.BuildPlatform !== meta.BuildPlatform),
            { FileId: record.FileId, BuildPlatform: meta.BuildPlatform },
          ],
          DateUpdated: now,
        };
      } else {
        avatar = {
          Id: ids.id('avatar'),
          OwnerId: user.Id,
          ...avatarDetails(meta),
          Builds: [{ FileId: record.FileId, BuildPlatform: meta.BuildPlatform }],
          DateCreated: now,
          DateUpdated: now,
        };
        const avatarId = avatar.Id;
        await UsersRepo.in(t).update(user.Id, (draft) => {
          draft.Avatars.push(avatarId);
        });
      }
      const saved = t.repo<AvatarMetaDto>(AVATARS).put(avatar.Id, avatar);
      for (const file of replaced) await fileRepo.remove(file.FileId);
      return { avatar: saved, replaced };
    });
    await removeFiles(replaced);
    return avatar.Id;
  }

  /** As saveAvatar, for a world build and its server scripts. */
  async function saveWorld(
    user: StoredUser,
    meta: WorldMetaInput,
    record: StoredFile,
    check?: (t: Tx) => Promise<void>,
  ): Promise<string> {
    const now = unixSeconds(clock);
    const build = {
      FileId: record.FileId,
      BuildPlatform: meta.BuildPlatform,
      ServerScripts: [...meta.ServerScripts],
    };
    const { world, replaced } = await store.tx(async (t) => {
      await check?.(t);
      const fileRepo = t.repo<StoredFile>(FILES);
      // Checked again in the commit: a script may have been deleted since the meta was validated.
      await checkOwnScripts(meta.ServerScripts, user, (id) => fileRepo.get(id));
      fileRepo.put(record.FileId, record);
      let replaced: StoredFile[] = [];
      let world: WorldMetaDto;
      const existing = meta.Id ? await ownedIn<WorldMetaDto>(t, 'world', meta.Id, user) : undefined;
      if (existing) {
        const old = existing.Builds.filter((b) => b.BuildPlatform === meta.BuildPlatform);
        const keptScripts = new Set(
          [...existing.Builds.filter((b) => b.BuildPlatform !== meta.BuildPlatform), build]
            .flatMap((b) => b.ServerScripts)
            .map(fileIdOfUrl),
        );
        const doomedIds = old.flatMap((b) => [
          b.FileId,
          // The old build's scripts go too, unless a remaining build still uses them.
          ...b.ServerScripts.map(fileIdOfUrl).filter(
            (id): id is string => id !== null && !keptScripts.has(id),
          ),
        ]);
        replaced = (await filesIn(fileRepo, doomedIds)).filter((f) => f.UserId === existing.OwnerId);
        world = {
          ...existing,
          ...worldDetails(meta),
          Builds: [...existing.Builds.filter((b) => b.BuildPlatform !== meta.BuildPlatform), build],
          DateUpdated: now,
        };
      } else {
        world = {
          Id: ids.id('world'),
          OwnerId: user.Id,
          ...worldDetails(meta),
          Builds: [build],
          DateCreated: now,
          DateUpdated: now,
        };
        const worldId = world.Id;
        await UsersRepo.in(t).update(user.Id, (draft) => {
          draft.Worlds.push(worldId);
        });
      }
      const saved = t.repo<WorldMetaDto>(WORLDS).put(world.Id, world);
      for (const file of replaced) await fileRepo.remove(file.FileId);
      return { world: saved, replaced };
    });
    await removeFiles(replaced);
    return world.Id;
  }

  /** Places a finished temp file and applies its meta; everything or nothing is kept. */
  async function finish(
    user: StoredUser,
    temp: TempFile,
    originalName: string,
    metas: { avatarMeta?: unknown; worldMeta?: unknown },
  ): Promise<UploadAnswer> {
    const type = typeOrThrow(originalName);
    const avatarRaw =
      metas.avatarMeta === undefined || metas.avatarMeta === ''
        ? undefined
        : parseMeta(metas.avatarMeta, 'avatarMeta');
    const worldRaw =
      metas.worldMeta === undefined || metas.worldMeta === ''
        ? undefined
        : parseMeta(metas.worldMeta, 'worldMeta');
    if (avatarRaw !== undefined && type !== UploadType.Avatar) {
      throw new AppError(
        ErrorCode.META_TYPE_MISMATCH,
        'Failed to upload Avatar! avatarMeta needs a .hna file.',
        {
          avatarMeta: 'only goes with a .hna file',
        },
      );
    }
    if (worldRaw !== undefined && type !== UploadType.World) {
      throw new AppError(
        ErrorCode.META_TYPE_MISMATCH,
        'Failed to upload World! worldMeta needs a .hnw file.',
        {
          worldMeta: 'only goes with a .hnw file',
        },
      );
    }
    if (temp.size > deps.maxFileBytes) {
      throw new AppError(
        ErrorCode.FILE_TOO_LARGE,
        `Failed to upload file! The file is over ${deps.maxFileBytes} bytes.`,
      );
    }
    if (avatarRaw !== undefined) {
      const first = await validateAvatar(avatarRaw, user);
      const key = first.Id ? first.Id : `new:${user.Id}`;
      return serial(key, async () => {
        // Validate again inside the lock: the avatar may have changed or gone while we waited.
        const meta = (await validateAvatar(avatarRaw, user)) as AvatarMetaInput;
        const record = await place(user, temp, originalName, type);
        try {
          const avatarId = await saveAvatar(user, meta, record);
          return {
            message: 'Uploaded Avatar!',
            result: { UploadData: uploadData(record), AvatarId: avatarId },
          };
        } catch (error) {
          await discardPlaced(record);
          throw error;
        }
      });
    }
    if (worldRaw !== undefined) {
      const first = await validateWorld(worldRaw, user);
      const key = first.Id ? first.Id : `new:${user.Id}`;
      return serial(key, async () => {
        const meta = await validateWorld(worldRaw, user);
        const record = await place(user, temp, originalName, type);
        try {
          const worldId = await saveWorld(user, meta, record);
          return { message: 'Uploaded World!', result: { UploadData: uploadData(record), WorldId: worldId } };
        } catch (error) {
          await discardPlaced(record);
          throw error;
        }
      });
    }
    const record = await place(user, temp, originalName, type);
    try {
      await store.tx((t) => t.repo<StoredFile>(FILES).put(record.FileId, record));
    } catch (error) {
      await discardPlaced(record);
      throw error;
    }
    return { message: 'Uploaded File!', result: { UploadData: uploadData(record) } };
  }

  const labelOf = (kind: 'avatar' | 'world'): 'Avatar' | 'World' => (kind === 'avatar' ? 'Avatar' : 'World');

  /**
   * Refuses a file update/avatar or update/world cannot make a build of `kind`: unknown, someone else's, of
   * another type, or already a build (of any avatar or world). With `t`, read through the transaction.
   */
  async function attachableOrThrow(
    kind: 'avatar' | 'world',
    fileId: string,
    user: StoredUser,
    t?: Tx,
  ): Promise<StoredFile> {
    const record = await (t ? t.repo<StoredFile>(FILES).get(fileId) : files.get(fileId));
    if (!record) {
      throw new AppError(ErrorCode.FILE_NOT_FOUND, 'Failed to find file! No file has that id.', {
        fileid: 'no file with this id',
      });
    }
    if (record.UserId !== user.Id) {
      throw new AppError(ErrorCode.NOT_OWNER, 'Failed to find file! That file is not yours.', {
        fileid: 'belongs to someone else',
      });
    }
    const wanted = kind === 'avatar' ? UploadType.Avatar : UploadType.World;
    if (record.UploadType !== wanted) {
      const ext = kind === 'avatar' ? '.hna' : '.hnw';
      throw new AppError(
        ErrorCode.META_TYPE_MISMATCH,
        `Failed to verify ${labelOf(kind)}! fileid must name a ${kind} file (${ext}) you uploaded.`,
        { fileid: `must be a ${kind} file (${ext})` },
      );
    }
    const build = t ? await buildIn(t, fileId) : await buildOf(fileId);
    if (build) {
      throw new AppError(
        ErrorCode.FILE_IN_USE,
        `Failed to verify ${labelOf(kind)}! That file is already a build of ${build.kind} ${build.id}; upload it again for another build.`,
        { fileid: 'is already a build' },
      );
    }
    return record;
  }

  /** update/avatar or update/world with a file: the 1.4 upload's rules, for a file uploaded beforehand. */
  async function attachFile(
    user: StoredUser,
    kind: 'avatar' | 'world',
    fileId: string,
    raw: unknown,
  ): Promise<UpdateAnswer> {
    await attachableOrThrow(kind, fileId, user);
    const validate = (): Promise<AvatarMetaInput | WorldMetaInput> =>
      kind === 'avatar' ? (validateAvatar(raw, user) as Promise<AvatarMetaInput>) : validateWorld(raw, user);
    const first = await validate();
    const key = first.Id ? first.Id : `new:${user.Id}`;
    return serial(key, async () => {
      // Validated again inside the lock: the asset may have changed or gone while we waited.
      const meta = await validate();
      let record = await attachableOrThrow(kind, fileId, user);
      // Checked once more in the commit: the file may have been deleted or attached meanwhile.
      const check = async (t: Tx): Promise<void> => {
        record = await attachableOrThrow(kind, fileId, user, t);
      };
      const id =
        kind === 'avatar'
          ? await saveAvatar(user, meta as AvatarMetaInput, record, check)
          : await saveWorld(user, meta as WorldMetaInput, record, check);
      const data = uploadData(record);
      return {
        message: `Uploaded ${labelOf(kind)}!`,
        result: { ...data, UploadData: data, ...(kind === 'avatar' ? { AvatarId: id } : { WorldId: id }) },
      };
    });
  }

  /** A details-only update needs the Id of an avatar or world of the caller's. */
  function detailsIdOrThrow(kind: 'avatar' | 'world', id: string | undefined): string {
    if (id === undefined || id === '') {
      throw new AppError(
        ErrorCode.INVALID_META,
        `Failed to update ${kind}! Without a fileid, ${kind}Meta.Id must name one of your ${kind}s.`,
        { [`${kind}Meta.Id`]: 'is required without a fileid' },
      );
    }
    return id;
  }

  /** update/avatar without a file: Publicity, Name, Description, Tags and ImageURL; the builds stay. */
  async function updateAvatarDetails(user: StoredUser, raw: unknown): Promise<UpdateAnswer> {
    const first = await validateAvatar(raw, user, AvatarDetailsInput);
    const id = detailsIdOrThrow('avatar', first.Id);
    return serial(id, async () => {
      const meta = await validateAvatar(raw, user, AvatarDetailsInput);
      await store.tx(async (t) => {
        const existing = await ownedIn<AvatarMetaDto>(t, 'avatar', id, user);
        t.repo<AvatarMetaDto>(AVATARS).put(id, {
          ...existing,
          ...avatarDetails(meta),
          DateUpdated: unixSeconds(clock),
        });
      });
      return { message: 'Updated Avatar!', result: { AvatarId: id } };
    });
  }

  /**
   * update/world without a file: the avatar's details plus ThumbnailURL and IconURLs, and the ServerScripts of the
   * build of BuildPlatform (a world with no such build takes no scripts). Scripts the world no longer lists are
   * deleted unless another world of the owner still uses them.
   */
  async function updateWorldDetails(user: StoredUser, raw: unknown): Promise<UpdateAnswer> {
    const first = await validateWorld(raw, user);
    const id = detailsIdOrThrow('world', first.Id);
    return serial(id, async () => {
      const meta = await validateWorld(raw, user);
      const doomed = await store.tx(async (t) => {
        const fileRepo = t.repo<StoredFile>(FILES);
        const worldRepo = t.repo<WorldMetaDto>(WORLDS);
        await checkOwnScripts(meta.ServerScripts, user, (fid) => fileRepo.get(fid));
        const existing = await ownedIn<WorldMetaDto>(t, 'world', id, user);
        const target = existing.Builds.find((b) => b.BuildPlatform === meta.BuildPlatform);
        if (!target && meta.ServerScripts.length > 0) {
          throw new AppError(
            ErrorCode.INVALID_META,
            'Failed to update world! It has no build for that BuildPlatform to give the server scripts to.',
            { 'worldMeta.BuildPlatform': 'this world has no build for this platform' },
          );
        }
        const builds = existing.Builds.map((b) =>
          b === target ? { ...b, ServerScripts: [...meta.ServerScripts] } : b,
        );
        const kept = new Set(builds.flatMap((b) => b.ServerScripts.map(fileIdOfUrl)));
        const dropped = await scriptsOnlyIn(
          worldRepo,
          existing,
          (target?.ServerScripts ?? []).map(fileIdOfUrl).filter((fid) => fid === null || !kept.has(fid)),
        );
        const scripts = (await filesIn(fileRepo, dropped)).filter((f) => f.UserId === existing.OwnerId);
        worldRepo.put(id, {
          ...existing,
          ...worldDetails(meta),
          Builds: builds,
          DateUpdated: unixSeconds(clock),
        });
        for (const file of scripts) await fileRepo.remove(file.FileId);
        return scripts;
      });
      await removeFiles(doomed);
      return { message: 'Updated World!', result: { WorldId: id } };
    });
  }

  /**
   * update/avatar and update/world (wire reference 12.3, 6.8): with `fileId`, a file the caller uploaded becomes
   * the build of a new avatar/world or of a platform of one of theirs; without, the details only. `rawMeta` is the
   * meta as sent (a JSON string or an object). Every rule of the 1.4 upload applies; a refusal writes nothing.
   */
  async function update(
    user: StoredUser,
    kind: 'avatar' | 'world',
    input: { fileId?: string; rawMeta: unknown },
  ): Promise<UpdateAnswer> {
    const raw = parseMeta(input.rawMeta, kind === 'avatar' ? 'avatarMeta' : 'worldMeta');
    if (input.fileId !== undefined && input.fileId !== '') return attachFile(user, kind, input.fileId, raw);
    return kind === 'avatar' ? updateAvatarDetails(user, raw) : updateWorldDetails(user, raw);
  }

  /**
   * Removes an avatar or world, its build files and the scripts no other world uses, and its id from its owner,
   * in transaction `t`. Returns the files to delete from disk once the commit is durable, or null when there is
   * no such asset.
   */
  async function deleteAssetIn(t: Tx, kind: 'avatar' | 'world', id: string): Promise<StoredFile[] | null> {
    const assets = t.repo<AvatarMetaDto | WorldMetaDto>(kind === 'avatar' ? AVATARS : WORLDS);
    const fileRepo = t.repo<StoredFile>(FILES);
    const asset = await assets.get(id);
    if (!asset) return null;
    const scriptIds =
      kind === 'world'
        ? await scriptsOnlyIn(
            t.repo<WorldMetaDto>(WORLDS),
            asset as WorldMetaDto,
            (asset as WorldMetaDto).Builds.flatMap((b) => b.ServerScripts.map(fileIdOfUrl)),
          )
        : [];
    const doomed = (await filesIn(fileRepo, [...asset.Builds.map((b) => b.FileId), ...scriptIds])).filter(
      (f) => f.UserId === asset.OwnerId,
    );
    await assets.remove(id);
    for (const file of doomed) await fileRepo.remove(file.FileId);
    const owners = UsersRepo.in(t);
    if (await owners.has(asset.OwnerId)) {
      await owners.update(asset.OwnerId, (draft) => {
        if (kind === 'avatar') draft.Avatars = draft.Avatars.filter((a) => a !== id);
        else draft.Worlds = draft.Worlds.filter((w) => w !== id);
      });
    }
    return doomed;
  }

  /**
   * Removes the record of `ownerId`'s file `fileId` in transaction `t`, refusing a build file (remove its avatar
   * or world instead) and a server script one of the owner's worlds uses. Returns the file to delete from disk
   * once the commit is durable, or null when `ownerId` has no such file.
   */
  async function deleteFileIn(t: Tx, fileId: string, ownerId: string): Promise<StoredFile[] | null> {
    const repo = t.repo<StoredFile>(FILES);
    const record = await repo.get(fileId);
    if (!record || record.UserId !== ownerId) return null;
    // Read through the transaction: an avatar or world given this build meanwhile makes it run again.
    const build = await buildIn(t, fileId);
    if (build) {
      throw new AppError(
        ErrorCode.FILE_IN_USE,
        `Failed to delete file! It is a build of ${build.kind} ${build.id}; remove the ${build.kind} instead.`,
      );
    }
    if ((await ownWorldsUsing(fileId, ownerId, t.repo<WorldMetaDto>(WORLDS))).length > 0) {
      throw new AppError(
        ErrorCode.FILE_IN_USE,
        'Failed to delete file! A world build uses this server script.',
      );
    }
    await repo.remove(fileId);
    return [record];
  }

  /** The avatar or world whose build `fileId` is, as transaction `t` sees them. */
  async function buildIn(
    t: Tx,
    fileId: string,
  ): Promise<{ kind: 'avatar' | 'world'; id: string } | undefined> {
    const avatar = (await t.repo<AvatarMetaDto>(AVATARS).list(BY_BUILD_FILE, fileId))[0];
    if (avatar) return { kind: 'avatar', id: avatar.Id };
    const world = (await t.repo<WorldMetaDto>(WORLDS).list(BY_BUILD_FILE, fileId))[0];
    return world ? { kind: 'world', id: world.Id } : undefined;
  }

  async function deleteAsset(kind: 'avatar' | 'world', id: string): Promise<boolean> {
    return serial(id, async () => {
      const doomed = await store.tx((t) => deleteAssetIn(t, kind, id));
      if (!doomed) return false;
      await removeFiles(doomed);
      return true;
    });
  }

  /**
   * Whether the host that claimed a complete set died before putting it together: its claim was not renewed in
   * time, or (the embedded store, one process per folder) it was an earlier run of this host.
   */
  function assemblyAbandoned(set: ChunkSet): boolean {
    if (set.assemblingBy === processId) return false;
    if (!shared) return true;
    return unixSeconds(clock) - (set.assemblingAt ?? 0) > config.uploads.assemblyLeaseSeconds;
  }

  /** Renews this host's claim on a set it puts together, a third of the lease at a time, until cleared. */
  function renewAssembly(chunkId: string): NodeJS.Timeout {
    const timer = setInterval(
      () => {
        store
          .tx(async (t) => {
            const sets = t.repo<ChunkSet>(CHUNK_SETS);
            const set = await sets.get(chunkId);
            if (set?.assemblingBy === processId)
              sets.put(chunkId, { ...set, assemblingAt: unixSeconds(clock) });
          })
          .catch((error: unknown) =>
            log.warn({ err: error, chunkId }, 'renewing a chunk set assembly failed'),
          );
      },
      (config.uploads.assemblyLeaseSeconds * 1000) / 3,
    );
    timer.unref();
    return timer;
  }

  function chunkSetExpired(set: ChunkSet): boolean {
    return unixSeconds(clock) - set.updatedAt > deps.chunkSetTtlSeconds;
  }

  /**
   * Deletes the files of a chunk set whose record is gone (or was never committed): its parts and a legacy
   * meta.json, only files of ours (a stranger's file stays, and so does the folder).
   */
  async function dropChunkFiles(chunkId: string): Promise<void> {
    const dir = join(chunksDir, chunkId);
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
      log.warn(
        { folder: dir, files: strangers },
        'left files a chunk set folder should not hold (not ours to delete)',
      );
    } else {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Removes a set's record and its owner's mention of it, in `t`; the removed set, or null when there was none. */
  async function removeSetIn(
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
  async function dropChunkSet(chunkId: string, when?: (set: ChunkSet) => boolean): Promise<boolean> {
    const removed = await store.tx((t) => removeSetIn(t, chunkId, when));
    if (removed) await dropChunkFiles(chunkId);
    return removed !== null;
  }

  /**
   * Bytes of chunks on their way into a set, per user, on this host: counted before they land, so parallel chunks
   * cannot overshoot. Another host's bytes in flight count once its commit lands (this map is per process).
   */
  const placing = new Map<string, number>();

  type ChunkUsage = { sets: number; bytes: number; oldestTouched: number | null };

  /**
   * What a user holds in live (unexpired) chunk sets, read through `read` (the store, or a transaction, so the
   * sets other hosts started count), plus `inFlight` bytes.
   */
  async function usageFrom(
    read: {
      owner(id: string): Promise<ChunkOwner | undefined>;
      set(id: string): Promise<ChunkSet | undefined>;
    },
    userId: string,
    inFlight: number,
  ): Promise<ChunkUsage> {
    let sets = 0;
    let bytes = inFlight;
    let oldestTouched: number | null = null;
    for (const chunkId of (await read.owner(userId))?.sets ?? []) {
      const set = await read.set(chunkId);
      if (!set || set.userId !== userId || chunkSetExpired(set)) continue;
      sets++;
      for (const part of Object.values(set.parts)) bytes += part.bytes;
      oldestTouched = Math.min(oldestTouched ?? set.updatedAt, set.updatedAt);
    }
    return { sets, bytes, oldestTouched };
  }

  /** What a user holds, as this host's copy of the store has it. */
  function chunkUsage(userId: string): Promise<ChunkUsage> {
    return usageFrom(
      { owner: (id) => chunkOwners.get(id), set: (id) => chunkSets.get(id) },
      userId,
      placing.get(userId) ?? 0,
    );
  }

  /** One whole file always fits, whatever the setting says. */
  const chunkBytesPerUser = (): number => Math.max(config.uploads.chunkBytesPerUser, deps.maxFileBytes);

  function chunkQuotaError(what: string, usage: ChunkUsage): AppError {
    const minutes =
      usage.oldestTouched === null
        ? null
        : Math.max(1, Math.ceil((usage.oldestTouched + deps.chunkSetTtlSeconds - unixSeconds(clock)) / 60));
    return new AppError(
      ErrorCode.CHUNK_QUOTA_EXCEEDED,
      `Failed to upload chunk! ${what} Finish an unfinished chunked upload, or wait until one expires` +
        (minutes === null ? '.' : ` (the one untouched longest expires in about ${minutes} min).`),
    );
  }

  /** Refuses a new set beyond the user's limits: `chunkSetsPerUser` sets held, or as many bytes as allowed. */
  function newSetRoomOrThrow(usage: ChunkUsage, incomingBytes: number): void {
    const maxSets = config.uploads.chunkSetsPerUser;
    if (usage.sets >= maxSets) {
      throw chunkQuotaError(
        `You have ${usage.sets} unfinished chunked uploads, as many as this host allows (${maxSets}).`,
        usage,
      );
    }
    const maxBytes = chunkBytesPerUser();
    if (usage.bytes + Math.max(incomingBytes, 1) > maxBytes) {
      throw chunkQuotaError(
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
  async function chunkRoomOrThrow(user: StoredUser, chunkId: unknown, incomingBytes = 0): Promise<void> {
    if (chunkId !== undefined && chunkId !== '') return;
    newSetRoomOrThrow(await chunkUsage(user.Id), incomingBytes);
  }

  const unknownChunkSet = (detail: 'unknown or expired' | 'expired') =>
    new AppError(
      ErrorCode.UNKNOWN_CHUNK_SET,
      detail === 'expired'
        ? 'Failed to upload chunk! That chunk set expired; start again with an empty chunkId.'
        : 'Failed to upload chunk! Unknown or expired chunk set; start again with an empty chunkId.',
      { chunkId: detail },
    );

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
  async function initChunkFolder(chunkId: string): Promise<void> {
    const dir = join(chunksDir, chunkId);
    const legacy = await readJsonFile<unknown>(join(dir, 'meta.json')).catch(() => undefined);
    const legacyFiles = async () => {
      for (const name of ['meta.json', 'meta.json.tmp']) await unlink(join(dir, name)).catch(() => undefined);
    };
    // undefined: a meta.json that cannot be read; null: none.
    if (legacy !== null) {
      if (await chunkSets.has(chunkId)) return legacyFiles();
      const set = legacy === undefined ? null : importedSet(chunkId, legacy);
      if (!set || chunkSetExpired(set)) return dropChunkFiles(chunkId);
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
    if (shared) {
      const made = await stat(dir).catch(() => null);
      // File times are wall-clock times.
      if (!made || Date.now() - made.mtimeMs <= deps.chunkSetTtlSeconds * 1000) return;
      await store.refresh();
      if (await chunkSets.has(chunkId)) return;
    }
    await dropChunkFiles(chunkId);
  }

  /** Drops chunk sets nobody touched within the time limit (each host sweeps; a set is dropped by one of them). */
  async function sweepChunkSets(): Promise<number> {
    let dropped = 0;
    for await (const set of chunkSets.scan()) {
      if (chunkSetExpired(set) && (await dropChunkSet(set.chunkId, chunkSetExpired))) dropped++;
    }
    return dropped;
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

  async function assemble(set: ChunkSet): Promise<TempFile> {
    const temp = tempPath();
    const parts = Array.from({ length: set.amountOfChunks }, (_, n) =>
      join(chunksDir, set.chunkId, set.parts[String(n)]!.file),
    );
    async function* concat() {
      for (const part of parts) yield* createReadStream(part);
    }
    const { Readable } = await import('node:stream');
    return streamToFile(Readable.from(concat()), temp);
  }

  function tempPath(): string {
    return join(tmpDir, `${randomBytes(16).toString('hex')}.part`);
  }

  return {
    filesDir,
    get tmpDir() {
      return tmpDir;
    },
    tempPath,
    typeOrThrow,
    finish,
    update,

    /**
     * Startup: prepares the folders and removes what interrupted uploads left behind, touching only files whose
     * names prove they are ours; anything else is left and logged.
     */
    async init(): Promise<void> {
      if (shared) {
        const claimed = await claimTempFolder(tmpDir);
        tmpDir = claimed.dir;
        releaseTmp = claimed.release;
      }
      await mkdir(tmpDir, { recursive: true });
      await mkdir(filesDir, { recursive: true });
      await mkdir(chunksDir, { recursive: true });
      const strangers: string[] = [];
      for (const name of await readdir(tmpDir)) {
        // A leftover temp file that cannot be removed now is tried again at the next start; it never counts as
        // data.
        if (TEMP_FILE.test(name)) await unlink(join(tmpDir, name)).catch(() => undefined);
        else if (!(shared && name === 'companion.lock')) strangers.push(join(tmpDir, name));
      }
      // A crash between placing a file and committing its record leaves a file nobody knows: remove it. Not in
      // a folder hosts share: another host may be between placing a file and committing its record.
      let orphans = 0;
      for (const userDir of shared ? [] : await readdir(filesDir)) {
        const dir = join(filesDir, userDir);
        if (!USER_FOLDER.test(userDir) || !(await stat(dir)).isDirectory()) {
          strangers.push(dir);
          continue;
        }
        for (const name of await readdir(dir)) {
          const match = STORED_FILE.exec(name);
          if (!match) {
            strangers.push(join(dir, name));
            continue;
          }
          const record = await files.get(match[1]!);
          if (!record || record.UserId !== userDir || record.FileName !== name) {
            // A stray file that cannot be removed now is tried again at the next start; no record points at it.
            await unlink(join(dir, name)).catch(() => undefined);
            orphans++;
          }
        }
      }
      if (orphans > 0)
        log.warn({ orphans }, 'removed uploaded files that had no record (interrupted uploads)');
      for (const chunkId of await readdir(chunksDir)) {
        if (!CHUNK_ID.test(chunkId)) {
          strangers.push(join(chunksDir, chunkId));
          continue;
        }
        await initChunkFolder(chunkId);
      }
      // Sets whose time ran out while no host was running.
      await sweepChunkSets();
      if (strangers.length > 0) {
        log.warn(
          { count: strangers.length, files: strangers.slice(0, 20) },
          'left files in the data folder that are not ours to delete',
        );
      }
    },

    /** Gives up this host's temporary folder (a folder shared with other hosts). */
    async close(): Promise<void> {
      await releaseTmp?.();
      releaseTmp = null;
    },

    /**
     * Stores one chunk; the chunk that completes a set gets the whole upload answer. The set's state is a record
     * in the store, so any host sharing the store and the folder takes the next chunk: the part is renamed into
     * chunks/<id>/ first, then one transaction adds it (a conflicting commit runs again, so chunks arriving at
     * once on several hosts all land); the transaction that sees the set complete marks it `assembling`, and only
     * its caller puts the file together.
     */
    async chunk(
      user: StoredUser,
      temp: TempFile,
      input: ChunkInput,
    ): Promise<UploadAnswer | { message: string; result: Record<string, unknown> }> {
      if (typeof input.originalFileName !== 'string' || input.originalFileName.length === 0) {
        throw new AppError(
          ErrorCode.INVALID_PARAMETERS,
          'Invalid parameters! originalFileName is required.',
          {
            originalFileName: 'is required',
          },
        );
      }
      const originalFileName = input.originalFileName.slice(0, 255);
      typeOrThrow(originalFileName);
      const amount = intField(input.amountOfChunks, 'amountOfChunks', 1, 100_000);
      const number = intField(input.chunkNumber, 'chunkNumber', 0, amount - 1);
      let chunkId: string;
      const fresh = input.chunkId === undefined || input.chunkId === '';
      if (fresh) {
        // A first look, before anything is written; the transaction below decides.
        await chunkRoomOrThrow(user, input.chunkId, temp.size);
        chunkId = newChunkId();
      } else if (typeof input.chunkId !== 'string' || !CHUNK_ID.test(input.chunkId)) {
        throw new AppError(
          ErrorCode.INVALID_CHUNK,
          'Failed to upload chunk! chunkId is not one this host gave out.',
          {
            chunkId: 'not a valid chunk id',
          },
        );
      } else {
        chunkId = input.chunkId;
        const known = await chunkSets.get(chunkId);
        // Started (or touched) on another host: this host's copy may not have that commit yet.
        if (!known || chunkSetExpired(known)) await store.refresh();
        const set = await chunkSets.get(chunkId);
        if (!set || set.userId !== user.Id) throw unknownChunkSet('unknown or expired');
        if (chunkSetExpired(set)) {
          await dropChunkSet(chunkId, chunkSetExpired);
          throw unknownChunkSet('expired');
        }
      }
      const dir = join(chunksDir, chunkId);
      const file = `${number}.${randomBytes(8).toString('hex')}.part`;
      placing.set(user.Id, (placing.get(user.Id) ?? 0) + temp.size);
      type Outcome =
        { kind: 'stored'; set: ChunkSet; replaced: string | null } | { kind: 'dropped'; error: AppError };
      let outcome: Outcome;
      try {
        try {
          if (fresh) await mkdir(dir);
          await rename(temp.path, join(dir, file));
          // The rename lives in the folder: synced before the record commits, or a power cut could leave a
          // record naming a part that is gone.
          if (config.fsync) {
            await syncDir(dir);
            if (fresh) await syncDir(chunksDir);
          }
        } catch (error) {
          // The set was dropped meanwhile (its folder with it).
          if (!fresh && (error as NodeJS.ErrnoException).code === 'ENOENT')
            throw unknownChunkSet('unknown or expired');
          throw error;
        }
        outcome = await store.tx(async (t): Promise<Outcome> => {
          const sets = t.repo<ChunkSet>(CHUNK_SETS);
          const owners = t.repo<ChunkOwner>(CHUNK_OWNERS);
          const usage = (): Promise<ChunkUsage> =>
            usageFrom(
              { owner: (id) => owners.get(id), set: (id) => sets.get(id) },
              user.Id,
              // Other chunks of this user still on their way on this host; this one is counted below.
              (placing.get(user.Id) ?? 0) - temp.size,
            );
          const now = unixSeconds(clock);
          let set: ChunkSet;
          if (fresh) {
            newSetRoomOrThrow(await usage(), temp.size);
            set = {
              chunkId,
              userId: user.Id,
              originalFileName,
              amountOfChunks: amount,
              createdAt: now,
              updatedAt: now,
              parts: {},
            };
          } else {
            const found = await sets.get(chunkId);
            if (!found || found.userId !== user.Id) throw unknownChunkSet('unknown or expired');
            if (chunkSetExpired(found)) {
              await removeSetIn(t, chunkId);
              return { kind: 'dropped', error: unknownChunkSet('expired') };
            }
            if (found.assembling && !assemblyAbandoned(found)) {
              throw new AppError(
                ErrorCode.UNKNOWN_CHUNK_SET,
                'Failed to upload chunk! That chunk set is complete and its file is being put together; its last chunk gets the upload answer.',
                { chunkId: 'complete' },
              );
            }
            if (found.amountOfChunks !== amount || found.originalFileName !== originalFileName) {
              throw new AppError(
                ErrorCode.INVALID_CHUNK,
                'Failed to upload chunk! amountOfChunks and originalFileName must match the first chunk.',
              );
            }
            set = found;
          }
          const previous = set.parts[String(number)];
          const others = Object.entries(set.parts).reduce(
            (sum, [n, part]) => (Number(n) === number ? sum : sum + part.bytes),
            0,
          );
          if (others + temp.size > deps.maxFileBytes) {
            await removeSetIn(t, chunkId);
            return {
              kind: 'dropped',
              error: new AppError(
                ErrorCode.FILE_TOO_LARGE,
                `Failed to upload chunk! The file would be over ${deps.maxFileBytes} bytes.`,
              ),
            };
          }
          if (!fresh) {
            const held = await usage();
            const maxBytes = chunkBytesPerUser();
            if (held.bytes - (previous?.bytes ?? 0) + temp.size > maxBytes) {
              throw chunkQuotaError(
                `Your unfinished chunked uploads hold ${held.bytes} bytes; with this chunk they would be over the ${maxBytes} this host allows.`,
                held,
              );
            }
          }
          const parts = { ...set.parts, [String(number)]: { bytes: temp.size, file } };
          const next: ChunkSet = { ...set, parts, updatedAt: now };
          if (input.avatarMeta !== undefined && input.avatarMeta !== '') next.avatarMeta = input.avatarMeta;
          if (input.worldMeta !== undefined && input.worldMeta !== '') next.worldMeta = input.worldMeta;
          if (Object.keys(parts).length === amount) {
            next.assembling = true;
            next.assemblingBy = processId;
            next.assemblingAt = now;
          }
          sets.put(chunkId, next);
          if (fresh) {
            const owner = await owners.get(user.Id);
            owners.put(user.Id, { userId: user.Id, sets: [...(owner?.sets ?? []), chunkId] });
          }
          return { kind: 'stored', set: next, replaced: previous?.file ?? null };
        });
      } catch (error) {
        // Not committed: the part is nobody's. A set refused at its first chunk holds nothing either.
        await unlink(join(dir, file)).catch(() => undefined);
        if (fresh) await dropChunkFiles(chunkId);
        throw error;
      } finally {
        const left = (placing.get(user.Id) ?? 0) - temp.size;
        if (left > 0) placing.set(user.Id, left);
        else placing.delete(user.Id);
      }
      if (outcome.kind === 'dropped') {
        await dropChunkFiles(chunkId);
        throw outcome.error;
      }
      const { set, replaced } = outcome;
      // A chunk sent again replaces the one held; the file it replaced is no part of the set any more.
      if (replaced !== null) await unlink(join(dir, replaced)).catch(() => undefined);
      const held = Object.keys(set.parts).length;
      if (!set.assembling) {
        const missing: number[] = [];
        for (let n = 0; n < set.amountOfChunks && missing.length < 100; n++)
          if (!(String(n) in set.parts)) missing.push(n);
        return {
          message: 'Uploaded Chunk!',
          result: { chunkNumber: number, chunkId, received: held, missingChunks: missing },
        };
      }
      // Complete, and this call marked it so: assemble, then run the same path as a single upload. The set is
      // spent either way.
      const lease = renewAssembly(chunkId);
      try {
        const whole = await assemble(set);
        try {
          return await finish(user, whole, set.originalFileName, {
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
        await dropChunkSet(chunkId);
      }
    },

    chunkRoomOrThrow,

    async chunkStatus(user: StoredUser, chunkId: string) {
      const known = await chunkSets.get(chunkId);
      // Started or touched on another host: this host's copy may not have that commit yet.
      if (!known || chunkSetExpired(known)) await store.refresh();
      const set = await chunkSets.get(chunkId);
      if (!set || set.userId !== user.Id || chunkSetExpired(set)) {
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
        expiresAt: set.updatedAt + deps.chunkSetTtlSeconds,
      };
    },

    sweepChunkSets,

    deleteAvatar: (id: string) => deleteAsset('avatar', id),
    deleteWorld: (id: string) => deleteAsset('world', id),

    /**
     * remove/avatar and remove/world by the owner. Someone else's content is moderation
     * (server/services/content-removal.ts): ranks checked and logged.
     */
    async removeOwnAsset(caller: StoredUser, kind: 'avatar' | 'world', id: string): Promise<void> {
      const asset = await (kind === 'avatar' ? avatars.get(id) : worlds.get(id));
      if (!asset)
        throw new AppError(ErrorCode.CONTENT_NOT_FOUND, `Failed to remove ${kind}! It does not exist.`);
      if (asset.OwnerId !== caller.Id) {
        throw new AppError(ErrorCode.NOT_OWNER, `Failed to remove ${kind}! It is not yours.`);
      }
      if (!(await deleteAsset(kind, id)))
        throw new AppError(ErrorCode.CONTENT_NOT_FOUND, `Failed to remove ${kind}!`);
    },

    /** remove/file by the owner: a media or script file of theirs that none of their builds uses. */
    async removeOwnFile(caller: StoredUser, fileId: string): Promise<void> {
      await serial(fileId, async () => {
        const removed = await store.tx((t) => deleteFileIn(t, fileId, caller.Id));
        if (!removed) {
          throw new AppError(
            ErrorCode.FILE_NOT_FOUND,
            'Failed to delete file! You have no file with that id.',
          );
        }
        await removeFiles(removed);
      });
    },

    fileRecordById: (fileId: string): Promise<StoredFile | undefined> => files.get(fileId),
    async fileRecord(userId: string, fileId: string): Promise<StoredFile | undefined> {
      const record = await files.get(fileId);
      return record && record.UserId === userId ? record : undefined;
    },
    pathOf,
    uploadData,
    buildOf,
    avatar: (id: string) => avatars.get(id),
    world: (id: string) => worlds.get(id),
    /** The avatars of these ids that exist, in that order. */
    avatars: (ids: readonly string[]) => avatars.getMany(ids),
    /** The worlds of these ids that exist, in that order. */
    worlds: (ids: readonly string[]) => worlds.getMany(ids),
    allAvatars: () => avatars.scan(),
    allWorlds: () => worlds.scan(),
    get contentVersion() {
      return contentVersion;
    },
    /**
     * Stores asset-token changes on an avatar or world (their hashes only): `change` gets the newest list and
     * returns the new one.
     */
    async saveAssetTokens<T>(
      kind: 'avatar' | 'world',
      id: string,
      change: (tokens: readonly T[]) => T[],
    ): Promise<boolean> {
      return store.tx(async (t) => {
        const repo = t.repo<AvatarMetaDto & { Tokens?: T[] }>(kind === 'avatar' ? AVATARS : WORLDS);
        const asset = await repo.get(id);
        if (!asset) return false;
        repo.put(id, { ...asset, Tokens: change(asset.Tokens ?? []) });
        return true;
      });
    },
    deleteAssetIn,
    deleteFileIn,
    removeFiles,
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

export type UploadsService = ReturnType<typeof createUploadsService>;
