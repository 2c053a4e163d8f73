import type pg from 'pg';

/**
 * The PostgreSQL store's schema, as versioned steps. Each step runs once, in order, inside the one transaction
 * that `runMigrations` holds under an advisory lock; a step is never edited once released: a change is a new step.
 */
export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

/**
 * First key of the advisory lock every commit takes (the second is the schema's hash, so schemas never wait for
 * each other): commits have one order across processes.
 */
export const COMMIT_LOCK = 0x48584301;

export const PG_MIGRATIONS: PgMigration[] = [
  {
    version: 1,
    name: 'records, histories, commits and the commit clock',
    sql: `
      -- One row per record; version is the sequence number of the commit step that wrote it. json (not jsonb)
      -- keeps a record's text as written, key order included.
      CREATE TABLE hx_records (
        collection text NOT NULL,
        id text NOT NULL,
        version bigint NOT NULL,
        data json NOT NULL,
        PRIMARY KEY (collection, id)
      );
      -- Histories (the moderation log): entries in sequence order.
      CREATE TABLE hx_log_entries (
        log text NOT NULL,
        seq bigint NOT NULL,
        entry json NOT NULL,
        PRIMARY KEY (log, seq)
      );
      CREATE INDEX hx_log_entries_by_seq ON hx_log_entries (seq);
      -- What each commit changed, so other processes re-read only those rows; prev chains them, so a process
      -- can tell it missed one (pruned rows) and reload instead.
      CREATE TABLE hx_commits (
        seq bigint PRIMARY KEY,
        prev bigint NOT NULL,
        origin text NOT NULL,
        changes json NOT NULL,
        committed_at timestamptz NOT NULL DEFAULT now()
      );
      -- The last sequence number given out; moved by every commit under the commit lock.
      CREATE TABLE hx_clock (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        seq bigint NOT NULL,
        created_at bigint NOT NULL
      );
      INSERT INTO hx_clock (seq, created_at) VALUES (0, extract(epoch FROM now())::bigint);
    `,
  },
  {
    version: 2,
    name: 'hx_commit: a commit in one round trip',
    sql: `
      -- Writes one commit unless another process committed since the caller's copy was current (the clock is not
      -- at expected): then it writes nothing and answers false, and the caller catches up under the lock. Called
      -- alone (autocommit), the lock it takes is held until the commit is durable.
      CREATE FUNCTION hx_commit(
        expected bigint, next bigint, origin text, channel text,
        u_c text[], u_i text[], u_v bigint[], u_d json[],
        r_c text[], r_i text[],
        l_l text[], l_s bigint[], l_e json[],
        changes json
      ) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock(${COMMIT_LOCK}, hashtext(current_schema()));
        IF (SELECT seq FROM hx_clock) <> expected THEN
          RETURN false;
        END IF;
        INSERT INTO hx_records (collection, id, version, data)
          SELECT * FROM unnest(u_c, u_i, u_v, u_d)
          ON CONFLICT (collection, id) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data;
        DELETE FROM hx_records WHERE (collection, id) IN (SELECT * FROM unnest(r_c, r_i));
        INSERT INTO hx_log_entries (log, seq, entry) SELECT * FROM unnest(l_l, l_s, l_e);
        INSERT INTO hx_commits (seq, prev, origin, changes) VALUES (next, expected, origin, changes);
        UPDATE hx_clock SET seq = next;
        PERFORM pg_notify(channel, next::text || ' ' || origin);
        RETURN true;
      END
      $$;
    `,
  },
];

/** First key of the migrations' advisory lock (the second is the schema's hash). */
export const MIGRATION_LOCK = 0x48584302;

export class PgSchemaTooNewError extends Error {
  constructor(found: number, known: number) {
    super(
      `The database has schema version ${found}, newer than this program understands (${known}). ` +
        'Update Hypernex Companion; the database was left untouched.',
    );
    this.name = 'PgSchemaTooNewError';
  }
}

/**
 * Brings the schema up to the last step of `migrations` in one transaction, under an advisory lock: processes
 * starting together wait for each other, and the second finds nothing left to do. Returns the schema's name.
 */
export async function runMigrations(pool: pg.Pool, migrations: PgMigration[]): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [MIGRATION_LOCK]);
    const current = (await client.query<{ schema: string | null }>('SELECT current_schema() AS schema'))
      .rows[0]?.schema;
    if (!current) throw new Error('the connection has no schema to create tables in (check search_path)');
    await client.query(`CREATE TABLE IF NOT EXISTS hx_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const done = (await client.query<{ version: number }>('SELECT version FROM hx_migrations')).rows.map(
      (row) => row.version,
    );
    const known = Math.max(0, ...migrations.map((step) => step.version));
    const newest = Math.max(0, ...done);
    if (newest > known) throw new PgSchemaTooNewError(newest, known);
    for (const step of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.includes(step.version)) continue;
      await client.query(step.sql);
      await client.query('INSERT INTO hx_migrations (version, name) VALUES ($1, $2)', [
        step.version,
        step.name,
      ]);
    }
    await client.query('COMMIT');
    client.release();
    return current;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release(true);
    throw error;
  }
}
