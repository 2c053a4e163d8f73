import { useEffect, useState } from 'react';
import type { BanStatusDto } from '../../../server/protocol/types.js';
import { Alert } from '../../shared/ui.js';
import { isInviteCodeRequired, type SignedIn } from './account-api.js';
import { AccountLayout } from './account-layout.js';
import { CreateAccountForm } from './create-account-form.js';
import { SignInForm } from './sign-in-form.js';

export interface AuthScreenProps {
  /** The invite code of a sign-up link (`#signup=`): the sign-up form opens with it filled in. */
  signupCode?: string | null;
  /** Why the person is here, e.g. their saved session ended. */
  notice: string | null;
  onSignedIn(signedIn: SignedIn): void;
  onBanned(ban: BanStatusDto, username: string): void;
  /** Offered while the host still has no owner, to go back to the setup form. */
  onOpenSetup?: (() => void) | undefined;
}

export function AuthScreen({
  signupCode = null,
  notice,
  onSignedIn,
  onBanned,
  onOpenSetup,
}: AuthScreenProps) {
  const [mode, setMode] = useState<'signIn' | 'create'>(signupCode ? 'create' : 'signIn');
  const [inviteRequired, setInviteRequired] = useState<boolean | null>(null);

  // Asked up front so the create form has its final shape when opened (no field popping in).
  useEffect(() => {
    let live = true;
    isInviteCodeRequired().then(
      (required) => live && setInviteRequired(required),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, []);

  return (
    <AccountLayout>
      <nav className="segmented" aria-label="Account">
        <button
          type="button"
          className="segment"
          aria-current={mode === 'signIn' ? 'page' : undefined}
          onClick={() => setMode('signIn')}
        >
          Sign in
        </button>
        <button
          type="button"
          className="segment"
          aria-current={mode === 'create' ? 'page' : undefined}
          onClick={() => setMode('create')}
        >
          Create account
        </button>
      </nav>
      {notice ? <Alert tone="info">{notice}</Alert> : null}
      {mode === 'signIn' ? (
        <SignInForm onSignedIn={onSignedIn} onBanned={onBanned} />
      ) : (
        <CreateAccountForm inviteRequired={inviteRequired} linkCode={signupCode} onSignedIn={onSignedIn} />
      )}
      {onOpenSetup ? (
        <p className="auth-aside">
          This host has no owner yet.{' '}
          <button type="button" className="link-button" onClick={onOpenSetup}>
            Set up this host
          </button>
        </p>
      ) : null}
    </AccountLayout>
  );
}
