import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { USER_NOTE_MAX, type UserNoteDto } from '../../server/protocol/moderation-tools.js';
import { editUser, expectFail, expectOk, signUp, startHost, type Account, type TestHost } from './helpers.js';

/** Issue 28: private notes moderators keep on a user. */
describe('private notes on a user', () => {
  let host: TestHost;
  let admin: Account;
  let mod: Account;
  let mod2: Account;
  let user: Account;
  const auth = (a: Account) => ({ userid: a.id, tokenContent: a.token });
  const add = (caller: Account, target: Account, text: string) =>
    host.post('addUserNote', { ...auth(caller), targetUserId: target.id, text });
  const list = (caller: Account, target: Account) =>
    host.post('userNotes', { ...auth(caller), targetUserId: target.id });
  const notes = async (caller: Account, target: Account) =>
    expectOk(await list(caller, target)).Notes as UserNoteDto[];

  beforeEach(async () => {
    host = await startHost();
    admin = await signUp(host, 'admin');
    mod = await signUp(host, 'mod');
    mod2 = await signUp(host, 'mod2');
    user = await signUp(host, 'user');
    await editUser(host, admin.id, (d) => void (d.Rank = 5));
    await editUser(host, mod.id, (d) => void (d.Rank = 4));
    await editUser(host, mod2.id, (d) => void (d.Rank = 4));
  });
  afterEach(async () => {
    await host.close();
  });

  it('lets moderators add and read notes, newest first, with the author', async () => {
    expectOk(await add(mod, user, 'Spammed the lobby twice.'));
    expectOk(await add(mod2, user, 'Apologised.\nKeep an eye.'));
    const seen = await notes(admin, user);
    expect(seen.map((n) => n.text)).toEqual(['Apologised.\nKeep an eye.', 'Spammed the lobby twice.']);
    expect(seen[1]).toMatchObject({ authorId: mod.id, authorName: 'mod', targetUserId: user.id });
  });

  it('never shows notes to the user they are about, nor to ranks below Moderator', async () => {
    expectOk(await add(mod, user, 'Private.'));
    expectFail(await list(user, user), 'NOT_A_MODERATOR');
    const other = await signUp(host, 'other');
    expectFail(await list(other, user), 'NOT_A_MODERATOR');
    expectFail(await add(other, user, 'hi'), 'NOT_A_MODERATOR');
    // Promoted to Moderator, the user still cannot read notes about themselves.
    await editUser(host, user.id, (d) => void (d.Rank = 4));
    expectFail(await list(user, user), 'CANNOT_MODERATE_SELF');
    // Notes are about users ranked below the reader.
    expectFail(await list(mod2, user), 'TARGET_RANK_TOO_HIGH');
    expect((await notes(admin, user)).map((n) => n.text)).toEqual(['Private.']);
  });

  it('lets authors delete their own notes, and Admin and above any note', async () => {
    const mine = expectOk(await add(mod, user, 'Mine.')).Note as UserNoteDto;
    const theirs = expectOk(await add(mod2, user, 'Theirs.')).Note as UserNoteDto;
    expect(mine.canDelete).toBe(true);
    expect((await notes(mod, user)).find((n) => n.id === theirs.id)?.canDelete).toBe(false);
    expectFail(await host.post('removeUserNote', { ...auth(mod), noteId: theirs.id }), 'FORBIDDEN');
    expectOk(await host.post('removeUserNote', { ...auth(mod), noteId: mine.id }));
    expectOk(await host.post('removeUserNote', { ...auth(admin), noteId: theirs.id }));
    expect(await notes(admin, user)).toEqual([]);
  });

  it('applies the length limit and the text rules, and writes nothing refused', async () => {
    expectFail(await add(mod, user, 'x'.repeat(USER_NOTE_MAX + 1)), 'INVALID_PARAMETERS');
    expectFail(await add(mod, user, '   '), 'INVALID_PARAMETERS');
    const bidi = expectFail(await add(mod, user, 'evil \u202E text'), 'INVALID_PARAMETERS');
    expect(bidi.result?.error?.fields?.text).toMatch(/direction/);
    expect(await notes(mod, user)).toEqual([]);
  });

  it('keeps every note when many are added at once', async () => {
    await Promise.all(Array.from({ length: 12 }, (_, i) => add(i % 2 ? mod : mod2, user, `note ${i}`)));
    expect(await notes(admin, user)).toHaveLength(12);
  });
});
