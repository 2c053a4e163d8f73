import { afterEach, expect, it } from 'vitest';
import { PG_SCHEMA_VERSION } from '../../server/store/pg-migrations.js';
import type { PgStore } from '../../server/store/pg-store.js';
import { startHost, type TestHost } from './helpers.js';
import { dropSchemas, freshDatabaseUrl } from './pg-helpers.js';

/**
 * The indexes hosts keep the keys of, from each schema version on. A host of an earlier version, still running when
 * a newer one migrated the database, saves nothing (migration 12): so a change to the indexes (one added or
 * removed, or the keys one gives a record) needs a migration step of its own, and the new list goes here under that
 * step's version, the earlier ones left as they were.
 */
const INDEXES_SINCE: Record<number, string[]> = {
  12: [
    'avatars/buildFile (list)',
    'avatars/searchName (list)',
    'avatars/searchTag (list)',
    'gameservertokens/hash (unique)',
    'invitecodes/hash (unique)',
    'popularity/rank (list)',
    'uploads/owner (list)',
    'usernotes/target (list)',
    'users/banned (list)',
    'users/email (unique)',
    'users/name (unique)',
    'webhookoutbox/order (unique)',
    'worlds/buildFile (list)',
    'worlds/script (list)',
    'worlds/searchName (list)',
    'worlds/searchTag (list)',
  ],
};

const hosts: TestHost[] = [];

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close();
  await dropSchemas();
});

it('keeps the indexes its schema version names: a change to them comes with a migration step', async () => {
  const host = await startHost({ database: await freshDatabaseUrl() });
  hosts.push(host);
  const since = Math.max(
    ...Object.keys(INDEXES_SINCE)
      .map(Number)
      .filter((v) => v <= PG_SCHEMA_VERSION),
  );
  expect(
    (host.server.store as PgStore).declaredIndexes(),
    `The indexes declared differ from those of schema version ${since} on: add a migration step ` +
      '(server/store/pg-migrations.ts, even one that changes nothing) so that hosts of the earlier version stop ' +
      'saving, and list the indexes under its version in INDEXES_SINCE.',
  ).toEqual(INDEXES_SINCE[since]);
});
