import { TOTP, Secret } from 'otpauth';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../server/errors.js';
import { createLoginThrottle } from '../../server/services/login-throttle.js';
import { editUser, PASSWORD, signUp, startHost, type Account, type TestHost } from './helpers.js';

/**
 * Sign-in limits that cannot be raced or flushed (issue 27): an attempt counts before its password or code is
 * checked; no flood of other keys makes the throttle forget a limited one; guesses from one address never lock the
 * owner out of another.
 */

let host: TestHost;
let alice: Account;

beforeEach(async () => {
  host = await startHost({ limits: { loginFailures: 3, loginFailureWindowSeconds: 600 } });
  alice = await signUp(host, 'alice');
});

afterEach(async () => {
  await host.close();
});

const codeOf = (error: unknown): string => (error instanceof AppError ? error.code : String(error));

describe('sign-in limits', () => {
  it('checks at most the limit of forty wrong passwords sent at once; the rest are refused unchecked', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => host.post('login', { username: 'alice', password: 'Wrong-pass1' })),
    );
    const codes = answers.map((answer) => answer.result?.error?.code);
    expect(codes.filter((code) => code === 'INCORRECT_CREDENTIALS')).toHaveLength(3);
    expect(codes.filter((code) => code === 'RATE_LIMITED')).toHaveLength(37);
  });

  it('checks at most the limit of twenty wrong 2FA codes sent at once with the right password', async () => {
    const secret = new Secret({ size: 20 });
    await editUser(host, alice.id, (draft) => {
      draft.TwoFA = { base32: secret.base32 };
      draft.is2FAVerified = true;
    });
    const right = new TOTP({ secret, digits: 6, period: 30 }).generate();
    const wrong = String((Number(right) + 500_000) % 1_000_000).padStart(6, '0');
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        host.server.accounts
          .login({ username: 'alice', password: PASSWORD, twofacode: wrong }, '10.0.0.5')
          .then((outcome) => outcome.kind, codeOf),
      ),
    );
    expect(outcomes.filter((kind) => kind === 'incorrect2fa')).toHaveLength(3);
    expect(outcomes.filter((kind) => kind === 'RATE_LIMITED')).toHaveLength(17);
  });

  it('lets the owner sign in from another address during a guess storm from one', async () => {
    const storm = await Promise.all(
      Array.from({ length: 20 }, () =>
        host.server.accounts
          .login({ username: 'alice', password: 'Wrong-pass1' }, '203.0.113.9')
          .then((outcome) => outcome.kind, codeOf),
      ),
    );
    expect(storm.filter((code) => code === 'RATE_LIMITED')).toHaveLength(17);
    const owner = await host.server.accounts.login({ username: 'alice', password: PASSWORD }, '192.168.1.20');
    expect(owner.kind).toBe('correct');
  });

  it('does not forget a limited key however many other names one address tries', () => {
    const clock = { now: () => Date.UTC(2026, 10, 27, 12, 0, 0) };
    const throttle = createLoginThrottle({ maxFailures: 3, windowSeconds: 600, maxKeys: 10_000 }, clock);
    for (let i = 0; i < 3; i++) expect(throttle.attempt('198.51.100.7|alice').allowed).toBe(true);
    expect(throttle.attempt('198.51.100.7|alice').allowed).toBe(false);
    for (let i = 0; i < 12_000; i++) throttle.attempt(`198.51.100.7|name${i}`);
    expect(throttle.attempt('198.51.100.7|alice').allowed).toBe(false);
    // Another address is not refused for what this one did.
    expect(throttle.attempt('192.0.2.44|bob').allowed).toBe(true);
  });
});
