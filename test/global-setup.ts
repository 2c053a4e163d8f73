import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { findPostgresBin, startPgInstance, type PgInstance } from './server/pg-instance.js';
import { freePort, ThrowawayRedis } from './server/redis-instance.js';

/**
 * Runs once before every test run (vitest's globalSetup): what the tests need beyond npm is Debian's PostgreSQL,
 * Redis and Chromium. A missing one is installed when this runs as root (as CI does); otherwise the run stops with
 * the one command to run. Unless HYPERNEX_TEST_DATABASE_URL and HYPERNEX_TEST_REDIS_URL name servers to use, a
 * throwaway PostgreSQL and Redis are started for this run (temporary folders, free loopback ports) and removed
 * after it: no system cluster, role, database or service is needed.
 */
export default async function setup(): Promise<() => Promise<void>> {
  ensurePackages();
  const stops: Array<() => Promise<void>> = [];
  if (!process.env.HYPERNEX_TEST_DATABASE_URL) {
    const pg: PgInstance = await startPgInstance();
    stops.push(() => pg.destroy());
    process.env.HYPERNEX_TEST_DATABASE_URL = await withPasswordRole(pg.url);
  }
  if (!process.env.HYPERNEX_TEST_REDIS_URL) {
    const dir = await mkdtemp(join(tmpdir(), 'hnx-test-redis-'));
    const redis = new ThrowawayRedis(await freePort(), dir);
    await redis.start();
    stops.push(async () => {
      await redis.kill();
      await rm(dir, { recursive: true, force: true });
    });
    process.env.HYPERNEX_TEST_REDIS_URL = redis.url;
  }
  return async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
}

/**
 * A role with a password on the throwaway server (which trusts local connections), so URLs look as in production
 * and the tests can check the password never shows.
 */
async function withPasswordRole(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("CREATE ROLE hypernex LOGIN SUPERUSER PASSWORD 'hypernex'");
  } finally {
    await client.end();
  }
  const placed = new URL(url);
  placed.username = 'hypernex';
  placed.password = 'hypernex';
  return placed.toString();
}

/** Debian's packages the tests run: installed when missing and this process may (root), else named. */
function ensurePackages(): void {
  const missing: string[] = [];
  if (!hasPostgres()) missing.push('postgresql');
  if (spawnSync('redis-server', ['--version']).status !== 0) missing.push('redis-server');
  if (!existsSync('/usr/bin/chromium')) missing.push('chromium');
  if (missing.length === 0) return;
  const command = `apt-get install -y ${missing.join(' ')}`;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(
      `The tests need Debian's ${missing.join(', ')}: run  sudo ${command}  (never npx playwright install).`,
    );
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], {
    stdio: 'inherit',
    env,
  });
}

function hasPostgres(): boolean {
  try {
    findPostgresBin();
    return true;
  } catch {
    return false;
  }
}
