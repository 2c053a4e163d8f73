import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StorageUnavailableError, StorageWriteError } from '../../server/errors.js';
import pg from 'pg';
import {
  INDEX_LOCK,
  MIGRATION_LOCK,
  PG_MIGRATIONS,
  PG_SCHEMA_VERSION,
  runMigrations,
} from '../../server/store/pg-migrations.js';
import { batchValues } from '../../server/store/pg-commit-batch.js';
import { PgListener } from '../../server/store/pg-listener.js';
import { PgStore, type PgStoreOptions } from '../../server/store/pg-store.js';
import {
  describeStoreConformance,
  entryKeyOf,
  type Doc,
  type Entry,
  type EntryKey,
} from './store-conformance.js';
import { dropSchemas, freshDatabaseUrl, queryAt } from './pg-helpers.js';

const SPEC = {
  collections: ['things'],
  logs: [{ name: 'history', keyOf: entryKeyOf }],
};

const opened: PgStore[] = [];

async function openStore(url: string, options: PgStoreOptions = {}): Promise<PgStore> {
  const store = await PgStore.open(url, SPEC, options);
  store.collection<Doc>('things').addIndex('name', (doc) => doc.name);
  store.collection<Doc>('things').addListIndex('tag', (doc) => doc.list ?? []);
  opened.push(store);
  return store;
}

/**
 * Makes the database refuse record `id`: as it is written ('refused by the test'), or, `atCommit`, only when the
 * statement writing it ends ('refused at commit', a deferred constraint trigger).
 */
async function refuseRecord(url: string, id: string, atCommit = false): Promise<void> {
  const message = atCommit ? 'refused at commit' : 'refused by the test';
  await queryAt(
    url,
    `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN IF NEW.id = '${id}' THEN RAISE EXCEPTION '${message}'; END IF; RETURN NEW; END $$`,
  );
  await queryAt(
    url,
    atCommit
      ? `CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON hx_records DEFERRABLE INITIALLY DEFERRED
         FOR EACH ROW EXECUTE FUNCTION refuse()`
      : 'CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON hx_records FOR EACH ROW EXECUTE FUNCTION refuse()',
  );
}

/** A TCP relay to the PostgreSQL of `url`: `cut()` breaks every connection through it (a network cut). */
async function cuttableProxy(url: string): Promise<{ url: string; cut(): void; close(): void }> {
  const target = new URL(url);
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => open.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((server.address() as AddressInfo).port);
  const cut = () => {
    for (const socket of open) socket.destroy();
  };
  const close = () => {
    cut();
    server.close();
  };
  return { url: relayed.toString(), cut, close };
}

/** Stores a and b on one fresh database, b having read record x ({ n: 0 }) that a wrote. */
async function twoStoresReadingX() {
  const url = await freshDatabaseUrl();
  const a = await openStore(url);
  const b = await openStore(url);
  const things = b.collection<Doc>('things');
  await a.tx((t) => t.repo<Doc>('things').put('x', { n: 0 }));
  await expect.poll(() => things.get('x')).toEqual({ n: 0 });
  return { url, a, b, things };
}

/** Ends the listening connection of every store on `url`'s schema (a restart, a network cut). */
async function cutListeningConnections(url: string): Promise<void> {
  const schema = new URL(url).searchParams.get('options')!.split('=')[1];
  await queryAt(url, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
    `hypernex-companion-listen ${schema}`.slice(0, 63),
  ]);
}

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close().catch(() => undefined);
  await dropSchemas();
});

describeStoreConformance('PostgreSQL', { place: freshDatabaseUrl, open: openStore });

describe('PostgreSQL store: several processes on one database', () => {
  it('shows a commit made by one store to the other', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 1, name: 'ex' }));
    // Heard through LISTEN/NOTIFY, without asking.
    await expect.poll(() => b.collection<Doc>('things').get('x')).toEqual({ n: 1, name: 'ex' });
    expect(await b.collection<Doc>('things').find('name', 'ex')).toEqual({ n: 1, name: 'ex' });
    await a.tx(async (t) => await t.repo<Doc>('things').remove('x'));
    await b.refresh();
    expect(await b.collection<Doc>('things').has('x')).toBe(false);
    expect(await b.collection<Doc>('things').find('name', 'ex')).toBeUndefined();
  });

  it('runs a transaction again when the other store changed what it read, and both effects land', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await a.tx((t) => t.repo<Doc>('things').put('counter', { n: 0, list: [] }));
    await b.refresh();
    let runsOfB = 0;
    let release!: () => void;
    const readDone = new Promise<void>((resolve) => (release = resolve));
    let goOn!: () => void;
    const mayCommit = new Promise<void>((resolve) => (goOn = resolve));
    const fromB = b.tx(async (t) => {
      runsOfB++;
      const current = (await t.repo<Doc>('things').get('counter'))!;
      if (runsOfB === 1) {
        release();
        await mayCommit;
      }
      t.repo<Doc>('things').put('counter', { n: current.n + 1, list: [...current.list!, 'b'] });
    });
    await readDone;
    // A commits while B's first run holds a version that is now old.
    await a.tx(async (t) => {
      const current = (await t.repo<Doc>('things').get('counter'))!;
      t.repo<Doc>('things').put('counter', { n: current.n + 1, list: [...current.list!, 'a'] });
    });
    goOn();
    await fromB;
    expect(runsOfB).toBe(2);
    await a.refresh();
    for (const store of [a, b])
      expect(await store.collection<Doc>('things').get('counter')).toEqual({ n: 2, list: ['a', 'b'] });
  });

  it('loses no update when two stores change one record many times at once', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await a.tx((t) => t.repo<Doc>('things').put('counter', { n: 0, list: [] }));
    await b.refresh();
    const bump = (store: PgStore, label: string) =>
      store.tx(async (t) => {
        const current = (await t.repo<Doc>('things').get('counter'))!;
        await new Promise((resolve) => setImmediate(resolve));
        t.repo<Doc>('things').put('counter', { n: current.n + 1, list: [...current.list!, label] });
      });
    await Promise.all(Array.from({ length: 20 }, (_, i) => bump(i % 2 === 0 ? a : b, `w${i}`)));
    await a.refresh();
    const counter = (await a.collection<Doc>('things').get('counter'))!;
    expect(counter.n).toBe(20);
    expect(new Set(counter.list).size).toBe(20);
  });

  it('answers a read from its cache while its lease holds', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url, { cacheLeaseMs: 1000 });
    const things = a.collection<Doc>('things');
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 0 }));
    await expect
      .poll(async () => {
        await things.get('x');
        return a.cacheCurrent();
      })
      .toBe(true);
    // Changed behind the store's back (no announcement): its cache current, it still answers what it holds.
    await queryAt(url, `UPDATE hx_records SET data = '{"n":-1}' WHERE id = 'x'`);
    expect(await things.get('x')).toEqual({ n: 0 });
  });

  it('reads at once, from its cache or not, every change another store acknowledged', async () => {
    const { a, b, things } = await twoStoresReadingX();
    for (let n = 1; n <= 60; n++) {
      await a.tx((t) => t.repo<Doc>('things').put('x', { n }));
      expect(await things.get('x')).toEqual({ n });
      expect(await b.tx(async (t) => (await t.repo<Doc>('things').get('x'))!.n)).toBe(n);
    }
  });

  it('asks the database while its listening connection is away: a change made meanwhile is read at once', async () => {
    const { url, a, things } = await twoStoresReadingX();
    // Both listening connections die (a restart, a cut): b cannot hear the next change.
    await cutListeningConnections(url);
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 1 }));
    expect(await things.get('x')).toEqual({ n: 1 });
  });

  it('acknowledges a commit at once when no other store listens, after the lease when one does', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url, { cacheLeaseMs: 1000 });
    await a.tx((t) => t.repo<Doc>('things').put('warm', { n: 0 }));
    let started = performance.now();
    for (let n = 0; n < 10; n++) await a.tx((t) => t.repo<Doc>('things').put('x', { n }));
    // Ten commits alone: none waited the lease (that would be ten seconds).
    expect(performance.now() - started).toBeLessThan(1000);
    await openStore(url);
    started = performance.now();
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 10 }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
  });

  it('with no cache lease, checks a record a transaction took from the cache: one changed unannounced runs it again on the new one', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url, { cacheLeaseMs: 0 });
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 1 }));
    expect(await a.collection<Doc>('things').get('x')).toEqual({ n: 1 });
    // Another host's change whose announcement never came: the cache still holds { n: 1 }.
    await queryAt(
      url,
      `UPDATE hx_records SET data = '{"n":10}', version = nextval('hx_version_seq') WHERE id = 'x'`,
    );
    let runs = 0;
    const seen = await a.tx(async (t) => {
      runs++;
      return (await t.repo<Doc>('things').get('x'))!.n;
    });
    expect(seen).toBe(10);
    expect(runs).toBe(2);
    await queryAt(
      url,
      `UPDATE hx_records SET data = '{"n":20}', version = nextval('hx_version_seq') WHERE id = 'x'`,
    );
    await a.tx(async (t) =>
      t.repo<Doc>('things').update('x', (draft) => {
        draft.n += 1;
      }),
    );
    expect(await a.collection<Doc>('things').get('x')).toEqual({ n: 21 });
  });

  it('commits transactions waiting together in one statement, each on its own: a refused one fails alone', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    // Checked only at the end of the statement: the whole statement of a batch fails.
    await refuseRecord(url, 'late', true);
    const ids = Array.from({ length: 12 }, (_, i) => (i === 5 ? 'late' : `fine${i}`));
    const outcomes = await Promise.allSettled(
      ids.map((id, i) =>
        a.tx((t) => {
          t.repo<Doc>('things').put(id, { n: i });
          t.append<Entry>('history', { seq: 0, target: id, note: 'made' });
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(
      ids.map((id) => (id === 'late' ? 'rejected' : 'fulfilled')),
    );
    expect((outcomes[5] as PromiseRejectedResult).reason).toBeInstanceOf(StorageWriteError);
    const stored = await queryAt<{ id: string }>(url, 'SELECT id FROM hx_records ORDER BY id');
    expect(stored.map((row) => row.id)).toEqual(ids.filter((id) => id !== 'late').sort());
    const history = await a.log<Entry, EntryKey>('history').query({}, 0, 20);
    expect(history.total).toBe(11);
    expect(new Set(history.entries.map((e) => e.seq)).size).toBe(11);
  });

  it('commits a transaction too large for row locks (the whole table locked instead) beside small ones', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await a.tx((t) => t.repo<Doc>('things').put('counter', { n: 0 }));
    const bump = (store: PgStore) =>
      store.tx(async (t) => {
        const current = (await t.repo<Doc>('things').get('counter'))!;
        await new Promise((resolve) => setImmediate(resolve));
        t.repo<Doc>('things').put('counter', { n: current.n + 1 });
      });
    const big = a.tx((t) => {
      for (let i = 0; i < 12_000; i++) t.repo<Doc>('things').put(`many${i}`, { n: i, name: `many${i}` });
    });
    await Promise.all([big, ...Array.from({ length: 20 }, (_, i) => bump(i % 2 ? a : b))]);
    expect(await a.collection<Doc>('things').count()).toBe(12_001);
    expect(await b.collection<Doc>('things').find('name', 'many11999')).toEqual({
      n: 11_999,
      name: 'many11999',
    });
    expect((await a.collection<Doc>('things').get('counter'))!.n).toBe(20);
  });

  it('refuses a commit whose record stays locked past the limit, and commits the one sent with it', async () => {
    const url = await freshDatabaseUrl();
    const a = await PgStore.open(url, SPEC, { lockTimeoutMs: 300 });
    opened.push(a);
    await a.tx((t) => ['first', 'stuck', 'free'].forEach((id) => t.repo<Doc>('things').put(id, { n: 0 })));
    // Another host holds the lock of record 'stuck' (as hx_commit_batch names it) and does not let go.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query(
      `SELECT pg_advisory_lock(hashtextextended(current_schema() || chr(31) || 'r' || chr(31) || 'things' ||
       chr(31) || 'stuck', 0))`,
    );
    try {
      const bump = (id: string) =>
        a.tx((t) =>
          t.repo<Doc>('things').update(id, (draft) => {
            draft.n += 1;
          }),
        );
      // 'first' goes alone; 'stuck' and 'free' wait for it and go together.
      const [first, stuck, free] = await Promise.allSettled([bump('first'), bump('stuck'), bump('free')]);
      expect(first.status).toBe('fulfilled');
      expect(free.status).toBe('fulfilled');
      expect(stuck.status).toBe('rejected');
      expect((stuck as PromiseRejectedResult).reason).toBeInstanceOf(StorageUnavailableError);
      const docs = await a.collection<Doc>('things').getMany(['first', 'stuck', 'free']);
      expect(docs.map((doc) => doc.n)).toEqual([1, 0, 1]);
    } finally {
      await holder.end();
    }
  });

  it('never deadlocks or loses an update when two stores change overlapping records in any order', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    const names = ['p', 'q', 'r', 's', 't'];
    await a.tx((t) => names.forEach((id) => t.repo<Doc>('things').put(id, { n: 0 })));
    // Each changes three of the five, in its own order, so locks are asked for in every order.
    const bump = (store: PgStore, i: number) =>
      store.tx(async (t) => {
        const picked = [names[i % 5]!, names[(i + 2) % 5]!, names[(i + 4) % 5]!];
        if (i % 2 === 1) picked.reverse();
        for (const id of picked) {
          const current = (await t.repo<Doc>('things').get(id))!;
          await new Promise((resolve) => setImmediate(resolve));
          t.repo<Doc>('things').put(id, { n: current.n + 1 });
        }
      });
    await Promise.all(Array.from({ length: 60 }, (_, i) => bump(i % 2 === 0 ? a : b, i)));
    const counts = await a.collection<Doc>('things').getMany(names);
    expect(counts.reduce((sum, doc) => sum + doc.n, 0)).toBe(180);
  });

  it('answers reads made side by side (one query per turn) each with its own records, and sees every acknowledged commit', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await b.tx(async (t) => {
      for (let i = 0; i < 300; i++) await t.repo<Doc>('things').put(`t${i}`, { n: i });
    });
    const things = a.collection<Doc>('things');
    // 600 reads in one turn: more than one query's worth, some ids missing, some asked twice.
    const reads = Array.from({ length: 600 }, (_, i) => things.get(`t${i % 400}`));
    const many = things.getMany(['t5', 'missing', 't7']);
    const found = await Promise.all(reads);
    found.forEach((doc, i) => expect(doc).toEqual(i % 400 < 300 ? { n: i % 400 } : undefined));
    expect(await many).toEqual([{ n: 5 }, { n: 7 }]);
    // A read asked for after B's commit was acknowledged sees it, while other reads are on their way.
    const before = things.get('t1');
    await b.tx((t) => t.repo<Doc>('things').put('t1', { n: -1 }));
    const after = await things.get('t1');
    expect(after).toEqual({ n: -1 });
    expect([{ n: 1 }, { n: -1 }]).toContainEqual(await before);
  });

  it('lets only one of two stores take a unique key', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    const create = (store: PgStore, id: string) =>
      store.tx(async (t) => {
        const taken = await t.repo<Doc>('things').find('name', 'same');
        await new Promise((resolve) => setImmediate(resolve));
        if (taken) return false;
        t.repo<Doc>('things').put(id, { n: 1, name: 'same' });
        return true;
      });
    const results = await Promise.all([create(a, 'from-a'), create(b, 'from-b'), create(a, 'from-a2')]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const rows = await queryAt<{ id: string }>(url, 'SELECT id FROM hx_records');
    expect(rows).toHaveLength(1);
  });

  it('numbers log entries of both stores in one order, the same in each, with no copy held by either', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    const appended = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).tx((t) => t.append<Entry>('history', { seq: 0, target: 't', note: `n${i}` })),
      ),
    );
    const notes = async (store: PgStore) =>
      (await store.log<Entry, EntryKey>('history').query({}, 0, 100)).entries.map((entry) => entry.note);
    const fromA = await notes(a);
    expect(fromA).toHaveLength(10);
    expect(await notes(b)).toEqual(fromA);
    // Newest first, in the order their numbers say.
    const bySeq = [...appended].sort((x, y) => y.seq - x.seq).map((entry) => entry.note);
    expect(fromA).toEqual(bySeq);
  });

  it('keeps everything across a restart of both stores', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await a.tx(async (t) => {
      t.repo<Doc>('things').put('one', { n: 1, name: 'one' });
      t.append<Entry>('history', { seq: 0, target: 'one', note: 'made' });
    });
    await b.tx((t) => t.repo<Doc>('things').put('two', { n: 2, name: 'two' }));
    await a.close();
    await b.close();
    const again = await openStore(url);
    expect(await again.collection<Doc>('things').find('name', 'two')).toEqual({ n: 2, name: 'two' });
    expect(await again.collection<Doc>('things').count()).toBe(2);
    expect((await again.log<Entry, EntryKey>('history').query({}, 0, 1)).entries[0]).toMatchObject({
      note: 'made',
    });
  });

  it('builds a new index over the records already there while both stores keep writing them', async () => {
    const url = await freshDatabaseUrl();
    const seeder = await openStore(url);
    await seeder.tx((t) => {
      for (let i = 0; i < 4500; i++) t.repo<Doc>('things').put(`id-${String(i).padStart(4, '0')}`, { n: i });
    });
    await seeder.close();
    // Both declare an index the records were written without (as two hosts of a new version would).
    const [a, b] = [await openStore(url), await openStore(url)];
    for (const store of [a, b])
      store.collection<Doc>('things').addListIndex('mod7', (doc) => [String(doc.n % 7)]);
    const write = async (store: PgStore, from: number) => {
      for (let step = 0; step < 40; step++) {
        const id = `id-${String((from + step * 97) % 4500).padStart(4, '0')}`;
        await store.tx(
          async (t) => void (await t.repo<Doc>('things').update(id, (doc) => void (doc.n += 1))),
        );
        if (step % 10 === 0)
          await store.tx((t) => t.repo<Doc>('things').put(`new-${from}-${step}`, { n: step }));
      }
    };
    // B's first read builds the index (4,500 records, five pages) while A and B write to the records.
    const [built] = await Promise.all([
      b.collection<Doc>('things').list('mod7', '3'),
      write(a, 1),
      write(b, 2),
    ]);
    expect(built.length).toBeGreaterThan(0);
    const all: Doc[] = [];
    for await (const doc of a.collection<Doc>('things').scan()) all.push(doc);
    const expected = (k: number) => all.filter((doc) => doc.n % 7 === k).map((doc) => doc.n);
    for (let k = 0; k < 7; k++) {
      for (const store of [a, b]) {
        const listed = (await store.collection<Doc>('things').list('mod7', String(k))).map((doc) => doc.n);
        expect(
          listed.sort((x, y) => x - y),
          `key ${k}`,
        ).toEqual(expected(k).sort((x, y) => x - y));
      }
    }
  });

  it('forgets what it kept before telling watchers that all may have changed: one reading at once reads the change', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url, { cacheLeaseMs: 1000 });
    const b = await openStore(url, { cacheLeaseMs: 1000 });
    const things = b.collection<Doc>('things');
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 0 }));
    // B keeps x, and its cache is current (a read then answers from it).
    await expect.poll(async () => [await things.get('x'), b.cacheCurrent()]).toEqual([{ n: 0 }, true]);
    const read: unknown[] = [];
    // Read in the same turn as told (as the check of a banned user's sockets does).
    b.watch('things', (id) => {
      if (id === null) void things.get('x').then((doc) => read.push(doc));
    });
    // Too many records for one announcement to name: it says that all may have changed.
    await a.tx((t) => {
      for (let i = 0; i < 600; i++) t.repo<Doc>('things').put(`many-${i}`, { n: i });
      t.repo<Doc>('things').put('x', { n: 1 });
    });
    await expect.poll(() => read.length).toBeGreaterThan(0);
    expect(read[0]).toEqual({ n: 1 });
  });

  it('refuses, saying so, a read that needs an index another store is building, and reads once it is built', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 1, name: 'Xeno' }));
    // Another host builds an index this version added: it holds the index's lock.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [INDEX_LOCK, 'things/late']);
    const b = await openStore(url, { lockTimeoutMs: 200 });
    b.collection<Doc>('things').addIndex('late', (doc) => doc.name?.toLowerCase());
    const found = b.collection<Doc>('things').find('late', 'xeno');
    await expect(found).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(found).rejects.toThrow(/still building an index/);
    await holder.end();
    expect(await b.collection<Doc>('things').find('late', 'xeno')).toEqual({ n: 1, name: 'Xeno' });
  });

  it('refuses a read that waits longer than a statement may for the index it is building, and goes on building', async () => {
    const url = await freshDatabaseUrl();
    await openStore(url);
    // A big collection written before the index existed: its build takes many pages.
    await queryAt(
      url,
      `INSERT INTO hx_records (collection, id, version, data)
         SELECT 'things', 'r' || i, nextval('hx_version_seq'), json_build_object('n', i, 'name', 'N' || i)
           FROM generate_series(1, 50000) AS i`,
    );
    const b = await openStore(url, { statementTimeoutMs: 300 });
    b.collection<Doc>('things').addIndex('late', (doc) => doc.name?.toLowerCase());
    const first = b.collection<Doc>('things').find('late', 'n7');
    await expect(first).rejects.toThrow(/still building an index/);
    await expect
      .poll(
        () =>
          b
            .collection<Doc>('things')
            .find('late', 'n7')
            .catch(() => 'refused'),
        { timeout: 30_000 },
      )
      .toEqual({ n: 7, name: 'N7' });
  });

  it("tells watchers of the other store's changes, and that all may have changed when its listening connection was lost", async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    const heard: Array<[string | null, boolean]> = [];
    b.watch('things', (id, remote) => heard.push([id, remote]));
    await a.tx((t) => t.repo<Doc>('things').put('x', { n: 1 }));
    await expect.poll(() => heard).toEqual([['x', true]]);
    await b.tx((t) => t.repo<Doc>('things').put('y', { n: 1 }));
    expect(heard).toEqual([
      ['x', true],
      ['y', false],
    ]);
    // The listening connections die (a restart, a network cut): once back, b says everything may have changed.
    await cutListeningConnections(url);
    await expect.poll(() => heard.at(-1), { timeout: 5000 }).toEqual([null, true]);
    await a.tx((t) => t.repo<Doc>('things').put('z', { n: 1 }));
    await expect.poll(() => heard.at(-1), { timeout: 5000 }).toEqual(['z', true]);
  });

  it('runs its migrations once when several stores start together, and refuses a newer schema', async () => {
    const url = await freshDatabaseUrl();
    const stores = await Promise.all([openStore(url), openStore(url), openStore(url)]);
    expect(stores).toHaveLength(3);
    const versions = await queryAt<{ version: number }>(url, 'SELECT version FROM hx_migrations');
    expect(versions.map((row) => row.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    // Commits are planned once per connection (migration 9): re-planned on each call, they take twice as long.
    const settings = await queryAt<{ proconfig: string[] }>(
      url,
      "SELECT proconfig FROM pg_proc WHERE proname = 'hx_commit_batch' AND pronamespace = current_schema()::regnamespace",
    );
    expect(settings.map((row) => row.proconfig)).toEqual([['plan_cache_mode=force_generic_plan']]);
    // Searches of big indexes go by trigram (pg_trgm comes with PostgreSQL; the tests' role may create it).
    const searchIndexes = async () =>
      (
        await queryAt<{ indexname: string }>(
          url,
          "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%_search' ORDER BY 1",
        )
      ).map((row) => row.indexname);
    expect(await searchIndexes()).toEqual(['hx_keys_search', 'hx_list_keys_search']);
    // Missing (pg_trgm created after the first start, say): the next start makes them.
    await queryAt(url, 'DROP INDEX hx_keys_search, hx_list_keys_search');
    await (await openStore(url)).close();
    expect(await searchIndexes()).toEqual(['hx_keys_search', 'hx_list_keys_search']);
    await queryAt(url, "INSERT INTO hx_migrations (version, name) VALUES (99, 'from the future')");
    await expect(PgStore.open(url, SPEC)).rejects.toThrow(/schema version 99, newer than this program/);
  });

  it('runs its migrations under limits of their own: waiting for another process migrating, or a slow step', async () => {
    const url = await freshDatabaseUrl();
    // Another process is migrating: it holds the migrations' lock longer than a request may wait or run.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [MIGRATION_LOCK]);
    const opening = openStore(url, { lockTimeoutMs: 100, statementTimeoutMs: 200 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await other.query('COMMIT');
    await other.end();
    const store = await opening;
    await store.tx((t) => t.repo<Doc>('things').put('x', { n: 1 }));
    // Past the migrations' own limit, a step is undone and the start refused.
    const slow = { version: PG_SCHEMA_VERSION + 1, name: 'slow', sql: 'SELECT pg_sleep(2)' };
    await expect(
      runMigrations({ connectionString: url }, [...PG_MIGRATIONS, slow], { timeoutMs: 300 }),
    ).rejects.toThrow(/statement timeout/);
    const versions = await queryAt<{ version: number }>(
      url,
      'SELECT max(version) AS version FROM hx_migrations',
    );
    expect(versions).toEqual([{ version: PG_SCHEMA_VERSION }]);
  });

  it('leaves no listening connection behind when closed while it connects', async () => {
    const url = await freshDatabaseUrl();
    const name = `hx-test-listen-${Date.now()}`;
    const listener = new PgListener({ connectionString: url }, ['hx_test'], name, {
      onMessage: () => undefined,
      onConnected: () => undefined,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    const started = listener.start();
    await listener.close();
    await started;
    const open = () => queryAt(url, 'SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [name]);
    await expect.poll(open).toEqual([]);
    // Still none a moment later (nothing reconnects).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await open()).toEqual([]);
  });

  it('refuses the commits of a host older than the database, says so once, and saves again once it is current', async () => {
    const url = await freshDatabaseUrl();
    const said: string[] = [];
    const logger = {
      info: () => undefined,
      warn: () => undefined,
      error: (_: unknown, text: string) => said.push(text),
    };
    const a = await openStore(url, { logger });
    await a.tx((t) => t.repo<Doc>('things').put('before', { n: 1 }));
    // A newer version migrated the database while this store ran.
    await queryAt(url, "INSERT INTO hx_migrations (version, name) VALUES ($1, 'a newer version')", [
      PG_SCHEMA_VERSION + 1,
    ]);
    for (const id of ['during', 'again']) {
      const refused = a.tx((t) => t.repo<Doc>('things').put(id, { n: 2 }));
      await expect(refused).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(refused).rejects.toThrow(/older version of Hypernex Companion than its database/);
    }
    expect(said.filter((text) => /migrated the database to a newer version/.test(text))).toHaveLength(1);
    expect(await queryAt(url, 'SELECT id FROM hx_records ORDER BY id')).toEqual([{ id: 'before' }]);
    // Not even its idempotency key was kept: the commit did not happen.
    expect(await queryAt(url, 'SELECT count(*)::int AS n FROM hx_tx_done')).toEqual([{ n: 1 }]);
    // Hosts of the versions before the check call the commit with their arguments: it no longer exists for them.
    const former = Array.from({ length: 39 }, (_, i) => `$${i + 1}`).join(', ');
    await expect(queryAt(url, `SELECT hx_commit_batch(${former})`, batchValues([]))).rejects.toThrow(
      /function hx_commit_batch\(.*\) does not exist/,
    );
    await queryAt(url, 'DELETE FROM hx_migrations WHERE version = $1', [PG_SCHEMA_VERSION + 1]);
    await a.tx((t) => t.repo<Doc>('things').put('after', { n: 3 }));
    expect(await queryAt(url, 'SELECT id FROM hx_records ORDER BY id')).toEqual([
      { id: 'after' },
      { id: 'before' },
    ]);
  });

  it('settles a write whose answer was lost: a retry refused for time is tried again until it is done', async () => {
    const url = await freshDatabaseUrl();
    const proxy = await cuttableProxy(url);
    const store = await openStore(proxy.url, { lockTimeoutMs: 200, settleTimeoutMs: 10_000 });
    await queryAt(
      url,
      "CREATE TABLE counted (id text PRIMARY KEY, n int); INSERT INTO counted VALUES ('r', 0)",
    );
    // Another session holds the row: each try waits on it.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query("BEGIN; SELECT * FROM counted WHERE id = 'r' FOR UPDATE");
    const written = store.writeIdempotent<{ n: number }>(
      "UPDATE counted SET n = n + 1 WHERE id = 'r' RETURNING n",
      [],
    );
    // The first try's connection breaks while it waits: its answer is lost (the host cannot tell what happened).
    await expect
      .poll(() =>
        queryAt(
          url,
          "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'UPDATE counted%' AND wait_event_type = 'Lock'",
        ),
      )
      .toHaveLength(1);
    proxy.cut();
    // The tries after it are refused for time while the row is held (200 ms each): none of that settles it.
    await new Promise((resolve) => setTimeout(resolve, 700));
    await holder.query('COMMIT');
    await holder.end();
    expect(await written).toEqual([{ n: 1 }]);
    proxy.close();
  });

  it('refuses a commit PostgreSQL refuses, shows it to nobody, and goes on with the next', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    const b = await openStore(url);
    await a.tx((t) => t.repo<Doc>('things').put('kept', { n: 1 }));
    // The database refuses one record (as a full disk or a lost connection would refuse any).
    await refuseRecord(url, 'poison');
    const effects: string[] = [];
    const failed = a.tx(async (t) => {
      await t.repo<Doc>('things').update('kept', (draft) => {
        draft.n = 2;
      });
      t.repo<Doc>('things').put('poison', { n: 9 });
      t.append<Entry>('history', { seq: 0, target: 'kept', note: 'never' });
      t.afterCommit(() => effects.push('never'));
    });
    await expect(failed).rejects.toBeInstanceOf(StorageWriteError);
    await expect(failed).rejects.toThrow(/refused by the test/);
    expect(effects).toEqual([]);
    expect(await a.collection<Doc>('things').get('kept')).toEqual({ n: 1 });
    expect(await a.collection<Doc>('things').has('poison')).toBe(false);
    expect((await a.log<Entry, EntryKey>('history').query({}, 0, 1)).total).toBe(0);
    expect(await queryAt(url, 'SELECT id FROM hx_records')).toEqual([{ id: 'kept' }]);
    await a.tx(
      async (t) =>
        await t.repo<Doc>('things').update('kept', (draft) => {
          draft.n = 3;
        }),
    );
    await b.refresh();
    expect(await b.collection<Doc>('things').get('kept')).toEqual({ n: 3 });
    expect((await b.log<Entry, EntryKey>('history').query({}, 0, 1)).total).toBe(0);
  });

  it('refuses a commit whose COMMIT fails, after making sure it did not happen', async () => {
    const url = await freshDatabaseUrl();
    const a = await openStore(url);
    // Checked only at COMMIT (a deferred constraint trigger): the statements succeed, the commit fails.
    await refuseRecord(url, 'late', true);
    await expect(a.tx((t) => t.repo<Doc>('things').put('late', { n: 1 }))).rejects.toThrow(
      /refused at commit/,
    );
    expect(await a.collection<Doc>('things').has('late')).toBe(false);
    expect(await queryAt(url, 'SELECT id FROM hx_records')).toEqual([]);
    await a.tx((t) => t.repo<Doc>('things').put('fine', { n: 2 }));
    expect(await a.collection<Doc>('things').get('fine')).toEqual({ n: 2 });
  });

  it('numbers new versions after every record a database holds (one `migrate` filled before version 13)', async () => {
    const url = await freshDatabaseUrl();
    await runMigrations(
      { connectionString: url },
      PG_MIGRATIONS.filter((step) => step.version <= 12),
    );
    // As `migrate` left it: copied records with their versions, the version numbering not moved on.
    await queryAt(
      url,
      `INSERT INTO hx_records (collection, id, version, data) VALUES ('things', 'a', 40, '{"n":1}')`,
    );
    const store = await openStore(url);
    await store.tx((t) => t.repo<Doc>('things').put('b', { n: 2 }));
    const versions = await queryAt<{ id: string; version: string }>(
      url,
      'SELECT id, version FROM hx_records ORDER BY id',
    );
    expect(versions.map((row) => [row.id, Number(row.version) > 40])).toEqual([
      ['a', false],
      ['b', true],
    ]);
  });

  it('moves on a database of the earlier layout (records and histories replayed by every host): records, keys, histories', async () => {
    const url = await freshDatabaseUrl();
    // The earlier layout, as hosts of the previous version left it.
    await runMigrations(
      { connectionString: url },
      PG_MIGRATIONS.filter((step) => step.version <= 2),
    );
    await queryAt(
      url,
      `INSERT INTO hx_records (collection, id, version, data) VALUES
         ('things', 'a', 3, '{"n":1,"name":"Alpha","list":["red"]}'), ('things', 'b', 4, '{"n":2,"name":"Beta"}')`,
    );
    await queryAt(
      url,
      `INSERT INTO hx_log_entries (log, seq, entry) VALUES ('history', 5, '{"target":"a","note":"old"}')`,
    );
    // The invite-request history as a store log: a request, then a new state of it.
    const request = {
      requestId: 'invreq_1',
      fromUserId: 'user_a',
      sentAt: 100,
      expiresAt: 1000,
      updatedAt: 100,
    };
    await queryAt(url, 'INSERT INTO hx_log_entries (log, seq, entry) VALUES ($1, 6, $2), ($1, 7, $3)', [
      'invite-requests',
      JSON.stringify({ t: 'request', to: 'user_b', request: { ...request, state: 'new' }, seq: 6 }),
      JSON.stringify({ t: 'state', to: 'user_b', requestId: 'invreq_1', state: 'seen', at: 150, seq: 7 }),
    ]);
    await queryAt(url, 'UPDATE hx_clock SET seq = 7');
    const store = await openStore(url);
    const things = store.collection<Doc>('things');
    expect(await things.get('a')).toEqual({ n: 1, name: 'Alpha', list: ['red'] });
    expect(await things.find('name', 'Beta')).toEqual({ n: 2, name: 'Beta' });
    expect((await things.list('tag', 'red')).map((doc) => doc.n)).toEqual([1]);
    const history = store.log<Entry, EntryKey>('history');
    expect(await history.query({}, 0, 10)).toEqual({
      entries: [{ seq: 5, target: 'a', note: 'old' }],
      total: 1,
    });
    const entry = await store.tx((t) => t.append<Entry>('history', { seq: 0, target: 'b', note: 'new' }));
    expect(entry.seq).toBeGreaterThan(5);
    const versions = await queryAt<{ version: number }>(
      url,
      'SELECT version FROM hx_migrations ORDER BY version',
    );
    expect(versions.map((row) => row.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(await queryAt(url, "SELECT to_regclass('hx_commits') AS gone")).toEqual([{ gone: null }]);
    // The invite requests moved into their table with their last state; the log no longer holds them.
    expect(
      await queryAt(
        url,
        'SELECT request_id, to_user, from_user, sent_at, state, updated_at FROM hx_invite_requests',
      ),
    ).toEqual([
      {
        request_id: 'invreq_1',
        to_user: 'user_b',
        from_user: 'user_a',
        sent_at: '100',
        state: 'seen',
        updated_at: '150',
      },
    ]);
    expect(await queryAt(url, "SELECT seq FROM hx_log_entries WHERE log = 'invite-requests'")).toEqual([]);
  });

  it('says what is wrong when PostgreSQL cannot be reached', async () => {
    await expect(PgStore.open('postgres://nobody:secret@127.0.0.1:1/none', SPEC)).rejects.toThrow(
      /Cannot reach PostgreSQL at postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none/,
    );
  });
});
