import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { HostConfig } from '../../config.js';
import { acquireLock, DataFolderInUseError } from '../../store/lock.js';
import type { StoredFile } from './records.js';

/** Where uploads live in the data folder: files/<userId>/, chunks/<chunkId>/ and a temporary folder. */
export interface UploadFolders {
  readonly filesDir: string;
  readonly chunksDir: string;
  /**
   * With records in PostgreSQL several hosts share the folder: each keeps its temporary files in a folder of its
   * own under tmp/ (claimed at startup), and none may sweep uploaded files another host is about to commit.
   */
  readonly shared: boolean;
  /** tmp/, or this host's own folder under it once claimed. */
  tmpDir: string;
  /** Gives up the claimed temporary folder (a folder shared with other hosts). */
  releaseTmp: (() => Promise<void>) | null;
}

export function uploadFolders(config: Pick<HostConfig, 'dataDir' | 'database'>): UploadFolders {
  return {
    filesDir: join(config.dataDir, 'files'),
    chunksDir: join(config.dataDir, 'chunks'),
    shared: config.database !== null,
    tmpDir: join(config.dataDir, 'tmp'),
    releaseTmp: null,
  };
}

/** A new name for a temporary file, in this host's temporary folder. */
export function tempPath(folders: UploadFolders): string {
  return join(folders.tmpDir, `${randomBytes(16).toString('hex')}.part`);
}

export function pathOf(folders: UploadFolders, file: Pick<StoredFile, 'UserId' | 'FileName'>): string {
  return join(folders.filesDir, file.UserId, file.FileName);
}

/**
 * A temporary folder of this host's own under `root` (tmp/HOSTNAME-N), for a data folder several hosts share:
 * the first whose lock no live process holds. What a dead holder left in it is this host's to sweep.
 */
export async function claimTempFolder(root: string): Promise<{ dir: string; release: () => Promise<void> }> {
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
