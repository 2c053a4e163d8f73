// What a folder is before the host opens it as its data folder. In shared/ (see atomic-file.ts): the desktop shell
// checks a folder the user typed before it saves the setting, without loading the host's storage.
import { readdir, stat } from 'node:fs/promises';
import { join, resolve, parse } from 'node:path';

/**
 * What a folder is to us before we open it as a data folder: absent or empty (we may make it ours), ours (it
 * holds our meta.json), or foreign (anything else: a home folder, `/etc`, a project checkout). Starting on a
 * foreign folder is refused, so a mistyped setting can never have us sweep or fill somebody else's files.
 */
export type DataFolderKind = 'missing' | 'empty' | 'ours' | 'files' | 'foreign';

/** The file whose presence makes a folder ours; written first when a data folder is created. */
export const DATA_FOLDER_MARKER = 'meta.json';

/**
 * The file that makes a folder the uploaded files of hosts whose records live in PostgreSQL (`--database`),
 * written when such a host first uses it or when `migrate` moved the folder's records out. It wins over
 * meta.json: the embedded store refuses such a folder, whose records are no longer its own.
 */
export const FILES_FOLDER_MARKER = 'database.json';

export class MovedToDatabaseError extends Error {
  constructor(readonly dir: string) {
    super(
      `${dir} holds only the uploaded files of a host whose records are in PostgreSQL (see its ${FILES_FOLDER_MARKER}). ` +
        'Start the host with --database URL; nothing in the folder was changed.',
    );
    this.name = 'MovedToDatabaseError';
  }
}

/**
 * Files a desktop or editor may drop into any folder, and our own lock (taken just before meta.json is first
 * written): they do not make an empty folder foreign.
 */
const HARMLESS = new Set(['.DS_Store', 'Thumbs.db', 'desktop.ini', '.directory', 'companion.lock']);

export class ForeignDataFolderError extends Error {
  constructor(
    readonly dir: string,
    reason: string,
  ) {
    super(
      `${dir} cannot be used as a data folder: ${reason}. Choose an empty folder (or a new one) or an existing ` +
        'Hypernex Companion data folder; nothing in it was changed.',
    );
    this.name = 'ForeignDataFolderError';
  }
}

export async function inspectDataFolder(dir: string): Promise<{ kind: DataFolderKind; reason?: string }> {
  const abs = resolve(dir);
  if (parse(abs).root === abs) return { kind: 'foreign', reason: 'it is the root of a file system' };
  let info;
  try {
    info = await stat(abs);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    throw error;
  }
  if (!info.isDirectory()) return { kind: 'foreign', reason: 'it is a file, not a folder' };
  const names = await readdir(abs);
  if (names.includes(FILES_FOLDER_MARKER)) {
    const marker = await stat(join(abs, FILES_FOLDER_MARKER)).catch(() => null);
    if (marker?.isFile()) return { kind: 'files' };
  }
  if (names.includes(DATA_FOLDER_MARKER)) {
    const marker = await stat(join(abs, DATA_FOLDER_MARKER)).catch(() => null);
    if (marker?.isFile()) return { kind: 'ours' };
  }
  const other = names.filter((name) => !HARMLESS.has(name));
  if (other.length === 0) return { kind: 'empty' };
  const shown = other.slice(0, 3).join(', ') + (other.length > 3 ? ', …' : '');
  return {
    kind: 'foreign',
    reason: `it already holds other files (${shown}) and no Hypernex Companion ${DATA_FOLDER_MARKER}`,
  };
}

/** Throws ForeignDataFolderError unless `dir` is missing, empty or already a data folder of ours. */
export async function assertUsableDataFolder(dir: string): Promise<DataFolderKind> {
  const { kind, reason } = await inspectDataFolder(dir);
  if (kind === 'foreign') throw new ForeignDataFolderError(resolve(dir), reason ?? 'it is not ours');
  if (kind === 'files') throw new MovedToDatabaseError(resolve(dir));
  return kind;
}
