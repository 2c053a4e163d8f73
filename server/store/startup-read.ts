import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptDataFileError, readJsonFile } from './durable-file.js';
import type { DataFolderKind } from './data-folder.js';
import { FolderChecker, problemsOf } from './record-check.js';
import { FOLDER_LOGS, StoreMetaFile } from './record-schemas.js';
import type { WalEntryCheck } from './wal.js';

/**
 * What the embedded store reads at start besides its record files and its logs' own files, each file read once and
 * checked as it is parsed (record-check.ts), writing nothing: a start either knows everything is good before its
 * first write or stops naming the bad record.
 */

const SAFE_ID = /^[A-Za-z0-9_-]{1,200}$/;
/** True when `id` can name a record file without escaping its folder. */
export function isSafeId(id: string): boolean {
  return SAFE_ID.test(id) && id !== '.' && id !== '..';
}

/** The first thing a folder holds: its schema version, birth and (first layout) host settings. */
export interface FoundMeta {
  schemaVersion: number;
  createdAt: number;
  ownerSetupDone?: boolean;
  settings?: { requireInviteCode?: boolean };
}

export class SchemaTooNewError extends Error {
  constructor(path: string, version: number, understood: number) {
    super(
      `Data file ${path} has schema version ${version}, newer than this program understands (${understood}). ` +
        'Update Hypernex Companion; the data was left untouched.',
    );
    this.name = 'SchemaTooNewError';
  }
}

/**
 * meta.json, checked; null for a new folder (none yet). A newer schema version is refused before the rest of the
 * file is looked at: a later version may have changed it.
 */
export async function readMeta(
  checker: FolderChecker,
  kind: DataFolderKind,
  understood: number,
): Promise<FoundMeta | null> {
  const path = join(checker.dir, 'meta.json');
  const found = await readJsonFile<unknown>(path);
  if (found === null) {
    if (kind === 'ours') throw new CorruptDataFileError(path, new Error('it vanished while opening'));
    return null;
  }
  const version = (found as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version === 'number' && version > understood)
    throw new SchemaTooNewError(path, version, understood);
  checker.value('meta.json', null, StoreMetaFile, found);
  return found as FoundMeta;
}

/**
 * Checks each write-ahead log entry: its envelope (a known collection and a safe id, or a known log), then the
 * record or log entry it carries against its schema, naming the segment, the line and the record.
 */
export function walEntryCheck(
  checker: FolderChecker,
  collections: ReadonlySet<string>,
  logs: ReadonlySet<string>,
): WalEntryCheck {
  return (entry, path, line) => {
    if ('c' in entry) {
      if (typeof entry.c !== 'string' || !collections.has(entry.c))
        throw new Error(`an entry names no known collection (${JSON.stringify(entry.c)})`);
      if (typeof entry.i !== 'string' || !isSafeId(entry.i))
        throw new Error(`an entry has no valid record id (${JSON.stringify(entry.i)})`);
      if (!entry.r || typeof entry.r !== 'object' || typeof entry.r.seq !== 'number' || !('data' in entry.r))
        throw new Error('an entry holds no record version');
      const problems = checker.recordProblems(entry.c, entry.i, entry.r.data);
      if (problems) throw checker.refuse(checker.name(path), `line ${line}, ${entry.c}/${entry.i}`, problems);
    } else if ('l' in entry) {
      if (typeof entry.l !== 'string' || !logs.has(entry.l))
        throw new Error(`an entry names no known log (${JSON.stringify(entry.l)})`);
      if (typeof entry.s !== 'number' || !entry.e || typeof entry.e !== 'object')
        throw new Error('a log entry has no sequence number or content');
      const problems = checker.logEntryProblems(entry.l, entry.e);
      if (problems) throw checker.refuse(checker.name(path), `line ${line}, ${entry.l} log entry`, problems);
    } else {
      throw new Error('an entry is neither a record version nor a log entry');
    }
  };
}

/** A record version of a journal file of the first layout (before the write-ahead log). */
export interface JournalEntry {
  collection: string;
  id: string;
  seq: number;
  data: unknown;
}

/** Journal files of the first layout, oldest first: read and checked here, applied (then deleted) by the start. */
export async function readJournal(
  checker: FolderChecker,
  collections: ReadonlySet<string>,
): Promise<Array<{ path: string; entries: JournalEntry[] }>> {
  const journalDir = join(checker.dir, 'journal');
  let names: string[];
  try {
    names = (await readdir(journalDir)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const found = [];
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const path = join(journalDir, name);
    const entries = await readJsonFile<JournalEntry[]>(path);
    if (!Array.isArray(entries)) throw new CorruptDataFileError(path, new Error('not a journal'));
    entries.forEach((entry, at) => {
      if (!entry || typeof entry.id !== 'string' || !isSafeId(entry.id) || !collections.has(entry.collection))
        throw new CorruptDataFileError(path, new Error('an entry names no valid record'));
      if (typeof entry.seq !== 'number')
        throw new CorruptDataFileError(path, new Error('an entry has no seq'));
      if (!('data' in entry)) throw new CorruptDataFileError(path, new Error('an entry holds no data'));
      const problems = checker.recordProblems(entry.collection, entry.id, entry.data);
      if (problems)
        throw checker.refuse(`journal/${name}`, `entry ${at + 1}, ${entry.collection}/${entry.id}`, problems);
    });
    found.push({ path, entries });
  }
  return found;
}

/**
 * Checks the histories the services keep in the data folder (FOLDER_LOGS: the invite-request log), line by line.
 * A torn last line (an append cut off, never acknowledged) is left for its log to cut; any other bad line stops the
 * start. The services read these files again when they open them, after the store's start.
 */
export async function checkFolderLogs(checker: FolderChecker): Promise<void> {
  for (const { file, schema } of FOLDER_LOGS) {
    const path = join(checker.dir, file);
    let content: Buffer;
    try {
      content = await readFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new CorruptDataFileError(path, error);
    }
    let start = 0;
    for (let line = 1; start < content.length; line++) {
      const end = content.indexOf(0x0a, start);
      if (end === -1) break;
      let entry: unknown;
      try {
        entry = JSON.parse(content.subarray(start, end).toString('utf8'));
      } catch (error) {
        throw new CorruptDataFileError(path, new Error(`line ${line}: ${(error as Error).message}`));
      }
      const problems = problemsOf(schema, entry);
      if (problems) throw checker.refuse(file, `line ${line}`, problems);
      start = end + 1;
    }
  }
}
