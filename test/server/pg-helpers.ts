import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL the tests use: HYPERNEX_TEST_DATABASE_URL, by default the role and database .ci/run creates
 * (Debian's postgresql on loopback). Each test gets a schema of its own, dropped afterwards.
 */
export const TEST_DATABASE_URL =
  process.env.HYPERNEX_TEST_DATABASE_URL ?? 'postgres://hypernex:hypernex@127.0.0.1:5432/hypernex_test';

const made: string[] = [];

/** The URL of `url` with connections placed in `schema`, as libpq's `options` parameter does it. */
export function urlWithSchema(schema: string, url = TEST_DATABASE_URL): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.toString();
}

async function admin<R>(work: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${TEST_DATABASE_URL.replace(/:[^:@/]*@/, ':***@')} ` +
        `(${(error as Error).message}). npm test starts a throwaway PostgreSQL of its own (test/global-setup.ts, ` +
        "which needs Debian's postgresql: apt-get install -y postgresql); HYPERNEX_TEST_DATABASE_URL, when set, " +
        'must name a database whose role may create schemas.',
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A new, empty schema in the test database: its URL (a place for a store). */
export async function freshDatabaseUrl(): Promise<string> {
  const schema = `hx_test_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE SCHEMA ${schema}`));
  made.push(schema);
  return urlWithSchema(schema);
}

/** Runs one query in the schema of `url` (to look at what a store wrote). */
export async function queryAt<R extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Drops the schemas made so far. */
export async function dropSchemas(): Promise<void> {
  const schemas = made.splice(0);
  if (schemas.length === 0) return;
  await admin((client) => client.query(`DROP SCHEMA ${schemas.join(', ')} CASCADE`));
}
