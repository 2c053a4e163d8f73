import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findPostgresBin, startPgInstance, type PgInstance } from './pg-instance.js';

/**
 * The throwaway PostgreSQL the fault tests start: it answers, keeps committed rows through a fast and an
 * immediate stop, hangs while paused and answers again once resumed, and leaves no folder behind.
 */

/** How long a query may hang on a paused server before the client gives up, and the bound on that. */
const QUERY_TIMEOUT_MS = 300;
const PAUSED_BOUND_MS = 1000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let instance: PgInstance | undefined;
const others: PgInstance[] = [];
const clients: pg.Client[] = [];

/** A connected client on `url` whose every wait is bounded, closed after the test. */
async function connect(url: string, queryTimeoutMs = 5000): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: Math.min(queryTimeoutMs, 5000),
    query_timeout: queryTimeoutMs,
  });
  // A stop ends open connections: the client reports it here, not as a crash of the test process.
  client.on('error', () => {});
  clients.push(client);
  await client.connect();
  return client;
}

/** The first column of each row one query answers, on a fresh connection. */
async function values(url: string, text: string): Promise<unknown[]> {
  const client = await connect(url);
  return (await client.query(text)).rows.map((row: Record<string, unknown>) => Object.values(row)[0]);
}

/** How long `promise` took to settle, and how. */
async function timed(promise: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  try {
    await promise;
    return { ms: performance.now() - started, error: null };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

async function closeClients(): Promise<void> {
  // end() waits for the server to close the connection: bounded, as the server may be gone or paused.
  await Promise.all(
    clients.splice(0).map((client) => Promise.race([client.end().catch(() => {}), sleep(2000)])),
  );
}

function running(): PgInstance {
  if (!instance) throw new Error('the throwaway PostgreSQL did not start (see beforeAll)');
  return instance;
}

beforeAll(async () => {
  instance = await startPgInstance();
});

afterEach(async () => {
  // A test that failed half-way leaves the server running and answering for the next one.
  if (instance) {
    await instance.resume().catch(() => {});
    await instance.start();
  }
  await closeClients();
});

afterAll(async () => {
  await closeClients();
  await Promise.allSettled([instance, ...others].map((each) => each?.destroy()));
});

describe('a throwaway PostgreSQL', () => {
  it('answers at its url as a superuser on the loopback port it names, with the settings the tests rely on', async () => {
    const pgi = running();
    const client = await connect(pgi.url);
    const { rows } = await client.query<Record<string, string>>(
      `SELECT current_setting('port') AS port, current_setting('is_superuser') AS superuser,
              host(inet_server_addr()) AS address, current_database() AS database,
              current_setting('max_connections') AS max_connections, current_setting('fsync') AS fsync,
              current_setting('unix_socket_directories') AS sockets, current_setting('data_directory') AS data`,
    );
    expect(rows[0]).toMatchObject({
      port: String(pgi.port),
      superuser: 'on',
      address: '127.0.0.1',
      database: 'hypernex_faults',
      max_connections: '100',
      fsync: 'on',
    });
    expect(rows[0]?.sockets?.startsWith(pgi.dir)).toBe(true);
    expect(rows[0]?.data?.startsWith(pgi.dir)).toBe(true);
    expect(pgi.url).toBe(`postgres://postgres@127.0.0.1:${pgi.port}/hypernex_faults`);
  });

  it('keeps a committed row through a fast stop, and comes back on the same port', async () => {
    const pgi = running();
    const client = await connect(pgi.url);
    await client.query('CREATE TABLE fast_rows (id int PRIMARY KEY, note text)');
    await client.query("INSERT INTO fast_rows VALUES (1, 'before the fast stop')");

    await pgi.stop('fast');
    await expect(connect(pgi.url)).rejects.toThrow(/ECONNREFUSED/);
    await pgi.start();

    expect(await values(pgi.url, 'SELECT note FROM fast_rows')).toEqual(['before the fast stop']);
    expect(await values(pgi.url, "SELECT current_setting('port')")).toEqual([String(pgi.port)]);
  });

  it('keeps an acknowledged row through an immediate stop (no shutdown checkpoint: crash recovery)', async () => {
    const pgi = running();
    const client = await connect(pgi.url);
    await client.query('CREATE TABLE immediate_rows (id int PRIMARY KEY, note text)');
    await client.query("INSERT INTO immediate_rows SELECT n, 'row ' || n FROM generate_series(1, 1000) n");
    await client.query('BEGIN');
    await client.query("INSERT INTO immediate_rows VALUES (1001, 'committed')");
    await client.query('COMMIT');
    await client.query('BEGIN');
    await client.query("INSERT INTO immediate_rows VALUES (1002, 'never committed')");

    await pgi.stop('immediate');
    await pgi.start();

    expect(await values(pgi.url, 'SELECT count(*)::int FROM immediate_rows')).toEqual([1001]);
    expect(await values(pgi.url, 'SELECT note FROM immediate_rows WHERE id > 1000')).toEqual(['committed']);
  });

  it('hangs while paused (a 300 ms client query timeout fires within a second), and answers once resumed', async () => {
    const pgi = running();
    const client = await connect(pgi.url, QUERY_TIMEOUT_MS);
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);

    await pgi.pause();
    const query = await timed(client.query('SELECT 1'));
    expect(query.error).toBeInstanceOf(Error);
    expect((query.error as Error).message).toMatch(/Query read timeout/);
    expect(query.ms).toBeLessThan(PAUSED_BOUND_MS);
    // A new connection does not get through either: the postmaster does not answer its startup message.
    const fresh = await timed(connect(pgi.url, QUERY_TIMEOUT_MS));
    expect(fresh.error).toBeInstanceOf(Error);
    expect(fresh.ms).toBeLessThan(PAUSED_BOUND_MS);

    await pgi.resume();
    expect(await values(pgi.url, 'SELECT 2')).toEqual([2]);
    // The connection that timed out is still usable once the late answer to its hung query has arrived.
    expect((await client.query('SELECT 3 AS three')).rows).toEqual([{ three: 3 }]);
  });

  it('starts a second one beside the first, and destroy stops it and removes its folder', async () => {
    const second = await startPgInstance();
    others.push(second);
    expect(second.port).not.toBe(running().port);
    expect(existsSync(second.dir)).toBe(true);
    expect(await values(second.url, 'SELECT 1')).toEqual([1]);

    await second.destroy();
    expect(existsSync(second.dir)).toBe(false);
    await expect(connect(second.url)).rejects.toThrow(/ECONNREFUSED/);
    // Again is harmless (afterAll destroys it once more).
    await second.destroy();
    // The first one is untouched.
    expect(await values(running().url, 'SELECT 1')).toEqual([1]);
  });

  it('destroys a paused instance too', async () => {
    const third = await startPgInstance();
    others.push(third);
    await third.pause();
    await third.destroy();
    expect(existsSync(third.dir)).toBe(false);
  });
});

describe('finding the binaries', () => {
  it('picks the newest version folder that has initdb, pg_ctl and postgres', async () => {
    expect(findPostgresBin()).toMatch(/^\/usr\/lib\/postgresql\/\d+(\.\d+)?\/bin$/);
    const root = await mkdtemp(join(tmpdir(), 'hnx-pg-versions-'));
    try {
      // 16 is newer but incomplete; 15 beats 9.6 as a number, not as a string.
      for (const [version, names] of [
        ['9.6', ['initdb', 'pg_ctl', 'postgres']],
        ['15', ['initdb', 'pg_ctl', 'postgres']],
        ['16', ['initdb', 'pg_ctl']],
      ] as const) {
        await mkdir(join(root, version, 'bin'), { recursive: true });
        for (const name of names) await writeFile(join(root, version, 'bin', name), '', { mode: 0o755 });
      }
      expect(findPostgresBin(root)).toBe(join(root, '15', 'bin'));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('names the apt-get command when they are missing', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'hnx-pg-none-'));
    try {
      expect(() => findPostgresBin(empty)).toThrow(/apt-get install -y postgresql/);
      expect(() => findPostgresBin(join(empty, 'absent'))).toThrow(/apt-get install -y postgresql/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
