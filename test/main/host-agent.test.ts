// The host-side watcher of the desktop user's requests, against a real server and real sockets.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attachHostAgent, uploadsInProgress, type HostAgent } from '../../main/host-agent.js';
import type { HostNotice } from '../../main/host-messages.js';
import { expectOk, signUp, startHost, type Account, type TestHost } from '../server/helpers.js';
import { TestSocket } from '../server/socket-client.js';

let host: TestHost;
let agent: HostAgent;
let notices: HostNotice[];
let me: Account;
let ann: Account;
const sockets: TestSocket[] = [];

async function befriend(a: Account, b: Account): Promise<void> {
  expectOk(await host.post('sendFriendRequest', { userid: a.id, tokenContent: a.token, targetUserId: b.id }));
  expectOk(
    await host.post('acceptFriendRequest', { userid: b.id, tokenContent: b.token, targetUserId: a.id }),
  );
}

async function connect(account: Account): Promise<TestSocket> {
  const socket = await TestSocket.verified(host.server.url, account.id, account.token);
  sockets.push(socket);
  return socket;
}

beforeEach(async () => {
  host = await startHost();
  notices = [];
  agent = attachHostAgent(host.server, (notice) => notices.push(notice));
  me = await signUp(host, 'desk');
  ann = await signUp(host, 'ann');
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.close();
  agent.dispose();
  await host.close();
});

describe('host agent', () => {
  it('reports an invite request delivered to the desktop user, and still delivers it to their sockets', async () => {
    await befriend(me, ann);
    expect(await agent.setDesktopUser({ userId: me.id, tokenContent: me.token })).toBe(true);
    const mine = await connect(me);
    const sender = await connect(ann);
    sender.sendJson({
      userId: ann.id,
      tokenContent: ann.token,
      message: 'requestinvite',
      args: { targetUserId: me.id },
    });
    const delivered = await mine.next('gotinviterequest');
    expect(notices).toEqual([
      {
        kind: 'invite-request',
        userId: me.id,
        requestId: delivered.requestId,
        fromUserId: ann.id,
        fromUsername: 'ann',
      },
    ]);
    // Dismissing from the notification updates the request on the host.
    await agent.dismissInvite(me.id, String(delivered.requestId));
    expect((await host.server.invites.list(me.id))[0]?.state).toBe('dismissed');
  });

  it('reports nothing for other users, and nothing once the desktop user signs out', async () => {
    await befriend(me, ann);
    await agent.setDesktopUser({ userId: ann.id, tokenContent: ann.token });
    await agent.setDesktopUser(null);
    const mine = await connect(me);
    const sender = await connect(ann);
    sender.sendJson({
      userId: ann.id,
      tokenContent: ann.token,
      message: 'requestinvite',
      args: { targetUserId: me.id },
    });
    await mine.next('gotinviterequest');
    expect(notices).toEqual([]);
  });

  it('refuses a desktop user whose token does not verify', async () => {
    expect(await agent.setDesktopUser({ userId: me.id, tokenContent: 'forged' })).toBe(false);
    expectOk(
      await host.post('sendFriendRequest', { userid: ann.id, tokenContent: ann.token, targetUserId: me.id }),
    );
    expect(notices).toEqual([]);
  });

  it('reports a new friend request once, not the ones already pending', async () => {
    const bob = await signUp(host, 'bob');
    expectOk(
      await host.post('sendFriendRequest', { userid: bob.id, tokenContent: bob.token, targetUserId: me.id }),
    );
    await agent.setDesktopUser({ userId: me.id, tokenContent: me.token });
    expectOk(
      await host.post('sendFriendRequest', { userid: ann.id, tokenContent: ann.token, targetUserId: me.id }),
    );
    expectOk(
      await host.post('acceptFriendRequest', { userid: me.id, tokenContent: me.token, targetUserId: bob.id }),
    );
    expect(notices).toEqual([
      { kind: 'friend-request', userId: me.id, fromUserId: ann.id, fromUsername: 'ann' },
    ]);
  });

  it('counts uploads being received: files in tmp/ and recently touched chunk sets', async () => {
    expect(await uploadsInProgress(host.dir)).toBe(0);
    await writeFile(join(host.dir, 'tmp', 'upload-1'), 'x');
    await mkdir(join(host.dir, 'chunks', 'set-1'), { recursive: true });
    expect(await uploadsInProgress(host.dir)).toBe(2);
    expect(await uploadsInProgress(host.dir, Date.now() + 10 * 60 * 1000)).toBe(1);
  });
});
