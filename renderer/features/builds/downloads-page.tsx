import { useCallback, useState } from 'react';
import type { BuildFileDto, BuildListDto, BuildVersionDto } from '../../../server/protocol/builds.js';
import { formatBytes } from '../../shared/bytes.js';
import { call, describeError } from '../../shared/api-client.js';
import { useLiveRefresh } from '../../shared/live-refresh.js';
import { useSession } from '../../shared/session.js';
import { formatDate } from '../../shared/time.js';
import { Alert, Spinner } from '../../shared/ui.js';

/** What the official programs are, for people who do not know the names. */
const DESCRIPTIONS: Record<string, string> = {
  'Hypernex.Launcher': 'Installs and updates the game.',
  'Hypernex.Unity': 'The Hypernex game client.',
  'Hypernex.CCK': 'The content creation kit for Unity: build and upload avatars and worlds.',
  'Hypernex.Networking.Server': 'The game server that hosts instances.',
};

/** Client builds this host hands out (launcher, game, CCK, game server), for every signed-in user. */
export function DownloadsPage() {
  const [list, setList] = useState<BuildListDto | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(() => {
    call<BuildListDto>('builds')
      .then((l) => {
        setList(l);
        setError(null);
      })
      .catch((e: unknown) => setError(describeError(e)));
  }, []);
  // Published or removed elsewhere: the list follows without a reload.
  useLiveRefresh('builds', load);

  return (
    <div className="page">
      <header className="page-header">
        <h1>Downloads</h1>
        <p className="muted">
          Programs this host shares with its players. They come from this host, so nobody here needs the
          internet to get the game.
        </p>
      </header>
      {error ? (
        <Alert tone="error" title="Could not load the downloads">
          {error}{' '}
          <button type="button" className="link-button" onClick={load}>
            Try again
          </button>
        </Alert>
      ) : list === null ? (
        <Spinner label="Loading downloads…" />
      ) : list.Builds.length === 0 ? (
        <section className="card">
          <div className="empty-state">
            <p>No downloads yet.</p>
            <p className="muted small">
              The host&apos;s owner or an admin publishes them on the Host screen, or with{' '}
              <span className="mono">hypernex-companion builds add</span>.
            </p>
          </div>
        </section>
      ) : (
        list.Builds.map((build) => <BuildCard key={build.Name} name={build.Name} versions={build.Versions} />)
      )}
    </div>
  );
}

function BuildCard({ name, versions }: { name: string; versions: BuildVersionDto[] }) {
  const [latest, ...older] = versions;
  const titleId = `build-${name.replace(/[^A-Za-z0-9]/g, '-')}`;
  if (!latest) return null;
  return (
    <section className="card" aria-labelledby={titleId} data-testid="build-card">
      <div className="card-heading spread">
        <h2 id={titleId} className="card-title">
          {name}
        </h2>
        <span className="pill" style={{ textTransform: 'none' }}>
          Latest: {latest.Version}
        </span>
      </div>
      {DESCRIPTIONS[name] ? <p className="muted small">{DESCRIPTIONS[name]}</p> : null}
      <VersionFiles version={latest} />
      {older.length > 0 ? (
        <details className="older-versions">
          <summary>
            {older.length} older version{older.length === 1 ? '' : 's'}
          </summary>
          {older.map((v) => (
            <div key={v.Version} className="older-version">
              <p className="subheading">{v.Version}</p>
              <VersionFiles version={v} />
            </div>
          ))}
        </details>
      ) : null}
    </section>
  );
}

function VersionFiles({ version }: { version: BuildVersionDto }) {
  return (
    <>
      <p className="muted small">Published {formatDate(version.PublishedAt)}</p>
      <ul className="row-list" aria-label={`${version.Name} ${version.Version} files`}>
        {version.Files.map((file) => (
          <li key={file.FileName} className="row">
            <div className="row-main">
              <p className="row-title breakable">{file.FileName}</p>
              <p className="row-meta muted small">
                {formatBytes(file.Size)} · SHA-256 <span className="mono">{file.Hash.slice(0, 12)}…</span>
              </p>
            </div>
            <DownloadButton version={version} file={file} />
          </li>
        ))}
      </ul>
    </>
  );
}

/**
 * Asks the host for a short-lived link to the file and lets the browser download it: the browser's own
 * download (progress, resume, no copy in memory), with the token never in the address.
 */
function DownloadButton({ version, file }: { version: BuildVersionDto; file: BuildFileDto }) {
  const { authedCall } = useSession();
  const [state, setState] = useState<{ busy: boolean; error: string | null }>({ busy: false, error: null });

  async function download(): Promise<void> {
    setState({ busy: true, error: null });
    try {
      const { url } = await authedCall<{ url: string }>(
        `buildTicket/${encodeURIComponent(version.Name)}/${encodeURIComponent(version.Version)}`,
        { buildArtifact: file.Index },
      );
      const link = document.createElement('a');
      link.href = url;
      link.download = file.FileName;
      link.rel = 'noopener';
      document.body.append(link);
      link.click();
      link.remove();
      setState({ busy: false, error: null });
    } catch (error) {
      setState({ busy: false, error: describeError(error) });
    }
  }

  return (
    <div className="row-actions">
      <button
        type="button"
        className="button secondary small"
        onClick={() => void download()}
        disabled={state.busy}
        aria-label={`Download ${file.FileName}`}
      >
        {state.busy ? 'Preparing…' : 'Download'}
      </button>
      {state.error ? (
        <span className="row-error small" role="alert">
          {state.error}
        </span>
      ) : null}
    </div>
  );
}
