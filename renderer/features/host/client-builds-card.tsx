import { useCallback, useId, useState, type FormEvent } from 'react';
import {
  BUILD_FILES_MAX,
  buildFileNameProblem,
  buildNameProblem,
  buildVersionProblem,
  KNOWN_BUILD_NAMES,
  type BuildListDto,
  type BuildVersionDto,
} from '../../../server/protocol/builds.js';
import { formatBytes } from '../../shared/bytes.js';
import { ApiError, call, describeError } from '../../shared/api-client.js';
import { useConfirm } from '../../shared/confirm-dialog.js';
import { announceChange, useLiveRefresh } from '../../shared/live-refresh.js';
import { useSession } from '../../shared/session.js';
import { isAbort, postForm } from '../../shared/upload-request.js';
import { Alert, FormStatus, TextField } from '../../shared/ui.js';

/**
 * Publishing client builds (admins and the owner): a name, a version and its files, sent as one multipart upload
 * with progress; the published versions with a remove button; whether downloads need a signed-in token.
 */
export function ClientBuildsCard() {
  const { session, authedCall } = useSession();
  const { confirmThen, dialog } = useConfirm();
  const [list, setList] = useState<BuildListDto | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [name, setName] = useState<string>(KNOWN_BUILD_NAMES[1]);
  const [version, setVersion] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const [fileInputKey, setFileInputKey] = useState(0);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ loaded: number; total: number } | null>(null);
  const [abort, setAbort] = useState<AbortController | null>(null);
  const filesId = useId();
  const listId = useId();

  const load = useCallback(() => {
    call<BuildListDto>('builds')
      .then((l) => {
        setList(l);
        setLoadError(null);
      })
      .catch((e: unknown) => setLoadError(describeError(e)));
  }, []);
  useLiveRefresh('builds', load);

  function check(): Record<string, string> {
    const out: Record<string, string> = {};
    const nameProblem = buildNameProblem(name.trim());
    const versionProblem = buildVersionProblem(version.trim());
    if (nameProblem) out.name = `Name ${nameProblem}.`;
    if (versionProblem) out.version = `Version ${versionProblem}.`;
    if (files.length === 0) out.file = 'Choose at least one file.';
    else if (files.length > BUILD_FILES_MAX) out.file = `At most ${BUILD_FILES_MAX} files per version.`;
    else {
      for (const file of files) {
        const p = buildFileNameProblem(file.name);
        if (p) out.file = `${file.name} ${p}.`;
      }
    }
    return out;
  }

  async function publish(event: FormEvent): Promise<void> {
    event.preventDefault();
    setDone(null);
    setProblem(null);
    const found = check();
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    // Fields first, then the files: the host checks everything before it stores a byte.
    const form = new FormData();
    form.append('userid', session.userid);
    form.append('tokenContent', session.tokenContent);
    form.append('name', name.trim());
    form.append('version', version.trim());
    for (const file of files) form.append('file', file, file.name);
    const controller = new AbortController();
    setAbort(controller);
    setProgress({ loaded: 0, total: 1 });
    try {
      const { Build } = await postForm<{ Build: BuildVersionDto }>('builds/publish', form, {
        signal: controller.signal,
        onProgress: (loaded, total) => setProgress({ loaded, total }),
      });
      setDone(
        `Published ${Build.Name} ${Build.Version} (${Build.Files.length} file${Build.Files.length === 1 ? '' : 's'}).`,
      );
      setVersion('');
      setFiles([]);
      setFileInputKey((k) => k + 1);
      load();
      announceChange('builds');
    } catch (error) {
      if (isAbort(error)) setProblem('Publishing was cancelled; nothing was kept.');
      else if (error instanceof ApiError && Object.keys(error.fields).length > 0) {
        setErrors(error.fields);
        setProblem(error.message);
      } else setProblem(describeError(error));
    } finally {
      setAbort(null);
      setProgress(null);
    }
  }

  async function setAuth(value: boolean): Promise<void> {
    // Shown at once; put back if the host refuses.
    setList((l) => (l ? { ...l, authForBuilds: value } : l));
    try {
      const result = await authedCall<{ authForBuilds: boolean }>('builds/settings', {
        authForBuilds: value,
      });
      setList((l) => (l ? { ...l, authForBuilds: result.authForBuilds } : l));
    } catch (error) {
      setList((l) => (l ? { ...l, authForBuilds: !value } : l));
      setLoadError(describeError(error));
    }
  }

  function remove(v: BuildVersionDto): void {
    void confirmThen(
      {
        title: `Remove ${v.Name} ${v.Version}?`,
        body: `Its ${v.Files.length} file${v.Files.length === 1 ? '' : 's'} will be deleted from this host.`,
        confirmLabel: 'Remove',
        pendingLabel: 'Removing…',
        tone: 'danger',
      },
      async () => {
        await authedCall('builds/remove', { name: v.Name, version: v.Version });
        load();
        announceChange('builds');
      },
    ).catch((error: unknown) => setLoadError(describeError(error)));
  }

  const percent = progress ? Math.round((progress.loaded / Math.max(1, progress.total)) * 100) : 0;

  return (
    <section className="card" aria-labelledby="client-builds-title">
      <h2 id="client-builds-title" className="card-title">
        Client builds
      </h2>
      <p className="muted small">
        Publish the launcher, game client, CCK or game server so players on your network download them from
        the Downloads screen, and the official launcher and dashboard find them here.
      </p>
      <form className="form" onSubmit={(e) => void publish(e)} noValidate aria-label="Publish a build">
        <div className="field-row">
          <TextField
            label="Name"
            value={name}
            onValueChange={setName}
            list={listId}
            autoComplete="off"
            error={errors.name}
            hint="The launcher asks for Hypernex.Launcher, Hypernex.Unity, Hypernex.CCK, Hypernex.Networking.Server."
          />
          <datalist id={listId}>
            {KNOWN_BUILD_NAMES.map((n) => (
              <option key={n} value={n} />
            ))}
          </datalist>
          <TextField
            label="Version"
            value={version}
            onValueChange={setVersion}
            autoComplete="off"
            placeholder="2024.10.1b"
            error={errors.version}
          />
        </div>
        <div className="field">
          <label htmlFor={filesId}>Files</label>
          <input
            key={fileInputKey}
            id={filesId}
            type="file"
            multiple
            aria-invalid={errors.file ? true : undefined}
            aria-describedby={`${filesId}-message`}
            onChange={(e) => setFiles(Array.from(e.target.files ?? []))}
          />
          <p id={`${filesId}-message`} className={errors.file ? 'field-message is-error' : 'field-message'}>
            {errors.file ??
              (files.length > 0
                ? files.map((f) => `${f.name} (${formatBytes(f.size)})`).join(', ')
                : 'One or more files: a download per platform, for example.')}
          </p>
        </div>
        {progress ? (
          <div className="job-status">
            <div
              className="progress"
              role="progressbar"
              aria-label="Publishing"
              aria-valuenow={percent}
              aria-valuemin={0}
              aria-valuemax={100}
            >
              <div className="progress-fill" style={{ width: `${percent}%` }} />
            </div>
            <span className="small muted">
              {percent}% of {formatBytes(progress.total)}
            </span>
          </div>
        ) : null}
        <div className="button-row">
          <button type="submit" className="button primary" disabled={progress !== null}>
            {progress ? 'Publishing…' : 'Publish'}
          </button>
          {abort ? (
            <button type="button" className="button ghost" onClick={() => abort.abort()}>
              Cancel
            </button>
          ) : null}
        </div>
        {done ? <Alert tone="success">{done}</Alert> : null}
        <FormStatus message={problem} />
      </form>

      <h3 className="subheading">Published</h3>
      {loadError ? <Alert tone="error">{loadError}</Alert> : null}
      {list === null ? null : list.Builds.length === 0 ? (
        <p className="muted small">Nothing published yet.</p>
      ) : (
        <ul className="row-list" aria-label="Published builds">
          {list.Builds.flatMap((b) =>
            b.Versions.map((v) => (
              <li key={`${b.Name}/${v.Version}`} className="row">
                <div className="row-main">
                  <p className="row-title">
                    {v.Name} {v.Version}
                  </p>
                  <p className="row-meta muted small">
                    {v.Files.map((f) => f.FileName).join(', ')} ·{' '}
                    {formatBytes(v.Files.reduce((sum, f) => sum + f.Size, 0))}
                  </p>
                </div>
                <div className="row-actions">
                  <button
                    type="button"
                    className="button ghost small"
                    aria-label={`Remove ${v.Name} ${v.Version}`}
                    onClick={() => remove(v)}
                  >
                    Remove
                  </button>
                </div>
              </li>
            )),
          )}
        </ul>
      )}
      {list ? (
        <label className="check">
          <input
            type="checkbox"
            checked={list.authForBuilds}
            onChange={(e) => void setAuth(e.target.checked)}
          />{' '}
          Downloads need a signed-in account (the launcher and dashboard then send a token)
        </label>
      ) : null}
      {dialog}
    </section>
  );
}
