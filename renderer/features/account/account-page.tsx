import { useState } from 'react';
import { STATUS_NAMES } from '../../../server/protocol/enums.js';
import { describeError } from '../../shared/api-client.js';
import { useForm } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import { formatDate } from '../../shared/time.js';
import { Alert, FormStatus, PasswordField, SubmitButton, TextField } from '../../shared/ui.js';
import { AlertsCard } from './alerts-card.js';
import { ChangePasswordCard } from './change-password-card.js';
import { PronounsCard } from './pronouns-card.js';
import { rankLabel } from '../../shared/ranks.js';

/** Your own account: what the host knows about you, and two-factor sign-in. */
export function AccountPage() {
  const { user } = useSession();
  return (
    <div className="page">
      <header className="page-header">
        <h1>Your account</h1>
        <p className="muted">
          What this host stores about you. Only you and the host&apos;s staff can see it.
        </p>
      </header>
      <section className="card" aria-labelledby="profile-title">
        <h2 id="profile-title" className="card-title">
          Profile
        </h2>
        <dl className="facts columns">
          <div>
            <dt>Username</dt>
            <dd>{user.Username}</dd>
          </div>
          <div>
            <dt>Rank</dt>
            <dd>{rankLabel(user.Rank)}</dd>
          </div>
          <div>
            <dt>Email</dt>
            <dd className="breakable">{user.Email || 'None'}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd>{STATUS_NAMES[user.Bio.Status] ?? `Status ${user.Bio.Status}`}</dd>
          </div>
          <div>
            <dt>Member since</dt>
            <dd>{user.AccountCreationDate > 0 ? formatDate(user.AccountCreationDate) : 'Unknown'}</dd>
          </div>
          <div>
            <dt>User id</dt>
            <dd className="mono breakable">{user.Id}</dd>
          </div>
        </dl>
      </section>
      <PronounsCard />
      <ChangePasswordCard />
      <TwoFactorCard />
      <AlertsCard />
    </div>
  );
}

type TwoFactorStep =
  { kind: 'idle' } | { kind: 'enrolling'; url: string; secret: string } | { kind: 'confirmOff' };

function TwoFactorCard() {
  const { user, authedCall, setUser } = useSession();
  const [step, setStep] = useState<TwoFactorStep>({ kind: 'idle' });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const codeForm = useForm({ code: '' }, (v) => ({
    code: /^\d{6}$/.test(v.code.replace(/\s/g, '')) ? undefined : 'Enter the 6-digit code your app shows',
  }));
  // Turning two-factor off asks who is at the keyboard: a session alone must not do it (a stolen token).
  const offForm = useForm({ currentPassword: '', twofacode: '' }, (v) => ({
    currentPassword: v.currentPassword ? undefined : 'Enter your current password',
    twofacode: /^\d{6}$/.test(v.twofacode.replace(/\s/g, ''))
      ? undefined
      : 'Enter the 6-digit code your app shows',
  }));

  async function run(action: () => Promise<void>): Promise<void> {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      await action();
    } catch (failure) {
      setError(describeError(failure));
    } finally {
      setBusy(false);
    }
  }

  const start = () =>
    run(async () => {
      const { otpauth_url } = await authedCall<{ otpauth_url: string }>('enable2fa', {});
      codeForm.setValue('code', '');
      setStep({ kind: 'enrolling', url: otpauth_url, secret: secretOf(otpauth_url) });
    });

  const turnOff = offForm.handleSubmit(async ({ currentPassword, twofacode }) => {
    await authedCall('remove2fa', { currentPassword, twofacode: twofacode.replace(/\s/g, '') });
    setUser((u) => ({ ...u, is2FAVerified: false }));
    setStep({ kind: 'idle' });
    setDone('Two-factor sign-in is off.');
  });

  return (
    <section className="card" aria-labelledby="twofa-title">
      <div className="card-heading">
        <h2 id="twofa-title" className="card-title">
          Two-factor sign-in
        </h2>
        <span className={user.is2FAVerified ? 'pill on' : 'pill'} data-testid="twofa-state">
          {user.is2FAVerified ? 'On' : 'Off'}
        </span>
      </div>
      <p className="muted">
        With two-factor on, signing in also asks for a 6-digit code from an authenticator app on your phone.
      </p>
      {error ? <Alert tone="error">{error}</Alert> : null}
      {done ? <Alert tone="success">{done}</Alert> : null}

      {step.kind === 'idle' && !user.is2FAVerified ? (
        <button type="button" className="button primary" disabled={busy} onClick={() => void start()}>
          {busy ? 'Preparing…' : 'Turn on two-factor'}
        </button>
      ) : null}

      {step.kind === 'idle' && user.is2FAVerified ? (
        <button
          type="button"
          className="button secondary"
          onClick={() => {
            offForm.setValue('currentPassword', '');
            offForm.setValue('twofacode', '');
            setDone(null);
            setStep({ kind: 'confirmOff' });
          }}
        >
          Turn off two-factor
        </button>
      ) : null}

      {step.kind === 'confirmOff' ? (
        <form
          className="form inline-confirm"
          noValidate
          aria-label="Confirm turning off two-factor"
          onSubmit={turnOff}
        >
          <p>
            Turn off two-factor? Signing in will need only your password. To confirm it is you, enter your
            password and a code from your app.
          </p>
          <PasswordField
            label="Current password"
            name="currentPassword"
            value={offForm.values.currentPassword}
            onValueChange={(v) => offForm.setValue('currentPassword', v)}
            error={offForm.errors.currentPassword}
            autoComplete="current-password"
          />
          <TextField
            label="Code from the app"
            name="twofacode"
            value={offForm.values.twofacode}
            onValueChange={(v) => offForm.setValue('twofacode', v)}
            error={offForm.errors.twofacode}
            inputMode="numeric"
            autoComplete="one-time-code"
            maxLength={7}
            className="code-input"
          />
          <div className="button-row">
            <button type="submit" className="button danger" disabled={offForm.pending}>
              {offForm.pending ? 'Turning off…' : 'Turn off'}
            </button>
            <button
              type="button"
              className="button ghost"
              disabled={offForm.pending}
              onClick={() => setStep({ kind: 'idle' })}
            >
              Keep it on
            </button>
          </div>
          <FormStatus message={offForm.formError} />
        </form>
      ) : null}

      {step.kind === 'enrolling' ? (
        <form
          className="form enroll"
          noValidate
          aria-label="Set up two-factor"
          onSubmit={codeForm.handleSubmit(async ({ code }) => {
            await authedCall('verify2fa', { code: code.replace(/\s/g, '') });
            setUser((u) => ({ ...u, is2FAVerified: true }));
            setStep({ kind: 'idle' });
            setDone('Two-factor sign-in is on. You will need a code at your next sign-in.');
          })}
        >
          <ol className="steps">
            <li>
              In your authenticator app, add an account by key and enter this key (time-based, 6 digits):
              <TextField
                label="Setup key"
                value={step.secret}
                onValueChange={() => undefined}
                readOnly
                className="mono"
                data-testid="twofa-secret"
                onFocus={(event) => event.currentTarget.select()}
                hint={
                  <>
                    On a phone you can also{' '}
                    <a href={step.url} className="link">
                      open it in your app
                    </a>
                    .
                  </>
                }
              />
            </li>
            <li>
              Enter the code the app shows to confirm:
              <TextField
                label="Code from the app"
                name="code"
                value={codeForm.values.code}
                onValueChange={(v) => codeForm.setValue('code', v)}
                error={codeForm.errors.code}
                inputMode="numeric"
                autoComplete="one-time-code"
                maxLength={7}
                className="code-input"
              />
            </li>
          </ol>
          <div className="button-row">
            <SubmitButton pending={codeForm.pending} pendingLabel="Checking…">
              Confirm and turn on
            </SubmitButton>
            <button type="button" className="button ghost" onClick={() => setStep({ kind: 'idle' })}>
              Cancel
            </button>
          </div>
          <FormStatus message={codeForm.formError} />
        </form>
      ) : null}
    </section>
  );
}

/** The base32 key inside an otpauth:// URL, for typing into an app by hand. */
function secretOf(otpauthUrl: string): string {
  try {
    const secret = new URL(otpauthUrl).searchParams.get('secret') ?? '';
    return secret.replace(/(.{4})(?=.)/g, '$1 ');
  } catch {
    return '';
  }
}
