import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import { editUser, expectOk, signUp, startHost, tempDir, type Account, type TestHost } from './helpers.js';
import { startPgInstance, type PgInstance } from './pg-instance.js';

/**
 * PostgreSQL paused, fast-stopped and immediately stopped under a stream of writes through two hosts (issue 25):
 * every acknowledged write is there afterwards, every write meanwhile is answered with an error within the time
 * limits, and both hosts go on serving by themselves once the database is back. The database is a throwaway
 * server this file starts (never a shared one).
 */

const LIMITS = {
  connectTimeoutMs: 1000,
  statementTimeoutMs: 1000,
  lockTimeoutMs: 500,
  settleTimeoutMs: 15_000,
};
/** Longest an answer may take while the database is away: the limits above, and slack for a busy machine. */
const ANSWER_BOUND_MS = 6000;

let pg: PgInstance;
let dir: string;
let a: TestHost;
let b: TestHost;
let admin: Account;

beforeAll(async () => {
  pg = await startPgInstance();
  dir = await tempDir('hnx-pg-faults-');
  a = await startHost({ database: pg.url, postgres: LIMITS }, { dir });
  b = await startHost({ database: pg.url, postgres: LIMITS }, { dir });
  admin = await signUp(a, 'admin');
  await editUser(a, admin.id, (draft) => {
    draft.Rank = Rank.Admin;
  });
}, 60_000);

afterAll(async () => {
  await a?.close().catch(() => undefined);
  await b?.close().catch(() => undefined);
  await pg?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Attempt {
  label: string;
  ok: boolean;
  code: string | undefined;
  ms: number;
}

/** Makes invite code `label` through `host`: how it was answered, and when. */
async function attempt(host: TestHost, label: string): Promise<Attempt> {
  const started = Date.now();
  const answer = await host.post('createInviteCode', {
    userid: admin.id,
    tokenContent: admin.token,
    label,
    singleUse: true,
  });
  return { label, ok: answer.success === true, code: answer.result?.error?.code, ms: Date.now() - started };
}

/** Makes invite codes through `host` one after another until `done()`; each attempt and how it was answered. */
async function writer(host: TestHost, prefix: string, done: () => boolean): Promise<Attempt[]> {
  const attempts: Attempt[] = [];
  for (let n = 0; !done(); n++) {
    const answer = await attempt(host, `${prefix}-${n}`);
    attempts.push(answer);
    if (!answer.ok) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return attempts;
}

async function storedLabels(): Promise<Set<string>> {
  const codes = expectOk(await a.post('inviteCodes', { userid: admin.id, tokenContent: admin.token }))
    .InviteCodes as Array<{ label: string }>;
  return new Set(codes.map((code) => code.label));
}

/** A user search through B by part of a name: the ids found (null: refused, with the code), and when. */
async function search(text: string): Promise<{ ids: string[] | null; code: string | undefined; ms: number }> {
  const started = Date.now();
  const answer = await b.get(`search/user/${text}/10/0`);
  const ids = answer.success ? (answer.result?.Candidates as string[]) : null;
  return { ids, code: answer.result?.error?.code, ms: Date.now() - started };
}

async function outageUnderWrites(name: string, outage: () => Promise<void>, recover: () => Promise<void>) {
  let stop = false;
  const writers = [writer(a, `${name}-a`, () => stop), writer(b, `${name}-b`, () => stop)];
  // B keeps the names' keys for searches from here on.
  expect((await search('dmi')).ids).toEqual([admin.id]);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await outage();
  const away = Date.now();
  // A write started during the outage, on each host (a writer's write on its way when it began may instead be
  // settled once the database is back: its answer was lost, not refused).
  await new Promise((resolve) => setTimeout(resolve, 300));
  const during = Promise.all([attempt(a, `${name}-a-during`), attempt(b, `${name}-b-during`)]);
  // A search meanwhile is refused as a write is: B may not answer from keys it cannot tell are current.
  const searched = await search('dmi');
  expect(searched).toMatchObject({ ids: null, code: 'STORAGE_UNAVAILABLE' });
  expect(searched.ms).toBeLessThan(ANSWER_BOUND_MS);
  await new Promise((resolve) => setTimeout(resolve, 3200));
  await recover();
  // Back: both hosts take writes again by themselves.
  await expect
    .poll(async () => (await a.post('getUser', { userid: admin.id })).success, { timeout: 20_000 })
    .toBe(true);
  // And B's searches see what A writes from now on.
  const newcomer = await signUp(a, `${name}newcomer`);
  await expect.poll(async () => (await search(`${name}newc`)).ids, { timeout: 5000 }).toEqual([newcomer.id]);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  stop = true;
  // The writers' last attempts stay last (each host's last write must have landed).
  const attempts = [...(await during), ...(await Promise.all(writers)).flat()];
  return { attempts, away };
}

function check(attempts: Attempt[], stored: Set<string>): void {
  const acknowledged = attempts.filter((attempt) => attempt.ok);
  const refused = attempts.filter((attempt) => !attempt.ok);
  expect(acknowledged.length).toBeGreaterThan(4);
  expect(refused.length).toBeGreaterThan(0);
  // Nothing acknowledged is lost.
  expect(acknowledged.filter((attempt) => !stored.has(attempt.label))).toEqual([]);
  // Every refusal says the database is away, within the bound.
  for (const attempt of refused) {
    expect(attempt.code).toBe('STORAGE_UNAVAILABLE');
    expect(attempt.ms).toBeLessThan(ANSWER_BOUND_MS);
  }
  // Both hosts wrote after the database came back.
  for (const prefix of ['-a-', '-b-']) {
    const last = attempts.filter((attempt) => attempt.label.includes(prefix)).at(-1)!;
    expect(last.ok).toBe(true);
  }
}

describe('PostgreSQL away under writes through two hosts', () => {
  it('paused: writes are refused within the time limits, none acknowledged is lost, both hosts recover', async () => {
    const { attempts } = await outageUnderWrites(
      'pause',
      () => pg.pause(),
      () => pg.resume(),
    );
    check(attempts, await storedLabels());
  }, 60_000);

  it('fast stop and start: the same', async () => {
    const { attempts } = await outageUnderWrites(
      'fast',
      () => pg.stop('fast'),
      () => pg.start(),
    );
    check(attempts, await storedLabels());
  }, 60_000);

  it('immediate stop and start (crash recovery): the same', async () => {
    const { attempts } = await outageUnderWrites(
      'immediate',
      () => pg.stop('immediate'),
      () => pg.start(),
    );
    check(attempts, await storedLabels());
  }, 60_000);
});
