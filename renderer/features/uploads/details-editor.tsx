import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { Publicity } from '../../../server/protocol/enums.js';
import type { UploadRulesDto } from '../../../server/protocol/host-info.js';
import type { AvatarMetaDto, WorldMetaDto } from '../../../server/protocol/uploads.js';
import { ApiError, describeError } from '../../shared/api-client.js';
import { focusFirstInvalid, hasErrors } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import { FormStatus, SubmitButton, TextField } from '../../shared/ui.js';
import { detailsBody, detailsFailure, detailsProblems, detailsValues } from './details-form.js';
import { plainMessage } from './job-text.js';
import { ChoiceField, IconList, ImageUrlField, TextAreaField } from './meta-fields.js';
import {
  diffMeta,
  imageLabel,
  parseTags,
  RULES,
  type AssetKind,
  type MetaErrors,
  type MetaValues,
} from './meta-form.js';

/**
 * "Edit details" of one of your avatars or worlds: name, description, tags, who can use it, image or thumbnail
 * and (worlds) icons, saved with `update/avatar` / `update/world` and no new build.
 */
export function DetailsEditor({
  kind,
  asset,
  images,
  rules,
  onSaved,
  onCancel,
}: {
  kind: AssetKind;
  asset: AvatarMetaDto | WorldMetaDto;
  /** Your images on this host, suggested in the URL fields. */
  images: { url: string; name: string }[];
  rules: UploadRulesDto | null;
  /** After the host stored the details: the name they now have. */
  onSaved(name: string): void;
  onCancel(): void;
}) {
  const { authedCall } = useSession();
  const headingId = useId();
  const formRef = useRef<HTMLFormElement>(null);
  const [values, setValues] = useState<MetaValues>(() => detailsValues(kind, asset));
  const [attempted, setAttempted] = useState(false);
  const [serverErrors, setServerErrors] = useState<MetaErrors>({});
  const [message, setMessage] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const name = asset.Name || 'Untitled';
  const errors: MetaErrors = {
    ...serverErrors,
    ...(attempted ? detailsProblems(kind, values, rules).fields : {}),
  };
  const changes = diffMeta(kind, asset, values);

  // Opening the form puts the cursor in its first field, as a dialog would.
  useEffect(() => {
    formRef.current?.querySelector<HTMLElement>('input')?.focus();
  }, []);

  function setField<K extends keyof MetaValues>(key: K, value: MetaValues[K]): void {
    setValues((v) => ({ ...v, [key]: value }));
    setServerErrors((old) => dropKey(old, key));
  }

  async function save(event: FormEvent<HTMLFormElement>): Promise<void> {
    event.preventDefault();
    if (pending) return;
    const form = event.currentTarget;
    setAttempted(true);
    setMessage(null);
    const problems = detailsProblems(kind, values, rules);
    if (hasErrors(problems.fields) || problems.message) {
      setServerErrors({});
      setMessage(problems.message);
      focusFirstInvalid(form);
      return;
    }
    setPending(true);
    try {
      await authedCall(`update/${kind}`, detailsBody(kind, values));
      onSaved(values.name.trim());
    } catch (failure) {
      const mapped =
        failure instanceof ApiError ? detailsFailure(kind, failure.fields) : { fields: {}, message: null };
      setServerErrors(mapped.fields);
      setMessage(
        mapped.message ??
          (Object.keys(mapped.fields).length > 0
            ? null
            : failure instanceof ApiError
              ? plainMessage(failure.message)
              : describeError(failure)),
      );
      setPending(false);
      focusFirstInvalid(form);
    }
  }

  function onKeyDown(event: KeyboardEvent<HTMLFormElement>): void {
    if (event.key === 'Escape' && !pending) {
      event.stopPropagation();
      onCancel();
    }
  }

  return (
    <form
      ref={formRef}
      className="form meta-form details-editor"
      noValidate
      aria-labelledby={headingId}
      onSubmit={(event) => void save(event)}
      onKeyDown={onKeyDown}
      data-testid="details-editor"
    >
      <h3 id={headingId} className="change-title">
        Edit the details of “{name}”
      </h3>
      <p className="muted small">
        Saved on the host without a new build: its {asset.Builds.length === 1 ? 'build stays' : 'builds stay'}{' '}
        as {asset.Builds.length === 1 ? 'it is' : 'they are'}.
      </p>
      <div className="field-row">
        <TextField
          label="Name"
          value={values.name}
          onValueChange={(v) => setField('name', v)}
          error={errors.name}
          hint={`Up to ${RULES.name} characters · ${values.name.trim().length} used`}
          autoComplete="off"
        />
        <TextField
          label="Tags"
          value={values.tags}
          onValueChange={(v) => setField('tags', v)}
          error={errors.tags}
          hint={`Separate with commas · ${parseTags(values.tags).length} of ${RULES.tags}, each up to ${RULES.tag} characters`}
          autoComplete="off"
          spellCheck={false}
        />
      </div>
      <TextAreaField
        label="Description"
        value={values.description}
        onValueChange={(v) => setField('description', v)}
        error={errors.description}
        hint={`Optional · up to ${RULES.description} characters · ${values.description.length} used`}
        rows={3}
      />
      <ChoiceField
        legend="Who can use it"
        name="publicity"
        value={values.publicity}
        onChange={(v) => setField('publicity', v)}
        error={errors.publicity}
        choices={[
          { value: Publicity.Anyone, label: 'Anyone' },
          { value: Publicity.OwnerOnly, label: 'Only me' },
        ]}
        hint={
          values.publicity === Publicity.OwnerOnly
            ? 'Only you can download its builds.'
            : 'Everyone on this host can find and use it.'
        }
      />
      <ImageUrlField
        label={imageLabel(kind)}
        value={values.image}
        onValueChange={(v) => setField('image', v)}
        error={errors.image}
        images={images}
        domains={rules?.allowedImageDomains ?? null}
      />
      {kind === 'world' ? (
        <IconList
          icons={values.icons}
          errors={errors}
          images={images}
          onChange={(icons, touched) => {
            setValues((v) => ({ ...v, icons }));
            setServerErrors((old) => dropKey(dropKey(old, touched), 'icons'));
          }}
        />
      ) : null}
      <section className="change-summary" aria-label="What saving changes" data-testid="details-changes">
        {changes.length === 0 ? (
          <p className="muted small">Nothing changed yet.</p>
        ) : (
          <dl className="diff">
            {changes.map((change) => (
              <div key={change.label} className="diff-row">
                <dt>{change.label}</dt>
                <dd>
                  <span className="diff-before">
                    <span className="visually-hidden">Now: </span>
                    {change.before}
                  </span>
                  <span className="diff-arrow" aria-hidden="true">
                    →
                  </span>
                  <span className="diff-after">
                    <span className="visually-hidden">After saving: </span>
                    {change.after}
                  </span>
                </dd>
              </div>
            ))}
          </dl>
        )}
      </section>
      <div className="button-row">
        <SubmitButton pending={pending} pendingLabel="Saving…">
          Save details
        </SubmitButton>
        <button type="button" className="button ghost" disabled={pending} onClick={onCancel}>
          Cancel
        </button>
      </div>
      <FormStatus message={message} />
    </form>
  );
}

function dropKey(errors: MetaErrors, key: string): MetaErrors {
  const hit = Object.keys(errors).some((k) => k === key || k.startsWith(`${key}.`));
  if (!hit) return errors;
  return Object.fromEntries(Object.entries(errors).filter(([k]) => k !== key && !k.startsWith(`${key}.`)));
}
