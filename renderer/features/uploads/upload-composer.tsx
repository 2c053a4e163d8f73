import {
  useId,
  useImperativeHandle,
  useRef,
  useState,
  type DragEvent,
  type FormEvent,
  type Ref,
} from 'react';
import { BuildPlatform, Publicity } from '../../../server/protocol/enums.js';
import { ErrorCode } from '../../../server/protocol/errors.js';
import {
  ALLOWED_EXTENSIONS,
  type AvatarMetaDto,
  type WorldMetaDto,
} from '../../../server/protocol/uploads.js';
import type { UploadRulesDto } from '../../../server/protocol/host-info.js';
import { formatBytes } from '../../shared/bytes.js';
import { focusFirstInvalid, hasErrors } from '../../shared/form.js';
import { Alert, FormStatus, SubmitButton, TextField } from '../../shared/ui.js';
import { fileIdOfUrl, fileUrl, imageChoices, isImageName, type MyContent } from './content-api.js';
import { ACCEPTED_TEXT, isAssetKind, kindOfName, KIND_NAMES } from './job-text.js';
import {
  buildEffect,
  diffMeta,
  emptyMeta,
  imageLabel,
  mapServerFields,
  metaField,
  metaProblems,
  parseTags,
  platformName,
  RULES,
  updateOptionLabel,
  valuesFromAvatar,
  valuesFromWorld,
  type AssetKind,
  type MetaErrors,
  type MetaValues,
} from './meta-form.js';
import {
  ChoiceField,
  FieldMessage,
  IconList,
  ImageUrlField,
  SelectField,
  TextAreaField,
} from './meta-fields.js';
import type { ResumeRecord } from './resume-store.js';
import { isLive, type Job, type UploadQueue } from './upload-queue.js';

/** An image picked in the same batch as a build: it can become that build's image or thumbnail. */
interface BatchImage {
  jobId: number;
  name: string;
}

export interface ComposerHandle {
  /** Prepares an overwrite of an avatar's or world's build for `platform`; the person then picks the file. */
  target(kind: AssetKind, id: string, platform: BuildPlatform): void;
  /** Reopens a refused upload with the host's reasons next to the fields. `onlyIfIdle` leaves a draft alone. */
  reopen(job: Job, onlyIfIdle: boolean): boolean;
  /** Continues a remembered interrupted upload with a file picked again. */
  resume(record: ResumeRecord, file: File): void;
}

interface Draft {
  file: File;
  kind: AssetKind;
}

interface PendingTarget {
  kind: AssetKind;
  id: string;
  platform: BuildPlatform;
}

const PLATFORM_CHOICES = [BuildPlatform.Windows, BuildPlatform.Android] as const;

/** Picking or dropping files, the avatar/world details form, and handing finished drafts to the upload list. */
export function UploadComposer({
  queue,
  jobs,
  content,
  rules,
  fileOrigin,
  ref,
}: {
  queue: UploadQueue;
  /** The upload list's jobs, to follow the images of this batch. */
  jobs: readonly Job[];
  content: MyContent | null;
  /** Where stored file URLs point (content-api.ts `shareableOrigin`). */
  fileOrigin: string;
  /** The host's published rules; null until known (the host then refuses after sending instead). */
  rules: UploadRulesDto | null;
  ref: Ref<ComposerHandle>;
}) {
  const inputRef = useRef<HTMLInputElement>(null);
  const sectionRef = useRef<HTMLElement>(null);
  const formRef = useRef<HTMLFormElement>(null);
  const headingId = useId();
  const [draft, setDraft] = useState<Draft | null>(null);
  const [waiting, setWaiting] = useState<File[]>([]);
  const [values, setValues] = useState<MetaValues>(emptyMeta);
  const [pending, setPending] = useState<PendingTarget | null>(null);
  const [attempted, setAttempted] = useState(false);
  const [serverErrors, setServerErrors] = useState<MetaErrors>({});
  const [formMessage, setFormMessage] = useState<string | null>(null);
  const [pickErrors, setPickErrors] = useState<string[]>([]);
  /** What became of the files just picked; it lasts while one of its uploads (`jobIds`) is still under way. */
  const [notice, setNotice] = useState<{ text: string; jobIds: number[] } | null>(null);
  const [dragging, setDragging] = useState(false);
  /** The failed upload this draft reopened; sending the draft takes its place in the list. */
  const [replacing, setReplacing] = useState<number | null>(null);
  const dragDepth = useRef(0);
  const [batchImages, setBatchImages] = useState<BatchImage[]>([]);
  /** The batch image chosen as this draft's image: its URL is known once its upload is done. */
  const [imageJob, setImageJob] = useState<number | null>(null);

  const kind = draft?.kind ?? null;
  const chosen = imageJob === null ? undefined : jobs.find((j) => j.id === imageJob);
  const chosenUrl =
    chosen?.state === 'done' && chosen.outcome
      ? fileUrl(fileOrigin, chosen.outcome.UploadData.UserId, chosen.outcome.UploadData.FileId)
      : null;
  // What is sent and checked: the chosen batch image's URL in place of a typed one.
  const shown: MetaValues = imageJob === null ? values : { ...values, image: chosenUrl ?? '' };
  const imageWait = kind && imageJob !== null && chosenUrl === null ? batchImageProblem(kind, chosen) : null;
  const clientErrors = attempted && kind ? metaProblems(kind, shown, rules) : {};
  const errors: MetaErrors = {
    ...serverErrors,
    ...clientErrors,
    ...(attempted && imageWait ? { image: imageWait } : {}),
  };
  const existing = findAsset(content, kind, values.targetId);

  function bringIntoView(): void {
    sectionRef.current?.scrollIntoView({ block: 'start', behavior: 'smooth' });
  }

  function valuesFor(target: PendingTarget): MetaValues | null {
    const asset = findAsset(content, target.kind, target.id);
    if (!asset) return null;
    return target.kind === 'avatar'
      ? valuesFromAvatar(asset as AvatarMetaDto, target.platform)
      : valuesFromWorld(asset as WorldMetaDto, target.platform);
  }

  /** Makes `file` the draft, keeping what was typed unless it was for the other kind's avatar/world. */
  function startDraft(file: File, fileKind: AssetKind): void {
    const forTarget = pending && pending.kind === fileKind ? pending : null;
    if (forTarget) {
      const fromTarget = valuesFor(forTarget);
      // The list may not know a just-created avatar yet: keep what was typed, aimed at it.
      setValues((v) => fromTarget ?? { ...v, targetId: forTarget.id, platform: forTarget.platform });
      setPending(null);
    } else if (kind !== fileKind && values.targetId !== '') {
      setValues((v) => ({ ...v, targetId: '', icons: fileKind === 'world' ? v.icons : [], scripts: [] }));
    }
    if (kind !== fileKind) {
      setAttempted(false);
      setServerErrors({});
    } else {
      setServerErrors((old) => without(old, 'file'));
    }
    setFormMessage(null);
    setReplacing(null);
    setDraft({ file, kind: fileKind });
  }

  function handleFiles(files: File[]): void {
    const rejected: string[] = [];
    const queued: string[] = [];
    const queuedIds: number[] = [];
    const assets: { file: File; kind: AssetKind }[] = [];
    const images: BatchImage[] = [];
    for (const file of files) {
      const fileKind = kindOfName(file.name);
      if (fileKind === null) {
        rejected.push(`“${file.name}” can't be uploaded. The host takes ${ACCEPTED_TEXT}.`);
        continue;
      }
      if (rules && file.size > rules.maxFileBytes) {
        rejected.push(
          `“${file.name}” is ${formatBytes(file.size)}; this host takes files up to ${formatBytes(rules.maxFileBytes)}.`,
        );
        continue;
      }
      const interrupted = queue.findInterrupted(file);
      if (interrupted) {
        queuedIds.push(queue.add(specOf(interrupted, file)));
        queued.push(`Resuming “${file.name}” where it stopped.`);
        continue;
      }
      if (isAssetKind(fileKind)) {
        assets.push({ file, kind: fileKind });
        continue;
      }
      const jobId = queue.add({ file, kind: fileKind, meta: null, title: file.name, values: null });
      if (isImageName(file.name)) images.push({ jobId, name: file.name });
      queuedIds.push(jobId);
      queued.push(`“${file.name}” is in the upload list.`);
    }
    setPickErrors(rejected);
    setNotice(queued.length > 0 ? { text: queued.join(' '), jobIds: queuedIds } : null);
    const [first, ...rest] = assets;
    if (first) {
      // Images that came with a build: the first becomes its image (or thumbnail) unless the person picks another.
      setBatchImages(images);
      setImageJob(images[0]?.jobId ?? null);
      startDraft(first.file, first.kind);
      if (rest.length > 0) setWaiting((w) => [...w, ...rest.map((a) => a.file)]);
    }
  }

  useImperativeHandle(ref, () => ({
    target(targetKind, id, platform) {
      const target = { kind: targetKind, id, platform };
      if (draft && draft.kind === targetKind) {
        const next = valuesFor(target);
        if (next) setValues((v) => ({ ...next, platform: v.targetId === id ? platform : next.platform }));
        setPending(null);
      } else {
        setPending(target);
      }
      setServerErrors({});
      setFormMessage(null);
      bringIntoView();
      requestAnimationFrame(() => {
        (draft
          ? formRef.current?.querySelector<HTMLElement>('select')
          : inputRef.current?.parentElement?.querySelector<HTMLElement>('.pick-button')
        )?.focus({ preventScroll: true });
      });
    },
    reopen(job, onlyIfIdle) {
      if (onlyIfIdle && draft) return false;
      if (!isAssetKind(job.kind) || !job.error) return false;
      const { fields, rest } = mapServerFields(job.kind, job.error.fields);
      if (Object.keys(fields).length === 0 && job.error.code === ErrorCode.FILE_TOO_LARGE) {
        fields.file = `The file is larger than this host allows (${formatBytes(job.file.size)}).`;
      }
      setDraft({ file: job.file, kind: job.kind });
      setValues(job.values ?? emptyMeta());
      setImageJob(null);
      setBatchImages([]);
      setServerErrors(fields);
      setFormMessage(
        rest.length > 0 ? rest.join('; ') : Object.keys(fields).length > 0 ? null : job.error.message,
      );
      setAttempted(true);
      setPending(null);
      setNotice(null);
      setReplacing(job.id);
      bringIntoView();
      focusFirstInvalid(formRef.current);
      return true;
    },
    resume(record, file) {
      const jobId = queue.add(specOf(record, file));
      setNotice({ text: `Resuming “${file.name}” where it stopped.`, jobIds: [jobId] });
    },
  }));

  function setField<K extends keyof MetaValues>(key: K, value: MetaValues[K]): void {
    setValues((v) => ({ ...v, [key]: value }));
    if (key === 'image') setImageJob(null);
    const errorKey = key === 'targetId' ? 'target' : key;
    setServerErrors((old) => without(old, errorKey));
  }

  function chooseTarget(id: string): void {
    if (!kind) return;
    setServerErrors((old) => without(old, 'target'));
    if (id === '') {
      setValues((v) => ({ ...v, targetId: '' }));
      return;
    }
    const next = valuesFor({ kind, id, platform: values.platform });
    if (next) setValues(next);
  }

  function choosePlatform(platform: BuildPlatform): void {
    setServerErrors((old) => without(old, 'platform'));
    setValues((v) => {
      if (kind === 'world' && existing) {
        const scripts = (existing as WorldMetaDto).Builds.find(
          (b) => b.BuildPlatform === platform,
        )?.ServerScripts;
        return { ...v, platform, scripts: scripts ? [...scripts] : v.scripts };
      }
      return { ...v, platform };
    });
  }

  function discard(): void {
    const [next, ...rest] = waiting;
    setReplacing(null);
    setWaiting(rest);
    setAttempted(false);
    setServerErrors({});
    setFormMessage(null);
    setValues(emptyMeta());
    setImageJob(null);
    if (!next) setBatchImages([]);
    if (next) {
      const nextKind = kindOfName(next.name);
      setDraft(nextKind && isAssetKind(nextKind) ? { file: next, kind: nextKind } : null);
    } else {
      setDraft(null);
    }
  }

  function submit(event: FormEvent<HTMLFormElement>): void {
    event.preventDefault();
    if (!draft) return;
    setAttempted(true);
    setFormMessage(null);
    const problems = metaProblems(draft.kind, shown, rules);
    if (imageWait) problems.image = imageWait;
    if (hasErrors(problems)) {
      setServerErrors({});
      focusFirstInvalid(event.currentTarget);
      return;
    }
    const name = values.name.trim();
    const title = existing
      ? `${existing.Name || 'Untitled'} · ${platformName(values.platform)} build`
      : `New ${draft.kind} “${name}”`;
    if (replacing !== null) queue.remove(replacing);
    const jobId = queue.add({
      file: draft.file,
      kind: draft.kind,
      meta: metaField(draft.kind, shown),
      title,
      values: shown,
    });
    setNotice({ text: `“${draft.file.name}” is in the upload list.`, jobIds: [jobId] });
    setPickErrors([]);
    discard();
  }

  function onDrag(event: DragEvent<HTMLElement>, change: 1 | -1 | 0): void {
    if (!Array.from(event.dataTransfer.types).includes('Files')) return;
    event.preventDefault();
    if (change === 0) {
      event.dataTransfer.dropEffect = 'copy';
      return;
    }
    dragDepth.current = Math.max(0, dragDepth.current + change);
    setDragging(dragDepth.current > 0);
  }

  function onDrop(event: DragEvent<HTMLElement>): void {
    event.preventDefault();
    dragDepth.current = 0;
    setDragging(false);
    handleFiles(Array.from(event.dataTransfer.files));
  }

  const imageUrls = imageChoices(content, fileOrigin);
  const pendingAsset = pending ? findAsset(content, pending.kind, pending.id) : undefined;

  return (
    <section
      className={dragging ? 'card composer is-dragging' : 'card composer'}
      aria-labelledby={headingId}
      ref={sectionRef}
      onDragEnter={(e) => onDrag(e, 1)}
      onDragLeave={(e) => onDrag(e, -1)}
      onDragOver={(e) => onDrag(e, 0)}
      onDrop={onDrop}
    >
      <h2 id={headingId} className="card-title">
        New upload
      </h2>
      <input
        ref={inputRef}
        type="file"
        multiple
        accept={ALLOWED_EXTENSIONS.join(',')}
        className="visually-hidden"
        tabIndex={-1}
        aria-hidden="true"
        data-testid="upload-input"
        onChange={(event) => {
          handleFiles(Array.from(event.target.files ?? []));
          event.target.value = '';
        }}
      />
      {pending ? (
        <div className="pending-target" role="status">
          <p>
            Updating the {pending.kind}{' '}
            <strong>{pendingAsset ? `“${pendingAsset.Name || 'Untitled'}”` : pending.id}</strong>: choose its{' '}
            {platformName(pending.platform)} build ({pending.kind === 'avatar' ? '.hna' : '.hnw'} file).
          </p>
          <button type="button" className="button ghost small" onClick={() => setPending(null)}>
            Don&apos;t update it
          </button>
        </div>
      ) : null}
      <div className={draft ? 'dropzone is-compact' : 'dropzone'}>
        <svg className="dropzone-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
          <path d="M12 16V4m0 0-4.5 4.5M12 4l4.5 4.5M4 15v3a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2v-3" />
        </svg>
        <div className="dropzone-text">
          <p className="dropzone-title">
            {draft ? 'Drop another file to replace this one' : 'Drop files here, or choose them'}
          </p>
          <p className="muted small">
            The host takes {ACCEPTED_TEXT}
            {rules ? `, up to ${formatBytes(rules.maxFileBytes)} each` : ''}. Several images or scripts can go
            at once.
          </p>
        </div>
        <button
          type="button"
          className="button secondary pick-button"
          onClick={() => inputRef.current?.click()}
        >
          {draft ? 'Choose another file' : 'Choose files'}
        </button>
      </div>
      {pickErrors.length > 0 ? (
        <Alert tone="error">
          {pickErrors.map((e) => (
            <p key={e}>{e}</p>
          ))}
        </Alert>
      ) : null}
      <div className="composer-notice" role="status">
        {notice && notice.jobIds.some((id) => jobs.some((j) => j.id === id && isLive(j))) ? (
          <p>{notice.text}</p>
        ) : null}
      </div>

      {draft && kind ? (
        <form
          ref={formRef}
          className="form meta-form"
          noValidate
          onSubmit={submit}
          aria-label={`Details of ${draft.file.name}`}
        >
          <FileSummary draft={draft} error={errors.file} />
          <SelectField
            label="Upload as"
            value={values.targetId}
            onValueChange={chooseTarget}
            error={errors.target}
            hint={
              existing
                ? buildHint(existing, values.platform)
                : `Creates a new ${kind}. To replace a build of one you have, choose it here.`
            }
          >
            <option value="">A new {kind}</option>
            {(kind === 'avatar' ? (content?.Avatars ?? []) : (content?.Worlds ?? [])).map((asset) => (
              <option key={asset.Id} value={asset.Id}>
                {updateOptionLabel(asset, values.platform)}
              </option>
            ))}
          </SelectField>

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
          <div className="field-row">
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
            <ChoiceField
              legend="Build platform"
              name="platform"
              value={values.platform}
              onChange={choosePlatform}
              error={errors.platform}
              choices={PLATFORM_CHOICES.map((p) => ({
                value: p,
                label: platformName(p),
                ...(existing
                  ? {
                      detail: existing.Builds.some((b) => b.BuildPlatform === p)
                        ? 'replaces build'
                        : 'adds build',
                    }
                  : {}),
              }))}
              hint="The game client this build is made for."
            />
          </div>
          <ImageUrlField
            label={imageLabel(kind)}
            value={shown.image}
            onValueChange={(v) => setField('image', v)}
            error={errors.image}
            images={imageUrls}
            domains={rules?.allowedImageDomains ?? null}
            status={
              chosen && chosenUrl === null && isLive(chosen)
                ? `“${chosen.file.name}” is uploading; its address goes here when it is done.`
                : undefined
            }
          />
          {batchImages.length > 0 ? (
            <BatchImagePicker
              kind={kind}
              images={batchImages}
              jobs={jobs}
              chosen={imageJob}
              onChoose={(jobId) => {
                setImageJob(jobId);
                setServerErrors((old) => without(old, 'image'));
              }}
            />
          ) : null}
          {kind === 'world' ? (
            <>
              <IconList
                icons={values.icons}
                errors={errors}
                images={imageUrls}
                onChange={(icons, touched) => {
                  setValues((v) => ({ ...v, icons }));
                  setServerErrors((old) => without(without(old, touched), 'icons'));
                }}
              />
              <ScriptPicker
                content={content}
                fileOrigin={fileOrigin}
                selected={values.scripts}
                error={errors.scripts}
                platform={values.platform}
                onChange={(scripts) => setField('scripts', scripts)}
              />
            </>
          ) : null}
          {existing ? <ChangeSummary kind={kind} existing={existing} values={shown} /> : null}
          <div className="button-row">
            <SubmitButton pending={false} pendingLabel="">
              {existing ? `Upload ${platformName(values.platform)} build` : `Upload ${kind}`}
            </SubmitButton>
            <button type="button" className="button ghost" onClick={discard}>
              Discard
            </button>
          </div>
          <FormStatus message={formMessage} />
        </form>
      ) : null}
      {waiting.length > 0 ? (
        <p className="muted small">
          Waiting for details next: {waiting.map((f) => `“${f.name}”`).join(', ')}.
        </p>
      ) : null}
    </section>
  );
}

function specOf(record: ResumeRecord, file: File) {
  return { file, kind: record.kind, meta: record.meta, title: record.title, values: record.values };
}

function without(errors: MetaErrors, key: string): MetaErrors {
  const hit = Object.keys(errors).some((k) => k === key || k.startsWith(`${key}.`));
  if (!hit) return errors;
  return Object.fromEntries(Object.entries(errors).filter(([k]) => k !== key && !k.startsWith(`${key}.`)));
}

function findAsset(
  content: MyContent | null,
  kind: AssetKind | null,
  id: string,
): AvatarMetaDto | WorldMetaDto | undefined {
  if (!content || !kind || id === '') return undefined;
  return kind === 'avatar'
    ? content.Avatars.find((a) => a.Id === id)
    : content.Worlds.find((w) => w.Id === id);
}

function buildHint(existing: AvatarMetaDto | WorldMetaDto, platform: BuildPlatform): string {
  const effect = buildEffect(existing, platform);
  const others = effect.others.length > 0 ? ` The ${effect.others.join(' and ')} build stays.` : '';
  return effect.kind === 'replace'
    ? `Replaces its ${effect.platform} build; the old one is deleted.${others}`
    : `Adds ${/^[aeiou]/i.test(effect.platform) ? 'an' : 'a'} ${effect.platform} build.${others}`;
}

function FileSummary({ draft, error }: { draft: Draft; error: string | undefined }) {
  const id = useId();
  return (
    <div className="file-summary-wrap">
      <div
        className="file-summary"
        tabIndex={-1}
        aria-invalid={error ? true : undefined}
        aria-describedby={`${id}-message`}
      >
        <span className={`kind-badge kind-${draft.kind}`} aria-hidden="true">
          {draft.kind === 'avatar' ? 'HNA' : 'HNW'}
        </span>
        <span className="file-summary-text">
          <span className="file-name breakable">{draft.file.name}</span>
          <span className="muted small">
            {KIND_NAMES[draft.kind]} · {formatBytes(draft.file.size)}
          </span>
        </span>
      </div>
      <FieldMessage id={`${id}-message`} error={error} />
    </div>
  );
}

/** Why the chosen batch image's URL is not there yet, as the image field's error. */
function batchImageProblem(kind: AssetKind, job: Job | undefined): string {
  const what = kind === 'avatar' ? 'image' : 'thumbnail';
  if (!job || job.state === 'failed' || job.state === 'cancelled') {
    return `${job ? `“${job.file.name}”` : 'The chosen image'} did not upload, so it can't be the ${what}. Retry it in the upload list or choose another image.`;
  }
  return `“${job.file.name}” is still uploading. Send this when it is done (it is ahead in the upload list).`;
}

/** The images dropped with this build, each a button that makes it the build's image or thumbnail. */
function BatchImagePicker({
  kind,
  images,
  jobs,
  chosen,
  onChoose,
}: {
  kind: AssetKind;
  images: BatchImage[];
  jobs: readonly Job[];
  chosen: number | null;
  onChoose(jobId: number): void;
}) {
  const id = useId();
  const what = kind === 'avatar' ? 'image' : 'thumbnail';
  return (
    <div className="batch-images" role="group" aria-labelledby={id} data-testid="batch-images">
      <p id={id} className="muted small">
        Dropped with this build:
      </p>
      <ul className="batch-image-list">
        {images.map((image) => {
          const job = jobs.find((j) => j.id === image.jobId);
          const state =
            job?.state === 'done'
              ? 'uploaded'
              : job?.state === 'failed' || job?.state === 'cancelled' || !job
                ? 'not uploaded'
                : 'uploading…';
          return (
            <li key={image.jobId}>
              <button
                type="button"
                className="button secondary small"
                aria-pressed={chosen === image.jobId}
                onClick={() => onChoose(image.jobId)}
              >
                Use “{image.name}” as the {what}
              </button>{' '}
              <span className="muted small">{state}</span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function ScriptPicker({
  content,
  fileOrigin,
  selected,
  error,
  platform,
  onChange,
}: {
  content: MyContent | null;
  fileOrigin: string;
  selected: string[];
  error: string | undefined;
  platform: BuildPlatform;
  onChange(scripts: string[]): void;
}) {
  const id = useId();
  const scripts = (content?.Uploads ?? []).filter((u) => kindOfName(u.FileName) === 'script');
  const known = new Set(scripts.map((s) => s.FileId));
  const foreign = selected.filter((url) => !known.has(fileIdOfUrl(url) ?? ''));
  const isSelected = (fileId: string) => selected.some((url) => fileIdOfUrl(url) === fileId);
  return (
    <fieldset
      className="field script-picker"
      aria-describedby={`${id}-message`}
      aria-invalid={error ? true : undefined}
    >
      <legend>Server scripts for the {platformName(platform)} build</legend>
      {scripts.length === 0 && foreign.length === 0 ? (
        <p className="muted small">None uploaded yet. Upload a .js or .lua file and it appears here.</p>
      ) : (
        <ul className="checks">
          {scripts.map((script) => (
            <li key={script.FileId}>
              <label className="check">
                <input
                  type="checkbox"
                  checked={isSelected(script.FileId)}
                  onChange={(event) =>
                    onChange(
                      event.target.checked
                        ? [...selected, fileUrl(fileOrigin, script.UserId, script.FileId)]
                        : selected.filter((url) => fileIdOfUrl(url) !== script.FileId),
                    )
                  }
                />
                <span>
                  {script.OriginalName} <span className="muted small mono">{script.FileId}</span>
                </span>
              </label>
            </li>
          ))}
          {foreign.map((url) => (
            <li key={url}>
              <label className="check">
                <input type="checkbox" checked onChange={() => onChange(selected.filter((u) => u !== url))} />
                <span className="breakable mono small">{url}</span>
              </label>
            </li>
          ))}
        </ul>
      )}
      <FieldMessage
        id={`${id}-message`}
        error={error}
        hint="Scripts must be files on this host. Each platform's build has its own list."
      />
    </fieldset>
  );
}

function ChangeSummary({
  kind,
  existing,
  values,
}: {
  kind: AssetKind;
  existing: AvatarMetaDto | WorldMetaDto;
  values: MetaValues;
}) {
  const effect = buildEffect(existing, values.platform);
  const changes = diffMeta(kind, existing, values);
  return (
    <section className="change-summary" aria-label="What this upload changes" data-testid="change-summary">
      <h3 className="change-title">What this upload changes in “{existing.Name || 'Untitled'}”</h3>
      <p className={effect.kind === 'replace' ? 'build-effect is-replace' : 'build-effect'}>
        {effect.kind === 'replace' ? (
          <>
            <strong>{effect.platform} build:</strong> replaced by this file. The current build (
            <span className="mono">{effect.fileId}</span>) is deleted from the host.
          </>
        ) : (
          <>
            <strong>{effect.platform} build:</strong> added (there is none yet).
          </>
        )}
        {effect.others.length > 0 ? ` The ${effect.others.join(' and ')} build stays as it is.` : ''}
      </p>
      {changes.length === 0 ? (
        <p className="muted small">The details stay as they are.</p>
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
                  <span className="visually-hidden">After the upload: </span>
                  {change.after}
                </span>
              </dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  );
}
