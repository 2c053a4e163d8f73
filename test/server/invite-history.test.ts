import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppendLog } from '../../server/store/append-log.js';
import { expectOk, signUp, startHost, tempDir, type Account, type TestHost } from './helpers.js';
import { TestSocket } from './socket-client.js';

/** Invite-request history on disk: an event log, bounded per user and compacted, and the first layout upgraded. */
describe('invite request history', () => {
  let dir: string;
  let host: TestHost | undefined;
  const sockets: TestSocket[] = [];
  const settings = {
    socket: {
      inviteRequestCooldownSeconds: 0,
      inviteRequestHistory: 25,
      messagesPerSecond: 100_000,
      messageBurst: 100_000,
    },
  };

  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.close();
    await host?.close();
    host = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  async function friends(h: TestHost): Promise<[Account, Account]> {
    const alice = await signUp(h, 'alice');
    const bob = await signUp(h, 'bob');
    expectOk(
      await h.post('sendFriendRequest', {
        userid: alice.id,
        tokenContent: alice.token,
        targetUserId: bob.id,
      }),
    );
    expectOk(
      await h.post('acceptFriendRequest', {
        userid: bob.id,
        tokenContent: bob.token,
        targetUserId: alice.id,
      }),
    );
    return [alice, bob];
  }
  const history = async (h: TestHost, account: Account) =>
    expectOk(await h.post('inviteRequests', { userid: account.id, tokenContent: account.token }))
      .InviteRequests as Array<{ requestId: string; fromUserId: string; state: string }>;

  /** The lines of the invite-request log on disk. */
  async function logOnDisk(): Promise<Array<Record<string, unknown>>> {
    const text = await readFile(join(dir, 'invite-requests.jsonl'), 'utf8');
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
  const requestIdsIn = (lines: Array<Record<string, unknown>>): string[] =>
    lines
      .filter((line) => line.t === 'request')
      .map((line) => (line.request as { requestId: string }).requestId)
      .sort();

  /** `from` asks `to` for an invite `count` times over the socket (with `to` online); the request ids. */
  async function requestInvites(h: TestHost, from: Account, to: Account, count: number): Promise<string[]> {
    const target = await TestSocket.verified(h.server.url, to.id, to.token);
    const sender = await TestSocket.verified(h.server.url, from.id, from.token);
    sockets.push(target, sender);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      sender.sendJson({
        userId: from.id,
        tokenContent: from.token,
        message: 'RequestInvite',
        args: { targetUserId: to.id },
      });
      ids.push((await sender.next('sentinviterequest')).requestId as string);
    }
    return ids;
  }

  it('keeps the newest requests up to the limit, and compacts the log so old ones leave the disk', async () => {
    host = await startHost(settings, { dir });
    const [alice, bob] = await friends(host);
    const sent = await requestInvites(host, alice, bob, 1100);
    const newestFirst = sent.slice(-25).reverse();
    expect((await history(host, bob)).map((r) => r.requestId)).toEqual(newestFirst);
    await host.close();
    // At 1,000 lines the log was rewritten with the 25 live requests; later ones were appended after them.
    const lines = await logOnDisk();
    expect(lines.length).toBeLessThan(200);
    expect(requestIdsIn(lines)).toEqual(expect.arrayContaining(sent.slice(-25)));
    expect(requestIdsIn(lines)).not.toContain(sent[0]);
    host = await startHost(settings, { dir });
    expect((await history(host, bob)).map((r) => r.requestId)).toEqual(newestFirst);
  });

  it('compacts once when the threshold is crossed by a burst, while requests keep coming', async () => {
    host = await startHost(settings, { dir });
    const [alice, bob] = await friends(host);
    const target = await TestSocket.verified(host.server.url, bob.id, bob.token);
    const sender = await TestSocket.verified(host.server.url, alice.id, alice.token);
    sockets.push(target, sender);
    const compact = vi.spyOn(AppendLog.prototype, 'compact');
    try {
      // All in flight at once: the requests past the 1,000th line arrive while the compaction is under way.
      for (let i = 0; i < 1100; i++) {
        sender.sendJson({
          userId: alice.id,
          tokenContent: alice.token,
          message: 'RequestInvite',
          args: { targetUserId: bob.id },
        });
      }
      const sent: string[] = [];
      for (let i = 0; i < 1100; i++) sent.push((await sender.next('sentinviterequest')).requestId as string);
      expect(compact).toHaveBeenCalledTimes(1);
      expect((await history(host, bob)).map((r) => r.requestId)).toEqual(sent.slice(-25).reverse());
      await host.close();
      const lines = await logOnDisk();
      expect(lines.length).toBeLessThan(200);
      expect(requestIdsIn(lines)).toEqual(expect.arrayContaining(sent.slice(-25)));
      host = await startHost(settings, { dir });
      expect((await history(host, bob)).map((r) => r.requestId)).toEqual(sent.slice(-25).reverse());
    } finally {
      compact.mockRestore();
    }
  });

  it('writes a changed state to the log and reads it back after a restart', async () => {
    host = await startHost(settings, { dir });
    const [alice, bob] = await friends(host);
    const ids = await requestInvites(host, alice, bob, 3);
    expectOk(
      await host.post('updateInviteRequest', {
        userid: bob.id,
        tokenContent: bob.token,
        requestId: ids[1],
        state: 'dismissed',
      }),
    );
    const inMemory = await history(host, bob);
    await host.close();
    host = undefined;
    const lines = await logOnDisk();
    expect(requestIdsIn(lines)).toEqual([...ids].sort());
    expect(lines.filter((line) => line.t === 'state')).toEqual([
      { t: 'state', to: bob.id, requestId: ids[1], state: 'dismissed', at: expect.any(Number) },
    ]);
    host = await startHost(settings, { dir });
    expect(await history(host, bob)).toEqual(inMemory);
  });

  it('moves the first layout (one inbox record per user) into the invite-request log', async () => {
    host = await startHost(settings, { dir });
    const [alice, bob] = await friends(host);
    await host.close();
    const request = (n: number, state: string) => ({
      requestId: `invreq_legacy${n}`,
      fromUserId: alice.id,
      sentAt: 1_700_000_000 + n,
      expiresAt: 4_000_000_000,
      state,
      updatedAt: 1_700_000_000 + n,
    });
    await mkdir(join(dir, 'inviterequests'), { recursive: true });
    await writeFile(
      join(dir, 'inviterequests', `${bob.id}.json`),
      JSON.stringify({
        seq: 1,
        data: { userId: bob.id, requests: [request(1, 'answered'), request(2, 'new')] },
      }),
    );
    host = await startHost(settings, { dir });
    expect(await history(host, bob)).toEqual([
      expect.objectContaining({ requestId: 'invreq_legacy2', fromUserId: alice.id, state: 'new' }),
      expect.objectContaining({ requestId: 'invreq_legacy1', fromUserId: alice.id, state: 'answered' }),
    ]);
    await host.close();
    expect(await readdir(join(dir, 'inviterequests'))).toEqual([]);
    expect(requestIdsIn(await logOnDisk())).toEqual(['invreq_legacy1', 'invreq_legacy2']);
    host = await startHost(settings, { dir });
    expect(await history(host, bob)).toHaveLength(2);
  });
});
