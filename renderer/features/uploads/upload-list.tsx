import { useEffect, useId, useRef, useState } from 'react';
import { BuildPlatform } from '../../../server/protocol/enums.js';
import { ErrorCode } from '../../../server/protocol/errors.js';
import { formatBytes } from '../../shared/bytes.js';
import { ApiError, describeError } from '../../shared/api-client.js';
import { CopyButton } from '../../shared/copy-button.js';
import { useSession } from '../../shared/session.js';
import { formatDateTime } from '../../shared/time.js';
import { fileUrl, type MyContent } from './content-api.js';
import { failureText, isAssetKind, isFinalRefusal, KIND_NAMES } from './job-text.js';
import type { AssetKind } from './meta-form.js';
import { formatDuration, formatSpeed, percentOf } from './progress.js';
import { sameFile, type ResumeRecord } from './resume-store.js';
import {
  hasFieldErrors,
  type Job,
  type PartStatus,
  type QueueSnapshot,
  type UploadQueue,
} from './upload-queue.js';

const STATE_LABELS: Record<Job['state'], string> = {
  queued: 'Waiting',
  uploading: 'Uploading',
  finishing: 'Finishing',
  paused: 'Paused',
  hostDown: 'Waiting for host',
  done: 'Uploaded',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

/** The short label in a file's square badge: its extension (HNA, PNG, MP4, LUA…). */
export function badgeOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? 'FILE' : name.slice(dot + 1, dot + 5).toUpperCase();
}

/** The upload list: progress, speed and time left, and what can be done with each upload. */
export function UploadList({
  queue,
  snapshot,
  content,
  fileOrigin,
  onFix,
  onAnotherBuild,
}: {
  queue: UploadQueue;
  snapshot: QueueSnapshot;
  /** To offer "add the other build" only while that build is missing. */
  content: MyContent | null;
  /** Where copied file URLs point (content-api.ts `shareableOrigin`). */
  fileOrigin: string;
  onFix(job: Job): void;
  onAnotherBuild(kind: AssetKind, id: string, platform: BuildPlatform): void;
}) {
  const headingId = useId();
  const { jobs } = snapshot;
  if (jobs.length === 0) return null;
  const count = (state: Job['state']) => jobs.filter((j) => j.state === state).length;
  const running = count('uploading') + count('finishing');
  const waiting = count('queued');
  const summary = [
    running > 0 ? `${running} uploading` : null,
    waiting > 0 ? `${waiting} waiting` : null,
    count('paused') > 0 ? `${count('paused')} paused` : null,
    count('hostDown') > 0 ? `${count('hostDown')} waiting for the host` : null,
    count('done') > 0 ? `${count('done')} uploaded` : null,
    count('failed') > 0 ? `${count('failed')} failed` : null,
  ]
    .filter(Boolean)
    .join(' · ');
  const finished = count('done') + count('cancelled');

  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-heading spread">
        <div>
          <h2 id={headingId} className="card-title">
            Upload list
          </h2>
          <p className="muted small" role="status">
            {summary || 'Nothing running'}
            {waiting > 0 ? '. Uploads run one at a time, in order.' : ''}
          </p>
        </div>
        {finished > 0 ? (
          <button type="button" className="button ghost small" onClick={() => queue.clearFinished()}>
            Clear finished
          </button>
        ) : null}
      </div>
      <ul className="jobs">
        {jobs.map((job) => (
          <JobRow
            key={job.id}
            job={job}
            queue={queue}
            content={content}
            fileOrigin={fileOrigin}
            onFix={onFix}
            onAnotherBuild={onAnotherBuild}
          />
        ))}
      </ul>
    </section>
  );
}

function statusLine(job: Job): string {
  const size = formatBytes(job.file.size);
  const of = `${formatBytes(job.sent)} of ${size}`;
  const parts = job.parts
    ? `part ${Math.min(job.parts.done + 1, job.parts.total)} of ${job.parts.total}`
    : null;
  switch (job.state) {
    case 'queued':
      return job.sent > 0 ? `Waiting to continue at ${of}` : `Waiting · ${size}`;
    case 'uploading':
      return [
        `${of} (${percentOf(job.sent, job.file.size)}%)`,
        job.speed !== null ? formatSpeed(job.speed) : 'measuring speed',
        job.secondsLeft !== null ? `about ${formatDuration(job.secondsLeft)} left` : null,
        parts,
      ]
        .filter(Boolean)
        .join(' · ');
    case 'finishing':
      return 'All bytes sent. The host is checking and storing the file…';
    case 'paused':
      return `Paused at ${of}${job.parts ? ` · the host keeps ${job.parts.done} of ${job.parts.total} parts` : ''}`;
    case 'hostDown':
      return job.chunked && job.sent > 0
        ? `The host cannot be reached. Stopped at ${of}; the rest goes when it is back, by itself.`
        : 'The host cannot be reached. This upload starts again by itself when it is back.';
    case 'done':
      return `Uploaded ${size}`;
    case 'failed':
      // A refusal comes after the host read the file; only a broken connection stops partway.
      if (job.error?.code === 'NETWORK_ERROR' || job.error?.code === 'BAD_RESPONSE')
        return job.sent > 0 ? `Stopped at ${of}` : 'Not sent';
      return 'Refused by the host, nothing was kept';
    case 'cancelled':
      return job.chunked && job.sent > 0
        ? 'Cancelled. Parts already sent are dropped by the host when they expire.'
        : 'Cancelled. Nothing was kept on the host.';
  }
}

function JobRow({
  job,
  queue,
  content,
  fileOrigin,
  onFix,
  onAnotherBuild,
}: {
  job: Job;
  queue: UploadQueue;
  content: MyContent | null;
  fileOrigin: string;
  onFix(job: Job): void;
  onAnotherBuild(kind: AssetKind, id: string, platform: BuildPlatform): void;
}) {
  const percent = job.state === 'done' ? 100 : percentOf(job.sent, job.file.size);
  const fraction = job.state === 'done' ? 1 : job.file.size > 0 ? Math.min(1, job.sent / job.file.size) : 0;
  const line = statusLine(job);
  const name = job.file.name;
  const assetId = job.outcome?.AvatarId ?? job.outcome?.WorldId ?? null;
  const builtPlatform = job.values?.platform ?? BuildPlatform.Windows;
  const otherPlatform =
    builtPlatform === BuildPlatform.Windows ? BuildPlatform.Android : BuildPlatform.Windows;
  const asset = assetId
    ? [...(content?.Avatars ?? []), ...(content?.Worlds ?? [])].find((a) => a.Id === assetId)
    : undefined;
  const otherMissing = !asset?.Builds.some((b) => b.BuildPlatform === otherPlatform);
  // The host refused the avatar's or world's details: editing them is the way on, not sending the same again.
  const detailsRefused =
    job.state === 'failed' &&
    hasFieldErrors(job) &&
    isAssetKind(job.kind) &&
    !isFinalRefusal(job.error?.code ?? '');

  return (
    <li className="job" data-state={job.state} data-testid="upload-job">
      <div className="job-head">
        <span className={`kind-badge kind-${job.kind}`} aria-hidden="true">
          {badgeOf(job.file.name)}
        </span>
        <div className="job-name">
          <p className="job-title breakable">{job.title}</p>
          <p className="muted small breakable">
            {isAssetKind(job.kind) ? name : KIND_NAMES[job.kind]} · {formatBytes(job.file.size)}
            {job.chunked ? ' · sent in parts, resumable' : ''}
          </p>
        </div>
        <span className={`pill job-state state-${job.state}`} data-testid="job-state">
          {STATE_LABELS[job.state]}
        </span>
      </div>
      <div
        className="progress"
        role="progressbar"
        aria-label={`Upload of ${name}`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={line}
      >
        <div className="progress-fill" style={{ transform: `scaleX(${fraction})` }} />
      </div>
      <p className="job-status small" data-testid="job-status">
        {line}
        {job.note ? <span className="job-note"> {job.note}</span> : null}
      </p>
      {job.error && job.state !== 'hostDown' ? (
        <p className="job-error" data-testid="job-error">
          {failureText(job.kind, job.error, job.chunked)}
        </p>
      ) : null}
      <div className="job-actions">
        {job.state === 'uploading' && job.chunked ? (
          <button
            type="button"
            className="button secondary small"
            aria-label={`Pause upload of ${name}`}
            onClick={() => queue.pause(job.id)}
          >
            Pause
          </button>
        ) : null}
        {job.state === 'paused' ? (
          <button
            type="button"
            className="button primary small"
            aria-label={`Resume upload of ${name}`}
            onClick={() => queue.retry(job.id)}
          >
            Resume
          </button>
        ) : null}
        {job.state === 'hostDown' ? (
          <button
            type="button"
            className="button secondary small"
            aria-label={`Try the upload of ${name} now`}
            onClick={() => queue.retry(job.id)}
          >
            Try now
          </button>
        ) : null}
        {job.state === 'queued' ||
        job.state === 'uploading' ||
        job.state === 'paused' ||
        job.state === 'hostDown' ||
        job.state === 'finishing' ? (
          <button
            type="button"
            className="button ghost small"
            aria-label={`Cancel upload of ${name}`}
            disabled={job.state === 'finishing'}
            title={
              job.state === 'finishing'
                ? 'The host already has every byte; it is too late to cancel.'
                : undefined
            }
            onClick={() => queue.cancel(job.id)}
          >
            Cancel
          </button>
        ) : null}
        {detailsRefused ? (
          <button
            type="button"
            className="button primary small"
            aria-label={`Edit the details of ${name}`}
            onClick={() => onFix(job)}
          >
            Edit details
          </button>
        ) : null}
        {/* The same details would be refused again, and a file the host cannot take would be too. */}
        {(job.state === 'failed' && !detailsRefused && !isFinalRefusal(job.error?.code ?? '')) ||
        job.state === 'cancelled' ? (
          <button
            type="button"
            className="button primary small"
            aria-label={`Retry upload of ${name}`}
            onClick={() => queue.retry(job.id)}
          >
            {job.state === 'failed' ? 'Retry' : 'Upload again'}
          </button>
        ) : null}
        {job.state === 'done' && assetId && isAssetKind(job.kind) ? (
          <>
            <CopyButton text={assetId} label="Copy id" what={`the id of ${job.title}`} />
            {otherMissing ? (
              <button
                type="button"
                className="button secondary small"
                onClick={() => onAnotherBuild(job.kind as AssetKind, assetId, otherPlatform)}
              >
                Add the {otherPlatform === BuildPlatform.Android ? 'Android' : 'Windows'} build
              </button>
            ) : null}
          </>
        ) : null}
        {job.state === 'done' && job.outcome && !isAssetKind(job.kind) ? (
          <CopyButton
            text={fileUrl(fileOrigin, job.outcome.UploadData.UserId, job.outcome.UploadData.FileId)}
            label="Copy URL"
            what={`the address of ${name}`}
          />
        ) : null}
        {job.state === 'done' || job.state === 'failed' || job.state === 'cancelled' ? (
          <button
            type="button"
            className="button ghost small"
            aria-label={`Remove ${name} from the list`}
            onClick={() => queue.remove(job.id)}
          >
            Remove
          </button>
        ) : null}
      </div>
    </li>
  );
}

type RecordStatus =
  | { kind: 'loading' }
  | { kind: 'held'; status: PartStatus }
  | { kind: 'gone' }
  | { kind: 'error'; message: string };

/** Chunked uploads a reload or a closed window interrupted: pick the same file again to send only what is missing. */
export function InterruptedList({
  queue,
  records,
  onResume,
}: {
  queue: UploadQueue;
  records: readonly ResumeRecord[];
  onResume(record: ResumeRecord, file: File): void;
}) {
  const headingId = useId();
  const { authedCall } = useSession();
  const [statuses, setStatuses] = useState<Record<string, RecordStatus>>({});
  const asked = useRef(new Set<string>());

  useEffect(() => {
    for (const record of records) {
      // Asked again whenever the record changed (a later attempt sent more parts).
      const key = `${record.chunkId}:${record.savedAt}`;
      if (asked.current.has(key)) continue;
      asked.current.add(key);
      authedCall<PartStatus>('uploadPartStatus', { chunkId: record.chunkId })
        .then((status) => setStatuses((old) => ({ ...old, [record.chunkId]: { kind: 'held', status } })))
        .catch((error: unknown) => {
          const gone = error instanceof ApiError && error.code === ErrorCode.UNKNOWN_CHUNK_SET;
          setStatuses((old) => ({
            ...old,
            [record.chunkId]: gone ? { kind: 'gone' } : { kind: 'error', message: describeError(error) },
          }));
        });
    }
  }, [records, authedCall]);

  if (records.length === 0) return null;
  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId} className="card-title">
        Interrupted uploads
      </h2>
      <p className="muted">
        These stopped before finishing (a reload, a closed window or a lost connection). The browser cannot
        reopen a file by itself: choose the same file again and only the missing parts are sent.
      </p>
      <ul className="jobs">
        {records.map((record) => (
          <InterruptedRow
            key={record.chunkId}
            record={record}
            status={statuses[record.chunkId] ?? { kind: 'loading' }}
            onResume={onResume}
            onForget={() => queue.forgetInterrupted(record.chunkId)}
          />
        ))}
      </ul>
    </section>
  );
}

function InterruptedRow({
  record,
  status,
  onResume,
  onForget,
}: {
  record: ResumeRecord;
  status: RecordStatus;
  onResume(record: ResumeRecord, file: File): void;
  onForget(): void;
}) {
  const inputRef = useRef<HTMLInputElement>(null);
  const [mismatch, setMismatch] = useState<string | null>(null);
  const ext = record.name.slice(record.name.lastIndexOf('.'));
  let text: string;
  switch (status.kind) {
    case 'loading':
      text = 'Asking the host which parts it still has…';
      break;
    case 'held':
      text = `The host has ${status.status.received.length} of ${status.status.amountOfChunks} parts (${formatBytes(status.status.receivedBytes)} of ${formatBytes(record.size)}) and keeps them until ${formatDateTime(status.status.expiresAt)}.`;
      break;
    case 'gone':
      text = 'The host no longer has the parts (they expire). Choosing the file starts this upload over.';
      break;
    case 'error':
      text = `Could not ask the host: ${status.message}`;
      break;
  }
  const fraction =
    status.kind === 'held' && record.size > 0 ? Math.min(1, status.status.receivedBytes / record.size) : 0;
  return (
    <li className="job" data-state="interrupted" data-testid="interrupted-upload">
      <div className="job-head">
        <span className={`kind-badge kind-${record.kind}`} aria-hidden="true">
          {badgeOf(record.name)}
        </span>
        <div className="job-name">
          <p className="job-title breakable">{record.title}</p>
          <p className="muted small breakable">
            {record.name} · {formatBytes(record.size)}
          </p>
        </div>
        <span className="pill job-state state-paused">Interrupted</span>
      </div>
      <div className="progress" aria-hidden="true">
        <div className="progress-fill" style={{ transform: `scaleX(${fraction})` }} />
      </div>
      <p className="job-status small" data-testid="interrupted-status">
        {text}
      </p>
      {mismatch ? (
        <p className="job-error" role="alert">
          {mismatch}
        </p>
      ) : null}
      <input
        ref={inputRef}
        type="file"
        accept={ext}
        className="visually-hidden"
        tabIndex={-1}
        aria-hidden="true"
        data-testid="resume-input"
        onChange={(event) => {
          const file = event.target.files?.[0];
          event.target.value = '';
          if (!file) return;
          if (sameFile(record, file)) {
            setMismatch(null);
            onResume(record, file);
          } else {
            setMismatch(
              `“${file.name}” (${formatBytes(file.size)}) is not the file that was being uploaded: that was “${record.name}”, ${formatBytes(record.size)}, last changed ${formatDateTime(Math.floor(record.lastModified / 1000))}.`,
            );
          }
        }}
      />
      <div className="job-actions">
        <button type="button" className="button primary small" onClick={() => inputRef.current?.click()}>
          Choose “{record.name}” to resume
        </button>
        <button
          type="button"
          className="button ghost small"
          aria-label={`Forget the interrupted upload of ${record.name}`}
          onClick={onForget}
        >
          Forget
        </button>
      </div>
    </li>
  );
}
