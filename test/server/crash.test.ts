import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';
import { postJson, spawnServe, stop, type Served } from './cli-helpers.js';

const PASSWORD = 'Passw0rd!';

describe('crash safety', () => {
  let dir: string | undefined;
  let served: Served | undefined;
  afterEach(async () => {
    if (served) await stop(served, 'SIGKILL');
    served = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged change after a SIGKILL in the middle of a burst of writes', async () => {
    dir = await tempDir('hnx-crash-');
    served = await spawnServe(['--data-dir', dir]);
    const url = served.url;
    const accounts: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < 8; i++) {
      const created = await postJson(url, 'createUser', {
        username: `user${i}`,
        password: PASSWORD,
        email: `u${i}@x.io`,
      });
      const data = created.result!.UserData as { Id: string; AccountTokens: Array<{ content: string }> };
      accounts.push({ id: data.Id, token: data.AccountTokens[0]!.content });
    }

    // Each account writes an increasing counter into its StatusText; user0 also sends friend requests, which
    // change two users in one journaled commit.
    const acked = new Map<string, number>();
    const friendAcked = new Set<string>();
    let killed = false;
    let totalAcks = 0;
    const writers = accounts.map(async (account, index) => {
      for (let n = 1; !killed; n++) {
        try {
          const answer =
            index === 0 && n < accounts.length
              ? await postJson(url, 'sendFriendRequest', {
                  userid: account.id,
                  tokenContent: account.token,
                  targetUserId: accounts[n]!.id,
                })
              : await postJson(url, 'updateBio', {
                  userid: account.id,
                  tokenContent: account.token,
                  bio: { StatusText: String(n) },
                });
          if (!answer.success) throw new Error(answer.message);
          if (index === 0 && n < accounts.length) friendAcked.add(accounts[n]!.id);
          else acked.set(account.id, n);
          totalAcks++;
        } catch (error) {
          if (killed) return;
          throw error;
        }
      }
    });
    while (totalAcks < 400) await new Promise((r) => setTimeout(r, 5));
    killed = true;
    served.proc.kill('SIGKILL');
    await Promise.allSettled(writers);
    await new Promise((r) =>
      served!.proc.exitCode !== null || served!.proc.signalCode ? r(null) : served!.proc.once('exit', r),
    );
    served = undefined;

    // Every record file is whole JSON.
    for (const name of await readdir(join(dir, 'users'))) {
      if (name.endsWith('.json')) JSON.parse(await readFile(join(dir, 'users', name), 'utf8'));
    }

    served = await spawnServe(['--data-dir', dir]);
    expect(acked.size).toBeGreaterThan(0);
    for (const account of accounts) {
      const me = await postJson(served.url, 'getUser', { userid: account.id, tokenContent: account.token });
      expect(me.success, me.message).toBe(true);
      const user = me.result!.UserData as {
        Bio: { StatusText: string };
        OutgoingFriendRequests: string[];
        FriendRequests: string[];
      };
      const last = acked.get(account.id);
      if (last !== undefined) {
        // The acknowledged value, or a later one that was in flight when the process died.
        expect(Number(user.Bio.StatusText)).toBeGreaterThanOrEqual(last);
      }
    }
    const sender = await postJson(served.url, 'getUser', {
      userid: accounts[0]!.id,
      tokenContent: accounts[0]!.token,
    });
    const outgoing = (sender.result!.UserData as { OutgoingFriendRequests: string[] }).OutgoingFriendRequests;
    for (const target of friendAcked) expect(outgoing).toContain(target);
    // Both halves of every journaled change are there together: no request is known to only one side.
    for (const account of accounts.slice(1)) {
      const other = await postJson(served.url, 'getUser', {
        userid: account.id,
        tokenContent: account.token,
      });
      const incoming = (other.result!.UserData as { FriendRequests: string[] }).FriendRequests;
      expect(incoming.includes(accounts[0]!.id)).toBe(outgoing.includes(account.id));
    }
  });
});
