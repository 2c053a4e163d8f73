import { useId, useState, type ReactNode } from 'react';
import { TextField } from '../../shared/ui.js';
import { RULES, type MetaErrors } from './meta-form.js';

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

/** An image URL with the creator's own images suggested as they type, and its preview. */
export function ImageUrlField({
  label,
  value,
  onValueChange,
  error,
  images,
  domains,
  status,
}: {
  label: string;
  value: string;
  onValueChange(value: string): void;
  error: string | undefined;
  images: { url: string; name: string }[];
  /** The host's allowed image domains; null while unknown. */
  domains: string[] | null;
  /** Said in place of the hint, e.g. that an image of this batch is still uploading. */
  status?: string | undefined;
}) {
  const listId = useId();
  const sites =
    domains === null
      ? 'an allowed image site such as i.imgur.com'
      : domains.length === 0
        ? null
        : `${domains.length === 1 ? 'the allowed image site' : 'an allowed image site:'} ${domains.join(', ')}`;
  return (
    <div className="image-field">
      <TextField
        label={label}
        value={value}
        onValueChange={onValueChange}
        error={error}
        type="url"
        inputMode="url"
        spellCheck={false}
        autoComplete="off"
        placeholder="https://i.imgur.com/…"
        list={listId}
        hint={
          status ??
          (images.length > 0
            ? `Optional · one of your images on this host (suggested as you type)${sites ? ` or on ${sites}` : ''}.`
            : `Optional · an image on this host (upload one first)${sites ? ` or on ${sites}` : ''}.`)
        }
      />
      <datalist id={listId}>
        {images.map((image) => (
          <option key={image.url} value={image.url} label={image.name} />
        ))}
      </datalist>
      <ImagePreview url={value} label={`Preview of the ${label.toLowerCase()}`} />
    </div>
  );
}

/** A world's icon URLs, one row each, positional as the host names them. */
export function IconList({
  icons,
  errors,
  images,
  onChange,
}: {
  icons: string[];
  errors: MetaErrors;
  images: { url: string; name: string }[];
  /** `touched`: the error key to clear. */
  onChange(icons: string[], touched: string): void;
}) {
  const id = useId();
  const full = icons.length >= RULES.icons;
  return (
    <fieldset className="field icon-list" aria-describedby={`${id}-message`}>
      <legend>Icons</legend>
      {icons.map((url, i) => (
        // Rows are positional: icon 3 is the third URL, as the host names it (worldMeta.IconURLs.2).
        <div className="icon-row" key={i}>
          <ImagePreview url={url} label={`Icon ${i + 1}`} size="small" />
          <TextField
            label={`Icon ${i + 1} URL`}
            value={url}
            onValueChange={(v) =>
              onChange(
                icons.map((old, j) => (j === i ? v : old)),
                `icons.${i}`,
              )
            }
            error={errors[`icons.${i}`]}
            type="url"
            inputMode="url"
            spellCheck={false}
            autoComplete="off"
            list={`${id}-images`}
          />
          <button
            type="button"
            className="button ghost small"
            aria-label={`Remove icon ${i + 1}`}
            onClick={() =>
              onChange(
                icons.filter((_, j) => j !== i),
                'icons',
              )
            }
          >
            Remove
          </button>
        </div>
      ))}
      <datalist id={`${id}-images`}>
        {images.map((image) => (
          <option key={image.url} value={image.url} label={image.name} />
        ))}
      </datalist>
      <div>
        <button
          type="button"
          className="button secondary small"
          disabled={full}
          onClick={() => onChange([...icons, ''], 'icons')}
        >
          Add an icon
        </button>
      </div>
      <FieldMessage
        id={`${id}-message`}
        error={errors.icons}
        hint={`Optional · ${icons.length} of ${RULES.icons} icons, each an image URL like the thumbnail.`}
      />
    </fieldset>
  );
}
