import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CommunityDto } from '../../server/protocol/host-info.js';
import {
  createUserCli,
  postJson,
  signInServed,
  spawnServe,
  stop,
  type Served,
  asAccount,
  signUpServed,
  type ServedAccount,
} from './cli-helpers.js';
import { PASSWORD, tempDir } from './helpers.js';
import { dropSchemas, freshDatabaseUrl } from './pg-helpers.js';
import { settle, TestSocket } from './socket-client.js';
import { freePort, requireRedisServer, ThrowawayRedis } from './redis-instance.js';
import { TestGameServer } from '../../server/tools/test-game-server.js';

/**
 * Two host processes (`serve --database --redis`) on one PostgreSQL schema and one Redis, with a user's socket on
 * each, while that Redis is hung (SIGSTOP): a message for a user or a game server on the other host fails with a
 * clear answer within the command timeout, nothing is recorded as sent, nothing arrives late once Redis resumes,
 * and the next message goes through (issue 25). The Redis is a throwaway redis-server this file starts on a free
 * loopback port (never the shared one on 6379).
 */

const CLUSTER = { heartbeatMs: 200, presenceExpiryMs: 1500, commandTimeoutMs: 400, connectTimeoutMs: 1000 };
/** How long past the command timeout an answer may take (two processes, PostgreSQL, a loaded CI machine). */
const SLACK_MS = 1000;
const BOUND_MS = CLUSTER.commandTimeoutMs + SLACK_MS;
const GS_TOKEN = 'cluster-faults-game-server-secret';

let redis: ThrowawayRedis | null = null;
let redisDir = '';
const killRedisAtExit = () => void redis?.kill();

beforeAll(async () => {
  requireRedisServer();
  process.once('exit', killRedisAtExit);
  redisDir = await mkdtemp(join(tmpdir(), 'hnx-cluster-faults-redis-'));
  redis = new ThrowawayRedis(await freePort(), redisDir);
  await redis.start();
});

const served: Served[] = [];
const gameServers: TestGameServer[] = [];
const sockets: TestSocket[] = [];
let dir = '';
let database = '';
let configFile = '';

async function stopStarted(): Promise<void> {
  // A test that failed half-way may have left Redis stopped: the hosts must be able to say goodbye.
  if (redis?.paused) redis.resume();
  for (const socket of sockets.splice(0)) socket.close();
  for (const gs of gameServers.splice(0)) gs.close();
  for (const host of served.splice(0)) await stop(host, 'SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
  if (configFile) await rm(configFile, { force: true });
  dir = '';
  configFile = '';
  await dropSchemas();
}

afterEach(stopStarted);

afterAll(async () => {
  await stopStarted();
  process.off('exit', killRedisAtExit);
  await redis?.kill();
  redis = null;
  if (redisDir) await rm(redisDir, { recursive: true, force: true });
});

type Account = ServedAccount;

/** A fresh community: data folder, PostgreSQL schema, and a configuration with the short cluster timeouts. */
async function community(): Promise<void> {
  dir = await tempDir('hnx-cluster-faults-');
  database = await freshDatabaseUrl();
  configFile = join(dir, '..', `${randomBytes(6).toString('hex')}-cluster-faults.json`);
  await writeFile(
    configFile,
    JSON.stringify({
      passwordHash: { memoryCost: 1024, timeCost: 1, concurrency: 2 },
      cluster: CLUSTER,
      // A cooldown, to show a request that did not go out does not count against asking again.
      socket: { inviteRequestCooldownSeconds: 60 },
      gameServerTokens: [GS_TOKEN],
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
    redis!.url,
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

/** Sends `message` from `account`'s socket. */
function say(socket: TestSocket, account: Account, message: string, args: Record<string, unknown>): void {
  socket.sendJson(as(account, { userId: account.id, message, args }));
}

/** Waits until `on` knows the user (its copy of the database caught up). */
async function known(on: Served, account: Account): Promise<void> {
  await expect
    .poll(async () => (await postJson(on.url, 'getUser', { userid: account.id })).success, { timeout: 5000 })
    .toBe(true);
}

async function friends(a: Served, b: Served, one: Account, other: Account): Promise<void> {
  expect((await postJson(a.url, 'sendFriendRequest', as(one, { targetUserId: other.id }))).success).toBe(
    true,
  );
  await expect
    .poll(
      async () => (await postJson(b.url, 'acceptFriendRequest', as(other, { targetUserId: one.id }))).success,
      { timeout: 5000 },
    )
    .toBe(true);
}

const statusOn = async (on: Served, account: Account): Promise<number> =>
  (
    (await postJson(on.url, 'getUser', { userid: account.id })).result!.UserData as {
      Bio: { Status: number };
    }
  ).Bio.Status;

/** Waits for `socket`'s next `name`, and how long it took from `since` (performance.now()). */
async function answeredWithin(
  socket: TestSocket,
  name: string,
  since: number,
): Promise<{ ms: number; result: Record<string, unknown> }> {
  const result = await socket.next(name, BOUND_MS + 2000);
  return { ms: performance.now() - since, result };
}

describe('two host processes while their Redis is stopped', () => {
  it('shows on the Host status the database, Redis and both hosts; Redis as failing while hung, then back', async () => {
    await community();
    const created = await createUserCli(dir, database, { username: 'owner', password: PASSWORD, rank: 6 });
    expect(created.code, created.stderr).toBe(0);
    const a = await host();
    await host();
    const owner = await signInServed(a, 'owner', PASSWORD);
    const status = async () => {
      const answer = await postJson(a.url, 'hostStatus', { userid: owner.id, tokenContent: owner.token });
      expect(answer.success, answer.message).toBe(true);
      return answer.result!.community as CommunityDto;
    };
    await expect.poll(async () => (await status()).hosts, { timeout: 5000 }).toBe(2);
    const healthy = await status();
    expect(healthy).toMatchObject({
      storage: 'postgres',
      database: { ok: true, problem: null, ms: expect.any(Number) },
      redis: { ok: true, problem: null, ms: expect.any(Number) },
    });
    expect(healthy.redis!.address).toContain(`:${new URL(redis!.url).port}`);
    // The database's URL is shown without its password.
    const password = new URL(database).password;
    expect(healthy.database!.address).not.toContain(`:${password}@`);
    expect(JSON.stringify(healthy)).not.toContain(`:${password}@`);

    redis!.pause();
    const hung = await status();
    expect(hung.redis).toMatchObject({ ok: false, ms: null, problem: expect.any(String) });
    expect(hung.database!.ok).toBe(true);
    redis!.resume();
    await expect.poll(async () => (await status()).redis!.ok, { timeout: 5000 }).toBe(true);
  });

  it('answers a requestinvite for a friend on the other host with failedtorequestinvite TARGET_UNREACHABLE within the command timeout, records nothing, lifts the cooldown, and delivers the next request once Redis resumes', async () => {
    await community();
    const [a, b] = [await host(), await host()];
    const alice = await signUp(a, 'alice');
    const bob = await signUp(b, 'bob');
    await known(a, bob);
    await known(b, alice);
    await friends(a, b, alice, bob);
    const aliceOnA = await socketOf(a, alice);
    const bobOnB = await socketOf(b, bob);
    // A counts Bob as connected (his socket is on B), so it takes the request and sends it through Redis.
    await expect.poll(() => statusOn(a, bob), { timeout: 5000 }).not.toBe(0);

    redis!.pause();
    // The first request waits out the command timeout twice: the shared cooldown (which then falls back to A's
    // memory) and the delivery.
    let since = performance.now();
    say(aliceOnA, alice, 'requestinvite', { targetUserId: bob.id });
    const first = await answeredWithin(aliceOnA, 'failedtorequestinvite', since);
    expect(first.result).toEqual({ targetUserId: bob.id, reason: 'TARGET_UNREACHABLE' });
    expect(first.ms).toBeLessThan(CLUSTER.commandTimeoutMs + BOUND_MS);
    // The cooldown was lifted: the second is refused for the same reason, not RATE_LIMITED, after one timeout.
    since = performance.now();
    say(aliceOnA, alice, 'requestinvite', { targetUserId: bob.id });
    const second = await answeredWithin(aliceOnA, 'failedtorequestinvite', since);
    expect(second.result).toEqual({ targetUserId: bob.id, reason: 'TARGET_UNREACHABLE' });
    expect(second.ms).toBeLessThan(BOUND_MS);
    expect(aliceOnA.count('sentinviterequest')).toBe(0);

    redis!.resume();
    say(aliceOnA, alice, 'requestinvite', { targetUserId: bob.id });
    const sent = await aliceOnA.next('sentinviterequest', 5000);
    // The first Bob gets: the two that failed never reach him, even now that Redis runs what it held while stopped.
    expect(await bobOnB.next('gotinviterequest', 5000)).toMatchObject({
      fromUserId: alice.id,
      requestId: sent.requestId,
      fromUsername: 'alice',
    });
    await settle(1000);
    expect(bobOnB.count('gotinviterequest')).toBe(0);
    expect(aliceOnA.count('failedtorequestinvite')).toBe(0);

    // Only the delivered request is in the histories, on both hosts.
    const outbox = await postJson(a.url, 'sentInviteRequests', as(alice));
    expect(outbox.success, outbox.message).toBe(true);
    expect((outbox.result!.InviteRequests as Array<{ requestId: string }>).map((r) => r.requestId)).toEqual([
      sent.requestId,
    ]);
    const inbox = async () =>
      (
        (await postJson(b.url, 'inviteRequests', as(bob))).result!.InviteRequests as Array<{
          requestId: string;
        }>
      ).map((r) => r.requestId);
    await expect.poll(inbox, { timeout: 5000 }).toEqual([sent.requestId]);
  });

  it('answers join, leave, new instance and invite messages for a game server on the other host with their failure and GAME_SERVER_UNREACHABLE within the command timeout, runs none of them late, and joins once Redis resumes', async () => {
    await community();
    const [a, b] = [await host(), await host()];
    const alice = await signUp(a, 'alice');
    const bob = await signUp(a, 'bob');
    await known(b, alice);
    await known(b, bob);
    await friends(a, b, alice, bob);
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
        ServerScripts: [],
        BuildPlatform: 0,
      },
    });
    expect(world.success, world.message).toBe(true);
    const worldId = world.result!.WorldId as string;
    const gs = await TestGameServer.connect({ url: b.url, serverToken: GS_TOKEN });
    gameServers.push(gs);
    // A knows B's game server once B announced it, and B has the world once its copy of the database caught up.
    await expect
      .poll(
        async () =>
          (
            (await fetch(`${a.url}/api/v1/gameServers`).then((r) => r.json())) as {
              result: { GameServers: Array<{ GameServerId: string }> };
            }
          ).result.GameServers.map((g) => g.GameServerId),
        { timeout: 5000 },
      )
      .toEqual([gs.gameServerId]);
    await expect
      .poll(
        async () =>
          ((await (await fetch(`${b.url}/api/v1/meta/world/${worldId}`)).json()) as { success: boolean })
            .success,
        { timeout: 5000 },
      )
      .toBe(true);

    // Alice opens a Friends instance on B's game server through A, while Redis works.
    const aliceOnA = await socketOf(a, alice);
    const bobOnA = await socketOf(a, bob);
    say(aliceOnA, alice, 'requestnewinstance', { worldId, instancePublicity: 2, instanceProtocol: 0 });
    const opened = await aliceOnA.next('instanceopened', 5000);
    const instanceId = opened.instanceId as string;
    const gameServerId = gs.gameServerId;
    await gs.next('updatedinstance', (r) => (r.instanceMeta as { Readied: boolean }).Readied);
    aliceOnA.received.length = 0;
    gs.received.length = 0;

    redis!.pause();
    const since = performance.now();
    say(bobOnA, bob, 'joininstance', { gameServerId, instanceId });
    say(aliceOnA, alice, 'sendinvite', { targetUserId: bob.id, gameServerId, toInstanceId: instanceId });
    say(aliceOnA, alice, 'requestnewinstance', { worldId, gameServerId, instancePublicity: 2 });
    say(aliceOnA, alice, 'leaveinstance', { gameServerId, instanceId });
    const reason = 'GAME_SERVER_UNREACHABLE';
    const joined = await answeredWithin(bobOnA, 'failedtojoininstance', since);
    expect(joined.result).toEqual({ gameServerId, instanceId, reason });
    expect(joined.ms).toBeLessThan(BOUND_MS);
    const invited = await answeredWithin(aliceOnA, 'failedtosendinvite', since);
    expect(invited.result).toEqual({ targetUserId: bob.id, instanceId, reason });
    expect(invited.ms).toBeLessThan(BOUND_MS);
    const created = await answeredWithin(aliceOnA, 'failedtocreatetemporaryinstance', since);
    expect(created.result).toEqual({ reason });
    expect(created.ms).toBeLessThan(BOUND_MS);
    const left = await answeredWithin(aliceOnA, 'failedtoleaveinstance', since);
    expect(left.result).toEqual({ gameServerId, instanceId, reason });
    expect(left.ms).toBeLessThan(BOUND_MS);

    redis!.resume();
    say(bobOnA, bob, 'joininstance', { gameServerId, instanceId });
    expect(await bobOnA.next('joinedinstance', 5000)).toMatchObject({ gameServerId, instanceId, worldId });
    await gs.next('tempusertoken', (r) => r.userId === bob.id);
    // What failed while Redis was stopped is not run now that it runs what it held: Bob joined once, got no
    // invite, and Alice neither left nor started another instance.
    await settle(1000);
    expect(bobOnA.count('joinedinstance')).toBe(0);
    expect(bobOnA.count('failedtojoininstance')).toBe(0);
    expect(bobOnA.count('gotinvite')).toBe(0);
    expect(aliceOnA.count('leftinstance')).toBe(0);
    expect(aliceOnA.count('createdtemporaryinstance')).toBe(0);
    expect(aliceOnA.count('sentinvite')).toBe(0);
    expect(gs.received.filter((m) => m.message === 'requestedinstancecreated')).toEqual([]);
  });
});
