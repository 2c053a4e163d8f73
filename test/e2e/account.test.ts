import { Secret, TOTP } from 'otpauth';
import { UsersRepo } from '../../server/store/users.js';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  expectNoProblems,
  expectSignedInAs,
  fitsViewport,
  isTokenValid,
  launchBrowser,
  openTab,
  OWNER,
  signIn,
  startHostWithOwner,
  storedSession,
  type Host,
  type Tab,
} from './harness.js';

describe('accounts in a real browser', () => {
  let host: Host;
  let browser: Browser;
  let tab: Tab | undefined;

  beforeAll(async () => {
    host = await startHostWithOwner();
    browser = await launchBrowser();
  });

  afterEach(async () => {
    await tab?.close();
    tab = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await host?.stop();
  });

  /** An account made straight through the service, for tests about what happens at sign-in. */
  async function makeUser(username: string, password = 'Member#Pass1') {
    const { user } = await host.server.accounts.createUser({
      username,
      password,
      email: `${username.toLowerCase()}@example.test`,
    });
    return { user, password };
  }

  it('signs out, revoking the token on the host, and signs back in', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, OWNER.username, OWNER.password);
    await expectSignedInAs(page, OWNER.username, 'Owner');
    const first = await storedSession(page);
    expect(first).not.toBeNull();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await storedSession(page)).toBeNull();
    expect(await isTokenValid(host.server.url, first!.userid, first!.tokenContent)).toBe(false);

    await signIn(page, OWNER.username, OWNER.password);
    await expectSignedInAs(page, OWNER.username, 'Owner');
    const second = await storedSession(page);
    expect(second?.tokenContent).not.toBe(first?.tokenContent);
    expect(await isTokenValid(host.server.url, second!.userid, second!.tokenContent)).toBe(true);
    expectNoProblems(tab);
  });

  it('keeps the session across a page reload', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, OWNER.username, OWNER.password);
    await expectSignedInAs(page, OWNER.username, 'Owner');

    const signInRequests: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/login')) signInRequests.push(request.url());
    });
    await page.reload();
    await expectSignedInAs(page, OWNER.username, 'Owner');
    expect(signInRequests).toEqual([]);
    expectNoProblems(tab);
  });

  it('drops a saved session the host no longer accepts and says why', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await page.evaluate(() =>
      localStorage.setItem(
        'hypernex-companion.session',
        JSON.stringify({ userid: 'user_00000000-0000-4000-8000-000000000000', tokenContent: 'stale' }),
      ),
    );
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByText('Your saved session is no longer valid').count()).toBe(1);
    expect(await storedSession(page)).toBeNull();
    expectNoProblems(tab);
  });

  it('shows an error for a wrong password and stays on sign-in', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, OWNER.username, 'Wrong#Pass1');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('do not match an account');
    expect(await page.getByRole('heading', { name: 'Sign in' }).count()).toBe(1);
    expect(await storedSession(page)).toBeNull();
    await page.screenshot({ path: '/tmp/ui-sign-in-error.png' });
    expectNoProblems(tab);
  });

  it('shows a weak password as a field error without sending, then creates the account once fixed', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    const sent: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/createUser')) sent.push(request.method());
    });
    await page.goto(host.server.url);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Create an account' }).waitFor();
    await page.getByLabel('Username', { exact: true }).fill('second_user');
    await page.getByLabel('Email', { exact: true }).fill('second@example.test');
    await page.getByLabel('Password', { exact: true }).fill('weakpassword');
    await page.getByLabel('Confirm password', { exact: true }).fill('weakpassword');
    await page.getByRole('button', { name: 'Create account', exact: true }).last().click();

    const password = page.getByLabel('Password', { exact: true });
    await expect.poll(() => password.getAttribute('aria-invalid')).toBe('true');
    const messageId = await password.getAttribute('aria-describedby');
    expect(await page.locator(`[id="${messageId}"]`).textContent()).toBe(
      'Password needs an uppercase letter',
    );
    // Focus moves to the field to fix.
    await expect.poll(() => password.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.screenshot({ path: '/tmp/ui-weak-password.png', fullPage: true });
    expect(sent).toEqual([]);
    expect(await host.server.users.byUsername('second_user')).toBeUndefined();

    await password.fill('Strong#Pass2');
    await page.getByLabel('Confirm password', { exact: true }).fill('Strong#Pass2');
    await page.getByRole('button', { name: 'Create account', exact: true }).last().click();
    await expectSignedInAs(page, 'second_user', 'Registered');
    expect(sent).toEqual(['POST']);
    expectNoProblems(tab);
  });

  it('shows a taken username from the host next to the field', async () => {
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByLabel('Username', { exact: true }).fill(OWNER.username.toLowerCase());
    await page.getByLabel('Email', { exact: true }).fill('someone@example.test');
    await page.getByLabel('Password', { exact: true }).fill('Strong#Pass3');
    await page.getByLabel('Confirm password', { exact: true }).fill('Strong#Pass3');
    await page.getByRole('button', { name: 'Create account', exact: true }).last().click();
    const username = page.getByLabel('Username', { exact: true });
    await expect.poll(() => username.getAttribute('aria-invalid')).toBe('true');
    const messageId = await username.getAttribute('aria-describedby');
    expect(await page.locator(`[id="${messageId}"]`).textContent()).toBe('Username is taken');
    expectNoProblems(tab);
  });

  it('shows a banned user the reason, details and end of the ban in local time', async () => {
    const { user, password } = await makeUser('banned_guy');
    const now = Math.floor(Date.now() / 1000);
    await host.server.store.tx((t) =>
      UsersRepo.in(t).update(user.Id, (draft) => {
        draft.BanStatus = {
          isBanned: true,
          BanBegin: now,
          BanEnd: now + 3600,
          BanReason: 'Spam',
          BanDescription: 'Posted the same link in every world.',
        };
      }),
    );

    const timezoneId = 'America/New_York';
    tab = await openTab(browser, { timezoneId });
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, 'banned_guy', password);
    await page.getByRole('heading', { name: 'banned_guy is banned' }).waitFor();

    const facts = await factsOf(page);
    expect(facts.Reason).toBe('Spam');
    expect(facts.Details).toBe('Posted the same link in every world.');
    const expectedEnd = new Intl.DateTimeFormat('en-US', {
      weekday: 'short',
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      timeZoneName: 'short',
      timeZone: timezoneId,
    }).format(new Date((now + 3600) * 1000));
    expect(spaces(facts.Until)).toBe(spaces(expectedEnd));
    expect(await page.getByText(`(${timezoneId})`).count()).toBe(1);
    expect(await page.getByText('You can sign in again in 1 hour').count()).toBe(1);
    expect(await storedSession(page)).toBeNull();
    await page.screenshot({ path: '/tmp/ui-banned.png', fullPage: true });

    await page.getByRole('button', { name: 'Back to sign in' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expectNoProblems(tab);
  });

  it('shows a warning with its reason once, at the sign-in that delivers it', async () => {
    const { user, password } = await makeUser('warned_one');
    await host.server.store.tx((t) =>
      UsersRepo.in(t).update(user.Id, (draft) => {
        draft.WarnStatus = {
          isWarned: true,
          TimeWarned: Math.floor(Date.now() / 1000),
          WarnReason: 'Rude in chat',
          WarnDescription: 'Please keep it friendly.',
        };
      }),
    );

    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, 'warned_one', password);
    const dialog = page.getByRole('dialog', { name: 'You received a warning' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Rude in chat');
    expect(await dialog.textContent()).toContain('Please keep it friendly.');
    await page.screenshot({ path: '/tmp/ui-warned.png' });
    await page.getByRole('button', { name: 'I understand' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expectSignedInAs(page, 'warned_one', 'Registered');

    await page.reload();
    await expectSignedInAs(page, 'warned_one', 'Registered');
    expect(await page.getByRole('dialog').count()).toBe(0);
    expectNoProblems(tab);
  });

  it('sets the status from the header and the host stores it', async () => {
    const { password } = await makeUser('status_user');
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, 'status_user', password);
    await expectSignedInAs(page, 'status_user', 'Registered');
    const select = page.getByLabel('Status', { exact: true });
    expect(await select.inputValue()).toBe('1');
    await select.selectOption({ label: 'Do Not Disturb' });
    await expect.poll(async () => (await host.server.users.byUsername('status_user'))?.Bio.Status).toBe(4);
    await expect.poll(() => select.isEnabled()).toBe(true);
    expect(await select.inputValue()).toBe('4');
    expectNoProblems(tab);
  });

  it('turns on two-factor from the account page, asks for a code at sign-in, and turns off only with the password and a code', async () => {
    const { password } = await makeUser('twofa_user');
    tab = await openTab(browser);
    const { page } = tab;
    await page.goto(host.server.url);
    await signIn(page, 'twofa_user', password);
    await expectSignedInAs(page, 'twofa_user', 'Registered');

    await page.getByRole('button', { name: 'Turn on two-factor' }).click();
    const key = (await page.getByTestId('twofa-secret').inputValue()).replace(/\s/g, '');
    await page.screenshot({ path: '/tmp/ui-twofa-enroll.png', fullPage: true });
    const totp = new TOTP({ secret: Secret.fromBase32(key), digits: 6, period: 30, algorithm: 'SHA1' });
    await page.getByLabel('Code from the app').fill(totp.generate());
    await page.getByRole('button', { name: 'Confirm and turn on' }).click();
    await expect.poll(() => page.getByTestId('twofa-state').textContent()).toBe('On');
    expect((await host.server.users.byUsername('twofa_user'))?.is2FAVerified).toBe(true);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, 'twofa_user', password);
    await page.getByRole('heading', { name: 'Two-factor check' }).waitFor();
    await page.screenshot({ path: '/tmp/ui-twofa-step.png' });
    const code = page.getByLabel('Authentication code');
    const wrong = String((Number(totp.generate()) + 500_000) % 1_000_000).padStart(6, '0');
    await code.fill(wrong);
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await expect.poll(() => code.getAttribute('aria-invalid')).toBe('true');
    expect(await storedSession(page)).toBeNull();

    await code.fill(totp.generate());
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await expectSignedInAs(page, 'twofa_user', 'Registered');

    // Turning it off asks who is at the keyboard: the password and a code, not the session alone.
    await page.getByRole('button', { name: 'Turn off two-factor' }).click();
    // The Password card asks for the same two things: this is the form that turns two-factor off.
    const offForm = page.getByRole('form', { name: 'Confirm turning off two-factor' });
    const current = offForm.getByLabel('Current password', { exact: true });
    await offForm.getByRole('button', { name: 'Turn off', exact: true }).click();
    await expect.poll(() => current.getAttribute('aria-invalid')).toBe('true');
    await current.fill('Wr0ng-password!');
    await offForm.getByLabel('Code from the app').fill(totp.generate());
    await offForm.getByRole('button', { name: 'Turn off', exact: true }).click();
    await expect.poll(() => offForm.getByText('Not your current password').count()).toBe(1);
    await page.screenshot({ path: '/tmp/ui-twofa-off.png', fullPage: true });
    expect((await host.server.users.byUsername('twofa_user'))?.is2FAVerified).toBe(true);
    await current.fill(password);
    await offForm.getByRole('button', { name: 'Turn off', exact: true }).click();
    await expect.poll(() => page.getByTestId('twofa-state').textContent()).toBe('Off');
    expect((await host.server.users.byUsername('twofa_user'))?.is2FAVerified).toBe(false);
    expectNoProblems(tab);
  });

  it('fits a 360 px wide phone screen when signed in', async () => {
    tab = await openTab(browser, { viewport: { width: 360, height: 760 } });
    const { page } = tab;
    await page.goto(host.server.url);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.screenshot({ path: '/tmp/ui-sign-in-mobile.png', fullPage: true });
    expect(await fitsViewport(page)).toBe(true);
    await signIn(page, OWNER.username, OWNER.password);
    await page.getByTestId('signed-in-username').waitFor({ state: 'attached' });
    await page.screenshot({ path: '/tmp/ui-signed-in-mobile.png', fullPage: true });
    expect(await fitsViewport(page)).toBe(true);
    expectNoProblems(tab);
  });
});

async function factsOf(page: Page): Promise<Record<string, string>> {
  return page.evaluate(() => {
    const out: Record<string, string> = {};
    for (const row of document.querySelectorAll('.facts > div')) {
      const term = row.querySelector('dt')?.textContent ?? '';
      out[term] = row.querySelector('dd')?.textContent ?? '';
    }
    return out;
  });
}

/** Node and Chromium may differ in which space they put before AM/PM. */
function spaces(text: string | undefined): string {
  return (text ?? '').replace(/\s/g, ' ');
}
