import pg from 'pg';

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

/** First key of the advisory lock an append to a history takes until its commit (the second: the log's hash). */
export const LOG_LOCK = 0x48584303;

/** Records and keys past which a commit locks the whole records table (see hx_commit_batch). */
export const BIG_COMMIT = 2000;
/** First key of the advisory lock that builds a secondary index once (the second: its name's hash). */
export const INDEX_LOCK = 0x48584304;

PG_MIGRATIONS.push({
  version: 3,
  name: 'a database, not a log to replay: key tables, idempotent commits, histories ordered per log',
  sql: `
    -- Unique secondary keys (users by name...): one row per key, written in the commit that writes the record.
    CREATE TABLE hx_keys (
      collection text NOT NULL,
      idx text NOT NULL,
      key text NOT NULL,
      id text NOT NULL,
      PRIMARY KEY (collection, idx, key)
    );
    CREATE INDEX hx_keys_by_record ON hx_keys (collection, id);
    -- List keys (avatars by build file...): a key names any number of records.
    CREATE TABLE hx_list_keys (
      collection text NOT NULL,
      idx text NOT NULL,
      key text NOT NULL,
      id text NOT NULL,
      PRIMARY KEY (collection, idx, key, id)
    );
    CREATE INDEX hx_list_keys_by_record ON hx_list_keys (collection, id);
    -- The indexes whose keys exist for every record (built once, by the first host that declares one).
    CREATE TABLE hx_indexes (
      collection text NOT NULL,
      idx text NOT NULL,
      PRIMARY KEY (collection, idx)
    );
    -- One row per committed transaction: after a commit whose answer was lost, its row tells whether it happened.
    CREATE TABLE hx_tx_done (
      id text PRIMARY KEY,
      done_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX hx_tx_done_by_time ON hx_tx_done (done_at);
    -- History entries are numbered from a sequence, under their log's lock, so each log commits in order.
    -- Every write of a record gives it a version no earlier write had (a record removed and made again too), so
    -- a host may keep a record it read and ask only whether its version is still the one stored.
    CREATE SEQUENCE hx_version_seq;
    SELECT setval('hx_version_seq', GREATEST(1, (SELECT seq FROM hx_clock),
      (SELECT coalesce(max(version), 0) FROM hx_records)));
    CREATE SEQUENCE hx_log_seq;
    SELECT setval('hx_log_seq', GREATEST(1, (SELECT seq FROM hx_clock),
      (SELECT coalesce(max(seq), 0) FROM hx_log_entries)));
    DROP FUNCTION hx_commit(bigint, bigint, text, text, text[], text[], bigint[], json[], text[], text[],
      text[], bigint[], json[], json);
    DROP TABLE hx_commits;
    DROP TABLE hx_clock;
    -- Writes one transaction's records, keys and history entries in one round trip; the entries' sequence
    -- numbers are taken last, under their log's lock, held until the commit right after. (What a commit changed
    -- is announced after it, outside it: a NOTIFY inside would make every commit wait for every other.)
    CREATE FUNCTION hx_write(
      tx_id text,
      u_c text[], u_i text[], u_d json[],
      r_c text[], r_i text[],
      kr_c text[], kr_i text[],
      k_c text[], k_x text[], k_k text[], k_i text[],
      l_c text[], l_x text[], l_k text[], l_i text[],
      e_l text[], e_d json[]
    ) RETURNS bigint[] LANGUAGE plpgsql AS $$
    DECLARE
      seqs bigint[] := '{}';
      log_name text;
      n int;
    BEGIN
      INSERT INTO hx_tx_done (id) VALUES (tx_id);
      -- Keys are rewritten only for the records whose keys may have changed (kr) and removed ones.
      IF coalesce(array_length(kr_c, 1), 0) + coalesce(array_length(r_c, 1), 0) > 0 THEN
        DELETE FROM hx_keys WHERE (collection, id) IN
          (SELECT * FROM unnest(kr_c || r_c, kr_i || r_i));
        DELETE FROM hx_list_keys WHERE (collection, id) IN
          (SELECT * FROM unnest(kr_c || r_c, kr_i || r_i));
      END IF;
      DELETE FROM hx_records WHERE (collection, id) IN (SELECT * FROM unnest(r_c, r_i));
      INSERT INTO hx_records (collection, id, version, data)
        SELECT c, i, nextval('hx_version_seq'), d FROM unnest(u_c, u_i, u_d) AS w(c, i, d)
        ON CONFLICT (collection, id)
        DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data;
      INSERT INTO hx_keys (collection, idx, key, id) SELECT * FROM unnest(k_c, k_x, k_k, k_i)
        ON CONFLICT (collection, idx, key) DO UPDATE SET id = EXCLUDED.id;
      INSERT INTO hx_list_keys (collection, idx, key, id) SELECT * FROM unnest(l_c, l_x, l_k, l_i)
        ON CONFLICT DO NOTHING;
      FOR log_name IN SELECT DISTINCT l FROM unnest(e_l) AS e(l) ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(${LOG_LOCK}, hashtext(log_name));
      END LOOP;
      FOR n IN 1 .. coalesce(array_length(e_l, 1), 0) LOOP
        seqs := seqs || nextval('hx_log_seq');
        INSERT INTO hx_log_entries (log, seq, entry) VALUES (e_l[n], seqs[n], e_d[n]);
      END LOOP;
      RETURN seqs;
    END
    $$;
  `,
});

PG_MIGRATIONS.push({
  version: 4,
  name: 'invite requests in a table of their own, read per user',
  sql: `
    -- One row per invite request, found by target (their inbox) and by sender (their outbox); seq is the order
    -- requests were recorded in.
    CREATE TABLE hx_invite_requests (
      seq bigserial NOT NULL,
      request_id text PRIMARY KEY,
      to_user text NOT NULL,
      from_user text NOT NULL,
      sent_at bigint NOT NULL,
      expires_at bigint NOT NULL,
      state text NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX hx_invite_requests_by_target ON hx_invite_requests (to_user, seq);
    CREATE INDEX hx_invite_requests_by_sender ON hx_invite_requests (from_user, seq);
    -- The history the store log 'invite-requests' held: each request once, in its order, with its last state.
    INSERT INTO hx_invite_requests (request_id, to_user, from_user, sent_at, expires_at, state, updated_at)
      SELECT entry->'request'->>'requestId', entry->>'to', entry->'request'->>'fromUserId',
             (entry->'request'->>'sentAt')::numeric::bigint, (entry->'request'->>'expiresAt')::numeric::bigint,
             entry->'request'->>'state', (entry->'request'->>'updatedAt')::numeric::bigint
        FROM hx_log_entries WHERE log = 'invite-requests' AND entry->>'t' = 'request'
       ORDER BY seq
      ON CONFLICT (request_id) DO NOTHING;
    UPDATE hx_invite_requests r SET state = s.state, updated_at = s.at
      FROM (SELECT DISTINCT ON (entry->>'requestId') entry->>'requestId' AS id, entry->>'state' AS state,
                   (entry->>'at')::numeric::bigint AS at
              FROM hx_log_entries WHERE log = 'invite-requests' AND entry->>'t' = 'state'
             ORDER BY entry->>'requestId', seq DESC) s
     WHERE r.request_id = s.id;
    DELETE FROM hx_log_entries WHERE log = 'invite-requests';
  `,
});

PG_MIGRATIONS.push({
  version: 5,
  name: 'the moderation log read a page at a time: indexes on what the panel filters by',
  sql: `
    -- No host keeps the moderation log's keys any more: a page is a query, by target or by moderator.
    CREATE INDEX hx_log_entries_moderation_target ON hx_log_entries ((entry->>'targetUserId'), seq)
      WHERE log = 'moderation';
    CREATE INDEX hx_log_entries_moderation_moderator ON hx_log_entries ((entry->>'moderatorId'), seq)
      WHERE log = 'moderation';
  `,
});

PG_MIGRATIONS.push({
  version: 6,
  name: 'unique keys found by their beginning (users by the start of their name)',
  sql: `
    -- In byte order whatever the database's collation, so a range from a prefix finds exactly the keys it starts.
    CREATE INDEX hx_keys_by_prefix ON hx_keys (collection, idx, (key COLLATE "C"));
  `,
});

PG_MIGRATIONS.push({
  version: 7,
  name: 'optimistic commits: what transactions read is checked, under row-level locks, in the statement that writes them',
  sql: `
    -- A commit whose answer was lost is settled by its row here: the numbers of its history entries come with it.
    ALTER TABLE hx_tx_done ADD COLUMN seqs bigint[];
    -- Commits go through hx_commit_batch below.
    DROP FUNCTION hx_write(text, text[], text[], json[], text[], text[], text[], text[], text[], text[], text[],
      text[], text[], text[], text[], text[], text[], json[]);
    -- Takes the transaction-scoped advisory locks named (records, keys), in one order for every caller, so two
    -- commits never wait for each other in a circle. Names are hashed with the schema's name.
    CREATE FUNCTION hx_lock(names text[]) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      h bigint;
    BEGIN
      FOR h IN SELECT DISTINCT hashtextextended(current_schema() || chr(31) || n, 0) FROM unnest(names) AS n
               ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(h);
      END LOOP;
    END
    $$;
    -- Whether everything a transaction read is still so: records by version (0: absent), unique keys by the
    -- record holding them (null: none), list keys by the records they list. Evaluated in one snapshot.
    CREATE FUNCTION hx_reads_hold(reads jsonb) RETURNS boolean LANGUAGE sql STABLE AS $$
      SELECT NOT EXISTS (
          SELECT 1 FROM jsonb_array_elements(reads->'r') AS r(x)
           WHERE coalesce((SELECT version FROM hx_records WHERE collection = x->>0 AND id = x->>1), 0)
                 <> (x->>2)::bigint)
        AND NOT EXISTS (
          SELECT 1 FROM jsonb_array_elements(reads->'k') AS k(x)
           WHERE (SELECT id FROM hx_keys WHERE collection = x->>0 AND idx = x->>1 AND key = x->>2)
                 IS DISTINCT FROM x->>3)
        AND NOT EXISTS (
          SELECT 1 FROM jsonb_array_elements(reads->'l') AS l(x)
           WHERE coalesce((SELECT array_agg(id ORDER BY id) FROM hx_list_keys
                            WHERE collection = x->>0 AND idx = x->>1 AND key = x->>2), '{}')
                 <> coalesce((SELECT array_agg(v ORDER BY v) FROM jsonb_array_elements_text(x->3) AS v), '{}'))
    $$;
    -- The row-by-row locks of a commit (see hx_commit_batch): the records it read or writes, then the keys it read
    -- or changes, each set in one order for every caller.
    CREATE FUNCTION hx_commit_locks(
      sep text,
      rr_c text[], rr_i text[], rk_c text[], rk_x text[], rk_k text[], rl_c text[], rl_x text[], rl_k text[],
      u_c text[], u_i text[], r_c text[], r_i text[], kr_c text[], kr_i text[],
      k_c text[], k_x text[], k_k text[], l_c text[], l_x text[], l_k text[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM hx_lock(
        ARRAY(SELECT 'r' || sep || c || sep || i FROM unnest(rr_c, rr_i) AS x(c, i))
        || ARRAY(SELECT 'r' || sep || c || sep || i FROM unnest(u_c || r_c, u_i || r_i) AS x(c, i)));
      PERFORM hx_lock(
        ARRAY(SELECT 'k' || sep || collection || sep || idx || sep || key FROM hx_keys
               WHERE (collection, id) IN (SELECT * FROM unnest(kr_c || r_c, kr_i || r_i)))
        || ARRAY(SELECT 'l' || sep || collection || sep || idx || sep || key FROM hx_list_keys
                  WHERE (collection, id) IN (SELECT * FROM unnest(kr_c || r_c, kr_i || r_i)))
        || ARRAY(SELECT 'k' || sep || c || sep || x || sep || k FROM unnest(k_c || rk_c, k_x || rk_x, k_k || rk_k)
                   AS y(c, x, k))
        || ARRAY(SELECT 'l' || sep || c || sep || x || sep || k FROM unnest(l_c || rl_c, l_x || rl_x, l_k || rl_k)
                   AS y(c, x, k)));
    END
    $$;
    -- Transactions of one host, committed together (one flush of the log for all). They are numbered 1..n; each
    -- row of the arrays names its transaction (*_t): the records (rr_), unique keys (rk_) and list keys (rl_) it
    -- read, as hx_reads_hold checks them, then what it writes, as hx_write took it. None of them reads or writes
    -- what another of them writes (the host holds such a one back). First every lock any of them needs is taken,
    -- in one order for every caller (the records read or written, then the keys read or changed, then the
    -- histories appended to), so two commits never wait for each other in a circle. Each whose reads still hold
    -- is then written, all in a few statements. Per transaction the answer is its entries' numbers, or null when
    -- what it read changed (nothing written: the caller runs it again); with the answers, the new version of
    -- each record written, by collection and id (chr(31) between them). What a commit checked cannot change before
    -- it has written: commits are serializable without a snapshot held across the transaction.
    CREATE FUNCTION hx_commit_batch(
      n int, tx_ids text[],
      rr_t int[], rr_c text[], rr_i text[], rr_v bigint[],
      rk_t int[], rk_c text[], rk_x text[], rk_k text[], rk_i text[],
      rl_t int[], rl_c text[], rl_x text[], rl_k text[], rl_ids json[],
      u_t int[], u_c text[], u_i text[], u_d json[],
      r_t int[], r_c text[], r_i text[],
      kr_t int[], kr_c text[], kr_i text[],
      k_t int[], k_c text[], k_x text[], k_k text[], k_i text[],
      l_t int[], l_c text[], l_x text[], l_k text[], l_i text[],
      e_t int[], e_l text[], e_d json[]
    ) RETURNS jsonb LANGUAGE plpgsql AS $$
    DECLARE
      sep text := chr(31);
      failed int[];
      answers jsonb;
      versions jsonb;
      j int;
      entry_seq bigint;
      log_name text;
    BEGIN
      -- A commit of more than ${BIG_COMMIT} records and keys would need more locks than PostgreSQL's lock table holds
      -- (max_locks_per_transaction): it locks the whole table instead, waiting for the commits under way and
      -- holding off the others (each of which takes the table's ROW EXCLUSIVE lock first, so none is halfway).
      IF cardinality(rr_c) + cardinality(u_c) + cardinality(r_c) + 2 * cardinality(kr_c) + cardinality(k_c)
         + cardinality(l_c) + cardinality(rk_c) + cardinality(rl_c) > ${BIG_COMMIT} THEN
        LOCK TABLE hx_records IN SHARE ROW EXCLUSIVE MODE;
      ELSE
        LOCK TABLE hx_records IN ROW EXCLUSIVE MODE;
        PERFORM hx_commit_locks(sep, rr_c, rr_i, rk_c, rk_x, rk_k, rl_c, rl_x, rl_k, u_c, u_i, r_c, r_i, kr_c,
          kr_i, k_c, k_x, k_k, l_c, l_x, l_k);
      END IF;
      FOR log_name IN SELECT DISTINCT l FROM unnest(e_l) AS e(l) ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(${LOG_LOCK}, hashtext(log_name));
      END LOOP;
      -- Under the locks, the transactions whose reads no longer hold (each against the state before all of
      -- them: they are independent of each other).
      SELECT coalesce(array_agg(DISTINCT t), '{}') INTO failed FROM (
        SELECT x.t FROM unnest(rr_t, rr_c, rr_i, rr_v) AS x(t, c, i, v)
          LEFT JOIN hx_records h ON h.collection = x.c AND h.id = x.i
         WHERE coalesce(h.version, 0) <> x.v
        UNION ALL
        SELECT x.t FROM unnest(rk_t, rk_c, rk_x, rk_k, rk_i) AS x(t, c, ix, k, i)
          LEFT JOIN hx_keys h ON h.collection = x.c AND h.idx = x.ix AND h.key = x.k
         WHERE h.id IS DISTINCT FROM x.i
        UNION ALL
        SELECT x.t FROM unnest(rl_t, rl_c, rl_x, rl_k, rl_ids) AS x(t, c, ix, k, ids)
         WHERE coalesce((SELECT array_agg(id ORDER BY id) FROM hx_list_keys
                          WHERE collection = x.c AND idx = x.ix AND key = x.k), '{}')
               <> coalesce((SELECT array_agg(v ORDER BY v) FROM json_array_elements_text(x.ids) AS v), '{}')
      ) AS f;
      INSERT INTO hx_tx_done (id) SELECT tx_ids[t] FROM generate_series(1, n) AS t WHERE t <> ALL (failed);
      -- Keys are rewritten only for the records whose keys may have changed (kr) and removed ones.
      DELETE FROM hx_keys WHERE (collection, id) IN (
        SELECT c, i FROM unnest(kr_t || r_t, kr_c || r_c, kr_i || r_i) AS x(t, c, i) WHERE t <> ALL (failed));
      DELETE FROM hx_list_keys WHERE (collection, id) IN (
        SELECT c, i FROM unnest(kr_t || r_t, kr_c || r_c, kr_i || r_i) AS x(t, c, i) WHERE t <> ALL (failed));
      DELETE FROM hx_records WHERE (collection, id) IN (
        SELECT c, i FROM unnest(r_t, r_c, r_i) AS x(t, c, i) WHERE t <> ALL (failed));
      WITH written AS (
        INSERT INTO hx_records (collection, id, version, data)
          SELECT c, i, nextval('hx_version_seq'), d FROM unnest(u_t, u_c, u_i, u_d) AS x(t, c, i, d)
           WHERE t <> ALL (failed)
          ON CONFLICT (collection, id) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data
          RETURNING collection, id, version)
      SELECT coalesce(jsonb_object_agg(collection || sep || id, version), '{}') INTO versions FROM written;
      INSERT INTO hx_keys (collection, idx, key, id)
        SELECT c, ix, k, i FROM unnest(k_t, k_c, k_x, k_k, k_i) AS x(t, c, ix, k, i) WHERE t <> ALL (failed)
        ON CONFLICT (collection, idx, key) DO UPDATE SET id = EXCLUDED.id;
      INSERT INTO hx_list_keys (collection, idx, key, id)
        SELECT c, ix, k, i FROM unnest(l_t, l_c, l_x, l_k, l_i) AS x(t, c, ix, k, i) WHERE t <> ALL (failed)
        ON CONFLICT DO NOTHING;
      SELECT jsonb_agg(CASE WHEN t = ANY (failed) THEN NULL ELSE '[]'::jsonb END ORDER BY t) INTO answers
        FROM generate_series(1, n) AS t;
      -- History entries numbered in the order of the transactions, then of their entries (e_ rows come so).
      FOR j IN 1 .. coalesce(cardinality(e_t), 0) LOOP
        CONTINUE WHEN e_t[j] = ANY (failed);
        entry_seq := nextval('hx_log_seq');
        INSERT INTO hx_log_entries (log, seq, entry) VALUES (e_l[j], entry_seq, e_d[j]);
        answers := jsonb_set(answers, ARRAY[(e_t[j] - 1)::text], (answers->(e_t[j] - 1)) || to_jsonb(entry_seq));
      END LOOP;
      UPDATE hx_tx_done SET seqs = ARRAY(SELECT jsonb_array_elements_text(answers->(t - 1))::bigint)
        FROM (SELECT DISTINCT t FROM unnest(e_t) AS t WHERE t <> ALL (failed)) AS x
       WHERE hx_tx_done.id = tx_ids[x.t];
      RETURN jsonb_build_object('answers', answers, 'versions', versions);
    END
    $$;
  `,
});

/**
 * The trigram indexes of search (users' names, public avatars' and worlds' names), made at each start when
 * PostgreSQL has pg_trgm and they are missing: an extension created after a first start gets them at the next.
 */
const SEARCH_TRIGRAM_INDEXES = `
  DO $$
  DECLARE
    ext_schema text;
  BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NULL OR to_regclass('hx_keys') IS NULL OR to_regclass('hx_list_keys') IS NULL THEN
      RETURN;
    END IF;
    IF to_regclass('hx_keys_search') IS NULL THEN
      EXECUTE format('CREATE INDEX hx_keys_search ON hx_keys USING gin (key %I.gin_trgm_ops) '
        'WHERE collection = %L AND idx = %L', ext_schema, 'users', 'name');
    END IF;
    IF to_regclass('hx_list_keys_search') IS NULL THEN
      EXECUTE format('CREATE INDEX hx_list_keys_search ON hx_list_keys USING gin (key %I.gin_trgm_ops) '
        'WHERE idx = %L', ext_schema, 'searchName');
    END IF;
  END
  $$;
`;

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

export interface MigrationOptions {
  /**
   * Longest any statement of the migrations may run or wait for a lock (ms): building an index over a big table, or
   * waiting for another host's migrations or for the commits under way, takes longer than a request may.
   */
  timeoutMs?: number;
  /** Told before any step runs: the schema version found and the one the steps bring. */
  onMigrating?: (from: number, to: number) => void;
}

export const DEFAULT_MIGRATION_TIMEOUT_MS = 10 * 60_000;

/**
 * Brings the schema up to the last step of `migrations` in one transaction, under an advisory lock: processes
 * starting together wait for each other, and the second finds nothing left to do. Returns the schema's name. Runs
 * on a connection of its own, with `options.timeoutMs` as its limits.
 */
export async function runMigrations(
  connection: pg.ClientConfig,
  migrations: PgMigration[],
  options: MigrationOptions = {},
): Promise<string> {
  const timeoutMs = Math.floor(options.timeoutMs ?? DEFAULT_MIGRATION_TIMEOUT_MS);
  const client = new pg.Client({
    ...connection,
    statement_timeout: timeoutMs,
    lock_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
  });
  // A connection that breaks fails the query under way; unheard, its 'error' event would end the process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('BEGIN');
    const current = await lockSchema(client);
    const done = (await client.query<{ version: number }>('SELECT version FROM hx_migrations')).rows.map(
      (row) => row.version,
    );
    const known = Math.max(0, ...migrations.map((step) => step.version));
    const newest = Math.max(0, ...done);
    if (newest > known) throw new PgSchemaTooNewError(newest, known);
    if (newest < known) options.onMigrating?.(newest, known);
    // Commits under way end first, and those after check the new version (see migration 12).
    if (newest < known && (await client.query("SELECT to_regclass('hx_records') AS t")).rows[0]?.t)
      await client.query('LOCK TABLE hx_records IN SHARE ROW EXCLUSIVE MODE');
    for (const step of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.includes(step.version)) continue;
      await client.query(step.sql);
      await client.query('INSERT INTO hx_migrations (version, name) VALUES ($1, $2)', [
        step.version,
        step.name,
      ]);
    }
    await client.query(SEARCH_TRIGRAM_INDEXES);
    await client.query('COMMIT');
    return current;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Takes the migrations' lock on the schema (waiting for another process's migrations) and makes hx_migrations. */
async function lockSchema(client: pg.Client): Promise<string> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [MIGRATION_LOCK]);
  const current = (await client.query<{ schema: string | null }>('SELECT current_schema() AS schema')).rows[0]
    ?.schema;
  if (!current) throw new Error('the connection has no schema to create tables in (check search_path)');
  await client.query(`CREATE TABLE IF NOT EXISTS hx_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  return current;
}

PG_MIGRATIONS.push({
  version: 8,
  name: 'changes announced inside their commits and acknowledged once no host caches what they changed',
  // Nothing in the tables changes; the version does, so that a host of an earlier version (which announces after
  // its commits and acknowledges without waiting for other hosts' caches) refuses to start beside this one.
  sql: `COMMENT ON TABLE hx_records IS
    'Changes are announced inside their commits (NOTIFY) and acknowledged once no host caches what they changed.'`,
});

PG_MIGRATIONS.push({
  version: 9,
  name: 'commits planned once per connection',
  // PostgreSQL plans each statement of a PL/pgSQL function anew on every call while it expects a plan made for
  // the call's values to be cheaper than a generic one, as it does for the arrays hx_commit_batch takes: twice the
  // time of the whole commit for a few records. The plans do not depend on the values (each lookup is by key), so
  // the commit (and what it calls) uses generic plans, made once per connection.
  sql: `ALTER FUNCTION hx_commit_batch SET plan_cache_mode = force_generic_plan;`,
});

PG_MIGRATIONS.push({
  version: 10,
  name: 'list keys read in order: searches by name and tag are queries',
  // Searches walk an index's keys in byte order and stop at the page's end (PgCollection.searchKeys); unique keys
  // have that order since migration 6, list keys get it here.
  sql: `CREATE INDEX hx_list_keys_by_prefix ON hx_list_keys (collection, idx, (key COLLATE "C"), id);`,
});

PG_MIGRATIONS.push({
  version: 11,
  name: 'pg_trgm for searches of big indexes, where the database has it',
  // A search holding a text anywhere (`LIKE '%text%'`) of an index too big for hosts to keep (a million users)
  // would check every key; with pg_trgm a GIN index finds the keys holding the text's trigrams (made by
  // SEARCH_TRIGRAM_INDEXES). The extension comes with PostgreSQL (contrib) and is trusted: the database's owner
  // may create it. Where it cannot be created (another role, a build without contrib), nothing fails: searches
  // check every key.
  sql: `
    DO $$
    BEGIN
      CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'pg_trgm is not available (%): searches of big indexes check every key', SQLERRM;
    END
    $$;
  `,
});

/** hx_commit_batch's parameters as migration 7 made them (name and type), in order. */
const COMMIT_PARAMS = `n int, tx_ids text[], rr_t int[], rr_c text[], rr_i text[], rr_v bigint[],
  rk_t int[], rk_c text[], rk_x text[], rk_k text[], rk_i text[], rl_t int[], rl_c text[], rl_x text[], rl_k text[],
  rl_ids json[], u_t int[], u_c text[], u_i text[], u_d json[], r_t int[], r_c text[], r_i text[], kr_t int[],
  kr_c text[], kr_i text[], k_t int[], k_c text[], k_x text[], k_k text[], k_i text[], l_t int[], l_c text[],
  l_x text[], l_k text[], l_i text[], e_t int[], e_l text[], e_d json[]`
  .split(',')
  .map((param) => param.trim().split(' ') as [string, string]);

/** The SQLSTATE of a commit refused because a newer version of the program migrated the database. */
export const OUTDATED_HOST = 'HX001';

PG_MIGRATIONS.push({
  version: 12,
  name: 'commits of a host older than the database refused',
  // A host keeps the keys of the indexes its version declares. A host of an earlier version, still running when a
  // newer one migrated the database, would write records without the keys of the newer indexes (the newer host
  // builds them once, over the records there then). So a commit now names the schema version its host knows, and
  // one older than the database is refused, checked once its locks are held: a migration locks the records table
  // (runMigrations), so each commit either ended before it or checks after it. Hosts of the versions before this
  // one call the function with its former arguments, which no longer exist: their commits are refused too.
  sql: `
    ALTER FUNCTION hx_commit_batch(${COMMIT_PARAMS.map(([, type]) => type).join(', ')}) RENAME TO hx_commit_rows;
    CREATE FUNCTION hx_commit_batch(${COMMIT_PARAMS.map(([name, type]) => `${name} ${type}`).join(', ')},
      schema_version int) RETURNS jsonb LANGUAGE plpgsql AS $$
    DECLARE
      out jsonb;
      newest int;
    BEGIN
      out := hx_commit_rows(${COMMIT_PARAMS.map(([name]) => name).join(', ')});
      newest := (SELECT max(version) FROM hx_migrations);
      IF schema_version < newest THEN
        RAISE EXCEPTION USING ERRCODE = '${OUTDATED_HOST}', MESSAGE = format(
          'this host knows schema version %s, the database has %s: it saves nothing until it runs that version',
          schema_version, newest);
      END IF;
      RETURN out;
    END
    $$;
    ALTER FUNCTION hx_commit_batch SET plan_cache_mode = force_generic_plan;
  `,
});

PG_MIGRATIONS.push({
  version: 13,
  name: 'record versions numbered after every record (databases filled by migrate)',
  // `migrate` set the history numbering after the records it copied, not their versions: new commits reused
  // versions those records held, and a transaction that read such a record could commit over a newer one.
  sql: `SELECT setval('hx_version_seq', GREATEST((SELECT last_value FROM hx_version_seq),
          (SELECT coalesce(max(version), 1) FROM hx_records)));`,
});

/** The schema version this program brings a database to (its newest migration). */
export const PG_SCHEMA_VERSION = Math.max(...PG_MIGRATIONS.map((step) => step.version));
