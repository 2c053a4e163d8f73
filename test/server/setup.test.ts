import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { expectFail, expectOk, PASSWORD, startHost, tempDir, type TestHost } from './helpers.js';

describe('first-run owner setup', () => {
  let host: TestHost | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await host?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates the Owner only with the one-time secret the host shows, then never again', async () => {
    dir = await tempDir();
    host = await startHost({}, { dir });
    const secret = host.server.setupSecret;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(expectOk(await host.get('setupStatus'))).toEqual({ needsOwnerSetup: true });

    const owner = { username: 'host', password: PASSWORD, email: 'host@lan.example' };
    const wrong = expectFail(
      await host.post('setupOwner', { ...owner, setupSecret: 'guess' }),
      'INVALID_SETUP_SECRET',
    );
    expect(wrong.result?.error?.fields).toHaveProperty('setupSecret');
    expect(await host.server.users.count()).toBe(0);
    // An ordinary sign-up never becomes the owner, whoever comes first.
    const first = expectOk(
      await host.post('createUser', { username: 'early', password: PASSWORD, email: 'e@x.io' }),
    );
    expect((first.UserData as { Rank: number }).Rank).toBe(2);

    const created = expectOk(
      await host.post('setupOwner', { ...owner, setupSecret: secret }),
      'Created user host',
    );
    expect(created.UserData).toMatchObject({ Username: 'host', Rank: 6 });
    expect(host.server.setupSecret).toBeNull();
    expect(expectOk(await host.get('setupStatus'))).toEqual({ needsOwnerSetup: false });
    expectFail(
      await host.post('setupOwner', { ...owner, username: 'second', email: 's@x.io', setupSecret: secret }),
      'SETUP_ALREADY_DONE',
    );

    await host.close();
    host = await startHost({}, { dir });
    expect(host.server.setupSecret).toBeNull();
    expect(expectOk(await host.get('setupStatus'))).toEqual({ needsOwnerSetup: false });
  });

  it('refuses a weak owner password without spending the secret', async () => {
    host = await startHost();
    const secret = host.server.setupSecret!;
    expectFail(
      await host.post('setupOwner', {
        username: 'host',
        password: 'weak',
        email: 'h@x.io',
        setupSecret: secret,
      }),
      'WEAK_PASSWORD',
    );
    expect(host.server.setupSecret).toBe(secret);
  });
});
