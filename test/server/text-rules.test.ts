import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rank } from '../../server/protocol/enums.js';
import { isAcceptedEmail } from '../../server/protocol/email.js';
import {
  BioInput,
  CreateInviteCodeRequest,
  emailProblem,
  fieldErrorsOf,
  ModerationFields,
  normaliseBadge,
} from '../../server/protocol/schemas.js';
import { textProblem } from '../../server/protocol/text-rules.js';
import { AvatarMetaInput } from '../../server/protocol/uploads.js';
import {
  editUser,
  expectFail,
  expectOk,
  PASSWORD,
  signUp,
  startHost,
  type Account,
  type TestHost,
} from './helpers.js';
import { avatarMeta, blobTree, upload } from './upload-helpers.js';

const hex = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** Text real people write, which no rule may refuse. */
const REAL_TEXT = [
  'Plain words, punctuation: 100% ok!',
  'Zoë Ångström façade',
  '日本語のテキスト 한국어 中文',
  'שלום עולם', // Hebrew
  'مرحبا بالعالم', // Arabic
  'abc \u200F(RTL mark) \u200E(LTR mark) \u061C(Arabic mark)',
  'می\u200Cخواهم', // Persian needs the zero-width non-joiner
  'क्\u200Dष', // Devanagari with a zero-width joiner
  '👩\u200D💻 coder', // woman technologist: a ZWJ sequence
  '👨\u200D👩\u200D👧\u200D👦 family',
  '🏳️\u200D🌈 and ❤️', // variation selectors
  '👍🏽 skin tone',
  '🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} Scotland', // tag characters of a flag
  'no\u00A0break and\u3000wide space',
];

const CONTROLS = ['\u0000', '\u0007', '\u001B', '\u007F', '\u0085', '\u009B'];
const DIRECTION = ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069'];
const INVISIBLE = [
  '\u00AD',
  '\u180E',
  '\u200B',
  '\u2060',
  '\u2063',
  '\u206A',
  '\u206F',
  '\u3164',
  '\uFEFF',
  '\uFFA0',
  '\uFFF9',
];

describe('the text rule (server/protocol/text-rules)', () => {
  it.each(REAL_TEXT)('keeps real text intact in both kinds: %s', (text) => {
    expect(textProblem(text, 'line')).toBeNull();
    expect(textProblem(text, 'multiline')).toBeNull();
  });

  it.each(CONTROLS)('refuses the control character %j in both kinds', (c) => {
    expect(textProblem(`a${c}b`, 'line')).toBe(
      `must not contain control characters (${hex(c)} at character 2)`,
    );
    expect(textProblem(`a${c}b`, 'multiline')).toMatch(/^must not contain control characters/);
  });

  it.each(DIRECTION)('refuses the text-direction control %j in both kinds', (c) => {
    expect(textProblem(`evil${c}gnp.exe`, 'line')).toBe(
      `must not contain text-direction controls (${hex(c)} at character 5)`,
    );
    expect(textProblem(`evil${c}gnp.exe`, 'multiline')).toMatch(/^must not contain text-direction controls/);
  });

  it.each(INVISIBLE)('refuses the invisible character %j in both kinds', (c) => {
    expect(textProblem(`ad${c}min`, 'line')).toBe(
      `must not contain invisible characters (${hex(c)} at character 3)`,
    );
    expect(textProblem(`ad${c}min`, 'multiline')).toMatch(/^must not contain invisible characters/);
  });

  it('refuses line breaks and tabs in one-line text', () => {
    expect(textProblem('one\ntwo', 'line')).toBe('must be a single line (U+000A at character 4)');
    expect(textProblem('one\r\ntwo', 'line')).toBe('must be a single line (U+000D at character 4)');
    expect(textProblem('one\u2028two', 'line')).toBe('must be a single line (U+2028 at character 4)');
    expect(textProblem('one\ttwo', 'line')).toBe(
      'must not contain control characters (U+0009 at character 4)',
    );
  });

  it('lets multi-line text hold line feeds, CRLF and tabs, and nothing else that breaks lines', () => {
    expect(textProblem('first\nsecond\r\n\tindented\n\n', 'multiline')).toBeNull();
    for (const odd of ['a\rb', 'a\r', 'a\u2028b', 'a\u2029b']) {
      expect(textProblem(odd, 'multiline')).toMatch(/^may only break lines with a line feed \(\\n\) \(U\+/);
    }
    expect(textProblem('a\u000Bb', 'multiline')).toMatch(/^must not contain control characters \(U\+000B/);
    expect(textProblem('a\u000Cb', 'multiline')).toMatch(/^must not contain control characters \(U\+000C/);
  });

  it('refuses broken UTF-16 (a lone surrogate) and keeps a proper pair', () => {
    expect(textProblem('ok \uD83D', 'line')).toBe('must be valid Unicode text (U+D83D at character 4)');
    expect(textProblem('\uDE00 after', 'multiline')).toBe(
      'must be valid Unicode text (U+DE00 at character 1)',
    );
    expect(textProblem('\uD83D\uDE00', 'line')).toBeNull();
  });

  it('counts the position in characters as a person does (an emoji is one)', () => {
    expect(textProblem('😀😀\u200B', 'line')).toBe(
      'must not contain invisible characters (U+200B at character 3)',
    );
  });

  it('names the field through the shared schemas, as every other field rule', () => {
    const bio = BioInput.safeParse({ DisplayName: '\u202Eevil', Description: 'fine\nlines' });
    expect(bio.success).toBe(false);
    expect(fieldErrorsOf(bio.error!)).toEqual({
      DisplayName: 'must not contain text-direction controls (U+202E at character 1)',
    });
    const meta = AvatarMetaInput.safeParse(JSON.parse(avatarMeta({ Tags: ['ok', 'bad\u200B'] })));
    expect(fieldErrorsOf(meta.error!)).toEqual({
      'Tags.1': 'must not contain invisible characters (U+200B at character 4)',
    });
    const code = CreateInviteCodeRequest.safeParse({ userid: 'u', tokenContent: 't', label: 'party\n' });
    expect(Object.keys(fieldErrorsOf(code.error!))).toEqual(['label']);
    const ban = ModerationFields.banuser.safeParse({
      banReason: 'spam\u0000',
      banDescription: 'x',
      timeEnd: 1,
    });
    expect(Object.keys(fieldErrorsOf(ban.error!))).toEqual(['banReason']);
  });

  it('gives a badge name the same reason', () => {
    expect(normaliseBadge('tes\u200Bter')).toEqual({
      problem: 'must not contain invisible characters (U+200B at character 4)',
    });
    expect(normaliseBadge('  Tester ')).toEqual({ badge: 'tester' });
  });
});

describe('email addresses (server/protocol/email)', () => {
  it.each([
    'owner@lan',
    'me@localhost',
    'host@lan.example',
    'a@x.io',
    'first.last+tag@mail.example.org',
    "o'brien@home",
    'user@192.168.1.20',
    `${'a'.repeat(64)}@lan`,
  ])('accepts %s', (email) => {
    expect(isAcceptedEmail(email)).toBe(true);
    expect(emailProblem(email)).toBeNull();
  });

  it.each([
    '',
    'nope',
    '@lan',
    'owner@',
    'owner@@lan',
    'a@b@lan',
    '.owner@lan',
    'owner.@lan',
    'own..er@lan',
    'own er@lan',
    '"owner"@lan',
    'owner@[127.0.0.1]',
    'owner@-lan',
    'owner@lan-',
    'owner@lan..example',
    'owner@lan.',
    'owner@la_n',
    'owner@lan\n',
    'öwner@lan',
    'owner\u202E@lan',
    `${'a'.repeat(65)}@lan`,
    `owner@${'a'.repeat(64)}`,
  ])('refuses %j', (email) => {
    expect(isAcceptedEmail(email)).toBe(false);
    expect(emailProblem(email)).toBe('is not a valid email address');
  });

  it('keeps the length limit of 254 characters', () => {
    const label = 'a'.repeat(63);
    const long = `owner@${[label, label, label, 'a'.repeat(57)].join('.')}`;
    expect(long.length).toBe(255);
    expect(emailProblem(long)).toBe('must be at most 254 characters');
    expect(emailProblem(long.slice(0, 254))).toBeNull();
  });
});

describe('the text rule and LAN emails over HTTP, against a real host', () => {
  let host: TestHost;
  let alice: Account;

  beforeEach(async () => {
    host = await startHost();
    alice = await signUp(host, 'alice');
  });
  afterEach(async () => {
    await host.close();
  });

  const as = (me: Account, extra: Record<string, unknown> = {}) => ({
    userid: me.id,
    tokenContent: me.token,
    ...extra,
  });
  const bioOf = async (id: string) => (await host.server.users.get(id))!.Bio;

  it('refuses a bio display name carrying U+202E, naming bio.DisplayName, and changes nothing', async () => {
    const before = await bioOf(alice.id);
    const answer = expectFail(
      await host.post(
        'updateBio',
        as(alice, { bio: { DisplayName: 'alice\u202Egnp.exe', StatusText: 'hi' } }),
      ),
      'INVALID_BIO',
      'Failed to update bio! Check the marked fields.',
    );
    expect(answer.result?.error?.fields).toEqual({
      'bio.DisplayName': 'must not contain text-direction controls (U+202E at character 6)',
    });
    expect(await bioOf(alice.id)).toEqual(before);
  });

  it('refuses a line break in a status text, naming bio.StatusText', async () => {
    const answer = expectFail(
      await host.post('updateBio', as(alice, { bio: { StatusText: 'busy\nreally' } })),
      'INVALID_BIO',
    );
    expect(answer.result?.error?.fields).toEqual({
      'bio.StatusText': 'must be a single line (U+000A at character 5)',
    });
  });

  it('keeps emoji joined by ZWJ and the line breaks of a description exactly as sent', async () => {
    const bio = {
      DisplayName: '👩\u200D💻 Alice',
      StatusText: '👨\u200D👩\u200D👧\u200D👦 at home',
      Description: 'First line\nSecond line\r\n\tIndented 🏳️\u200D🌈',
    };
    expectOk(await host.post('updateBio', as(alice, { bio })), 'Updated Bio!');
    const view = expectOk(await host.post('getUser', { userid: alice.id })).UserData as { Bio: object };
    expect(view.Bio).toMatchObject(bio);
    expect(await bioOf(alice.id)).toMatchObject(bio);
  });

  it('refuses an avatar name with a control character, naming avatarMeta.Name, and stores nothing', async () => {
    const answer = expectFail(
      await upload(
        host,
        alice,
        { name: 'a.hna', data: 'x' },
        { avatarMeta: avatarMeta({ Name: 'Bot\u0007' }) },
      ),
      'INVALID_META',
    );
    expect(answer.result?.error?.fields).toEqual({
      'avatarMeta.Name': 'must not contain control characters (U+0007 at character 4)',
    });
    expect(await blobTree(host.dir)).toEqual([]);
    expect(expectOk(await host.post('getMyContent', as(alice)))).toMatchObject({ Uploads: [], Avatars: [] });
  });

  it('refuses an invisible character in a tag, naming the tag', async () => {
    const answer = expectFail(
      await upload(
        host,
        alice,
        { name: 'a.hna', data: 'x' },
        { avatarMeta: avatarMeta({ Tags: ['robot', 'ad\u200Bmin'] }) },
      ),
      'INVALID_META',
    );
    expect(answer.result?.error?.fields).toHaveProperty(['avatarMeta.Tags.1']);
    expect(await blobTree(host.dir)).toEqual([]);
  });

  it('keeps an avatar name with a ZWJ emoji and a multi-line description intact', async () => {
    const Name = 'Bot 🧑\u200D🚀';
    const Description = 'Line one\nLine two\n\n\tThe end';
    const { AvatarId } = expectOk(
      await upload(
        host,
        alice,
        { name: 'a.hna', data: 'x' },
        { avatarMeta: avatarMeta({ Name, Description }) },
      ),
      'Uploaded Avatar!',
    );
    const meta = expectOk(await host.get(`meta/avatar/${AvatarId as string}`)).Meta;
    expect(meta).toMatchObject({ Name, Description });
  });

  describe('moderation', () => {
    let mod: Account;
    beforeEach(async () => {
      mod = await signUp(host, 'mod');
      await editUser(host, mod.id, (d) => void (d.Rank = Rank.Moderator));
    });
    const act = (action: string, fields: Record<string, unknown>) =>
      host.post('moderation', as(mod, { action, targetUserId: alice.id, ...fields }));

    it('refuses a warn reason carrying a direction override, naming warnReason, and warns nobody', async () => {
      const answer = expectFail(
        await act('warnuser', { warnReason: 'Spam\u202E', warnDescription: 'Please stop.' }),
        'INVALID_PARAMETERS',
        'Invalid parameters!',
      );
      expect(answer.result?.error?.fields).toEqual({
        warnReason: 'must not contain text-direction controls (U+202E at character 5)',
      });
      const stored = (await host.server.users.get(alice.id))!;
      expect(stored.WarnStatus.isWarned).toBe(false);
      expect(stored.WarnCount).toBe(0);
    });

    it('refuses a ban description with a NUL, naming banDescription, and bans nobody', async () => {
      const timeEnd = Math.floor(Date.now() / 1000) + 3600;
      const answer = expectFail(
        await act('banuser', { banReason: 'Cheating', banDescription: 'Seen\u0000twice', timeEnd }),
        'INVALID_PARAMETERS',
      );
      expect(answer.result?.error?.fields).toEqual({
        banDescription: 'must not contain control characters (U+0000 at character 5)',
      });
      expect((await host.server.users.get(alice.id))!.BanStatus.isBanned).toBe(false);
    });

    it('keeps the line breaks of a warn description', async () => {
      const warnDescription = 'First time.\nRead the rules:\n\t1. Be nice';
      expectOk(await act('warnuser', { warnReason: 'Rude', warnDescription }), 'Done!');
      expect((await host.server.users.get(alice.id))!.WarnStatus.WarnDescription).toBe(warnDescription);
    });

    it('refuses a badge name with a zero-width space, saying which character', async () => {
      const answer = expectFail(await act('addbadge', { badgeName: 'tes\u200Bter' }), 'INVALID_BADGE');
      expect(answer.result?.error?.fields).toEqual({
        badgeName: 'must not contain invisible characters (U+200B at character 4)',
      });
    });
  });

  describe('host administration labels', () => {
    let admin: Account;
    beforeEach(async () => {
      admin = await signUp(host, 'admin');
      await editUser(host, admin.id, (d) => void (d.Rank = Rank.Admin));
    });

    it('refuses an invite-code label with a direction isolate, naming label, and makes no code', async () => {
      const answer = expectFail(
        await host.post('createInviteCode', as(admin, { label: 'party\u2066' })),
        'INVALID_PARAMETERS',
        'Invalid parameters!',
      );
      expect(answer.result?.error?.fields).toEqual({
        label: 'must not contain text-direction controls (U+2066 at character 6)',
      });
      expect(expectOk(await host.post('inviteCodes', as(admin))).InviteCodes).toEqual([]);
    });

    it('refuses a game-server token label with a line break, naming label, and adds no token', async () => {
      const answer = expectFail(
        await host.post('addGameServerToken', as(admin, { label: 'Basement\nServer' })),
        'INVALID_PARAMETERS',
      );
      expect(answer.result?.error?.fields).toEqual({
        label: 'must be a single line (U+000A at character 9)',
      });
      expect(expectOk(await host.post('gameServerTokens', as(admin))).GameServerTokens).toEqual([]);
    });

    it('keeps an emoji label as typed', async () => {
      const made = expectOk(
        await host.post('createInviteCode', as(admin, { label: 'LAN 🧑\u200D🤝\u200D🧑' })),
      );
      expect(made.InviteCode).toMatchObject({ label: 'LAN 🧑\u200D🤝\u200D🧑' });
    });
  });

  it('accepts owner@lan at sign-up', async () => {
    const result = expectOk(
      await host.post('createUser', { username: 'bob', password: PASSWORD, email: 'bob@lan' }),
      'Created user bob',
    );
    expect(result.UserData).toMatchObject({ Email: 'bob@lan' });
    expectFail(
      await host.post('createUser', { username: 'carol', password: PASSWORD, email: 'carol@' }),
      'INVALID_EMAIL',
    );
  });

  it('accepts owner@lan for the first-run owner', async () => {
    const created = expectOk(
      await host.post('setupOwner', {
        username: 'owner',
        password: PASSWORD,
        email: 'owner@lan',
        setupSecret: host.server.setupSecret,
      }),
      'Created user owner',
    );
    expect(created.UserData).toMatchObject({ Username: 'owner', Email: 'owner@lan', Rank: Rank.Owner });
  });
});
