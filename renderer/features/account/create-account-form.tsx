import { useForm } from '../../shared/form.js';
import { FormStatus, PasswordField, SubmitButton, TextField } from '../../shared/ui.js';
import { createAccount, type SignedIn } from './account-api.js';
import { newAccountProblems, PASSWORD_HINT, USERNAME_HINT } from './validation.js';

export interface CreateAccountFormProps {
  /** null while unknown: the field is then offered as optional. */
  inviteRequired: boolean | null;
  /** The invite code of the sign-up link the page was opened with, if any. */
  linkCode?: string | null;
  onSignedIn(signedIn: SignedIn): void;
}

export function CreateAccountForm({ inviteRequired, linkCode = null, onSignedIn }: CreateAccountFormProps) {
  const fromLink = linkCode !== null && linkCode !== '';
  const form = useForm(
    { username: '', email: '', password: '', confirm: '', inviteCode: linkCode ?? '' },
    (v) => ({
      ...newAccountProblems(v),
      inviteCode:
        inviteRequired && v.inviteCode.trim() === '' ? 'This host requires an invite code' : undefined,
    }),
  );

  return (
    <form
      className="form"
      noValidate
      aria-labelledby="create-title"
      onSubmit={form.handleSubmit(async (v) => {
        onSignedIn(
          await createAccount({
            username: v.username,
            email: v.email,
            password: v.password,
            inviteCode: v.inviteCode,
          }),
        );
      })}
    >
      <h1 id="create-title" className="form-title">
        Create an account
      </h1>
      <TextField
        label="Username"
        name="username"
        value={form.values.username}
        onValueChange={(v) => form.setValue('username', v)}
        error={form.errors.username}
        hint={USERNAME_HINT}
        autoComplete="username"
        autoCapitalize="off"
        spellCheck={false}
        autoFocus
      />
      <TextField
        label="Email"
        name="email"
        type="email"
        value={form.values.email}
        onValueChange={(v) => form.setValue('email', v)}
        error={form.errors.email}
        hint="Only the host owner and you can see it."
        autoComplete="email"
        spellCheck={false}
      />
      <PasswordField
        label="Password"
        name="password"
        value={form.values.password}
        onValueChange={(v) => form.setValue('password', v)}
        error={form.errors.password}
        hint={PASSWORD_HINT}
        autoComplete="new-password"
      />
      <PasswordField
        label="Confirm password"
        name="confirm"
        value={form.values.confirm}
        onValueChange={(v) => form.setValue('confirm', v)}
        error={form.errors.confirm}
        autoComplete="new-password"
      />
      {inviteRequired !== false || fromLink ? (
        <TextField
          label={inviteRequired ? 'Invite code' : 'Invite code (if the host gave you one)'}
          name="inviteCode"
          value={form.values.inviteCode}
          onValueChange={(v) => form.setValue('inviteCode', v)}
          error={form.errors.inviteCode}
          hint={
            fromLink && form.values.inviteCode === linkCode
              ? 'Filled in from the sign-up link.'
              : inviteRequired
                ? 'This host only accepts new accounts with an invite code.'
                : undefined
          }
          autoComplete="off"
          spellCheck={false}
        />
      ) : null}
      <SubmitButton pending={form.pending} pendingLabel="Creating account…">
        Create account
      </SubmitButton>
      <FormStatus message={form.formError} />
    </form>
  );
}
