import { useState } from 'react';
import type { BanStatusDto } from '../../../server/protocol/types.js';
import { useForm } from '../../shared/form.js';
import { FormStatus, PasswordField, SubmitButton, TextField } from '../../shared/ui.js';
import { login, type LoginOutcome, type SignedIn } from './account-api.js';

export interface SignInFormProps {
  onSignedIn(signedIn: SignedIn): void;
  onBanned(ban: BanStatusDto, username: string): void;
}

/** Username and password, then (only for accounts with 2FA) a second step asking for the current code. */
export function SignInForm({ onSignedIn, onBanned }: SignInFormProps) {
  const [step, setStep] = useState<'credentials' | 'code'>('credentials');
  const credentials = useForm({ username: '', password: '' }, (v) => ({
    username: v.username.trim() === '' ? 'Enter your username' : undefined,
    password: v.password === '' ? 'Enter your password' : undefined,
  }));
  const second = useForm({ code: '' }, (v) => ({
    code: /^\d{6}$/.test(v.code.replace(/\s/g, ''))
      ? undefined
      : 'Enter the 6-digit code from your authenticator app',
  }));

  const finish = (outcome: LoginOutcome): void => {
    if (outcome.kind === 'signedIn') onSignedIn(outcome);
    else if (outcome.kind === 'banned') onBanned(outcome.ban, credentials.values.username.trim());
    else setStep('code');
  };

  if (step === 'code') {
    return (
      <form
        className="form"
        noValidate
        aria-labelledby="two-factor-title"
        onSubmit={second.handleSubmit(async ({ code }) => {
          const { username, password } = credentials.values;
          finish(await login(username.trim(), password, code.replace(/\s/g, '')));
        })}
      >
        <h1 id="two-factor-title" className="form-title">
          Two-factor check
        </h1>
        <p className="form-intro">
          <strong>{credentials.values.username.trim()}</strong> has two-factor authentication on. Enter the
          6-digit code your authenticator app shows now.
        </p>
        <TextField
          label="Authentication code"
          name="code"
          value={second.values.code}
          onValueChange={(v) => second.setValue('code', v)}
          error={second.errors.code}
          hint="The code changes every 30 seconds."
          inputMode="numeric"
          autoComplete="one-time-code"
          maxLength={7}
          autoFocus
          className="code-input"
        />
        <SubmitButton pending={second.pending} pendingLabel="Checking…">
          Verify and sign in
        </SubmitButton>
        <FormStatus message={second.formError} />
        <button
          type="button"
          className="button ghost block"
          onClick={() => {
            second.setValue('code', '');
            setStep('credentials');
          }}
        >
          Back
        </button>
      </form>
    );
  }

  return (
    <form
      className="form"
      noValidate
      aria-labelledby="sign-in-title"
      onSubmit={credentials.handleSubmit(async ({ username, password }) => {
        finish(await login(username.trim(), password));
      })}
    >
      <h1 id="sign-in-title" className="form-title">
        Sign in
      </h1>
      <TextField
        label="Username"
        name="username"
        value={credentials.values.username}
        onValueChange={(v) => credentials.setValue('username', v)}
        error={credentials.errors.username}
        autoComplete="username"
        autoCapitalize="off"
        spellCheck={false}
        autoFocus
      />
      <PasswordField
        label="Password"
        name="password"
        value={credentials.values.password}
        onValueChange={(v) => credentials.setValue('password', v)}
        error={credentials.errors.password}
        hint="Forgot it? This host sends no email: ask its owner to help."
        autoComplete="current-password"
      />
      <SubmitButton pending={credentials.pending} pendingLabel="Signing in…">
        Sign in
      </SubmitButton>
      <FormStatus message={credentials.formError} />
    </form>
  );
}
