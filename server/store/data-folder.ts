import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { FILES_FOLDER_MARKER, ForeignDataFolderError, inspectDataFolder } from '../../shared/data-folder.js';

// What a folder is (ours, empty, foreign) is decided in shared/: the desktop shell checks a folder with it too.
export {
  assertUsableDataFolder,
  DATA_FOLDER_MARKER,
  FILES_FOLDER_MARKER,
  ForeignDataFolderError,
  inspectDataFolder,
  MovedToDatabaseError,
  type DataFolderKind,
} from '../../shared/data-folder.js';

/**
 * Makes `dir` (missing, empty, an embedded data folder whose records were migrated, or already one) the folder of
 * uploaded files of hosts on PostgreSQL; refuses a foreign folder. Several hosts may do this at once.
 */
export async function useAsFilesFolder(dir: string, note: Record<string, unknown>): Promise<void> {
  const { kind, reason } = await inspectDataFolder(dir);
  if (kind === 'foreign') throw new ForeignDataFolderError(resolve(dir), reason ?? 'it is not ours');
  if (kind === 'files') return;
  if (kind === 'ours') {
    throw new ForeignDataFolderError(
      resolve(dir),
      'it is an embedded data folder whose records are not in PostgreSQL: move them with ' +
        '`hypernex-companion migrate --from DIR --database URL` first',
    );
  }
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, FILES_FOLDER_MARKER), `${JSON.stringify({ ...note, createdAt: Date.now() })}\n`, {
    flag: 'wx',
  }).catch((error: NodeJS.ErrnoException) => {
    // Another host starting at the same time wrote it first.
    if (error.code !== 'EEXIST') throw error;
  });
}
