import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MovedToDatabaseError } from '../../server/store/data-folder.js';
import { UsersRepo } from '../../server/store/users.js';
import {
  assertBuilt,
  createUserCli,
  postJson,
  runCli,
  spawnServe,
  stop as stopServed,
} from './cli-helpers.js';
import {
  expectFail,
  expectOk,
  PASSWORD,
  signUp,
  startHost,
  tempDir,
  type Account,
  type TestHost,
} from './helpers.js';
import { dropSchemas, freshDatabaseUrl, queryAt, TEST_DATABASE_URL } from './pg-helpers.js';
import { upload } from './upload-helpers.js';

/** The host on PostgreSQL (`--database`): real HTTP calls, restarts, two hosts on one database, migrate. */

const hosts: TestHost[] = [];
const dirs: string[] = [];

async function newDir(): Promise<string> {
  const dir = await tempDir('hnx-pg-host-');
  dirs.push(dir);
  return dir;
}

async function start(dir: string, database: string | null): Promise<TestHost> {
  const host = await startHost({ database }, { dir });
  hosts.push(host);
  return host;
}

async function stop(host: TestHost): Promise<void> {
  hosts.splice(hosts.indexOf(host), 1);
  await host.close();
}

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  await dropSchemas();
});

const login = async (host: TestHost, username: string, message = 'Login Successful'): Promise<Account> => {
  const result = expectOk(await host.post('login', { username, password: PASSWORD }), message);
  const user = expectOk(
    await host.post('getUser', { username, tokenContent: (result.token as { content: string }).content }),
  ).UserData as { Id: string };
  return { id: user.Id, username, token: (result.token as { content: string }).content };
};

const bioOf = async (host: TestHost, account: Account) =>
  (
    expectOk(await host.post('getUser', { userid: account.id, tokenContent: account.token })).UserData as {
      Bio: { StatusText: string };
    }
  ).Bio;

describe('host on PostgreSQL', () => {
  it('signs up, logs in, updates a bio and reads it back, across a restart; the folder holds no records', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    let host = await start(dir, database);
    const alice = await signUp(host, 'alice');
    const signedIn = await login(host, 'ALICE');
    expect(signedIn.id).toBe(alice.id);
    expectOk(
      await host.post('updateBio', {
        userid: alice.id,
        tokenContent: signedIn.token,
        bio: { StatusText: 'on pg' },
      }),
      'Updated Bio!',
    );
    expect((await bioOf(host, signedIn)).StatusText).toBe('on pg');
    const rows = await queryAt<{ data: { Bio: { StatusText: string } } }>(
      database,
      "SELECT data FROM hx_records WHERE collection = 'users' AND id = $1",
      [alice.id],
    );
    expect(rows[0]!.data.Bio.StatusText).toBe('on pg');
    const names = await readdir(dir);
    expect(names).toContain('database.json');
    for (const embedded of ['meta.json', 'users', 'wal', 'companion.lock', 'moderation-log.jsonl'])
      expect(names).not.toContain(embedded);

    await stop(host);
    host = await start(dir, database);
    expect((await bioOf(host, signedIn)).StatusText).toBe('on pg');
    expectFail(
      await host.post('createUser', { username: 'Alice', password: PASSWORD, email: 'x@example.com' }),
      'USERNAME_TAKEN',
    );
  });

  it('runs two hosts on one database and one folder: what one commits the other serves', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    const a = await start(dir, database);
    const b = await start(dir, database);
    const bob = await signUp(a, 'bob');
    await expect.poll(async () => (await b.post('getUser', { username: 'bob' })).success).toBe(true);
    const onB = await login(b, 'bob');
    expectOk(
      await b.post('updateBio', { userid: bob.id, tokenContent: onB.token, bio: { StatusText: 'via b' } }),
    );
    await expect.poll(async () => (await bioOf(a, bob)).StatusText).toBe('via b');
    // One username, whichever host is asked.
    const [first, second] = await Promise.all([
      a.post('createUser', { username: 'carol', password: PASSWORD, email: 'c1@example.com' }),
      b.post('createUser', { username: 'CAROL', password: PASSWORD, email: 'c2@example.com' }),
    ]);
    expect([first.success, second.success].sort()).toEqual([false, true]);
    const carols = await queryAt(
      database,
      "SELECT id FROM hx_records WHERE collection = 'users' AND lower(data->>'Username') = 'carol'",
    );
    expect(carols).toHaveLength(1);
    // Each host receives uploads in a temporary folder of its own; the files land in the shared folder.
    expect(a.server.uploads.tmpDir).not.toBe(b.server.uploads.tmpDir);
    const sent = expectOk(await upload(b, onB, { name: 'shared.png', data: 'seen by both' })).UploadData as {
      FileId: string;
    };
    // Served by the other host once it heard of the commit.
    await expect.poll(async () => (await a.raw(`file/${bob.id}/${sent.FileId}`)).text()).toBe('seen by both');
  });

  it('refuses an embedded data folder that was not migrated, and a folder that is not ours', async () => {
    const database = await freshDatabaseUrl();
    const embedded = await newDir();
    await stop(await start(embedded, null));
    await expect(startHost({ database }, { dir: embedded })).rejects.toThrow(
      /migrate --from DIR --database URL/,
    );
    const foreign = await newDir();
    await writeFile(join(foreign, 'notes.txt'), 'mine');
    await expect(startHost({ database }, { dir: foreign })).rejects.toThrow(
      /cannot be used as a data folder/,
    );
    expect(await readdir(foreign)).toEqual(['notes.txt']);
    const rows = await queryAt(database, 'SELECT 1 FROM pg_tables WHERE tablename = $1', ['hx_records']);
    expect(rows).toHaveLength(0);
  });

  it('an embedded host refuses a folder whose records are in PostgreSQL', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    await stop(await start(dir, database));
    await expect(startHost({}, { dir })).rejects.toBeInstanceOf(MovedToDatabaseError);
  });
});

describe('CLI on PostgreSQL', () => {
  beforeAll(() => assertBuilt());

  it('serve --database runs the host on PostgreSQL and names the database without its password', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    const served = await spawnServe(['--data-dir', dir, '--database', database]);
    try {
      const password = new URL(TEST_DATABASE_URL).password;
      expect(served.stdout()).toMatch(/^database: postgres:\/\/[^@\n]*:\*\*\*@/m);
      expect(served.stdout() + served.stderr()).not.toContain(`:${password}@`);
      const made = await postJson(served.url, 'createUser', {
        username: 'frank',
        password: PASSWORD,
        email: 'frank@example.com',
      });
      expect(made.success).toBe(true);
    } finally {
      expect(await stopServed(served)).toBe(0);
    }
    const rows = await queryAt(database, "SELECT 1 FROM hx_records WHERE collection = 'users'");
    expect(rows).toHaveLength(1);
    expect(await readdir(dir)).not.toContain('companion.lock');
  });

  it('user create and reset-password --database change accounts a running host serves', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    const host = await start(dir, database);
    const made = await createUserCli(dir, database, { username: 'dave', password: PASSWORD, rank: 4 });
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    await expect.poll(async () => (await host.post('getUser', { username: 'dave' })).success).toBe(true);
    const dave = await login(host, 'dave');
    expect((await host.server.users.get(dave.id))?.Rank).toBe(4);
    const reset = await runCli([
      'user',
      'reset-password',
      '--data-dir',
      dir,
      '--database',
      database,
      '--username',
      'dave',
      '--password',
      'Other-pass1!',
    ]);
    expect(reset.code).toBe(0);
    // The running host hears it: the old session is gone, the new password works.
    await expect
      .poll(
        async () => (await host.post('isValidToken', { userid: dave.id, tokenContent: dave.token })).result,
      )
      .toEqual({ isValidToken: false });
    expect(
      expectOk(await host.post('login', { username: 'dave', password: 'Other-pass1!' })).LoginResult,
    ).toBe(4);
  });

  it('migrate copies a real data folder into an empty database, and refuses a database that is not empty', async () => {
    const dir = await newDir();
    // A folder made by a real embedded host: accounts, a bio, a moderation action, an uploaded file.
    let host = await start(dir, null);
    const mod = await signUp(host, 'moder');
    const eve = await signUp(host, 'eve');
    await host.server.store.tx((t) =>
      UsersRepo.in(t).update(mod.id, (draft) => {
        draft.Rank = 5;
      }),
    );
    expectOk(
      await host.post('updateBio', { userid: eve.id, tokenContent: eve.token, bio: { StatusText: 'moved' } }),
    );
    const uploaded = expectOk(await upload(host, eve, { name: 'pic.png', data: 'png bytes' })).UploadData as {
      FileId: string;
    };
    // A warning signs the user out everywhere: last.
    expectOk(
      await host.post('moderation', {
        userid: mod.id,
        tokenContent: mod.token,
        action: 'warnuser',
        targetUserId: eve.id,
        warnReason: 'spam',
        warnDescription: 'too much',
      }),
    );
    await stop(host);

    const database = await freshDatabaseUrl();
    const migrated = await runCli(['migrate', '--from', dir, '--database', database]);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/copied \d+ records and 1 log entries/);
    const marker = JSON.parse(await readFile(join(dir, 'database.json'), 'utf8')) as { database: string };
    expect(marker.database).not.toContain(`:${new URL(TEST_DATABASE_URL).password}@`);

    host = await start(dir, database);
    // The warning came along: shown once, at the next login.
    const eveAgain = await login(host, 'eve', 'Warned');
    expect((await bioOf(host, eveAgain)).StatusText).toBe('moved');
    const modAgain = await login(host, 'moder');
    const log = expectOk(
      await host.post('moderationLog', { userid: modAgain.id, tokenContent: modAgain.token }),
    );
    expect(log.Total).toBe(1);
    expect((log.Entries as Array<{ action: string }>)[0]!.action).toBe('warnuser');
    const file = await host.raw(`file/${eve.id}/${uploaded.FileId}`);
    expect(await file.text()).toBe('png bytes');
    // New commits go on after the copied ones.
    expectOk(
      await host.post('updateBio', {
        userid: eve.id,
        tokenContent: eveAgain.token,
        bio: { StatusText: 'again' },
      }),
    );
    // Numbered after every copied record (a version used twice could let a stale transaction commit).
    const versions = await queryAt<{ id: string; version: string }>(
      database,
      'SELECT id, version FROM hx_records ORDER BY version DESC',
    );
    expect(versions[0]!.id).toBe(eve.id);
    expect(new Set(versions.map((row) => row.version)).size).toBe(versions.length);
    await stop(host);

    // Once is enough: a database holding records is refused, named; the folder now belongs to PostgreSQL.
    const again = await newDir();
    await stop(await start(again, null));
    const refused = await runCli(['migrate', '--from', again, '--database', database]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /The database postgres:\/\/\S* is not empty \(\d+ records, 1 log entries\)/,
    );
    await expect(startHost({}, { dir })).rejects.toBeInstanceOf(MovedToDatabaseError);
    const twice = await runCli(['migrate', '--from', dir, '--database', database]);
    expect(twice.stderr).toMatch(/already migrated/);
  });
});
