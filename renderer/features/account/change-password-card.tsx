import { passwordProblem } from '../../../server/protocol/schemas.js';
import { useForm } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import { useToasts } from '../../shared/toast.js';
import { FormStatus, NewPasswordFields, PasswordField, SubmitButton, TextField } from '../../shared/ui.js';
import { login } from './account-api.js';

const SIGN_IN_AGAIN =
  'Your password was changed and every session signed out. Sign in with the new password.';

/**
 * Changing your own password (issue 18), with the current one. The host signs every session out, this one too, so
 * this window signs in again with the new password by itself (unless two-factor needs a code).
 */
export function ChangePasswordCard() {
  const { user, authedCall, replaceSession } = useSession();
  const toasts = useToasts();
  const twoFactor = user.is2FAVerified === true;
  const form = useForm({ currentPassword: '', twofacode: '', newPassword: '', confirm: '' }, (v) => {
    const problem = passwordProblem(v.newPassword);
    return {
      currentPassword: v.currentPassword === '' ? 'Enter your current password' : undefined,
      twofacode:
        twoFactor && !/^\d{6}$/.test(v.twofacode.replace(/\s/g, ''))
          ? 'Enter the 6-digit code from your authenticator app'
          : undefined,
      newPassword: problem
        ? v.newPassword === ''
          ? 'Choose a new password'
          : `Password ${problem}`
        : v.newPassword === v.currentPassword
          ? 'The new password must differ from the current one'
          : undefined,
      confirm: !problem && v.confirm !== v.newPassword ? 'Passwords do not match' : undefined,
    };
  });

  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title" className="card-title">
        Password
      </h2>
      <p className="muted">
        Changing it signs you out everywhere else: other windows, browsers and game clients sign in again with
        the new one.
      </p>
      <form
        className="form"
        noValidate
        aria-label="Change your password"
        onSubmit={form.handleSubmit(async (v) => {
          await replaceSession(async () => {
            await authedCall('changePassword', {
              currentPassword: v.currentPassword,
              ...(twoFactor && { twofacode: v.twofacode.replace(/\s/g, '') }),
              newPassword: v.newPassword,
            });
            const outcome = await login(user.Username, v.newPassword).catch(() => null);
            if (outcome?.kind !== 'signedIn') return null;
            toasts.show({
              tone: 'success',
              title: 'Password changed',
              body: 'Every other session was signed out.',
            });
            return { session: outcome.session, user: outcome.user };
          }, SIGN_IN_AGAIN);
        })}
      >
        {/* Lets password managers tie the change to this account. */}
        <input type="text" name="username" autoComplete="username" value={user.Username} readOnly hidden />
        <PasswordField
          label="Current password"
          name="currentPassword"
          value={form.values.currentPassword}
          onValueChange={(v) => form.setValue('currentPassword', v)}
          error={form.errors.currentPassword}
          autoComplete="current-password"
        />
        {twoFactor ? (
          <TextField
            label="Code from the app"
            name="twofacode"
            value={form.values.twofacode}
            onValueChange={(v) => form.setValue('twofacode', v)}
            error={form.errors.twofacode}
            inputMode="numeric"
            autoComplete="one-time-code"
            maxLength={7}
            className="code-input"
          />
        ) : null}
        <NewPasswordFields form={form} name="newPassword" label="New password" />
        <div className="button-row">
          <SubmitButton pending={form.pending} pendingLabel="Changing…">
            Change password
          </SubmitButton>
        </div>
        <FormStatus message={form.formError} />
      </form>
    </section>
  );
}
