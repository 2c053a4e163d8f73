import { createHash } from 'node:crypto';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** A finished upload waiting in the data folder's tmp/: streamed, hashed and fsynced, not yet placed. */
export interface TempFile {
  path: string;
  size: number;
  hash: string;
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
