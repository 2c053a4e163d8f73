import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BAN_IMPORT_MAX_BYTES, BAN_IMPORT_MAX_LINES, BAN_UNTIL_LIFTED } from '../../server/protocol/audit.js';
import { UsersRepo } from '../../server/store/users.js';
import {
  expectFail,
  expectOk,
  manualClock,
  signUp,
  startHost,
  type Account,
  type TestHost,
} from './helpers.js';

describe('ban export and import', () => {
  let host: TestHost;
  let owner: Account;
  let admin: Account;
  let mod: Account;
  const clock = manualClock();
  const now = () => Math.floor(clock.now() / 1000);
  const as = (who: Account, body: Record<string, unknown> = {}) => ({
    userid: who.id,
    tokenContent: who.token,
    ...body,
  });
  const setRank = (account: Account, rank: number) =>
    host.server.store.tx((t) =>
      UsersRepo.in(t).update(account.id, (draft) => {
        draft.Rank = rank as 0;
      }),
    );
  const ban = (target: Account, banReason: string, timeEnd: number) =>
    host.post(
      'moderation',
      as(admin, { action: 'banuser', targetUserId: target.id, banReason, banDescription: 'd', timeEnd }),
    );
  const download = (path: string, body: Record<string, unknown>) =>
    host.raw(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const importBans = (who: Account, mode: string, format: string, content: string) =>
    host.post('importBans', as(who, { mode, format, content }));

  beforeEach(async () => {
    host = await startHost({}, { clock });
    owner = await signUp(host, 'owner');
    admin = await signUp(host, 'admin');
    mod = await signUp(host, 'mod');
    await setRank(owner, 6);
    await setRank(admin, 5);
    await setRank(mod, 4);
  });
  afterEach(() => host.close());

  it('exports the bans in force as CSV with formula cells defused, and as JSON', async () => {
    const eve = await signUp(host, 'eve');
    const bob = await signUp(host, 'bob');
    expectOk(await ban(eve, '=HYPERLINK("http://x")', BAN_UNTIL_LIFTED));
    expectOk(await ban(bob, '-spam', now() + 3600));
    const res = await download('bansExport', as(admin, { format: 'csv' }));
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="bans-.*\.csv"$/);
    expect(res.headers.get('content-type')).toContain('text/csv');
    const csv = await res.text();
    const lines = csv.trim().split('\r\n');
    expect(lines[0]).toBe(
      '"username","userId","banReason","banDescription","banBegin","banEnd","untilLifted"',
    );
    expect(lines[1]).toContain(`"bob","${bob.id}","'-spam","d"`);
    expect(lines[2]).toContain(`"eve","${eve.id}","'=HYPERLINK(""http://x"")","d"`);
    expect(lines[2]).toContain(`"${BAN_UNTIL_LIFTED}","true"`);
    const json = (await (await download('bansExport', as(admin, { format: 'json' }))).json()) as {
      bans: Array<{ username: string; untilLifted: boolean; banReason: string }>;
    };
    expect(json.bans.map((b) => [b.username, b.untilLifted, b.banReason])).toEqual([
      ['bob', false, '-spam'],
      ['eve', true, '=HYPERLINK("http://x")'],
    ]);
  });

  it('exports the log with the current filters; moderators below admin may not export', async () => {
    const eve = await signUp(host, 'eve');
    expectOk(await ban(eve, '@cmd', now() + 3600));
    expectOk(await host.post('createInviteCode', as(admin, { label: '+1' })));
    const res = await download('auditExport', as(admin, { format: 'csv', group: 'invites' }));
    expect(res.headers.get('content-disposition')).toMatch(/audit-log-.*\.csv/);
    const lines = (await res.text()).trim().split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('"createinvitecode"');
    expect(lines[1]).toContain(`"'+1"`);
    const json = (await (await download('auditExport', as(admin, { format: 'json' }))).json()) as Array<{
      action: string;
    }>;
    expect(json.map((e) => e.action)).toEqual(['createinvitecode', 'banuser']);
    expectFail(
      (await (await download('auditExport', as(mod, { format: 'csv' }))).json()) as never,
      'NOT_A_MODERATOR',
    );
    expectFail(
      (await (await download('bansExport', as(mod, { format: 'json' }))).json()) as never,
      'NOT_A_MODERATOR',
    );
  });

  it('imports its own export on another host: each ban is a logged banuser by the importer', async () => {
    const eve = await signUp(host, 'eve');
    expectOk(await ban(eve, '=evil', BAN_UNTIL_LIFTED));
    const file = await (await download('bansExport', as(admin, { format: 'csv' }))).text();
    const other = await startHost({}, { clock });
    try {
      const otherOwner = await signUp(other, 'owner2');
      await other.server.store.tx((t) =>
        UsersRepo.in(t).update(otherOwner.id, (d) => {
          d.Rank = 6;
        }),
      );
      const eve2 = await signUp(other, 'eve');
      const result = expectOk(
        await other.post('importBans', as(otherOwner, { mode: 'strict', format: 'csv', content: file })),
      );
      expect(result).toEqual({ Imported: [{ line: 2, username: 'eve' }], Skipped: [] });
      const log = expectOk(await other.post('moderationLog', as(otherOwner, { targetUserId: eve2.id }))) as {
        Entries: Array<{ action: string; moderatorId: string; fields: Record<string, unknown> }>;
      };
      expect(log.Entries[0]).toMatchObject({
        action: 'banuser',
        moderatorId: otherOwner.id,
        fields: { banReason: '=evil', timeEnd: BAN_UNTIL_LIFTED },
      });
    } finally {
      await other.close();
    }
  });

  it('strict refuses a file naming an unknown user, names the line, and imports nothing', async () => {
    const eve = await signUp(host, 'eve');
    const csv = `username,banReason,banEnd\neve,spam,${now() + 3600}\nnobody,spam,${now() + 3600}\n`;
    const answer = expectFail(await importBans(admin, 'strict', 'csv', csv), 'INVALID_PARAMETERS');
    expect(answer.message).toBe('Import refused: line 3: no user has that username here (nobody).');
    const state = expectOk(await host.post('moderationLookup', as(admin, { query: eve.id }))) as {
      Users: Array<{ isBanned: boolean }>;
    };
    expect(state.Users[0]!.isBanned).toBe(false);
  });

  it('strict refuses a malformed line; lenient imports what matches and lists what it skipped', async () => {
    await signUp(host, 'eve');
    await signUp(host, 'ann');
    const csv = [
      'username,banReason,banEnd',
      `eve,spam,${now() + 3600}`,
      'ann,spam,soon',
      `ghost,spam,${now() + 3600}`,
      `owner,spam,${now() + 3600}`,
      'x,"unclosed',
    ].join('\n');
    const strict = expectFail(await importBans(admin, 'strict', 'csv', csv), 'INVALID_PARAMETERS');
    expect(strict.message).toBe('Import refused: line 6: a quoted cell is never closed.');
    const lenient = expectFail(await importBans(admin, 'lenient', 'csv', csv), 'INVALID_PARAMETERS');
    expect(lenient.message).toContain('line 6');
    const fine = csv.split('\n').slice(0, 5).join('\n');
    expect(expectFail(await importBans(admin, 'strict', 'csv', fine), 'INVALID_PARAMETERS').message).toBe(
      'Import refused: line 3: banEnd is not a Unix time in seconds (ann).',
    );
    const result = expectOk(await importBans(admin, 'lenient', 'csv', fine));
    expect(result).toEqual({
      Imported: [{ line: 2, username: 'eve' }],
      Skipped: [
        { line: 3, username: 'ann', reason: 'banEnd is not a Unix time in seconds' },
        { line: 4, username: 'ghost', reason: 'no user has that username here' },
        { line: 5, username: 'owner', reason: 'ranked the same as or above you' },
      ],
    });
  });

  it('imports JSON, naming bans by their place in the list; refuses a moderator (rank) and a non-JSON file', async () => {
    await signUp(host, 'eve');
    const json = JSON.stringify({
      bans: [
        { username: 'eve', banReason: 'x', untilLifted: true },
        { username: 'zed', banReason: 'x', banEnd: 1 },
      ],
    });
    expect(expectOk(await importBans(admin, 'lenient', 'json', json))).toMatchObject({
      Imported: [{ line: 1, username: 'eve' }],
      Skipped: [{ line: 2, username: 'zed' }],
    });
    expectFail(await importBans(mod, 'lenient', 'json', json), 'NOT_A_MODERATOR');
    expect(
      expectFail(await importBans(admin, 'strict', 'json', '{oops'), 'INVALID_PARAMETERS').message,
    ).toMatch(/^Import refused: the file is not JSON/);
  });

  it('refuses a file over the size bound and one over the line bound, importing nothing', async () => {
    await signUp(host, 'eve');
    const big = `username,banReason,banEnd\neve,${'x'.repeat(BAN_IMPORT_MAX_BYTES)},${now() + 60}\n`;
    expect(expectFail(await importBans(admin, 'lenient', 'csv', big), 'INVALID_PARAMETERS').message).toBe(
      `Import refused: the file is larger than ${BAN_IMPORT_MAX_BYTES} bytes.`,
    );
    const many = [
      'username,banReason,banEnd',
      ...Array.from({ length: BAN_IMPORT_MAX_LINES + 1 }, () => `eve,x,${now() + 60}`),
    ];
    expect(
      expectFail(await importBans(admin, 'lenient', 'csv', many.join('\n')), 'INVALID_PARAMETERS').message,
    ).toBe(`Import refused: the file holds more than ${BAN_IMPORT_MAX_LINES} bans.`);
    const manyJson = JSON.stringify(
      Array.from({ length: BAN_IMPORT_MAX_LINES + 1 }, () => ({ username: 'eve' })),
    );
    expectFail(await importBans(admin, 'lenient', 'json', manyJson), 'INVALID_PARAMETERS');
    const log = expectOk(await host.post('moderationLog', as(admin))) as { Total: number };
    expect(log.Total).toBe(0);
  });
});
