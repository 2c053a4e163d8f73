import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';
import { asAccount, postJson, runCli, signInServed, spawnServe, stop, type Served } from './cli-helpers.js';

/** Issue 18: `user reset-password`, and serve saying when other machines cannot connect. */
describe('command line: password reset and the loopback notice', () => {
  let dir: string;
  let served: Served | undefined;
  beforeEach(async () => {
    dir = await tempDir('hnx-cli-users-');
  });
  afterEach(async () => {
    if (served) await stop(served);
    served = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('resets a password in a data folder, then serve says it is bound to this machine only', async () => {
    const help = await runCli(['user', 'reset-password', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--user-id');
    const created = await runCli([
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'owner',
      '--password',
      'Old-pass1!',
      '--email',
      'o@x.org',
      '--rank',
      '6',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const missing = await runCli([
      'user',
      'reset-password',
      '--data-dir',
      dir,
      '--username',
      'nobody',
      '--password',
      'New-pass1!',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no account has that username/);
    const weak = await runCli([
      'user',
      'reset-password',
      '--data-dir',
      dir,
      '--username',
      'owner',
      '--password',
      'weak',
    ]);
    expect(weak.code).toBe(1);
    const reset = await runCli([
      'user',
      'reset-password',
      '--data-dir',
      dir,
      '--username',
      'owner',
      '--password',
      'New-pass1!',
    ]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/reset the password of owner/);

    served = await spawnServe(['--data-dir', dir]);
    expect(served.stdout()).toMatch(
      /Only this computer can connect: the host is bound to 127\.0\.0\.1.*--host 0\.0\.0\.0/,
    );
    const old = await postJson(served.url, 'login', { username: 'owner', password: 'Old-pass1!' });
    expect(old.result?.LoginResult).toBe(0);
    const login = await postJson(served.url, 'login', { username: 'owner', password: 'New-pass1!' });
    expect(login.result?.LoginResult).toBe(4);
    // Both are in the audit log, by the command line, in the order they happened; never the password.
    const owner = await signInServed(served, 'owner', 'New-pass1!');
    const audit = await postJson(served.url, 'auditLog', asAccount(owner, { group: 'accounts' }));
    expect(audit.success, audit.message).toBe(true);
    const entries = audit.result!.Entries as Array<Record<string, unknown>>;
    expect(
      entries.map((e) => [e.action, e.moderatorId, e.moderatorName, e.targetUserId, e.targetName]),
    ).toEqual([
      ['resetpassword', 'cli', 'command line', owner.id, 'owner'],
      ['createuser', 'cli', 'command line', owner.id, 'owner'],
    ]);
    expect(entries[1]!.fields).toEqual({ rank: 6 });
    expect(JSON.stringify(entries)).not.toContain('pass1');
  });
});
