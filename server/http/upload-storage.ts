import { unlink } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type multer from '@koa/multer';
import { streamToFile, type TempFile } from '../services/uploads.js';

/** What multer hands our engine for one file part. */
interface IncomingFile {
  originalname: string;
  stream: NodeJS.ReadableStream;
}

/**
 * A multer storage engine that streams the file part straight into the data folder's tmp/, hashing it with MD5
 * on the way; nothing is held whole in memory. `admit` runs before the first byte is written, with the text
 * fields that came before the file (real clients send credentials first), so a bad token or a forbidden
 * extension is refused without storing anything.
 */
export function tempFileStorage(options: {
  tempPath: () => string;
  admit: (fields: Record<string, unknown>, originalName: string) => void;
}): multer.StorageEngine {
  return {
    _handleFile(req, file, callback) {
      const incoming = file as unknown as IncomingFile;
      try {
        options.admit(
          (req as IncomingMessage & { body?: Record<string, unknown> }).body ?? {},
          incoming.originalname,
        );
      } catch (error) {
        incoming.stream.resume();
        callback(error as Error);
        return;
      }
      streamToFile(incoming.stream, options.tempPath()).then(
        (temp: TempFile) => callback(null, { path: temp.path, size: temp.size, hash: temp.hash } as never),
        (error: Error) => callback(error),
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
