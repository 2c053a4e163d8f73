import { useEffect, useState } from 'react';
import type {
  ContentAssetDto,
  ContentFileDto,
  ContentJobDto,
  UserContentDto,
} from '../../../server/protocol/moderation-tools.js';
import type { ModerationAction } from '../../../server/protocol/schemas.js';
import { ServerMessage } from '../../../server/protocol/socket.js';
import { describeError } from '../../shared/api-client.js';
import { formatBytes } from '../../shared/bytes.js';
import type { ConfirmRequest } from '../../shared/confirm-dialog.js';
import { useSession } from '../../shared/session.js';
import { useSocketEvent } from '../../shared/socket-context.js';
import { formatDateTime } from '../../shared/time.js';
import { Alert, Spinner } from '../../shared/ui.js';
import type { LookupUser, ModerationState } from './moderation-model.js';

type Perform = (action: ModerationAction, fields: Record<string, unknown>) => Promise<ModerationState>;
type Confirm = (request: ConfirmRequest, work: () => Promise<void>) => Promise<boolean>;

type Row = {
  kind: 'avatar' | 'world' | 'file';
  id: string;
  name: string;
  size: number;
  date: number;
  note: string;
};

const FILE_TYPES = ['media', 'avatar build', 'world build', 'server script'];

function rowsOf(content: UserContentDto): Row[] {
  const asset = (kind: 'avatar' | 'world') => (a: ContentAssetDto) => ({
    kind,
    id: a.Id,
    name: a.Name || '(no name)',
    size: a.Size,
    date: a.DateUpdated,
    note: `${a.FileIds.length} build file${a.FileIds.length === 1 ? '' : 's'}, removed with it`,
  });
  const file = (f: ContentFileDto) => ({
    kind: 'file' as const,
    id: f.FileId,
    name: f.OriginalName,
    size: f.Size,
    date: f.DateUploaded,
    note: FILE_TYPES[f.UploadType] ?? 'file',
  });
  return [
    ...content.Avatars.map(asset('avatar')),
    ...content.Worlds.map(asset('world')),
    // Build files go with their avatar or world: listed there, not removed on their own.
    ...content.Files.filter((f) => f.BuildOf === null).map(file),
  ];
}

const ACTION = { avatar: 'deleteavatar', world: 'deleteworld', file: 'deletefile' } as const;
const FIELD = { avatar: 'avatarId', world: 'worldId', file: 'fileId' } as const;

/**
 * The moderation panel's Content tab (issue 28): everything the user uploaded, each with a remove action (the
 * moderation actions deleteavatar, deleteworld, deletefile), and "remove all content" as a background job whose
 * progress every moderator's window sees live.
 */
export function ContentTab({
  user,
  perform,
  confirmThen,
}: {
  user: LookupUser;
  perform: Perform;
  confirmThen: Confirm;
}) {
  const { authedCall } = useSession();
  const [content, setContent] = useState<UserContentDto | null>(null);
  const [job, setJob] = useState<ContentJobDto | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  const fetchContent = () =>
    authedCall<UserContentDto & { Job: ContentJobDto | null }>('moderationContent', {
      targetUserId: user.Id,
    });
  const apply = (answer: UserContentDto & { Job: ContentJobDto | null }): void => {
    setContent(answer);
    setJob(answer.Job);
    setProblem(null);
  };
  const refresh = (): void => {
    fetchContent()
      .then(apply)
      .catch((failure: unknown) => setProblem(describeError(failure)));
  };

  useEffect(() => {
    let live = true;
    fetchContent()
      .then((answer) => live && apply(answer))
      .catch((failure: unknown) => live && setProblem(describeError(failure)));
    return () => {
      live = false;
    };
    // authedCall is a new function each render; the user is what matters.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [user.Id]);

  useSocketEvent((event) => {
    if (event.message !== ServerMessage.contentJobProgress || event.result.job.targetUserId !== user.Id)
      return;
    setJob(event.result.job);
    refresh();
  });

  const removeOne = (row: Row) =>
    confirmThen(
      {
        title: `Remove ${user.Username}'s ${row.kind}?`,
        body: (
          <p className="form-intro">
            The {row.kind} <strong>{row.name}</strong> {row.kind === 'file' ? '' : 'and its files '}
            {row.kind === 'file' ? 'is' : 'are'} removed for good. This cannot be undone.
          </p>
        ),
        confirmLabel: `Remove ${row.kind}`,
        pendingLabel: 'Removing…',
      },
      async () => {
        await perform(ACTION[row.kind], { [FIELD[row.kind]]: row.id });
      },
    ).catch((error: unknown) => setProblem(describeError(error)));

  const removeAll = () =>
    confirmThen(
      {
        title: `Remove all of ${user.Username}'s content?`,
        body: (
          <p className="form-intro">
            Every avatar, world and file of <strong>{user.Username}</strong> is removed for good, one at a
            time, in the background. Each removal is logged. Other moderators see the progress.
          </p>
        ),
        confirmLabel: 'Remove everything',
        pendingLabel: 'Starting…',
      },
      async () => {
        const { Job } = await authedCall<{ Job: ContentJobDto }>('startContentRemoval', {
          targetUserId: user.Id,
        });
        setJob(Job);
      },
    ).catch((error: unknown) => setProblem(describeError(error)));

  if (!content && !problem) return <Spinner label={`Loading ${user.Username}'s content`} />;
  const rows = content ? rowsOf(content) : [];
  const running = job?.state === 'running';
  return (
    <div className="mod-form content-tab" data-testid="content-tab">
      {problem ? <Alert tone="error">{problem}</Alert> : null}
      {job ? <JobProgress job={job} /> : null}
      <div className="card-heading spread">
        <p className="muted small">
          {rows.length === 0
            ? `${user.Username} has no avatars, worlds or files.`
            : `${rows.length} item${rows.length === 1 ? '' : 's'} uploaded by ${user.Username}.`}
        </p>
        {rows.length > 0 ? (
          <button
            type="button"
            className="button danger small"
            disabled={running}
            onClick={() => removeAll()}
          >
            {running ? 'Removing all…' : 'Remove all content…'}
          </button>
        ) : null}
      </div>
      {rows.length > 0 ? (
        <ul className="content-list" aria-label={`Content of ${user.Username}`}>
          {rows.map((row) => (
            <li key={row.id} className="content-row" data-testid="content-row">
              <div className="content-main">
                <span className="content-kind">{row.kind}</span>{' '}
                <strong className="breakable">{row.name}</strong>
                <span className="muted small mono breakable content-id">{row.id}</span>
              </div>
              <span className="small">{formatBytes(row.size)}</span>
              <span className="small muted">{formatDateTime(row.date)}</span>
              <span className="small muted">{row.note}</span>
              <button
                type="button"
                className="button secondary small"
                aria-label={`Remove ${row.kind} ${row.name}`}
                disabled={running}
                onClick={() => removeOne(row)}
              >
                Remove…
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function JobProgress({ job }: { job: ContentJobDto }) {
  const finished = job.done + job.failed;
  const fraction = job.total === 0 ? 1 : Math.min(1, finished / job.total);
  const line =
    job.state === 'running'
      ? `Removing all content: ${job.done} of ${job.total} done${job.failed ? `, ${job.failed} failed` : ''}.`
      : job.state === 'done'
        ? `All content removed: ${job.done} item${job.done === 1 ? '' : 's'}${job.failed ? `, ${job.failed} failed` : ''}.`
        : `Stopped after ${job.done} of ${job.total}: ${job.stoppedReason ?? 'unknown reason'}`;
  return (
    <div
      className="job content-job"
      data-state={job.state === 'stopped' ? 'failed' : job.state}
      data-testid="content-job"
    >
      <div
        className="progress"
        role="progressbar"
        aria-label={`Removing ${job.targetName}'s content`}
        aria-valuemin={0}
        aria-valuemax={job.total}
        aria-valuenow={finished}
        aria-valuetext={line}
      >
        <div className="progress-fill" style={{ transform: `scaleX(${fraction})` }} />
      </div>
      <p className="job-status small" role="status" data-testid="content-job-status">
        {line} <span className="muted">Started by {job.moderatorName}.</span>
      </p>
      {job.failures.length > 0 ? (
        <ul className="small muted">
          {job.failures.map((f) => (
            <li key={f.id}>
              {f.kind} <span className="mono">{f.id}</span>: {f.reason}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
