import { useId, useState, type InputHTMLAttributes, type ReactNode } from 'react';
import { PASSWORD_MIN } from '../../server/protocol/schemas.js';

type InputProps = Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onChange' | 'children'>;

export interface TextFieldProps extends InputProps {
  label: string;
  value: string;
  onValueChange(value: string): void;
  /** Shown under the field while there is no error, in the same slot, so an error never moves the layout. */
  hint?: ReactNode;
  error?: string | undefined;
  /** Something inside the field's right edge, e.g. a show-password button. */
  trailing?: ReactNode;
}

export function TextField({ label, value, onValueChange, hint, error, trailing, ...input }: TextFieldProps) {
  const id = useId();
  const messageId = `${id}-message`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className={trailing ? 'input-wrap has-trailing' : 'input-wrap'}>
        <input
          {...input}
          id={id}
          value={value}
          onChange={(event) => onValueChange(event.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={messageId}
        />
        {trailing}
      </div>
      <p id={messageId} className={error ? 'field-message is-error' : 'field-message'}>
        {error ?? hint ?? ''}
      </p>
    </div>
  );
}

export function PasswordField(props: Omit<TextFieldProps, 'type' | 'trailing'>) {
  const [visible, setVisible] = useState(false);
  return (
    <TextField
      {...props}
      type={visible ? 'text' : 'password'}
      spellCheck={false}
      autoCapitalize="off"
      trailing={
        <button
          type="button"
          className="input-action"
          aria-pressed={visible}
          aria-label={visible ? `Hide ${props.label.toLowerCase()}` : `Show ${props.label.toLowerCase()}`}
          onClick={() => setVisible((v) => !v)}
        >
          {visible ? 'Hide' : 'Show'}
        </button>
      }
    />
  );
}

export const PASSWORD_HINT = `At least ${PASSWORD_MIN} characters with upper and lower case, a digit and a symbol.`;

/** What NewPasswordFields needs of a form (useForm's result): the new password's field and `confirm`. */
interface NewPasswordForm<F extends string> {
  values: Record<F | 'confirm', string>;
  errors: Partial<Record<F | 'confirm', string>>;
  setValue(name: F | 'confirm', value: string): void;
}

/**
 * A new password and its confirmation side by side, as the owner's setup, a password change and an admin's reset
 * ask for them: `name` is the new password's field, `label` its label ("Confirm …" labels the other).
 */
export function NewPasswordFields<F extends string>({
  form,
  name,
  label,
}: {
  form: NewPasswordForm<F>;
  name: F;
  label: string;
}) {
  return (
    <div className="field-row">
      <PasswordField
        label={label}
        name={name}
        value={form.values[name]}
        onValueChange={(v) => form.setValue(name, v)}
        error={form.errors[name]}
        hint={PASSWORD_HINT}
        autoComplete="new-password"
      />
      <PasswordField
        label={`Confirm ${label.toLowerCase()}`}
        name="confirm"
        value={form.values.confirm}
        onValueChange={(v) => form.setValue('confirm', v)}
        error={form.errors.confirm}
        autoComplete="new-password"
      />
    </div>
  );
}

export function SubmitButton({
  pending,
  children,
  pendingLabel,
}: {
  pending: boolean;
  children: ReactNode;
  pendingLabel: string;
}) {
  return (
    <button type="submit" className="button primary block" disabled={pending} aria-busy={pending}>
      {pending ? (
        <>
          <span className="spinner" aria-hidden="true" />
          {pendingLabel}
        </>
      ) : (
        children
      )}
    </button>
  );
}

export type AlertTone = 'error' | 'warning' | 'info' | 'success';

export function Alert({ tone, title, children }: { tone: AlertTone; title?: string; children?: ReactNode }) {
  return (
    <div className={`alert alert-${tone}`} role={tone === 'error' ? 'alert' : 'status'}>
      {title ? <p className="alert-title">{title}</p> : null}
      {children ? <div className="alert-body">{children}</div> : null}
    </div>
  );
}

/** The form's one message, placed under its submit button so its appearing moves nothing the person is using. */
export function FormStatus({ message }: { message: string | null }) {
  return <div className="form-status">{message ? <Alert tone="error">{message}</Alert> : null}</div>;
}

export function BrandMark({ size = 32 }: { size?: number }) {
  return (
    <svg
      width={size}
      height={size}
      viewBox="0 0 32 32"
      aria-hidden="true"
      focusable="false"
      className="brand-mark"
    >
      <defs>
        <linearGradient id="brand-gradient" x1="0" y1="0" x2="1" y2="1">
          <stop offset="0" stopColor="#8b7bff" />
          <stop offset="1" stopColor="#3fd0c9" />
        </linearGradient>
      </defs>
      <rect width="32" height="32" rx="9" fill="url(#brand-gradient)" />
      <path
        d="M10 8v16M22 8v16M10 16h12"
        stroke="#0d0f1a"
        strokeWidth="3.2"
        strokeLinecap="round"
        fill="none"
      />
    </svg>
  );
}

export function Spinner({ label }: { label: string }) {
  return (
    <div className="loading" role="status">
      <span className="spinner large" aria-hidden="true" />
      <span>{label}</span>
    </div>
  );
}
