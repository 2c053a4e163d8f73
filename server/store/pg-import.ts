import pg from 'pg';
import {
  DEFAULT_MIGRATION_TIMEOUT_MS,
  MIGRATION_LOCK,
  PG_MIGRATIONS,
  runMigrations,
} from './pg-migrations.js';
import { PostgresUnreachableError } from './pg-store.js';
import { redactUrl } from '../../shared/redact-url.js';

export interface ImportedRecord {
  collection: string;
  id: string;
  /** The sequence number of the record's last change where it came from (kept: log entries refer to them). */
  version: number;
  data: unknown;
}

export interface ImportedEntry {
  log: string;
  seq: number;
  entry: { seq: number };
}

export class DatabaseNotEmptyError extends Error {
  constructor(url: string, records: number, entries: number) {
    super(
      `The database ${redactUrl(url)} is not empty (${records} records, ${entries} log entries): migrate only into ` +
        'an empty database. Nothing was changed.',
    );
    this.name = 'DatabaseNotEmptyError';
  }
}

/** Rows per INSERT statement. */
const BATCH = 500;
/** Longest wait for a connection to PostgreSQL (ms). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Copies records and log entries into the PostgreSQL store at `url` in one transaction, refusing a database that
 * already holds any (naming it). Sequence numbers are kept and history numbering goes on past them. The keys of
 * secondary indexes are made by the first host that uses each index.
 */
export async function importIntoEmptyDatabase(
  url: string,
  records: Iterable<ImportedRecord>,
  entries: AsyncIterable<ImportedEntry> | Iterable<ImportedEntry>,
): Promise<{ records: number; entries: number }> {
  // One long transaction, but never a wait without end: the migrations' limits for each statement.
  const connection = {
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: DEFAULT_MIGRATION_TIMEOUT_MS,
    query_timeout: DEFAULT_MIGRATION_TIMEOUT_MS + 1000,
  };
  const pool = new pg.Pool({ ...connection, max: 1 });
  pool.on('error', () => undefined);
  try {
    try {
      await runMigrations(connection, PG_MIGRATIONS);
    } catch (error) {
      if ((error as { code?: string }).code === undefined) throw new PostgresUnreachableError(url, error);
      throw error;
    }
    const client = await pool.connect();
    // A broken connection fails the statement under way; unheard, its 'error' event would end the process.
    client.on('error', () => undefined);
    try {
      await client.query('BEGIN');
      // Two imports at once: the second waits, then finds the database not empty.
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [MIGRATION_LOCK]);
      await client.query('LOCK TABLE hx_records, hx_log_entries IN EXCLUSIVE MODE');
      const counts = (
        await client.query<{ records: string; entries: string }>(
          `SELECT (SELECT count(*) FROM hx_records) AS records, (SELECT count(*) FROM hx_log_entries) AS entries`,
        )
      ).rows[0]!;
      if (Number(counts.records) > 0 || Number(counts.entries) > 0)
        throw new DatabaseNotEmptyError(url, Number(counts.records), Number(counts.entries));
      let clock = 0;
      let recordCount = 0;
      let batch: ImportedRecord[] = [];
      const flushRecords = async (): Promise<void> => {
        if (batch.length === 0) return;
        await client.query(
          `INSERT INTO hx_records (collection, id, version, data)
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::json[])`,
          [
            batch.map((r) => r.collection),
            batch.map((r) => r.id),
            batch.map((r) => r.version),
            batch.map((r) => JSON.stringify(r.data)),
          ],
        );
        recordCount += batch.length;
        batch = [];
      };
      for (const record of records) {
        clock = Math.max(clock, record.version);
        batch.push(record);
        if (batch.length >= BATCH) await flushRecords();
      }
      await flushRecords();
      let entryCount = 0;
      let logBatch: ImportedEntry[] = [];
      const flushEntries = async (): Promise<void> => {
        if (logBatch.length === 0) return;
        await client.query(
          `INSERT INTO hx_log_entries (log, seq, entry) SELECT * FROM unnest($1::text[], $2::bigint[], $3::json[])`,
          [
            logBatch.map((e) => e.log),
            logBatch.map((e) => e.seq),
            logBatch.map((e) => JSON.stringify(e.entry)),
          ],
        );
        entryCount += logBatch.length;
        logBatch = [];
      };
      for await (const entry of entries) {
        clock = Math.max(clock, entry.seq);
        logBatch.push(entry);
        if (logBatch.length >= BATCH) await flushEntries();
      }
      await flushEntries();
      // History entries and record versions go on numbering after the imported ones (a version used twice could
      // let a transaction that read the older record commit); hosts already running hear that all changed.
      await client.query("SELECT setval('hx_log_seq', GREATEST($1::bigint, 1))", [clock]);
      await client.query("SELECT setval('hx_version_seq', GREATEST($1::bigint, 1))", [clock]);
      await client.query('SELECT pg_notify($1, $2)', [
        `hx_commit_${await schemaOf(client)}`.slice(0, 63),
        JSON.stringify({ o: 'import', all: true, l: [] }),
      ]);
      await client.query('COMMIT');
      client.release();
      return { records: recordCount, entries: entryCount };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(true);
      throw error;
    }
  } finally {
    await pool.end().catch(() => undefined);
  }
}

async function schemaOf(client: pg.PoolClient): Promise<string> {
  return (await client.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0]!.schema;
}
