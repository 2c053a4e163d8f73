import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectOk, signUp, startHost, tempDir, type Account, type TestHost } from './helpers.js';
import { TestSocket } from './socket-client.js';

/** Invite-request history on disk: pages of requests, bounded per user, and the first layout upgraded. */
describe('invite request history', () => {
  let dir: string;
  let host: TestHost | undefined;
  const sockets: TestSocket[] = [];
  const settings = { socket: { inviteRequestCooldownSeconds: 0, inviteRequestHistory: 25 } };

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

  /** Every request id in the page files on disk. */
  async function idsOnDisk(): Promise<string[]> {
    const folder = join(dir, 'invite-request-pages');
    const ids: string[] = [];
    for (const name of await readdir(folder)) {
      const record = JSON.parse(await readFile(join(folder, name), 'utf8')) as {
        data: { requests: Array<{ requestId: string }> };
      };
      ids.push(...record.data.requests.map((r) => r.requestId));
    }
    return ids.sort();
  }

  it('keeps the newest requests up to the limit, and deletes the older ones from disk', async () => {
    host = await startHost(settings, { dir });
    const [alice, bob] = await friends(host);
    const target = await TestSocket.verified(host.server.url, bob.id, bob.token);
    const sender = await TestSocket.verified(host.server.url, alice.id, alice.token);
    sockets.push(target, sender);
    const sent: string[] = [];
    for (let i = 0; i < 45; i++) {
      sender.sendJson({
        userId: alice.id,
        tokenContent: alice.token,
        message: 'RequestInvite',
        args: { targetUserId: bob.id },
      });
      sent.push((await sender.next('sentinviterequest')).requestId as string);
    }
    const newestFirst = sent.slice(20).reverse();
    expect((await history(host, bob)).map((r) => r.requestId)).toEqual(newestFirst);
    await host.close();
    // Pages of 20: the first one, all trimmed, is gone; the next two hold the 25 kept.
    expect(await readdir(join(dir, 'invite-request-pages'))).toHaveLength(2);
    expect(await idsOnDisk()).toEqual(sent.slice(20).sort());
    host = await startHost(settings, { dir });
    expect((await history(host, bob)).map((r) => r.requestId)).toEqual(newestFirst);
  });

  it("writes a changed state to disk (pages reuse each request's JSON until it changes)", async () => {
    host = await startHost(settings, { dir });
    const [alice, bob] = await friends(host);
    const target = await TestSocket.verified(host.server.url, bob.id, bob.token);
    const sender = await TestSocket.verified(host.server.url, alice.id, alice.token);
    sockets.push(target, sender);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      sender.sendJson({
        userId: alice.id,
        tokenContent: alice.token,
        message: 'RequestInvite',
        args: { targetUserId: bob.id },
      });
      ids.push((await sender.next('sentinviterequest')).requestId as string);
    }
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
    const page = JSON.parse(
      await readFile(join(dir, 'invite-request-pages', `${bob.id}_p0.json`), 'utf8'),
    ) as { data: { userId: string; page: number; requests: Array<Record<string, unknown>> } };
    expect(page.data.userId).toBe(bob.id);
    expect(page.data.page).toBe(0);
    expect(page.data.requests.map((r) => [r.requestId, r.state])).toEqual([
      [ids[0], 'new'],
      [ids[1], 'dismissed'],
      [ids[2], 'new'],
    ]);
    host = await startHost(settings, { dir });
    expect(await history(host, bob)).toEqual(inMemory);
  });

  it('moves the first layout (one inbox record per user) into pages of requests', async () => {
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
    expect(await idsOnDisk()).toEqual(['invreq_legacy1', 'invreq_legacy2']);
    host = await startHost(settings, { dir });
    expect(await history(host, bob)).toHaveLength(2);
  });
});
