import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createUserCli,
  postJson,
  signInServed,
  runCli,
  spawnServe,
  stop,
  type Served,
  asAccount,
  signUpServed,
  type ServedAccount,
} from './cli-helpers.js';
import { PASSWORD, tempDir } from './helpers.js';
import { dropSchemas, freshDatabaseUrl } from './pg-helpers.js';
import { TestGameServer } from '../../server/tools/test-game-server.js';
import { TestSocket } from './socket-client.js';
import { md5 } from './upload-helpers.js';

/**
 * Two host processes (`serve --database --redis`) serving one community: real processes, one PostgreSQL schema,
 * one Redis, one data folder, real sockets on each (issue 15).
 */

export const TEST_REDIS_URL = process.env.HYPERNEX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

beforeAll(async () => {
  const probe = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new Error(
      `Redis is not reachable at ${TEST_REDIS_URL} (${(error as Error).message}). npm test starts a throwaway ` +
        "redis-server of its own (test/global-setup.ts, which needs Debian's redis-server: apt-get install -y " +
        'redis-server); HYPERNEX_TEST_REDIS_URL, when set, must name a Redis that answers.',
    );
  } finally {
    probe.disconnect();
  }
});

const GS_TOKEN = 'cluster-game-server-secret';
const served: Served[] = [];
const gameServers: TestGameServer[] = [];
const sockets: TestSocket[] = [];
let dir = '';
let database = '';
let configFile = '';

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.close();
  for (const gs of gameServers.splice(0)) gs.close();
  for (const host of served.splice(0)) await stop(host, 'SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
  if (configFile) await rm(configFile, { force: true });
  await dropSchemas();
});
afterAll(() => dropSchemas());

type Account = ServedAccount;

async function community(extra: { limits?: object; socket?: object } = {}): Promise<void> {
  dir = await tempDir('hnx-cluster-');
  database = await freshDatabaseUrl();
  configFile = join(dir, '..', `${randomBytes(6).toString('hex')}-cluster.json`);
  // Cheap password hashing; a heartbeat and expiry short enough for the expiry test.
  await writeFile(
    configFile,
    JSON.stringify({
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
      cluster: { heartbeatMs: 200, presenceExpiryMs: 1500 },
      socket: { inviteRequestCooldownSeconds: 0, ...extra.socket },
      gameServerTokens: [GS_TOKEN],
      ...(extra.limits && { limits: extra.limits }),
    }),
  );
}

async function host(): Promise<Served> {
  const one = await spawnServe([
    '--data-dir',
    dir,
    '--database',
    database,
    '--redis',
    TEST_REDIS_URL,
    '--config',
    configFile,
  ]);
  served.push(one);
  return one;
}

const signUp = (on: Served, username: string): Promise<Account> => signUpServed(on, username, PASSWORD);

async function socketOf(on: Served, account: Account): Promise<TestSocket> {
  const socket = await TestSocket.verified(on.url, account.id, account.token);
  sockets.push(socket);
  return socket;
}

const as = asAccount;

/** Waits until `on` knows the user (its copy of the database caught up). */
async function known(on: Served, account: Account): Promise<void> {
  await expect
    .poll(async () => (await postJson(on.url, 'getUser', { userid: account.id })).success)
    .toBe(true);
}

async function friends(a: Served, b: Served, one: Account, other: Account): Promise<void> {
  expect((await postJson(a.url, 'sendFriendRequest', as(one, { targetUserId: other.id }))).success).toBe(
    true,
  );
  // Accepted through the other host, once it has the request.
  await expect
    .poll(
      async () => (await postJson(b.url, 'acceptFriendRequest', as(other, { targetUserId: one.id }))).success,
    )
    .toBe(true);
}

const statusOn = async (on: Served, account: Account): Promise<number> =>
  (
    (await postJson(on.url, 'getUser', { userid: account.id })).result!.UserData as {
      Bio: { Status: number };
    }
  ).Bio.Status;

describe('two host processes on one database and Redis', () => {
  it('a token from one is valid on the other; friend requests and invite requests (both ways) reach sockets on the other', async () => {
    await community();
    const [a, b] = [await host(), await host()];
    const alice = await signUp(a, 'alice');
    const bob = await signUp(b, 'bob');
    await known(a, bob);
    await known(b, alice);
    // A token issued by A, on B.
    expect((await postJson(b.url, 'isValidToken', as(alice))).result).toEqual({ isValidToken: true });

    const aliceOnA = await socketOf(a, alice);
    const bobOnB = await socketOf(b, bob);
    expect((await postJson(a.url, 'sendFriendRequest', as(alice, { targetUserId: bob.id }))).success).toBe(
      true,
    );
    expect(await bobOnB.next('friendrequest')).toMatchObject({ fromUserId: alice.id, targetUserId: bob.id });
    await expect
      .poll(
        async () =>
          (await postJson(b.url, 'acceptFriendRequest', as(bob, { targetUserId: alice.id }))).success,
      )
      .toBe(true);
    expect(await aliceOnA.next('friendaccepted')).toMatchObject({
      fromUserId: bob.id,
      targetUserId: alice.id,
    });

    // Bob is online on A too (his socket is on B), so A takes the request and delivers it on B.
    await expect.poll(() => statusOn(a, bob)).not.toBe(0);
    aliceOnA.sendJson(
      as(alice, { userId: alice.id, message: 'requestinvite', args: { targetUserId: bob.id } }),
    );
    const sent = await aliceOnA.next('sentinviterequest');
    const got = await bobOnB.next('gotinviterequest');
    expect(got).toMatchObject({ fromUserId: alice.id, requestId: sent.requestId, fromUsername: 'alice' });

    // And the other way: B takes Bob's request and delivers it to Alice's socket on A.
    await expect.poll(() => statusOn(b, alice)).not.toBe(0);
    bobOnB.sendJson(as(bob, { userId: bob.id, message: 'requestinvite', args: { targetUserId: alice.id } }));
    const back = await bobOnB.next('sentinviterequest');
    expect(await aliceOnA.next('gotinviterequest')).toMatchObject({
      fromUserId: bob.id,
      requestId: back.requestId,
      fromUsername: 'bob',
    });
    // Each target's history, read through the host the request did not go through, holds it.
    const inbox = async (on: Served, me: Account) =>
      (
        ((await postJson(on.url, 'inviteRequests', as(me))).result?.InviteRequests ?? []) as Array<{
          requestId: string;
        }>
      ).map((r) => r.requestId);
    await expect.poll(() => inbox(a, bob)).toContain(sent.requestId);
    await expect.poll(() => inbox(b, alice)).toContain(back.requestId);
  });

  it('an upload through one host downloads byte-identical from the other', async () => {
    await community();
    const [a, b] = [await host(), await host()];
    const carol = await signUp(a, 'carol');
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const form = new FormData();
    form.set('userid', carol.id);
    form.set('tokenContent', carol.token);
    form.set('file', new Blob([data]), 'big.png');
    const res = await fetch(`${a.url}/api/v1/upload`, { method: 'POST', body: form });
    const answer = (await res.json()) as {
      success: boolean;
      message: string;
      result: { UploadData: { FileId: string } };
    };
    expect(answer.success, answer.message).toBe(true);
    const fileId = answer.result.UploadData.FileId;
    // Served by B once its copy of the database has the upload's record.
    const download = async () =>
      Buffer.from(await (await fetch(`${b.url}/api/v1/file/${carol.id}/${fileId}`)).arrayBuffer());
    await expect.poll(async () => (await download()).length).toBe(data.length);
    expect(md5(await download())).toBe(md5(data));
  });

  it('a ban through B closes the user’s socket on A with 4001 at once, and so does a password reset from the CLI', async () => {
    await community();
    const created = await createUserCli(dir, database, { username: 'owner', password: PASSWORD, rank: 6 });
    expect(created.code, created.stderr).toBe(0);
    const [a, b] = [await host(), await host()];
    const { id: ownerId, token: ownerToken } = await signInServed(b, 'owner', PASSWORD);
    const dave = await signUp(a, 'dave');
    await known(b, dave);
    const daveOnA = await socketOf(a, dave);
    const done = await postJson(b.url, 'moderation', {
      userid: ownerId,
      tokenContent: ownerToken,
      action: 'banuser',
      targetUserId: dave.id,
      banReason: 'Spam',
      banDescription: 'Links everywhere',
      timeEnd: Math.floor(Date.now() / 1000) + 3600,
    });
    expect(done.success, done.message).toBe(true);
    expect(await daveOnA.waitClosed(5000)).toEqual({ code: 4001, reason: 'banned' });
    expect((await postJson(a.url, 'isValidToken', as(dave))).result).toEqual({ isValidToken: false });

    // The owner's CLI at the host machine resets a password: the sockets on every running host close.
    const eve = await signUp(a, 'eve');
    await known(b, eve);
    const eveOnB = await socketOf(b, eve);
    const reset = await runCli([
      'user',
      'reset-password',
      '--data-dir',
      dir,
      '--database',
      database,
      '--redis',
      TEST_REDIS_URL,
      '--username',
      'eve',
      '--password',
      'N3w-passw0rd!',
    ]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(await eveOnB.waitClosed(5000)).toEqual({ code: 4001, reason: 'token expired or revoked' });
  });

  it('B keeps serving when A is killed, and A’s users stop counting as online after the expiry', async () => {
    await community();
    const [a, b] = [await host(), await host()];
    const erin = await signUp(a, 'erin');
    const frank = await signUp(b, 'frank');
    await known(a, frank);
    await friends(a, b, erin, frank);
    const frankOnB = await socketOf(b, frank);
    await socketOf(a, erin);
    await expect.poll(() => statusOn(b, erin)).not.toBe(0);

    await stop(a, 'SIGKILL');
    // B still serves: sign-in, reads, writes.
    const again = await postJson(b.url, 'login', { username: 'erin', password: PASSWORD });
    expect(again.success).toBe(true);
    expect(
      (await postJson(b.url, 'updateBio', as(frank, { bio: { StatusText: 'still here' } }))).success,
    ).toBe(true);
    // Erin's socket died with A: after the expiry she is offline on B, and her friend on B is told.
    let status: Record<string, unknown>;
    do status = await frankOnB.next('friendstatus', 5000);
    while (status.Status !== 0);
    expect(status).toMatchObject({ userId: erin.id, Status: 0 });
    expect(await statusOn(b, erin)).toBe(0);
    frankOnB.sendJson(
      as(frank, { userId: frank.id, message: 'requestinvite', args: { targetUserId: erin.id } }),
    );
    expect(await frankOnB.next('failedtorequestinvite')).toMatchObject({
      targetUserId: erin.id,
      reason: 'OFFLINE',
    });
  });

  it('a game server on B serves users of A: new instance, join, lists, presence, and the server script read through A', async () => {
    await community();
    const [a, b] = [await host(), await host()];
    const alice = await signUp(a, 'alice');
    const bob = await signUp(a, 'bob');
    await known(b, alice);
    await known(b, bob);
    await friends(a, b, alice, bob);
    const script = await postJson(a.url, 'upload', {
      ...as(alice),
      file: { name: 'logic.js', data: Buffer.from('print("plaza rules")').toString('base64') },
    });
    expect(script.success, script.message).toBe(true);
    const scriptId = (script.result!.UploadData as { FileId: string }).FileId;
    const world = await postJson(a.url, 'upload', {
      ...as(alice),
      file: { name: 'plaza.hnw', data: Buffer.from('world').toString('base64') },
      worldMeta: {
        Publicity: 1,
        Name: 'Plaza',
        Description: '',
        Tags: [],
        ThumbnailURL: '',
        IconURLs: [],
        ServerScripts: [`${a.url}/api/v1/file/${alice.id}/${scriptId}`],
        BuildPlatform: 0,
      },
    });
    expect(world.success, world.message).toBe(true);
    const worldId = world.result!.WorldId as string;
    const gs = await TestGameServer.connect({ url: b.url, serverToken: GS_TOKEN });
    gameServers.push(gs);
    // A lists B's game server once B announced it.
    await expect
      .poll(async () =>
        (
          (await fetch(`${a.url}/api/v1/gameServers`).then((r) => r.json())) as {
            result: { GameServers: Array<{ GameServerId: string }> };
          }
        ).result.GameServers.map((g) => g.GameServerId),
      )
      .toEqual([gs.gameServerId]);
    // B has the world once its copy of the database caught up.
    const worldOnB = async () =>
      ((await (await fetch(`${b.url}/api/v1/meta/world/${worldId}`)).json()) as { success: boolean }).success;
    await expect.poll(worldOnB).toBe(true);

    const aliceOnA = await socketOf(a, alice);
    const bobOnA = await socketOf(a, bob);
    aliceOnA.sendJson(
      as(alice, {
        userId: alice.id,
        message: 'requestnewinstance',
        args: { worldId, instancePublicity: 2, instanceProtocol: 0 },
      }),
    );
    await aliceOnA.next('createdtemporaryinstance');
    const opened = await aliceOnA.next('instanceopened');
    expect(opened).toMatchObject({ gameServerId: gs.gameServerId, worldId, Moderators: [alice.id] });
    const instanceId = opened.instanceId as string;
    await gs.next('updatedinstance', (r) => (r.instanceMeta as { Readied: boolean }).Readied);
    // The game server on B reads the world's server script through A, with the proof it got from B.
    const scriptPath = `file/${alice.id}/${scriptId}/${gs.gameServerId}/${encodeURIComponent(gs.gameServerToken)}`;
    const readScript = await fetch(`${a.url}/api/v1/${scriptPath}`);
    expect(readScript.status).toBe(200);
    expect(await readScript.text()).toBe('print("plaza rules")');
    // Another token with its id reads nothing (the refusal is an envelope, as on the real server).
    const guessed = (await (await fetch(`${a.url}/api/v1/${scriptPath}x`)).json()) as { success: boolean };
    expect(guessed.success).toBe(false);

    bobOnA.sendJson(
      as(bob, {
        userId: bob.id,
        message: 'joininstance',
        args: { gameServerId: gs.gameServerId, instanceId },
      }),
    );
    expect(await bobOnA.next('joinedinstance')).toMatchObject({
      gameServerId: gs.gameServerId,
      instanceId,
      worldId,
    });
    await gs.next('tempusertoken', (r) => r.userId === bob.id);
    // A answers from what B announced: Bob is in a world, and the instance is listed for a friend.
    await expect
      .poll(
        async () =>
          ((await postJson(a.url, 'getUser', { userid: bob.id })).result!.UserData as { isInWorld: boolean })
            .isInWorld,
      )
      .toBe(true);
    const listed = await postJson(a.url, 'instances', as(alice));
    expect(
      (listed.result!.SafeInstances as Array<{ InstanceId: string; ConnectedUsers: string[] }>)[0],
    ).toMatchObject({
      InstanceId: instanceId,
    });

    // Bob's last socket (on A) closes: B takes him out of the instance.
    bobOnA.close();
    await gs.next('kickeduser', (r) => r.userId === bob.id);
  });

  it('counts wrong passwords and invite-request cooldowns across hosts', async () => {
    await community({
      limits: { loginFailures: 3, loginFailureWindowSeconds: 60 },
      socket: { inviteRequestCooldownSeconds: 60 },
    });
    const [a, b] = [await host(), await host()];
    const gina = await signUp(a, 'gina');
    const hal = await signUp(b, 'hal');
    await known(a, hal);
    await known(b, gina);
    for (const on of [a, b, a]) {
      const wrong = await postJson(on.url, 'login', { username: 'gina', password: 'Wrong0ne!' });
      expect(wrong.result?.error).toMatchObject({ code: 'INCORRECT_CREDENTIALS' });
    }
    const limited = await postJson(b.url, 'login', { username: 'gina', password: PASSWORD });
    expect(limited.success).toBe(false);
    expect(limited.result?.error).toMatchObject({ code: 'RATE_LIMITED' });

    await friends(a, b, gina, hal);
    const ginaOnA = await socketOf(a, gina);
    const ginaOnB = await socketOf(b, gina);
    await socketOf(b, hal);
    await expect.poll(() => statusOn(a, hal)).not.toBe(0);
    const ask = (socket: TestSocket) =>
      socket.sendJson(
        as(gina, { userId: gina.id, message: 'requestinvite', args: { targetUserId: hal.id } }),
      );
    ask(ginaOnA);
    await ginaOnA.next('sentinviterequest');
    ask(ginaOnB);
    expect(await ginaOnB.next('failedtorequestinvite')).toMatchObject({
      targetUserId: hal.id,
      reason: 'RATE_LIMITED',
    });
  });

  it('refuses --redis without --database', async () => {
    const folder = await tempDir('hnx-cluster-nodb-');
    try {
      await expect(spawnServe(['--data-dir', folder, '--redis', TEST_REDIS_URL])).rejects.toThrow(
        /--redis needs --database/,
      );
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
