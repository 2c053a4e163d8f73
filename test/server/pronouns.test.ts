import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  answeredPronouns,
  PRONOUN_SETS,
  pronounsFromIds,
  pronounText,
  type PronounsDto,
} from '../../server/protocol/pronouns.js';
import { expectFail, expectOk, signUp, startHost, type Account, type TestHost, editUser } from './helpers.js';

describe('pronoun tables', () => {
  it('builds the stored shape from ids, leaving out cases a set has no word for', () => {
    expect(
      pronounsFromIds({
        nominativeId: 2,
        accusativeId: 2,
        reflexiveId: 2,
        independentId: 2,
        dependentId: 2,
        DisplayThree: false,
      }),
    ).toEqual({
      NominativeCase: 'They',
      AccusativeCase: 'Them',
      ReflexivePronoun: 'Themselves',
      Action: false,
      DisplayThree: false,
      Display: [0, 1, 2],
    });
    expect(
      pronounsFromIds({
        nominativeId: 0,
        accusativeId: 1,
        reflexiveId: 3,
        independentId: 1,
        dependentId: 3,
        DisplayThree: true,
      }),
    ).toEqual({
      NominativeCase: 'He',
      AccusativeCase: 'Her',
      ReflexivePronoun: 'Itself',
      IndependentGenitiveCase: 'Hers',
      DependentGenitiveCase: 'Its',
      Action: false,
      DisplayThree: true,
      Display: [0, 1, 2],
    });
  });

  it('has every id of the reference, -3 to 13, each with nominative and accusative words', () => {
    expect(PRONOUN_SETS.map((s) => s.id).sort((a, b) => a - b)).toEqual([
      -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
    ]);
    for (const s of PRONOUN_SETS) {
      expect(typeof s.words.NominativeCase).toBe('string');
      expect(typeof s.words.AccusativeCase).toBe('string');
    }
  });

  it('reads pronoun text with two or three cases', () => {
    const he = pronounsFromIds({ nominativeId: 0, accusativeId: 0, reflexiveId: 0, DisplayThree: true });
    expect(pronounText(he)).toBe('He/Him/Himself');
    expect(pronounText({ ...he, DisplayThree: false })).toBe('He/Him');
  });

  it('answers ids stored by earlier versions in the stored shape, and ignores junk', () => {
    expect(answeredPronouns({ nominativeId: 1, accusativeId: 1, DisplayThree: false })).toEqual({
      NominativeCase: 'She',
      AccusativeCase: 'Her',
      Action: false,
      DisplayThree: false,
      Display: [0, 1, 2],
    });
    expect(answeredPronouns('remove')).toBeUndefined();
    expect(answeredPronouns({ foo: 1 })).toBeUndefined();
  });
});

describe('pronouns over updateBio and getUser', () => {
  let host: TestHost;
  let alice: Account;
  beforeEach(async () => {
    host = await startHost();
    alice = await signUp(host, 'alice');
  });
  afterEach(() => host.close());

  const heHim = {
    nominativeId: 0,
    accusativeId: 0,
    reflexiveId: 0,
    independentId: 0,
    dependentId: 0,
    DisplayThree: true,
  };
  const heHimStored: PronounsDto = {
    NominativeCase: 'He',
    AccusativeCase: 'Him',
    ReflexivePronoun: 'Himself',
    IndependentGenitiveCase: 'His',
    DependentGenitiveCase: 'His',
    Action: false,
    DisplayThree: true,
    Display: [0, 1, 2],
  };

  it('stores ids sent as HypernexSharp sends them as the real server shape, in every view', async () => {
    const updated = expectOk(
      await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio: { Pronouns: heHim } }),
      'Updated Bio!',
    );
    expect((updated.Bio as { Pronouns: unknown }).Pronouns).toEqual(heHimStored);
    const own = expectOk(await host.post('getUser', { userid: alice.id, tokenContent: alice.token }));
    expect((own.UserData as { Bio: { Pronouns: unknown } }).Bio.Pronouns).toEqual(heHimStored);
    const pub = expectOk(await host.post('getUser', { username: 'alice' }));
    expect((pub.UserData as { Bio: { Pronouns: unknown } }).Bio.Pronouns).toEqual(heHimStored);
    // What is on disk is the stored shape too.
    expect((await host.server.users.get(alice.id))!.Bio.Pronouns).toEqual(heHimStored);
  });

  it('keeps pronouns when a bio update leaves them out, and removes them with "remove"', async () => {
    await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio: { Pronouns: heHim } });
    await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio: { StatusText: 'hi' } });
    expect((await host.server.users.get(alice.id))!.Bio.Pronouns).toEqual(heHimStored);
    const removed = expectOk(
      await host.post('updateBio', {
        userid: alice.id,
        tokenContent: alice.token,
        bio: { Pronouns: 'remove' },
      }),
    );
    expect((removed.Bio as Record<string, unknown>).Pronouns).toBeUndefined();
    const pub = expectOk(await host.post('getUser', { username: 'alice' }));
    expect((pub.UserData as { Bio: Record<string, unknown> }).Bio).not.toHaveProperty('Pronouns');
  });

  it('takes a chosen Display and answers it', async () => {
    const answer = expectOk(
      await host.post('updateBio', {
        userid: alice.id,
        tokenContent: alice.token,
        bio: { Pronouns: { ...heHim, Display: [0, 1, 4] } },
      }),
    );
    expect((answer.Bio as { Pronouns: PronounsDto }).Pronouns.Display).toEqual([0, 1, 4]);
  });

  it.each([
    ['an id out of range', { ...heHim, nominativeId: 14 }, 'bio.Pronouns'],
    ['a missing nominative id', { accusativeId: 0, DisplayThree: false }, 'bio.Pronouns'],
    ['a DisplayThree that is not a boolean', { ...heHim, DisplayThree: 'yes' }, 'bio.Pronouns'],
    ['a case number out of range in Display', { ...heHim, Display: [0, 1, 5] }, 'bio.Pronouns'],
    ['the stored shape sent back as input', heHimStored, 'bio.Pronouns'],
  ])('refuses %s and stores nothing', async (_name, Pronouns, field) => {
    const answer = expectFail(
      await host.post('updateBio', { userid: alice.id, tokenContent: alice.token, bio: { Pronouns } }),
      'INVALID_BIO',
    );
    expect(Object.keys(answer.result?.error?.fields ?? {}).some((k) => k.startsWith(field))).toBe(true);
    expect((await host.server.users.get(alice.id))!.Bio.Pronouns).toBeUndefined();
  });

  it('answers ids stored by an earlier version of this host in the real server shape', async () => {
    await editUser(host, alice.id, (draft) => {
      (draft.Bio as { Pronouns?: unknown }).Pronouns = {
        nominativeId: 2,
        accusativeId: 2,
        DisplayThree: false,
      };
    });
    const pub = expectOk(await host.post('getUser', { userid: alice.id }));
    expect((pub.UserData as { Bio: { Pronouns: unknown } }).Bio.Pronouns).toEqual({
      NominativeCase: 'They',
      AccusativeCase: 'Them',
      Action: false,
      DisplayThree: false,
      Display: [0, 1, 2],
    });
  });
});

describe('getUser with a tokenContent that is not a string', () => {
  let host: TestHost;
  let alice: Account;
  beforeEach(async () => {
    host = await startHost();
    alice = await signUp(host, 'alice');
  });
  afterEach(() => host.close());

  const tokenObject = () => ({ content: alice.token, dateCreated: 1, dateExpire: 2, app: 'unknown' });

  it('answers the public view by username when the dashboard sends the whole token object', async () => {
    const result = expectOk(
      await host.post('getUser', { username: 'alice', tokenContent: tokenObject() }),
      'Got user alice',
    );
    const user = result.UserData as Record<string, unknown>;
    expect(user.Id).toBe(alice.id);
    expect(user).toHaveProperty('isInWorld');
    expect(user).not.toHaveProperty('AccountTokens');
    expect(user).not.toHaveProperty('Email');
  });

  it.each([
    ['a number', 42],
    ['null', null],
    ['an array', ['x']],
    ['a boolean', true],
  ])('answers the public view by username and by userid for %s', async (_name, tokenContent) => {
    for (const body of [
      { username: 'alice', tokenContent },
      { userid: alice.id, tokenContent },
    ]) {
      const user = expectOk(await host.post('getUser', body)).UserData as Record<string, unknown>;
      expect(user.Username).toBe('alice');
      expect(user).not.toHaveProperty('AccountTokens');
      expect(user).not.toHaveProperty('Email');
    }
  });

  it('still refuses a wrong string token by username (no fallback to the public view)', async () => {
    expectFail(await host.post('getUser', { username: 'alice', tokenContent: 'wrong' }), 'INVALID_TOKEN');
  });

  it('still answers the private view for the right string token', async () => {
    const user = expectOk(await host.post('getUser', { username: 'alice', tokenContent: alice.token }))
      .UserData as Record<string, unknown>;
    expect(user).toHaveProperty('AccountTokens');
  });
});
