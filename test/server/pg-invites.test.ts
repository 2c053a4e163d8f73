import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { expectOk, manualClock, signUp, startHost, tempDir, type Account, type TestHost } from './helpers.js';
import { dropSchemas, freshDatabaseUrl, queryAt } from './pg-helpers.js';
import { memoryCooldowns, type Cooldowns } from '../../server/services/limits.js';
import { insertGap } from '../../server/store/pg-invite-history.js';
import { TestSocket } from './socket-client.js';

/** The invite-request history on PostgreSQL: one history for every host process sharing a database and folder. */

const hosts: TestHost[] = [];
const dirs: string[] = [];
const sockets: TestSocket[] = [];
const settings = { socket: { inviteRequestCooldownSeconds: 0, inviteRequestTtlSeconds: 60 } };

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.close();
  for (const host of hosts.splice(0)) await host.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  await dropSchemas();
});

async function newDir(): Promise<string> {
  const dir = await tempDir('hnx-pg-invites-');
  dirs.push(dir);
  return dir;
}

async function start(
  dir: string,
  database: string,
  clock?: ReturnType<typeof manualClock>,
): Promise<TestHost> {
  const host = await startHost({ database, ...settings }, { dir, clock });
  hosts.push(host);
  return host;
}

async function stop(host: TestHost): Promise<void> {
  hosts.splice(hosts.indexOf(host), 1);
  await host.close();
}

const as = (account: Account, body: Record<string, unknown> = {}) => ({
  userid: account.id,
  tokenContent: account.token,
  ...body,
});

async function socketOf(host: TestHost, account: Account): Promise<TestSocket> {
  const socket = await TestSocket.verified(host.server.url, account.id, account.token);
  sockets.push(socket);
  return socket;
}

type Listed = { requestId: string; fromUserId: string; state: string };
const received = async (host: TestHost, account: Account): Promise<Listed[]> =>
  expectOk(await host.post('inviteRequests', as(account))).InviteRequests as Listed[];
const sent = async (host: TestHost, account: Account): Promise<Listed[]> =>
  expectOk(await host.post('sentInviteRequests', as(account))).InviteRequests as Listed[];
const summary = (list: Listed[]) => list.map(({ requestId, state }) => ({ requestId, state }));

/** Alice and Bob, friends, signed up through `a` and known to `b`. */
async function friends(a: TestHost, b: TestHost): Promise<[Account, Account]> {
  const alice = await signUp(a, 'alice');
  const bob = await signUp(a, 'bob');
  expectOk(await a.post('sendFriendRequest', as(alice, { targetUserId: bob.id })));
  expectOk(await a.post('acceptFriendRequest', as(bob, { targetUserId: alice.id })));
  // B serves Bob once it heard of the last commit (his tokens and friends with it).
  await expect.poll(async () => (await b.post('inviteRequests', as(bob))).success).toBe(true);
  await expect.poll(async () => (await b.server.users.get(bob.id))?.Friends.includes(alice.id)).toBe(true);
  return [alice, bob];
}

/** `from` asks `to` for an invite through `host`, where both have a socket; the request id. */
async function ask(from: TestSocket, to: TestSocket, fromAccount: Account, toAccount: Account) {
  from.sendJson({
    userId: fromAccount.id,
    tokenContent: fromAccount.token,
    message: 'requestinvite',
    args: { targetUserId: toAccount.id },
  });
  const answer = await from.next('sentinviterequest');
  expect((await to.next('gotinviterequest')).requestId).toBe(answer.requestId);
  return answer.requestId as string;
}

/** Hosts A and B on one clock the test moves; Alice, on A, asked Bob (a socket on A) for an invite, seen on B. */
async function askedOnA() {
  const database = await freshDatabaseUrl();
  const dir = await newDir();
  const clock = manualClock();
  const a = await start(dir, database, clock);
  const b = await start(dir, database, clock);
  const [alice, bob] = await friends(a, b);
  const aliceOnA = await socketOf(a, alice);
  const requestId = await ask(aliceOnA, await socketOf(a, bob), alice, bob);
  await expect.poll(async () => (await received(b, bob)).length).toBe(1);
  return { clock, a, b, alice, bob, aliceOnA, requestId };
}

describe('invite requests on PostgreSQL', () => {
  it('keeps a request made through one host in the history every host serves, and no file in the folder', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    const a = await start(dir, database);
    const b = await start(dir, database);
    const [alice, bob] = await friends(a, b);
    const requestId = await ask(await socketOf(a, alice), await socketOf(a, bob), alice, bob);

    expect(summary(await sent(a, alice))).toEqual([{ requestId, state: 'new' }]);
    expect(summary(await received(a, bob))).toEqual([{ requestId, state: 'new' }]);
    await expect.poll(async () => summary(await received(b, bob))).toEqual([{ requestId, state: 'new' }]);
    expect((await received(b, bob))[0]!.fromUserId).toBe(alice.id);
    expect(summary(await sent(b, alice))).toEqual([{ requestId, state: 'new' }]);

    const rows = await queryAt<{ to_user: string; from_user: string; request_id: string }>(
      database,
      'SELECT to_user, from_user, request_id FROM hx_invite_requests ORDER BY seq',
    );
    expect(rows).toEqual([{ to_user: bob.id, from_user: alice.id, request_id: requestId }]);
    const names = await readdir(dir);
    expect(names.filter((name) => name.startsWith('invite-requests'))).toEqual([]);
  });

  it('shows a state change made through one host through the other, and notifies only from the host that made it', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    const a = await start(dir, database);
    const b = await start(dir, database);
    const [alice, bob] = await friends(a, b);
    const aliceOnA = await socketOf(a, alice);
    const requestId = await ask(aliceOnA, await socketOf(a, bob), alice, bob);
    await expect.poll(async () => (await received(b, bob)).length).toBe(1);

    expectOk(await b.post('updateInviteRequest', as(bob, { requestId, state: 'dismissed' })));
    await expect
      .poll(async () => summary(await received(a, bob)))
      .toEqual([{ requestId, state: 'dismissed' }]);
    expect(summary(await sent(a, alice))).toEqual([{ requestId, state: 'dismissed' }]);

    // A applied B's change without telling Alice's socket on A: the next update she hears is A's own.
    expectOk(await a.post('updateInviteRequest', as(bob, { requestId, state: 'answered' })));
    const update = (await aliceOnA.next('sentinviterequestupdated')).request as Listed;
    expect(update).toMatchObject({ requestId, state: 'answered' });
    await expect
      .poll(async () => summary(await received(b, bob)))
      .toEqual([{ requestId, state: 'answered' }]);
  });

  it('tells the sender a request expired only from the host that accepted it', async () => {
    const { clock, a, b, alice, bob, aliceOnA, requestId } = await askedOnA();
    const aliceOnB = await socketOf(b, alice);

    clock.advance(61);
    b.server.invites.sweep();
    a.server.invites.sweep();
    const expired = (await aliceOnA.next('sentinviterequestupdated')).request as Listed;
    expect(expired).toMatchObject({ requestId, state: 'expired' });
    // Bob has no socket on B: B refuses at once, after anything its sweep would have sent Alice.
    aliceOnB.sendJson({
      userId: alice.id,
      tokenContent: alice.token,
      message: 'requestinvite',
      args: { targetUserId: bob.id },
    });
    expect((await aliceOnB.next('failedtorequestinvite')).reason).toBe('OFFLINE');
    expect(aliceOnB.count('sentinviterequestupdated')).toBe(0);
    expect(summary(await received(b, bob))).toEqual([{ requestId, state: 'expired' }]);
  });

  it('tells the sender nothing at expiry of a request answered through the other host', async () => {
    const { clock, a, b, alice, bob, aliceOnA, requestId } = await askedOnA();
    expectOk(await b.post('updateInviteRequest', as(bob, { requestId, state: 'dismissed' })));

    clock.advance(61);
    await a.server.invites.sweep();
    expect(aliceOnA.count('sentinviterequestupdated')).toBe(0);
    expect(summary(await sent(a, alice))).toEqual([{ requestId, state: 'dismissed' }]);
  });

  it('keeps the history and its states when both hosts restart', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    let a = await start(dir, database);
    let b = await start(dir, database);
    const [alice, bob] = await friends(a, b);
    const aliceOnA = await socketOf(a, alice);
    const bobOnA = await socketOf(a, bob);
    const first = await ask(aliceOnA, bobOnA, alice, bob);
    const second = await ask(aliceOnA, bobOnA, alice, bob);
    await expect.poll(async () => (await received(b, bob)).length).toBe(2);
    expectOk(await b.post('updateInviteRequest', as(bob, { requestId: first, state: 'seen' })));
    const expected = [
      { requestId: second, state: 'new' },
      { requestId: first, state: 'seen' },
    ];
    await expect.poll(async () => summary(await received(a, bob))).toEqual(expected);

    await stop(a);
    await stop(b);
    a = await start(dir, database);
    b = await start(dir, database);
    for (const host of [a, b]) {
      expect(summary(await received(host, bob))).toEqual(expected);
      expect(summary(await sent(host, alice))).toEqual(expected);
    }
    expect((await readdir(dir)).filter((name) => name.startsWith('invite-requests'))).toEqual([]);
  });

  it('moves a history the folder holds into the database once, with its states, and renames the file', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    let a = await start(dir, database);
    const alice = await signUp(a, 'alice');
    const bob = await signUp(a, 'bob');
    await stop(a);
    // As a host of an earlier version wrote it: two requests, a state change, and a torn last append.
    const request = (requestId: string, sentAt: number) => ({
      t: 'request',
      to: bob.id,
      request: {
        requestId,
        fromUserId: alice.id,
        sentAt,
        expiresAt: sentAt + 900,
        state: 'new',
        updatedAt: sentAt,
      },
    });
    const lines = [
      request('invreq_one', 1000),
      request('invreq_two', 2000),
      { t: 'state', to: bob.id, requestId: 'invreq_one', state: 'answered', at: 1500 },
    ];
    const file = join(dir, 'invite-requests.jsonl');
    await writeFile(file, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n{"t":"req`);

    // Two hosts starting together: each request is in the history once.
    [a] = await Promise.all([start(dir, database), start(dir, database)]);
    const expected = [
      { requestId: 'invreq_two', state: 'expired' },
      { requestId: 'invreq_one', state: 'answered' },
    ];
    for (const host of hosts) {
      await expect.poll(async () => summary(await received(host, bob))).toEqual(expected);
    }
    const names = await readdir(dir);
    expect(names).not.toContain('invite-requests.jsonl');
    expect(await readFile(`${file}.imported`, 'utf8')).toContain('invreq_two');

    for (const host of hosts.splice(0)) await host.close();
    a = await start(dir, database);
    expect(summary(await received(a, bob))).toEqual(expected);
    const rows = await queryAt<{ id: string }>(database, 'SELECT request_id AS id FROM hx_invite_requests');
    expect(new Set(rows.map((row) => row.id))).toEqual(new Set(['invreq_one', 'invreq_two']));
  });

  it('refuses a request with NOT_SAVED, delivering nothing, while the shared cooldowns cannot be reached', async () => {
    const database = await freshDatabaseUrl();
    const dir = await newDir();
    const clock = manualClock();
    const working = memoryCooldowns(clock);
    let reachable = true;
    const cooldowns: Cooldowns = {
      start: (key, ms) =>
        reachable ? working.start(key, ms) : Promise.reject(new Error('shared limits unreachable')),
    };
    const a = await startHost(
      { database, socket: { inviteRequestCooldownSeconds: 30 } },
      { dir, clock, cooldowns },
    );
    hosts.push(a);
    const alice = await signUp(a, 'alice');
    const bob = await signUp(a, 'bob');
    expectOk(await a.post('sendFriendRequest', as(alice, { targetUserId: bob.id })));
    expectOk(await a.post('acceptFriendRequest', as(bob, { targetUserId: alice.id })));
    const aliceSocket = await socketOf(a, alice);
    const bobSocket = await socketOf(a, bob);
    const requestInvite = {
      userId: alice.id,
      tokenContent: alice.token,
      message: 'requestinvite',
      args: { targetUserId: bob.id },
    };

    reachable = false;
    aliceSocket.sendJson(requestInvite);
    expect(await aliceSocket.next('failedtorequestinvite')).toEqual({
      targetUserId: bob.id,
      reason: 'NOT_SAVED',
    });
    expect(await received(a, bob)).toEqual([]);

    reachable = true;
    aliceSocket.sendJson(requestInvite);
    const { requestId } = await aliceSocket.next('sentinviterequest');
    expect((await bobSocket.next('gotinviterequest')).requestId).toBe(requestId);
    aliceSocket.sendJson(requestInvite);
    expect(await aliceSocket.next('failedtorequestinvite')).toEqual({
      targetUserId: bob.id,
      reason: 'RATE_LIMITED',
      retryAfter: 30,
    });
    // Bob's first gotinviterequest was the second request's: the refused one reached nobody.
    expect(summary(await received(a, bob))).toEqual([{ requestId, state: 'new' }]);
  });
});

describe('insertGap: invite-request inserts of a host under load', () => {
  it('grow apart with the hosts sharing the database, up to 20 ms', () => {
    expect([1, 2, 3, 4, 10].map(insertGap)).toEqual([5, 10, 15, 20, 20]);
  });
});
