import { afterEach, describe, expect, it } from 'vitest';
import { UsersRepo } from '../../server/store/users.js';
import type { ContentJobDto, UserContentDto } from '../../server/protocol/moderation-tools.js';
import { expectFail, expectOk, signUp, startHost, tempDir, type Account, type TestHost } from './helpers.js';
import { TestSocket } from './socket-client.js';
import { avatarMeta, upload, worldMeta } from './upload-helpers.js';

/** Issue 28: the Content tab's list, and "remove all content of this user" as a resumable background job. */

const opened: Array<TestHost | TestSocket> = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) {
    if (thing instanceof TestSocket) thing.close();
    else await thing.close();
  }
});

async function setRank(host: TestHost, account: Account, rank: number): Promise<void> {
  await host.server.store.tx((t) =>
    UsersRepo.in(t).update(account.id, (draft) => {
      draft.Rank = rank as 0;
    }),
  );
}

const auth = (a: Account) => ({ userid: a.id, tokenContent: a.token });

/** A community with a moderator, an admin, and a creator who uploaded 2 avatars, 2 worlds and 2 loose files. */
async function community(host: TestHost) {
  const admin = await signUp(host, 'admin');
  const mod = await signUp(host, 'mod');
  const creator = await signUp(host, 'creator');
  await setRank(host, admin, 5);
  await setRank(host, mod, 4);
  for (const name of ['Bot', 'Cat'])
    expectOk(
      await upload(host, creator, { name: 'a.hna', data: name }, { avatarMeta: avatarMeta({ Name: name }) }),
    );
  for (const name of ['Plaza', 'Park'])
    expectOk(
      await upload(host, creator, { name: 'w.hnw', data: name }, { worldMeta: worldMeta({ Name: name }) }),
    );
  for (const name of ['one.png', 'two.png'])
    expectOk(await upload(host, creator, { name, data: `PNG ${name}` }));
  return { admin, mod, creator };
}

async function contentOf(host: TestHost, caller: Account, target: Account): Promise<UserContentDto> {
  return expectOk(
    await host.post('moderationContent', { ...auth(caller), targetUserId: target.id }),
  ) as unknown as UserContentDto;
}

async function waitForJob(
  host: TestHost,
  caller: Account,
  target: Account,
  state: string,
): Promise<ContentJobDto> {
  for (let i = 0; i < 200; i++) {
    const { Job } = expectOk(
      await host.post('contentRemovalJob', { ...auth(caller), targetUserId: target.id }),
    );
    if ((Job as ContentJobDto | null)?.state === state) return Job as ContentJobDto;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the job never reached ${state}`);
}

describe('moderation content list', () => {
  it("lists a user's avatars, worlds and files with names, sizes and dates", async () => {
    const host = await startHost();
    opened.push(host);
    const { mod, creator } = await community(host);
    const content = await contentOf(host, mod, creator);
    expect(content.Avatars.map((a) => a.Name).sort()).toEqual(['Bot', 'Cat']);
    expect(content.Worlds.map((w) => w.Name).sort()).toEqual(['Park', 'Plaza']);
    expect(content.Files).toHaveLength(6);
    expect(
      content.Files.filter((f) => f.BuildOf === null)
        .map((f) => f.OriginalName)
        .sort(),
    ).toEqual(['one.png', 'two.png']);
    for (const a of content.Avatars) {
      expect(a.Size).toBe(3);
      expect(a.DateCreated).toBeGreaterThan(0);
    }
  });

  it('refuses the list to a registered user and on a user of equal rank', async () => {
    const host = await startHost();
    opened.push(host);
    const { mod, creator } = await community(host);
    expectFail(
      await host.post('moderationContent', { ...auth(creator), targetUserId: mod.id }),
      'NOT_A_MODERATOR',
    );
    const mod2 = await signUp(host, 'mod2');
    await setRank(host, mod2, 4);
    expectFail(
      await host.post('moderationContent', { ...auth(mod2), targetUserId: mod.id }),
      'TARGET_RANK_TOO_HIGH',
    );
  });
});

describe('remove all content of a user', () => {
  it('removes everything, logs each removal as a normal one, and pushes progress to moderators', async () => {
    const host = await startHost();
    opened.push(host);
    const { admin, mod, creator } = await community(host);
    const watcher = await TestSocket.verified(host.server.url, admin.id, admin.token);
    const bystander = await TestSocket.verified(host.server.url, creator.id, creator.token);
    opened.push(watcher, bystander);
    const started = expectOk(
      await host.post('startContentRemoval', { ...auth(mod), targetUserId: creator.id }),
    );
    expect((started.Job as ContentJobDto).total).toBe(6);
    const done = await waitForJob(host, mod, creator, 'done');
    expect(done).toMatchObject({ done: 6, failed: 0, total: 6, moderatorId: mod.id });
    const content = await contentOf(host, mod, creator);
    expect(content).toMatchObject({ Avatars: [], Worlds: [], Files: [] });
    const user = await host.server.users.get(creator.id);
    expect(user?.Avatars).toEqual([]);
    expect(user?.Worlds).toEqual([]);
    const log = expectOk(await host.post('moderationLog', { ...auth(mod), targetUserId: creator.id }));
    const actions = (log.Entries as Array<{ action: string; moderatorId: string }>)
      .map((e) => e.action)
      .sort();
    expect(actions).toEqual([
      'deleteavatar',
      'deleteavatar',
      'deletefile',
      'deletefile',
      'deleteworld',
      'deleteworld',
    ]);
    // A moderator's window hears the job move on, up to its end; the user whose content it is hears nothing.
    let last: Record<string, unknown> = {};
    while ((last.job as ContentJobDto | undefined)?.state !== 'done')
      last = await watcher.next('contentjobprogress');
    expect((last.job as ContentJobDto).done).toBe(6);
    await expect(bystander.next('contentjobprogress', 300)).rejects.toThrow();
  });

  it('follows the rank rules: a moderator cannot start one on an admin, nor a registered user at all', async () => {
    const host = await startHost();
    opened.push(host);
    const { admin, mod, creator } = await community(host);
    expectFail(
      await host.post('startContentRemoval', { ...auth(mod), targetUserId: admin.id }),
      'TARGET_RANK_TOO_HIGH',
    );
    expectFail(
      await host.post('startContentRemoval', { ...auth(creator), targetUserId: mod.id }),
      'NOT_A_MODERATOR',
    );
    expectFail(
      await host.post('startContentRemoval', { ...auth(mod), targetUserId: mod.id }),
      'CANNOT_MODERATE_SELF',
    );
  });

  it('stops, per item, when the moderator loses their rank mid-job', async () => {
    const host = await startHost({}, { contentJobs: { itemDelayMs: 150 } });
    opened.push(host);
    const { mod, creator } = await community(host);
    expectOk(await host.post('startContentRemoval', { ...auth(mod), targetUserId: creator.id }));
    await new Promise((r) => setTimeout(r, 200));
    await setRank(host, mod, 2);
    const admin = await signUp(host, 'admin2');
    await setRank(host, admin, 5);
    const stopped = await waitForJob(host, admin, creator, 'stopped');
    expect(stopped.stoppedReason).toMatch(/Moderator/);
    expect(stopped.done).toBeLessThan(6);
    expect((await contentOf(host, admin, creator)).Files.length).toBeGreaterThan(0);
  });

  it('counts each removal in the removal’s own commit (a host dying right after it leaves the count right)', async () => {
    const host = await startHost();
    opened.push(host);
    const { mod, creator } = await community(host);
    // The first removal commits, then its host "stops" before the job hears back: the count is already there.
    const { moderation } = host.server.core;
    const act = moderation.act.bind(moderation);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let removals = 0;
    moderation.act = async (...args) => {
      const outcome = await act(...args);
      if (++removals === 1) await held;
      return outcome;
    };
    expectOk(await host.post('startContentRemoval', { ...auth(mod), targetUserId: creator.id }));
    await expect.poll(() => removals).toBe(1);
    const log = expectOk(await host.post('moderationLog', { ...auth(mod), targetUserId: creator.id }));
    expect(log.Total).toBe(1);
    const { Job } = expectOk(
      await host.post('contentRemovalJob', { ...auth(mod), targetUserId: creator.id }),
    );
    expect(Job).toMatchObject({ state: 'running', done: 1, total: 6 });
    release();
    expect(await waitForJob(host, mod, creator, 'done')).toMatchObject({ done: 6, failed: 0, total: 6 });
  });

  it('resumes after a restart with the job half done, and finishes it', async () => {
    const dir = await tempDir();
    const first = await startHost({}, { dir, contentJobs: { itemDelayMs: 120 } });
    const { mod, creator } = await community(first);
    expectOk(await first.post('startContentRemoval', { ...auth(mod), targetUserId: creator.id }));
    // Wait for some items, but not all, then stop the host.
    for (let i = 0; i < 100; i++) {
      const { Job } = expectOk(
        await first.post('contentRemovalJob', { ...auth(mod), targetUserId: creator.id }),
      );
      if ((Job as ContentJobDto).done >= 2) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await first.close();
    const second = await startHost({}, { dir });
    opened.push(second);
    const before = expectOk(
      await second.post('contentRemovalJob', { ...auth(mod), targetUserId: creator.id }),
    );
    expect((before.Job as ContentJobDto).done).toBeLessThan(6);
    const done = await waitForJob(second, mod, creator, 'done');
    expect(done).toMatchObject({ done: 6, failed: 0 });
    expect(await contentOf(second, mod, creator)).toMatchObject({ Avatars: [], Worlds: [], Files: [] });
    const log = expectOk(await second.post('moderationLog', { ...auth(mod), targetUserId: creator.id }));
    expect(log.Total).toBe(6);
  });
});
