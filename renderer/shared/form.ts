import { useState, type FormEvent } from 'react';
import { ApiError, describeError } from './api-client.js';

export type FieldErrorMap<F extends string> = Partial<Record<F, string>>;

/** A failure an action reports itself, e.g. a refused 2FA code that the server answers with success:true. */
export class FormProblem extends Error {
  constructor(
    message: string,
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Server field errors that belong to one of `names`, and one sentence for everything else. */
export function splitFailure<F extends string>(
  error: unknown,
  names: readonly F[],
): { fields: FieldErrorMap<F>; message: string | null } {
  const raw = error instanceof ApiError || error instanceof FormProblem ? error.fields : {};
  const fields: FieldErrorMap<F> = {};
  const leftover: string[] = [];
  for (const [key, reason] of Object.entries(raw)) {
    if ((names as readonly string[]).includes(key)) fields[key as F] = capitalise(reason);
    else leftover.push(`${key}: ${reason}`);
  }
  if (Object.keys(fields).length === 0) return { fields, message: describeError(error) };
  return { fields, message: leftover.length > 0 ? leftover.join('; ') : null };
}

function capitalise(reason: string): string {
  return reason.charAt(0).toUpperCase() + reason.slice(1);
}

export function hasErrors(errors: object): boolean {
  return Object.values(errors).some((value) => typeof value === 'string' && value !== '');
}

/** Moves focus to the first field marked invalid once React has painted the marks. */
export function focusFirstInvalid(form: HTMLFormElement | null): void {
  requestAnimationFrame(() => {
    form?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  });
}

/**
 * State of one form: values, field errors from the shared rules (shown after the first submit attempt, then live
 * as the person fixes them) and from the server (until that field changes), one form-level message, pending.
 */
export function useForm<F extends string>(
  initial: Record<F, string>,
  validate: (values: Record<F, string>) => FieldErrorMap<F>,
) {
  const [values, setValues] = useState(initial);
  const [attempted, setAttempted] = useState(false);
  const [serverErrors, setServerErrors] = useState<FieldErrorMap<F>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);

  const errors: FieldErrorMap<F> = { ...serverErrors };
  if (attempted) {
    // Only real problems override the server's: rules report "fine" as an undefined entry.
    for (const [name, problem] of Object.entries(validate(values))) {
      if (typeof problem === 'string' && problem !== '') errors[name as F] = problem;
    }
  }

  function setValue(name: F, value: string): void {
    setValues((old) => ({ ...old, [name]: value }));
    setServerErrors((old) => {
      if (old[name] === undefined) return old;
      const next = { ...old };
      delete next[name];
      return next;
    });
  }

  function handleSubmit(action: (values: Record<F, string>) => Promise<void>) {
    return (event: FormEvent<HTMLFormElement>): void => {
      event.preventDefault();
      if (pending) return;
      const form = event.currentTarget;
      setAttempted(true);
      setFormError(null);
      if (hasErrors(validate(values))) {
        setServerErrors({});
        focusFirstInvalid(form);
        return;
      }
      setPending(true);
      setServerErrors({});
      action(values)
        .catch((error: unknown) => {
          const { fields, message } = splitFailure(error, Object.keys(initial) as F[]);
          setServerErrors(fields);
          setFormError(message);
          focusFirstInvalid(form);
        })
        .finally(() => setPending(false));
    };
  }

  /** Back to the first values with nothing marked, e.g. after a success that clears the form for the next one. */
  function reset(): void {
    setValues(initial);
    setAttempted(false);
    setServerErrors({});
    setFormError(null);
  }

  return { values, errors, formError, pending, setValue, setFormError, handleSubmit, reset };
}
