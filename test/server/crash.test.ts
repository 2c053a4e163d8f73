import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';
import { postJson, runCli, spawnServe, stop, type Served } from './cli-helpers.js';

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

  it('keeps every acknowledged change, moderation included, through two SIGKILLs in a row', async () => {
    dir = await tempDir('hnx-crash2-');
    const created = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'modder',
      '--password',
      PASSWORD,
      '--email',
      'mod@x.io',
      '--rank',
      '4',
    ]);
    expect(created.code, created.stderr).toBe(0);
    served = await spawnServe(['--data-dir', dir]);
    const login = await postJson(served.url, 'login', { username: 'modder', password: PASSWORD });
    const modToken = (login.result!.token as { content: string }).content;
    const who = await postJson(served.url, 'getUser', { username: 'modder' });
    const modId = (who.result!.UserData as { Id: string }).Id;
    const accounts: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < 4; i++) {
      const answer = await postJson(served.url, 'createUser', {
        username: `member${i}`,
        password: PASSWORD,
        email: `m${i}@x.io`,
      });
      const data = answer.result!.UserData as { Id: string; AccountTokens: Array<{ content: string }> };
      accounts.push({ id: data.Id, token: data.AccountTokens[0]!.content });
    }
    const bioAcked = new Map<string, number>();
    /** Badge names whose addbadge was acknowledged, per target, and every acknowledged log entry id. */
    const badgesAcked = new Map<string, number>();
    const logIds = new Set<string>();

    for (let round = 0; round < 2; round++) {
      const url = served.url;
      let killed = false;
      let acks = 0;
      const writers = accounts.map(async (account, index) => {
        for (let n = 1; !killed; n++) {
          try {
            if (index % 2 === 0) {
              const answer = await postJson(url, 'updateBio', {
                userid: account.id,
                tokenContent: account.token,
                bio: { StatusText: `${round}:${n}` },
              });
              if (!answer.success) throw new Error(answer.message);
              bioAcked.set(account.id, round * 1_000_000 + n);
            } else {
              const answer = await postJson(url, 'moderation', {
                userid: modId,
                tokenContent: modToken,
                action: 'addbadge',
                targetUserId: account.id,
                badgeName: `r${round}n${n}`,
              });
              if (!answer.success) {
                // Badges are bounded: lift the oldest and go on.
                if ((answer.result?.error as { code: string } | undefined)?.code === 'TOO_MANY_BADGES')
                  return;
                throw new Error(answer.message);
              }
              badgesAcked.set(account.id, round * 1_000_000 + n);
              logIds.add((answer.result!.LogEntry as { id: string }).id);
            }
            acks++;
          } catch (error) {
            if (killed) return;
            throw error;
          }
        }
      });
      while (acks < 120) await new Promise((r) => setTimeout(r, 5));
      killed = true;
      served.proc.kill('SIGKILL');
      await Promise.allSettled(writers);
      await new Promise((r) =>
        served!.proc.exitCode !== null || served!.proc.signalCode ? r(null) : served!.proc.once('exit', r),
      );
      // The next start comes right after the crash, as after a power cut.
      served = await spawnServe(['--data-dir', dir]);
    }

    for (const [index, account] of accounts.entries()) {
      const me = await postJson(served.url, 'getUser', { userid: account.id, tokenContent: account.token });
      expect(me.success, me.message).toBe(true);
      const user = me.result!.UserData as { Bio: { StatusText: string }; Badges: string[] };
      if (index % 2 === 0) {
        const [round, n] = user.Bio.StatusText.split(':').map(Number) as [number, number];
        expect(round * 1_000_000 + n).toBeGreaterThanOrEqual(bioAcked.get(account.id) ?? 0);
      } else {
        const last = badgesAcked.get(account.id);
        if (last !== undefined) {
          const round = Math.floor(last / 1_000_000);
          expect(user.Badges).toContain(`r${round}n${last % 1_000_000}`);
        }
      }
    }
    const log = await postJson(served.url, 'moderationLog', {
      userid: modId,
      tokenContent: modToken,
      itemsPerPage: 50,
      page: 0,
    });
    expect(log.success, log.message).toBe(true);
    expect(log.result!.Total).toBeGreaterThanOrEqual(logIds.size);
    // Every acknowledged entry is in the log, once; numbering never repeats across the crashes.
    const all: Array<{ id: string; seq: number }> = [];
    for (let page = 0; page * 50 < (log.result!.Total as number); page++) {
      const answer = await postJson(served.url, 'moderationLog', {
        userid: modId,
        tokenContent: modToken,
        itemsPerPage: 50,
        page,
      });
      all.push(...(answer.result!.Entries as Array<{ id: string; seq: number }>));
    }
    const ids = new Set(all.map((entry) => entry.id));
    for (const id of logIds) expect(ids.has(id)).toBe(true);
    expect(new Set(all.map((entry) => entry.seq)).size).toBe(all.length);
  });
});
