import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateCommand } from '../../server/cli-migrate.js';
import type { Clock } from '../../server/services/context.js';
import {
  expectFail,
  expectOk,
  manualClock,
  signUp,
  startHost,
  tempDir,
  type Account,
  type Answer,
  type TestHost,
} from './helpers.js';
import { dropSchemas, freshDatabaseUrl, queryAt } from './pg-helpers.js';
import { blobTree, md5, upload } from './upload-helpers.js';

/**
 * Chunked uploads across hosts: two in-process hosts on one PostgreSQL schema and one data folder, as behind a
 * proxy that sends each request to either host.
 */

const hosts: TestHost[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  await dropSchemas();
});

const LIMITS = { maxFileBytes: 64 * 1024, chunkSetTtlSeconds: 3600, chunkSetsPerUser: 2 };

async function twoHosts(clock?: Clock): Promise<{ a: TestHost; b: TestHost; database: string; dir: string }> {
  const database = await freshDatabaseUrl();
  const dir = await tempDir('hnx-pg-chunks-');
  dirs.push(dir);
  const a = await startHost({ database, uploads: LIMITS }, { dir, clock });
  hosts.push(a);
  const b = await startHost({ database, uploads: LIMITS }, { dir, clock });
  hosts.push(b);
  return { a, b, database, dir };
}

/** Signs up on `a` and waits until `b` takes the account's token too. */
async function accountOnBoth(a: TestHost, b: TestHost, name: string): Promise<Account> {
  const account = await signUp(a, name);
  await expect
    .poll(async () => (await b.post('getUser', { userid: account.id, tokenContent: account.token })).success)
    .toBe(true);
  return account;
}

function part(
  host: TestHost,
  who: Account,
  chunkId: string,
  n: number,
  data: string,
  amount = 3,
  name = 'big.hna',
): Promise<Answer> {
  return upload(
    host,
    who,
    { name: 'blob', data },
    { chunkId, chunkNumber: String(n), amountOfChunks: String(amount), originalFileName: name },
    'uploadPart',
  );
}

const status = (host: TestHost, who: Account, chunkId: string) =>
  host.post('uploadPartStatus', { userid: who.id, tokenContent: who.token, chunkId });

const storedFiles = async (dir: string) => (await blobTree(dir)).filter((path) => path.startsWith('files/'));

describe('chunked uploads across hosts on PostgreSQL', () => {
  it('takes the chunks of one upload alternately on two hosts; the file downloads byte-identical from both', async () => {
    const { a, b, dir } = await twoHosts();
    const alice = await accountOnBoth(a, b, 'alice');
    const pieces = ['first-', 'second-', 'third-', 'fourth'];
    const chunkId = expectOk(await part(a, alice, '', 0, pieces[0]!, 4, 'whole.png'), 'Uploaded Chunk!')
      .chunkId as string;
    // Right away, before host B heard of the set through a notification.
    expect(expectOk(await status(b, alice, chunkId))).toMatchObject({
      chunkId,
      amountOfChunks: 4,
      received: [0],
      receivedBytes: pieces[0]!.length,
    });
    expect(expectOk(await part(b, alice, chunkId, 1, pieces[1]!, 4, 'whole.png'))).toMatchObject({
      received: 2,
      missingChunks: [2, 3],
    });
    expectOk(await part(a, alice, chunkId, 2, pieces[2]!, 4, 'whole.png'));
    const last = expectOk(await part(b, alice, chunkId, 3, pieces[3]!, 4, 'whole.png'), 'Uploaded File!');
    const data = last.UploadData as { FileId: string; Hash: string; Size: number };
    const whole = pieces.join('');
    expect(data).toMatchObject({ Hash: md5(whole), Size: whole.length });
    for (const host of [a, b]) {
      await expect.poll(async () => (await host.raw(`file/${alice.id}/${data.FileId}`)).text()).toBe(whole);
    }
    // The parts and the set's folder are gone; the set's record too.
    expect(await readdir(join(dir, 'chunks'))).toEqual([]);
    expectFail(await status(a, alice, chunkId), 'UNKNOWN_CHUNK_SET');
  });

  it('takes many chunks of one set at once on both hosts: every one lands, the file is put together once', async () => {
    const { a, b, dir } = await twoHosts();
    const alice = await accountOnBoth(a, b, 'alice');
    const pieces = Array.from({ length: 8 }, (_, n) => `piece-${n}-`.repeat(50));
    const chunkId = expectOk(await part(a, alice, '', 0, pieces[0]!, 8, 'many.png')).chunkId as string;
    const answers = await Promise.all(
      pieces.slice(1).map((data, i) => part(i % 2 ? a : b, alice, chunkId, i + 1, data, 8, 'many.png')),
    );
    for (const answer of answers) expect(answer.success).toBe(true);
    const done = answers.filter((answer) => answer.message === 'Uploaded File!');
    expect(done).toHaveLength(1);
    const data = (done[0]!.result as { UploadData: { FileId: string; Hash: string } }).UploadData;
    expect(data.Hash).toBe(md5(pieces.join('')));
    await expect
      .poll(async () => (await b.raw(`file/${alice.id}/${data.FileId}`)).text())
      .toBe(pieces.join(''));
    expect(await storedFiles(dir)).toHaveLength(1);
    expect(await readdir(join(dir, 'chunks'))).toEqual([]);
  });

  it('counts the sets a user started on either host against the per-user limit', async () => {
    const { a, b } = await twoHosts();
    const alice = await accountOnBoth(a, b, 'alice');
    expectOk(await part(a, alice, '', 0, 'AAA'));
    expectOk(await part(b, alice, '', 0, 'BBB'));
    for (const host of [a, b]) {
      const refused = expectFail(await part(host, alice, '', 0, 'CCC'), 'CHUNK_QUOTA_EXCEEDED');
      expect(refused.message).toMatch(/2 unfinished chunked uploads/);
    }
  });

  it('holds the per-user limit when two hosts start sets at once', async () => {
    const { a, b, database } = await twoHosts();
    const alice = await accountOnBoth(a, b, 'alice');
    expectOk(await part(a, alice, '', 0, 'AAA'));
    // One room left: one of the two new sets gets it.
    const answers = await Promise.all([part(a, alice, '', 0, 'BBB'), part(b, alice, '', 0, 'CCC')]);
    expect(answers.map((answer) => answer.success).sort()).toEqual([false, true]);
    expectFail(
      answers.find((answer) => !answer.success)!,
      'CHUNK_QUOTA_EXCEEDED',
    );
    const rows = await queryAt(database, "SELECT id FROM hx_records WHERE collection = 'chunksets'");
    expect(rows).toHaveLength(2);
  });

  it('assembles once when the two last chunks reach both hosts at once', async () => {
    const { a, b, dir } = await twoHosts();
    const alice = await accountOnBoth(a, b, 'alice');
    const chunkId = expectOk(await part(a, alice, '', 0, 'AAA')).chunkId as string;
    const answers = await Promise.all([part(a, alice, chunkId, 1, 'BBB'), part(b, alice, chunkId, 2, 'CCC')]);
    const done = answers.filter((answer) => answer.message === 'Uploaded File!');
    expect(done).toHaveLength(1);
    expect((done[0]!.result as { UploadData: { Hash: string } }).UploadData.Hash).toBe(md5('AAABBBCCC'));
    // The other one was stored and said so.
    const other = answers.find((answer) => answer !== done[0])!;
    expect(expectOk(other, 'Uploaded Chunk!')).toMatchObject({ chunkId, received: 2 });
    expect(await storedFiles(dir)).toHaveLength(1);
    expect(await a.server.uploads.filesOf(alice.id)).toHaveLength(1);
  });

  it('assembles once when the same last chunk reaches both hosts at once; the other gets a clear refusal', async () => {
    const { a, b, dir } = await twoHosts();
    const alice = await accountOnBoth(a, b, 'alice');
    const chunkId = expectOk(await part(a, alice, '', 0, 'AAA')).chunkId as string;
    expectOk(await part(b, alice, chunkId, 1, 'BBB'));
    const answers = await Promise.all([part(a, alice, chunkId, 2, 'CCC'), part(b, alice, chunkId, 2, 'CCC')]);
    const done = answers.filter((answer) => answer.message === 'Uploaded File!');
    expect(done).toHaveLength(1);
    expect((done[0]!.result as { UploadData: { Hash: string } }).UploadData.Hash).toBe(md5('AAABBBCCC'));
    // The set is being put together or already spent: either way it takes no more chunks.
    expectFail(
      answers.find((answer) => answer !== done[0])!,
      'UNKNOWN_CHUNK_SET',
    );
    expect(await storedFiles(dir)).toHaveLength(1);
    expect(await readdir(join(dir, 'chunks'))).toEqual([]);
  });

  it('puts a set together anew when the host that claimed it died: its last chunk sent again completes the upload', async () => {
    const clock = manualClock();
    const { a, b, dir } = await twoHosts(clock);
    const alice = await accountOnBoth(a, b, 'alice');
    const chunkId = expectOk(await part(a, alice, '', 0, 'AAA')).chunkId as string;
    expectOk(await part(a, alice, chunkId, 1, 'BBB'));
    // As a host killed while putting it together leaves it: claimed, by a process that is gone.
    const claim = (at: number) =>
      a.server.store.tx(async (t) => {
        const sets = t.repo<Record<string, unknown>>('chunksets');
        const set = (await sets.get(chunkId))!;
        sets.put(chunkId, { ...set, assembling: true, assemblingBy: 'killed-host', assemblingAt: at });
      });
    const now = () => Math.floor(clock.now() / 1000);
    await claim(now());
    // While the claim is fresh, the set takes no chunk.
    expectFail(await part(b, alice, chunkId, 2, 'CCC'), 'UNKNOWN_CHUNK_SET');
    clock.advance(61);
    const done = expectOk(await part(b, alice, chunkId, 2, 'CCC'), 'Uploaded File!');
    expect((done.UploadData as { Hash: string }).Hash).toBe(md5('AAABBBCCC'));
    expect(await storedFiles(dir)).toHaveLength(1);
    expect(await readdir(join(dir, 'chunks'))).toEqual([]);
  });

  it('drops an expired set once when both hosts sweep at once', async () => {
    const clock = manualClock();
    const { a, b, database, dir } = await twoHosts(clock);
    const alice = await accountOnBoth(a, b, 'alice');
    const chunkId = expectOk(await part(a, alice, '', 0, 'AAA')).chunkId as string;
    // Both hosts know the set.
    expectOk(await status(b, alice, chunkId));
    clock.advance(3601);
    const dropped = await Promise.all([a.server.uploads.sweepChunkSets(), b.server.uploads.sweepChunkSets()]);
    expect(dropped.sort()).toEqual([0, 1]);
    expect(await readdir(join(dir, 'chunks'))).toEqual([]);
    expect(
      await queryAt(database, "SELECT id FROM hx_records WHERE collection IN ('chunksets', 'chunkowners')"),
    ).toEqual([]);
    expectFail(await part(b, alice, chunkId, 1, 'BBB'), 'UNKNOWN_CHUNK_SET');
  });

  it('migrate brings an unfinished chunk set of an embedded folder along', async () => {
    const dir = await tempDir('hnx-pg-chunks-');
    dirs.push(dir);
    let host = await startHost({ uploads: LIMITS }, { dir });
    const alice = await signUp(host, 'alice');
    const chunkId = expectOk(await part(host, alice, '', 0, 'AAA')).chunkId as string;
    await host.close();
    const database = await freshDatabaseUrl();
    expect(await migrateCommand(['--from', dir, '--database', database])).toBe(0);
    host = await startHost({ database, uploads: LIMITS }, { dir });
    hosts.push(host);
    expect(expectOk(await status(host, alice, chunkId))).toMatchObject({ received: [0], receivedBytes: 3 });
    expectOk(await part(host, alice, chunkId, 1, 'BBB'));
    const last = expectOk(await part(host, alice, chunkId, 2, 'CCC'), 'Uploaded File!');
    expect((last.UploadData as { Hash: string }).Hash).toBe(md5('AAABBBCCC'));
  });
});
