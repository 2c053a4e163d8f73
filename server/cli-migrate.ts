import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { COLLECTIONS } from './host.js';
import { logKeyOf, MODERATION_LOG, MODERATION_LOG_FILE } from './services/moderation.js';
import { FILES_FOLDER_MARKER, inspectDataFolder } from './store/data-folder.js';
import { importIntoEmptyDatabase, type ImportedEntry, type ImportedRecord } from './store/pg-import.js';
import { redactUrl } from '../shared/redact-url.js';
import { hostSettings, SETTINGS } from './store/settings.js';
import { Store } from './store/store.js';

export const MIGRATE_HELP = `Usage: hypernex-companion migrate --from DIR --database URL

Copies the records and histories of an embedded data folder (no host may be running on it) into an empty
PostgreSQL database, in one transaction. A database that already holds records is refused. Afterwards the
folder keeps only its role as the folder of uploaded files: start hosts with
  hypernex-companion serve --data-dir DIR --database URL
and a host without --database refuses the folder, whose records now live in PostgreSQL.

Options:
  --from DIR        the embedded data folder
  --database URL    postgres://USER@HOST:PORT/DB (a password may come from PGPASSWORD)
  -h, --help        this help
`;

export class MigrateUsageError extends Error {
  override name = 'MigrateUsageError';
}

/** `migrate`: an embedded data folder's records into PostgreSQL. */
export async function migrateCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      from: { type: 'string' },
      database: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(MIGRATE_HELP);
    return 0;
  }
  if (values.from === undefined) throw new MigrateUsageError('--from DIR is required');
  if (values.database === undefined) throw new MigrateUsageError('--database URL is required');
  const dir = resolve(values.from);
  const { kind } = await inspectDataFolder(dir);
  if (kind !== 'ours') {
    throw new MigrateUsageError(
      kind === 'files'
        ? `${dir} was already migrated: its records are in PostgreSQL (see its ${FILES_FOLDER_MARKER})`
        : `${dir} is not an embedded Hypernex Companion data folder`,
    );
  }
  // Opening takes the folder's lock (a running host refuses it) and replays its log, so the copy is complete.
  const store = await Store.open(dir, {
    collections: COLLECTIONS,
    logs: [{ name: MODERATION_LOG, file: MODERATION_LOG_FILE, keyOf: logKeyOf }],
  });
  let copied: { records: number; entries: number };
  try {
    const records: ImportedRecord[] = [];
    for (const collection of COLLECTIONS) {
      for (const { id, seq, data } of store.collection(collection).entries())
        records.push({ collection, id, version: seq, data });
    }
    // A folder of the first layout kept its host settings in meta.json: they become the settings record.
    if (!(await store.collection(SETTINGS).has('host'))) {
      const version = 1 + Math.max(0, ...records.map((record) => record.version));
      records.push({ collection: SETTINGS, id: 'host', version, data: await hostSettings(store) });
    }
    const log = store.log<{ seq: number }, unknown>(MODERATION_LOG);
    async function* entries(): AsyncIterable<ImportedEntry> {
      for (let position = 0; position < log.length; position++) {
        const entry = await log.read(position);
        yield { log: MODERATION_LOG, seq: entry.seq, entry };
      }
    }
    copied = await importIntoEmptyDatabase(values.database, records, entries());
    // From now on the embedded store refuses the folder, so nobody runs a host on records left behind.
    await writeFile(
      join(dir, FILES_FOLDER_MARKER),
      `${JSON.stringify({ database: redactUrl(values.database), migratedAt: Date.now() })}\n`,
    );
  } finally {
    await store.close();
  }
  process.stdout.write(
    `copied ${copied.records} records and ${copied.entries} log entries from ${dir} into ${redactUrl(values.database)}\n` +
      `start hosts with: hypernex-companion serve --data-dir ${dir} --database URL\n`,
  );
  return 0;
}
