import { useId, useState, type ReactNode } from 'react';

/** Form pieces the shared ui.tsx lacks, built like its TextField: the message slot never moves the layout. */

export function FieldMessage({
  id,
  error,
  hint,
}: {
  id: string;
  error?: string | undefined;
  hint?: ReactNode;
}) {
  return (
    <p id={id} className={error ? 'field-message is-error' : 'field-message'}>
      {error ?? hint ?? ''}
    </p>
  );
}

export function TextAreaField({
  label,
  value,
  onValueChange,
  hint,
  error,
  rows = 4,
}: {
  label: string;
  value: string;
  onValueChange(value: string): void;
  hint?: ReactNode;
  error?: string | undefined;
  rows?: number;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        rows={rows}
        value={value}
        onChange={(event) => onValueChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={`${id}-message`}
      />
      <FieldMessage id={`${id}-message`} error={error} hint={hint} />
    </div>
  );
}

export interface Choice<V extends string | number> {
  value: V;
  label: string;
  detail?: string;
}

/** Radio buttons as a segmented control: one tab stop, arrow keys move (native radio behaviour). */
export function ChoiceField<V extends string | number>({
  legend,
  name,
  value,
  choices,
  onChange,
  error,
  hint,
}: {
  legend: string;
  name: string;
  value: V;
  choices: Choice<V>[];
  onChange(value: V): void;
  error?: string | undefined;
  hint?: ReactNode;
}) {
  const id = useId();
  return (
    <fieldset
      className="field choice-field"
      aria-describedby={`${id}-message`}
      aria-invalid={error ? true : undefined}
    >
      <legend>{legend}</legend>
      <div className="choices">
        {choices.map((choice) => (
          <label key={String(choice.value)} className="choice">
            <input
              type="radio"
              name={name}
              checked={choice.value === value}
              onChange={() => onChange(choice.value)}
            />
            <span className="choice-text">
              <span className="choice-label">{choice.label}</span>
              {choice.detail ? <span className="choice-detail">{choice.detail}</span> : null}
            </span>
          </label>
        ))}
      </div>
      <FieldMessage id={`${id}-message`} error={error} hint={hint} />
    </fieldset>
  );
}

export function SelectField({
  label,
  value,
  onValueChange,
  children,
  hint,
  error,
}: {
  label: string;
  value: string;
  onValueChange(value: string): void;
  children: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        className="select"
        value={value}
        onChange={(event) => onValueChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={`${id}-message`}
      >
        {children}
      </select>
      <FieldMessage id={`${id}-message`} error={error} hint={hint} />
    </div>
  );
}

/** A fixed-size preview of an image URL; the box is there before, during and after loading. */
export function ImagePreview({
  url,
  label,
  size = 'medium',
}: {
  url: string;
  label: string;
  size?: 'small' | 'medium';
}) {
  const [failed, setFailed] = useState<string | null>(null);
  const usable = isPreviewable(url);
  return (
    <div className={`image-preview ${size}`} data-testid="image-preview">
      {usable && failed !== url ? (
        <img
          src={url}
          alt={label}
          loading="lazy"
          referrerPolicy="no-referrer"
          onError={() => setFailed(url)}
        />
      ) : (
        <span className="image-preview-empty">{usable ? 'No preview' : 'No image'}</span>
      )}
    </div>
  );
}

function isPreviewable(text: string): boolean {
  try {
    const url = new URL(text.trim());
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
