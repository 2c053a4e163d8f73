import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { CHUNK_ID } from '../../protocol/uploads.js';
import { initChunkFolder } from './chunk-import.js';
import { sweepChunkSets } from './chunk-sets.js';
import { claimTempFolder } from './folders.js';
import type { UploadsShared } from './shared.js';

/** Names that prove a file is ours: temp uploads, per-user folders, stored files. */
const TEMP_FILE = /^[0-9a-f]{32}\.part$/;
const USER_FOLDER = /^user_[A-Za-z0-9-]{1,64}$/;
const STORED_FILE = /^(file_[A-Za-z0-9-]{1,64})(\.[A-Za-z0-9]{1,8})?$/;

/**
 * Startup: prepares the folders and removes what interrupted uploads left behind, touching only files whose
 * names prove they are ours; anything else is left and logged.
 */
export async function initUploads(up: UploadsShared): Promise<void> {
  const { folders } = up;
  if (folders.shared) {
    const claimed = await claimTempFolder(folders.tmpDir);
    folders.tmpDir = claimed.dir;
    folders.releaseTmp = claimed.release;
  }
  await mkdir(folders.tmpDir, { recursive: true });
  await mkdir(folders.filesDir, { recursive: true });
  await mkdir(folders.chunksDir, { recursive: true });
  const strangers: string[] = [];
  await sweepTempFiles(up, strangers);
  await sweepOrphanFiles(up, strangers);
  for (const chunkId of await readdir(folders.chunksDir)) {
    if (!CHUNK_ID.test(chunkId)) {
      strangers.push(join(folders.chunksDir, chunkId));
      continue;
    }
    await initChunkFolder(up, chunkId);
  }
  // Sets whose time ran out while no host was running.
  await sweepChunkSets(up);
  if (strangers.length > 0) {
    up.deps.log.warn(
      { count: strangers.length, files: strangers.slice(0, 20) },
      'left files in the data folder that are not ours to delete',
    );
  }
}

/** Gives up this host's temporary folder (a folder shared with other hosts). */
export async function closeUploads(up: UploadsShared): Promise<void> {
  await up.folders.releaseTmp?.();
  up.folders.releaseTmp = null;
}

/** Removes the temp files interrupted uploads left; adds what is not ours to `strangers`. */
async function sweepTempFiles(up: UploadsShared, strangers: string[]): Promise<void> {
  const { tmpDir, shared } = up.folders;
  for (const name of await readdir(tmpDir)) {
    // A leftover temp file that cannot be removed now is tried again at the next start; it never counts as
    // data.
    if (TEMP_FILE.test(name)) await unlink(join(tmpDir, name)).catch(() => undefined);
    else if (!(shared && name === 'companion.lock')) strangers.push(join(tmpDir, name));
  }
}

/**
 * A crash between placing a file and committing its record leaves a file nobody knows: remove it. Not in a
 * folder hosts share: another host may be between placing a file and committing its record.
 */
async function sweepOrphanFiles(up: UploadsShared, strangers: string[]): Promise<void> {
  const { filesDir, shared } = up.folders;
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
      const record = await up.records.files.get(match[1]!);
      if (!record || record.UserId !== userDir || record.FileName !== name) {
        // A stray file that cannot be removed now is tried again at the next start; no record points at it.
        await unlink(join(dir, name)).catch(() => undefined);
        orphans++;
      }
    }
  }
  if (orphans > 0)
    up.deps.log.warn({ orphans }, 'removed uploaded files that had no record (interrupted uploads)');
}
