import { open } from 'node:fs/promises';
import type { LogFileHandle, LogFileSystem } from '../../server/store/wal.js';

export type Fault = 'enospc' | 'short' | 'eio-write' | 'eio-sync' | null;

/** A file layer for the log that fails on demand, as a full or broken disk would, and can hold writes back. */
export class FaultyFs implements LogFileSystem {
  fault: Fault = null;
  /** While set, writes wait for it. */
  gate: Promise<void> | null = null;
  writes = 0;

  async openAppend(path: string): Promise<LogFileHandle> {
    const handle = await open(path, 'a');
    return {
      write: async (buffer, offset, length) => {
        this.writes++;
        if (this.gate) await this.gate;
        if (this.fault === 'enospc') throw errno('ENOSPC', 'no space left on device');
        if (this.fault === 'eio-write') throw errno('EIO', 'i/o error');
        if (this.fault === 'short') {
          // Half the bytes reach the file (a torn line), then the disk is full.
          this.fault = 'enospc';
          return handle.write(buffer, offset, Math.max(1, Math.floor(length / 2)));
        }
        return handle.write(buffer, offset, length);
      },
      datasync: async () => {
        if (this.fault === 'eio-sync') throw errno('EIO', 'i/o error on fsync');
        await handle.datasync();
      },
      truncate: async (length) => {
        if (this.fault === 'eio-write') throw errno('EIO', 'i/o error');
        await handle.truncate(length);
      },
      close: () => handle.close(),
    };
  }
}

function errno(code: string, message: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: ${message}`) as NodeJS.ErrnoException;
  error.code = code;
  return error;
}
