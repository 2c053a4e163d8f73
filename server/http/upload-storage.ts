import { unlink } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type multer from '@koa/multer';
import { AppError } from '../errors.js';
import { streamToFile, type TempFile } from '../services/uploads.js';
import { refuseUpload } from './upload-guard.js';

/** What multer hands our engine for one file part. */
interface IncomingFile {
  originalname: string;
  stream: NodeJS.ReadableStream;
}

/**
 * How much of a file part may be stored: everything (`null`, the sender's credentials were checked), or at most
 * `bytes` while they were not, refused with `error()` beyond that.
 */
export type Admission = null | { bytes: number; error: () => AppError };

/**
 * A multer storage engine that streams the file part straight into the data folder's tmp/, hashing it with MD5
 * on the way; nothing is held whole in memory. `admit` runs before the first byte is written, with the text
 * fields that came before the file (real clients send credentials first), so a bad token or a forbidden
 * extension is refused without storing anything, and a file that comes before any credentials is only stored up
 * to a small bound: past it the request is answered at once and hung up on (see upload-guard.ts).
 */
export function tempFileStorage(options: {
  tempPath: () => string;
  admit: (req: IncomingMessage, fields: Record<string, unknown>, originalName: string) => Promise<Admission>;
}): multer.StorageEngine {
  function store(
    req: IncomingMessage,
    incoming: IncomingFile,
    admission: Admission,
    callback: (error: Error | null, info?: never) => void,
  ): void {
    streamToFile(incoming.stream, options.tempPath(), admission ?? undefined).then(
      (temp: TempFile) => callback(null, { path: temp.path, size: temp.size, hash: temp.hash } as never),
      (error: Error) => {
        // Nothing more of an anonymous file is wanted: answer now instead of reading the rest of the body.
        if (admission && error instanceof AppError) refuseUpload(req, error);
        callback(error);
      },
    );
  }

  return {
    _handleFile(req, file, callback) {
      const incoming = file as unknown as IncomingFile;
      // The part's stream stays paused (nothing reads it) while the sender is checked.
      options
        .admit(
          req,
          (req as IncomingMessage & { body?: Record<string, unknown> }).body ?? {},
          incoming.originalname,
        )
        .then(
          (admission) => store(req, incoming, admission, callback),
          (error: unknown) => {
            incoming.stream.resume();
            callback(error as Error);
          },
        );
    },
    _removeFile(_req, file, callback) {
      const path = (file as { path?: string }).path;
      if (!path) return callback(null as unknown as Error);
      // Removal is best effort: tmp/ is emptied at every start anyway.
      const done = (): void => callback(null as unknown as Error);
      unlink(path).then(done, done);
    },
  };
}
