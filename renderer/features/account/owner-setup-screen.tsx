import { useForm } from '../../shared/form.js';
import { FormStatus, NewPasswordFields, SubmitButton, TextField } from '../../shared/ui.js';
import { setupOwner, type SignedIn } from './account-api.js';
import { AccountLayout } from './account-layout.js';
import { newAccountProblems, USERNAME_HINT } from './validation.js';

/** Where a prefilled secret came from, to tell the person why the field is already filled. */
export type SecretSource = 'link' | 'desktop' | null;

export interface OwnerSetupScreenProps {
  initialSecret: string;
  secretSource: SecretSource;
  onSignedIn(signedIn: SignedIn): void;
  /** For people on the LAN who are not the host: they sign in or register instead. */
  onSkip(): void;
}

const SECRET_HINTS: Record<Exclude<SecretSource, null>, string> = {
  link: 'Filled in from the setup link.',
  desktop: 'Filled in by the desktop app.',
};

export function OwnerSetupScreen({ initialSecret, secretSource, onSignedIn, onSkip }: OwnerSetupScreenProps) {
  const form = useForm(
    { setupSecret: initialSecret, username: '', email: '', password: '', confirm: '' },
    (v) => ({
      setupSecret: v.setupSecret.trim() === '' ? 'Paste the setup secret the host shows' : undefined,
      ...newAccountProblems(v),
    }),
  );

  return (
    <AccountLayout wide>
      <form
        className="form"
        noValidate
        aria-labelledby="setup-title"
        onSubmit={form.handleSubmit(async (v) => {
          onSignedIn(
            await setupOwner({
              setupSecret: v.setupSecret,
              username: v.username,
              email: v.email,
              password: v.password,
            }),
          );
        })}
      >
        <p className="eyebrow">First run</p>
        <h1 id="setup-title" className="form-title">
          Set up this host
        </h1>
        <p className="form-intro">
          This host has no owner yet. Create the owner account: it can moderate everyone and manage the host.
          To prove you are at the host machine, enter the one-time <strong>setup secret</strong>. The host
          prints it when it starts (<code>setup secret: …</code> in the terminal, with a ready-made{' '}
          <code>#setup=</code> link) and the desktop app shows it in its window.
        </p>
        <TextField
          label="Setup secret"
          name="setupSecret"
          value={form.values.setupSecret}
          onValueChange={(v) => form.setValue('setupSecret', v)}
          error={form.errors.setupSecret}
          hint={secretSource ? SECRET_HINTS[secretSource] : 'Only the host machine knows it; it works once.'}
          autoComplete="off"
          autoCapitalize="off"
          spellCheck={false}
          className="mono"
          autoFocus={initialSecret === ''}
        />
        <div className="field-row">
          <TextField
            label="Owner username"
            name="username"
            value={form.values.username}
            onValueChange={(v) => form.setValue('username', v)}
            error={form.errors.username}
            hint={USERNAME_HINT}
            autoComplete="username"
            autoCapitalize="off"
            spellCheck={false}
            autoFocus={initialSecret !== ''}
          />
          <TextField
            label="Email"
            name="email"
            type="email"
            value={form.values.email}
            onValueChange={(v) => form.setValue('email', v)}
            error={form.errors.email}
            hint="Kept on this host; it sends no email."
            autoComplete="email"
            spellCheck={false}
          />
        </div>
        <NewPasswordFields form={form} name="password" label="Password" />
        <SubmitButton pending={form.pending} pendingLabel="Creating owner…">
          Create owner account
        </SubmitButton>
        <FormStatus message={form.formError} />
      </form>
      <p className="auth-aside">
        Not at the host machine?{' '}
        <button type="button" className="link-button" onClick={onSkip}>
          Sign in or create an account
        </button>
      </p>
    </AccountLayout>
  );
}
