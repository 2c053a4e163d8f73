import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import type { z } from 'zod';
import { main } from '../../server/cli.js';
import { COLLECTIONS } from '../../server/host.js';
import type { AvatarMetaDto, WorldMetaDto } from '../../server/protocol/uploads.js';
import type { ModerationLogEntry } from '../../server/services/moderation.js';
import type { StoredFile } from '../../server/services/uploads.js';
import type { ChunkOwner, ChunkSet } from '../../server/services/uploads/records.js';
import { CorruptDataFileError } from '../../server/store/durable-file.js';
import type { InviteEvent } from '../../server/store/file-invite-history.js';
import {
  AvatarRecord,
  ChunkOwnerRecord,
  ChunkSetRecord,
  FileRecord,
  HostSettingsRecord as HostSettingsSchema,
  InviteEventLine,
  ModerationLogLine,
  recordSchema,
  StoreMetaFile,
  UserRecord,
  WorldRecord,
} from '../../server/store/record-schemas.js';
import { InvalidRecordError } from '../../server/store/record-check.js';
import type { HostSettingsRecord } from '../../server/store/settings.js';
import type { StoreMeta } from '../../server/store/store.js';
import { UsersRepo, type StoredUser } from '../../server/store/users.js';
import { frameLine } from '../../server/store/wal.js';
import { expectOk, signUp, startHost, tempDir, type Account, type TestHost } from './helpers.js';
import { TestSocket } from './socket-client.js';
import { avatarMeta, upload, worldMeta } from './upload-helpers.js';

/**
 * Issue 27: every record read at startup is checked against its schema before anything is written; a bad one stops
 * the start naming the file and the record, and the refused start changes no file.
 */

/** Every file and folder under `dir` with a SHA-256 of each file: equal before and after means nothing was touched. */
async function folderHashes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(path: string, rel: string): Promise<void> {
    for (const name of await readdir(path)) {
      const full = join(path, name);
      if ((await stat(full)).isDirectory()) {
        out[`${rel}${name}/`] = 'folder';
        await walk(full, `${rel}${name}/`);
      } else {
        out[`${rel}${name}`] = createHash('sha256')
          .update(await readFile(full))
          .digest('hex');
      }
    }
  }
  await walk(dir, '');
  return out;
}

interface Fixture {
  owner: Account;
  alice: Account;
  bob: Account;
}

/** Fills a running host with one record of every kind the host writes (and an entry in each history). */
async function populate(host: TestHost): Promise<Fixture> {
  const owner = await signUp(host, 'owner');
  const alice = await signUp(host, 'alice');
  const bob = await signUp(host, 'bob');
  await host.server.store.tx((t) =>
    UsersRepo.in(t).update(owner.id, (draft) => {
      draft.Rank = 6;
    }),
  );
  await host.server.setup.markDone();
  const auth = (a: Account) => ({ userid: a.id, tokenContent: a.token });
  expectOk(await host.post('sendFriendRequest', { ...auth(alice), targetUserId: bob.id }));
  expectOk(await host.post('acceptFriendRequest', { ...auth(bob), targetUserId: alice.id }));
  expectOk(
    await host.post('updateBio', {
      ...auth(alice),
      bio: { StatusText: 'here', Pronouns: { nominativeId: 1, accusativeId: 1, DisplayThree: false } },
    }),
  );
  const avatar = expectOk(
    await upload(host, alice, { name: 'bot.hna', data: 'AVATAR' }, { avatarMeta: avatarMeta() }),
  );
  expectOk(await upload(host, alice, { name: 'plaza.hnw', data: 'WORLD' }, { worldMeta: worldMeta() }));
  expectOk(
    await upload(
      host,
      alice,
      { name: 'blob', data: 'AAA' },
      { chunkId: '', chunkNumber: '0', amountOfChunks: '2', originalFileName: 'big.hna' },
      'uploadPart',
    ),
  );
  await host.server.core.inviteCodes.create(
    { label: 'friends', singleUse: false, expiresInSeconds: 0 },
    owner.id,
  );
  await host.server.gameServerTokens.add('lan server', owner.id);
  host.server.popularity.use('avatar', avatar.AvatarId as string);
  await host.server.popularity.flush();
  const target = await TestSocket.verified(host.server.url, bob.id, bob.token);
  const sender = await TestSocket.verified(host.server.url, alice.id, alice.token);
  sender.sendJson({
    userId: alice.id,
    tokenContent: alice.token,
    message: 'RequestInvite',
    args: { targetUserId: bob.id },
  });
  await sender.next('sentinviterequest');
  target.close();
  sender.close();
  // Issue 28: a private note, and a "remove all content" job (bob has nothing: it ends at once).
  expectOk(
    await host.post('addUserNote', { ...auth(owner), targetUserId: alice.id, text: 'Watch the uploads.' }),
  );
  expectOk(await host.post('startContentRemoval', { ...auth(owner), targetUserId: bob.id }));
  // A webhook nobody answers (the discard port): the warning's message is still queued at close.
  const url = 'http://127.0.0.1:9/api/webhooks/1/token';
  expectOk(await host.post('webhookSettings', { ...auth(owner), url }));
  // Last: a warned user's tokens stop working.
  expectOk(
    await host.post('moderation', {
      ...auth(owner),
      action: 'warnuser',
      targetUserId: bob.id,
      warnReason: 'Rude',
      warnDescription: 'Be nice.',
    }),
  );
  return { owner, alice, bob };
}

const dirs: string[] = [];
async function newDir(): Promise<string> {
  const dir = await tempDir('hnx-startup-');
  dirs.push(dir);
  return dir;
}

/** A well-formed folder a host wrote and closed cleanly, and a copy of it taken while the host ran (its WAL). */
let closedFolder: string;
let crashImage: string;
let fixture: Fixture;

beforeAll(async () => {
  closedFolder = await newDir();
  crashImage = await newDir();
  const host = await startHost({}, { dir: closedFolder });
  try {
    fixture = await populate(host);
    // As a power cut would leave it: everything since the start is only in the write-ahead log.
    await cp(closedFolder, crashImage, { recursive: true });
  } finally {
    await host.close();
  }
});

const opened: TestHost[] = [];
afterEach(async () => {
  for (const host of opened.splice(0)) await host.close();
});
afterAll(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A fresh copy of the well-formed folder, for a test to break. */
async function copyOf(folder: string): Promise<string> {
  const dir = await newDir();
  await cp(folder, dir, { recursive: true });
  return dir;
}

/** Starts a host on `dir`, expects the start to be refused, and checks that not one byte of the folder changed. */
async function refusedStart(dir: string): Promise<InvalidRecordError> {
  const before = await folderHashes(dir);
  let failure: unknown = null;
  try {
    opened.push(await startHost({}, { dir }));
  } catch (error) {
    failure = error;
  }
  expect(failure, 'the start should have been refused').toBeInstanceOf(InvalidRecordError);
  expect(failure).toBeInstanceOf(CorruptDataFileError);
  expect(await folderHashes(dir)).toEqual(before);
  return failure as InvalidRecordError;
}

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
}

/** Bob's stored record (from his record file), to build records of the right shape but for one field. */
async function bobRecord(dir: string): Promise<StoredUser> {
  return (await readJson<{ data: StoredUser }>(join(dir, 'users', `${fixture.bob.id}.json`))).data;
}

function withoutUsername(user: StoredUser): Omit<StoredUser, 'Username'> {
  const { Username: _name, ...rest } = user;
  return { ...rest, Id: 'user_bogus' };
}

const NOTHING_CHANGED = /The host did not start and changed nothing in the data folder/;

describe('startup validation: a well-formed folder', () => {
  it('restarts a folder a running host wrote and closed', async () => {
    const dir = await copyOf(closedFolder);
    // It holds a record of every kind the host writes (the first layout's inboxes it only reads) and both histories.
    for (const collection of COLLECTIONS.filter((name) => name !== 'inviterequests'))
      expect(await readdir(join(dir, collection)), collection).not.toEqual([]);
    for (const history of ['moderation-log.jsonl', 'invite-requests.jsonl'])
      expect((await readFile(join(dir, history), 'utf8')).length, history).toBeGreaterThan(0);
    const host = await startHost({}, { dir });
    opened.push(host);
    expect((await host.server.users.get(fixture.bob.id))?.WarnCount).toBe(1);
  });

  it('restarts from a copy taken while the host ran, replaying every kind of record from its log', async () => {
    const dir = await copyOf(crashImage);
    expect((await readdir(join(dir, 'wal'))).length).toBeGreaterThan(0);
    const host = await startHost({}, { dir });
    opened.push(host);
    expect((await host.server.users.get(fixture.alice.id))?.Friends).toEqual([fixture.bob.id]);
  });
});

describe('startup validation: a bad record stops the start, naming file and record, changing nothing', () => {
  it('refuses a record file of the wrong shape, with a message an operator can act on', async () => {
    const dir = await copyOf(closedFolder);
    const path = join(dir, 'users', `${fixture.bob.id}.json`);
    const file = await readJson<{ seq: number; data: Record<string, unknown> }>(path);
    delete file.data.Username;
    await writeFile(path, JSON.stringify(file));
    const error = await refusedStart(dir);
    expect(error.message).toBe(
      `Data file users/${fixture.bob.id}.json holds an invalid record (users/${fixture.bob.id}): ` +
        'Username is missing (expected a string). ' +
        `The host did not start and changed nothing in the data folder ${dir}: correct or remove that record ` +
        '(or restore the file from a backup), then start again.',
    );
    expect(error.file).toBe(`users/${fixture.bob.id}.json`);
    expect(error.record).toBe(`users/${fixture.bob.id}`);
  });

  it('refuses a write-ahead log line of the first format (no checksum) holding a user with no username', async () => {
    const dir = await copyOf(closedFolder);
    const bob = await bobRecord(dir);
    const good = JSON.stringify([{ c: 'users', i: fixture.bob.id, r: { seq: 10_000, data: bob } }]);
    const bad = JSON.stringify([
      { c: 'users', i: 'user_bogus', r: { seq: 10_001, data: withoutUsername(bob) } },
    ]);
    await mkdir(join(dir, 'wal'), { recursive: true });
    await writeFile(join(dir, 'wal', '7.log'), `${good}\n${bad}\n`);
    const error = await refusedStart(dir);
    expect(error.message).toMatch(
      /^Data file wal\/7\.log holds an invalid record \(line 2, users\/user_bogus\): /,
    );
    expect(error.message).toMatch(/Username is missing \(expected a string\)/);
    expect(error.message).toMatch(NOTHING_CHANGED);
  });

  it('refuses a framed (checksummed) write-ahead log line holding a record of the wrong shape', async () => {
    const dir = await copyOf(closedFolder);
    const bob = { ...(await bobRecord(dir)), Rank: 'admin' };
    await mkdir(join(dir, 'wal'), { recursive: true });
    await writeFile(
      join(dir, 'wal', '8.log'),
      `${frameLine(JSON.stringify([{ c: 'users', i: fixture.bob.id, r: { seq: 10_000, data: bob } }]))}\n`,
    );
    const error = await refusedStart(dir);
    expect(error.file).toBe('wal/8.log');
    expect(error.record).toBe(`line 1, users/${fixture.bob.id}`);
    expect(error.message).toMatch(/Rank should be one of 0, 1, 2, 3, 4, 5, 6, not "admin"/);
  });

  it('refuses a write-ahead log line holding a moderation log entry of the wrong shape', async () => {
    const dir = await copyOf(closedFolder);
    const entry = { id: 'modlog_x', seq: 10_000, time: 1, moderatorId: fixture.owner.id, action: 'warnuser' };
    await mkdir(join(dir, 'wal'), { recursive: true });
    await writeFile(
      join(dir, 'wal', '9.log'),
      `${frameLine(JSON.stringify([{ l: 'moderation', s: 10_000, e: entry }]))}\n`,
    );
    const error = await refusedStart(dir);
    expect(error.file).toBe('wal/9.log');
    expect(error.record).toBe('line 1, moderation log entry');
    expect(error.message).toMatch(/moderatorName is missing \(expected a string\)/);
  });

  it('refuses a journal file of the first layout holding a record of the wrong shape', async () => {
    const dir = await copyOf(closedFolder);
    const bob = await bobRecord(dir);
    await mkdir(join(dir, 'journal'));
    await writeFile(
      join(dir, 'journal', '1.json'),
      JSON.stringify([{ collection: 'users', id: 'user_bogus', seq: 10_000, data: withoutUsername(bob) }]),
    );
    const error = await refusedStart(dir);
    expect(error.file).toBe('journal/1.json');
    expect(error.record).toBe('entry 1, users/user_bogus');
    expect(error.message).toMatch(/Username is missing/);
  });

  it('refuses a moderation log line of the wrong shape, naming its line', async () => {
    const dir = await copyOf(closedFolder);
    const path = join(dir, 'moderation-log.jsonl');
    const [line] = (await readFile(path, 'utf8')).split('\n');
    const entry = JSON.parse(line!) as Record<string, unknown>;
    await writeFile(path, `${line}\n${JSON.stringify({ ...entry, seq: 10_000, action: 'explode' })}\n`);
    const error = await refusedStart(dir);
    expect(error.file).toBe('moderation-log.jsonl');
    expect(error.record).toBe('line 2');
    expect(error.message).toMatch(/action should be one of "addbadge", .*, not "explode"/);
  });

  it('refuses an invite-request log line of the wrong shape, naming its line', async () => {
    const dir = await copyOf(closedFolder);
    const path = join(dir, 'invite-requests.jsonl');
    const text = await readFile(path, 'utf8');
    const event = JSON.parse(text.split('\n')[0]!) as { request: Record<string, unknown> };
    delete event.request.fromUserId;
    await writeFile(path, `${text}${JSON.stringify(event)}\n`);
    const error = await refusedStart(dir);
    expect(error.file).toBe('invite-requests.jsonl');
    expect(error.record).toBe(`line ${text.split('\n').length}`);
    expect(error.message).toMatch(/request\.fromUserId is missing \(expected a string\)/);
  });

  it('refuses a host settings record of the wrong shape', async () => {
    const dir = await copyOf(closedFolder);
    const path = join(dir, 'settings', 'host.json');
    const file = await readJson<{ seq: number; data: Record<string, unknown> }>(path);
    await writeFile(path, JSON.stringify({ ...file, data: { ...file.data, ownerSetupDone: 'yes' } }));
    const error = await refusedStart(dir);
    expect(error.file).toBe('settings/host.json');
    expect(error.record).toBe('settings/host');
    expect(error.message).toMatch(/ownerSetupDone should be a boolean \(true or false\), not a string/);
  });

  it('refuses a meta.json whose first-layout settings have the wrong shape', async () => {
    const dir = await copyOf(closedFolder);
    const path = join(dir, 'meta.json');
    const meta = await readJson<Record<string, unknown>>(path);
    await writeFile(path, JSON.stringify({ ...meta, settings: { requireInviteCode: 'no' } }));
    const error = await refusedStart(dir);
    expect(error.file).toBe('meta.json');
    expect(error.message).toMatch(
      /settings\.requireInviteCode should be a boolean \(true or false\), not a string/,
    );
  });

  // One empty record in each collection: every collection has a schema that asks for its fields.
  for (const collection of COLLECTIONS) {
    it(`refuses an empty record in the ${collection} collection`, async () => {
      const dir = await copyOf(closedFolder);
      const id = collection === 'settings' ? 'host' : 'rec_bogus';
      await mkdir(join(dir, collection), { recursive: true });
      await writeFile(join(dir, collection, `${id}.json`), JSON.stringify({ seq: 1, data: {} }));
      const error = await refusedStart(dir);
      expect(error.file).toBe(`${collection}/${id}.json`);
      expect(error.record).toBe(`${collection}/${id}`);
      expect(error.message).toMatch(/is missing/);
    });
  }

  it('makes serve print the refusal and exit non-zero', async () => {
    const dir = await copyOf(closedFolder);
    const path = join(dir, 'users', `${fixture.alice.id}.json`);
    const file = await readJson<{ seq: number; data: Record<string, unknown> }>(path);
    await writeFile(path, JSON.stringify({ ...file, data: { ...file.data, Friends: 'bob' } }));
    const before = await folderHashes(dir);
    const signalListeners = process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');
    let stderr = '';
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr += String(chunk);
      return true;
    });
    let code: number;
    try {
      code = await main(['serve', '--data-dir', dir, '--host', '127.0.0.1', '--port', '0', '--no-ui']);
    } finally {
      spy.mockRestore();
    }
    expect(code).toBe(1);
    expect(stderr).toContain(
      `error: Data file users/${fixture.alice.id}.json holds an invalid record (users/${fixture.alice.id}): ` +
        'Friends should be a list, not a string.',
    );
    expect(await folderHashes(dir)).toEqual(before);
    // The host never ran: serve leaves no handler behind for its signals.
    expect(process.listenerCount('SIGINT') + process.listenerCount('SIGTERM')).toBe(signalListeners);
  });
});

describe('startup validation: the schemas match what the code writes', () => {
  it('admits every record type the services write (checked by the compiler)', () => {
    expectTypeOf<StoredUser>().toExtend<z.input<typeof UserRecord>>();
    expectTypeOf<StoredFile>().toExtend<z.input<typeof FileRecord>>();
    expectTypeOf<AvatarMetaDto>().toExtend<z.input<typeof AvatarRecord>>();
    expectTypeOf<WorldMetaDto>().toExtend<z.input<typeof WorldRecord>>();
    expectTypeOf<ChunkSet>().toExtend<z.input<typeof ChunkSetRecord>>();
    expectTypeOf<ChunkOwner>().toExtend<z.input<typeof ChunkOwnerRecord>>();
    expectTypeOf<HostSettingsRecord>().toExtend<z.input<typeof HostSettingsSchema>>();
    expectTypeOf<ModerationLogEntry>().toExtend<z.input<typeof ModerationLogLine>>();
    expectTypeOf<InviteEvent>().toExtend<z.input<typeof InviteEventLine>>();
    expectTypeOf<StoreMeta>().toExtend<z.input<typeof StoreMetaFile>>();
  });

  it('has a schema for every collection the host opens', () => {
    for (const collection of COLLECTIONS) expect(recordSchema(collection, 'x'), collection).not.toBeNull();
  });
});
