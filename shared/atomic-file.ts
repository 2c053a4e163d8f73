// shared/: small Node helpers both sides of the desktop app use, the host (server/) and the Electron main process
// (main/). They import only Node built-ins and each other: main/ reaches them without loading any of the server.
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `text` to `path` so that a reader sees either the old or the new content, never a mix: write a
 * temporary file beside it, fsync it, then rename it over the target (steno's idea, plus the fsync that makes an
 * acknowledged write survive a power cut, not only a killed process).
 */
export async function writeFileAtomic(
  path: string,
  text: string,
  fsync: boolean,
  syncFolder = fsync,
): Promise<void> {
  const temp = `${path}.tmp`;
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    if (fsync) await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
  // The rename itself lives in the folder: sync it too, or a power cut can undo an acknowledged write. (A caller
  // writing many files of one folder passes syncFolder false and syncs the folder once after them.)
  if (syncFolder) await syncDir(dirname(path));
}

/**
 * Folder syncs are shared: up to MAX_DIR_SYNCS run at once per folder (the file system batches concurrent syncs
 * into one journal commit); past that, writes wait for one more sync that starts after a running one ends (so
 * after their rename). A burst of writes then costs a few folder syncs, neither one each nor one at a time.
 */
const MAX_DIR_SYNCS = 4;
interface DirSyncs {
  running: number;
  /** The one extra sync later writers share, started when a running one ends. */
  queued: Promise<void> | null;
  wake: (() => void) | null;
}
const dirSyncs = new Map<string, DirSyncs>();

export function syncDir(dir: string): Promise<void> {
  let state = dirSyncs.get(dir);
  if (!state) dirSyncs.set(dir, (state = { running: 0, queued: null, wake: null }));
  const entry = state;
  const run = (): Promise<void> => {
    entry.running++;
    return syncDirNow(dir).finally(() => {
      entry.running--;
      const wake = entry.wake;
      entry.wake = null;
      if (wake) wake();
      else if (entry.running === 0 && entry.queued === null) dirSyncs.delete(dir);
    });
  };
  if (entry.running < MAX_DIR_SYNCS && entry.queued === null) return run();
  entry.queued ??= new Promise<void>((resolve) => {
    entry.wake = resolve;
  }).then(() => {
    entry.queued = null;
    return run();
  });
  return entry.queued;
}

async function syncDirNow(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse to sync a folder; the file itself was synced.
  } finally {
    await handle.close();
  }
}
