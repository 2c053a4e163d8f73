import { execFileSync } from 'node:child_process';
import { open, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { expectFail, expectOk, signUp, startHost, tempDir, type TestHost } from './helpers.js';
import { blobTree, upload } from './upload-helpers.js';
import { TestSocket } from './socket-client.js';

/**
 * A real full disk: the data folder is a small tmpfs, filled up with a file of ours. Mounting needs root (CI runs
 * as root); this test fails, saying so, rather than skip.
 */
async function mountSmallDisk(megabytes: number): Promise<string> {
  const dir = await tempDir('hnx-full-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    throw new Error(
      `This test mounts a ${megabytes} MiB tmpfs to fill a real disk and needs root (CI runs as root): ${(error as Error).message}`,
    );
  }
  return dir;
}

/** Writes a file until the disk is full; returns its path (delete it to free the space). */
async function fillDisk(dir: string): Promise<string> {
  const path = join(dir, 'filler.bin');
  const handle = await open(path, 'w');
  const block = Buffer.alloc(16 * 1024, 1);
  try {
    for (;;) await handle.write(block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    await handle.close();
  }
  return path;
}

describe('a full disk', () => {
  let host: TestHost | undefined;
  let mount: string | undefined;
  afterEach(async () => {
    await host?.server.close().catch(() => undefined);
    host = undefined;
    if (mount) {
      execFileSync('umount', [mount]);
      await rm(mount, { recursive: true, force: true });
    }
    mount = undefined;
  });

  it('refuses writes and uploads cleanly, loses nothing acknowledged, and recovers when space returns', async () => {
    mount = await mountSmallDisk(8);
    // The filler sits next to the data folder (the data folder must hold only our files).
    const dir = join(mount, 'data');
    host = await startHost({ fsync: true }, { dir });
    const alice = await signUp(host, 'alice');
    expectOk(
      await host.post('updateBio', {
        userid: alice.id,
        tokenContent: alice.token,
        bio: { StatusText: 'before' },
      }),
    );
    const bob = await signUp(host, 'bob');
    expectOk(
      await host.post('sendFriendRequest', {
        userid: alice.id,
        tokenContent: alice.token,
        targetUserId: bob.id,
      }),
    );
    expectOk(
      await host.post('acceptFriendRequest', {
        userid: bob.id,
        tokenContent: bob.token,
        targetUserId: alice.id,
      }),
    );
    const aliceSocket = await TestSocket.verified(host.server.url, alice.id, alice.token);
    const bobSocket = await TestSocket.verified(host.server.url, bob.id, bob.token);
    const filler = await fillDisk(mount);

    // Ordinary writes: refused with a clear reason; what was acknowledged stays what readers see.
    let lastAcked = 'before';
    let refusals = 0;
    for (let n = 0; n < 200 && refusals < 3; n++) {
      const answer = await host.post('updateBio', {
        userid: alice.id,
        tokenContent: alice.token,
        bio: { StatusText: `full-${n}` },
      });
      if (answer.success) lastAcked = `full-${n}`;
      else {
        expectFail(answer, 'STORAGE_FULL');
        expect(answer.message).toMatch(/disk is full/);
        refusals++;
      }
    }
    expect(refusals).toBe(3);
    const seen = expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }));
    expect((seen.UserData as { Bio: { StatusText: string } }).Bio.StatusText).toBe(lastAcked);

    // An invite request: the sender hears it was not saved, and the target's history never shows it.
    aliceSocket.sendJson({
      userId: alice.id,
      tokenContent: alice.token,
      message: 'requestinvite',
      args: { targetUserId: bob.id },
    });
    expect(await aliceSocket.next('failedtorequestinvite')).toMatchObject({
      targetUserId: bob.id,
      reason: 'NOT_SAVED',
    });
    const history = expectOk(await host.post('inviteRequests', { userid: bob.id, tokenContent: bob.token }));
    expect(history.InviteRequests).toEqual([]);

    // An upload: refused, and no part of it is left behind.
    const big = Buffer.alloc(2 * 1024 * 1024, 7);
    const refusedUpload = await upload(host, alice, { name: 'big.png', data: big });
    expectFail(refusedUpload, 'STORAGE_FULL');
    expect(await blobTree(dir)).toEqual([]);

    // Space returns: the next write and upload work with no restart.
    await unlink(filler);
    expectOk(
      await host.post('updateBio', {
        userid: alice.id,
        tokenContent: alice.token,
        bio: { StatusText: 'after' },
      }),
    );
    const uploaded = expectOk(await upload(host, alice, { name: 'big.png', data: big })).UploadData as {
      FileName: string;
    };
    expect(await blobTree(dir)).toEqual([`files/${alice.id}/${uploaded.FileName}`]);

    aliceSocket.sendJson({ userId: alice.id, message: 'requestinvite', args: { targetUserId: bob.id } });
    await aliceSocket.next('sentinviterequest');
    await bobSocket.next('gotinviterequest');
    aliceSocket.close();
    bobSocket.close();

    // And all of it is there after a restart.
    await host.server.close();
    host = await startHost({ fsync: true }, { dir });
    const again = expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }));
    expect((again.UserData as { Bio: { StatusText: string } }).Bio.StatusText).toBe('after');
  });
});
