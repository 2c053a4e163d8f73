import { useId, useRef, useState } from 'react';
import { BuildPlatform, UploadType } from '../../../server/protocol/enums.js';
import { ErrorCode } from '../../../server/protocol/errors.js';
import type { UploadRulesDto } from '../../../server/protocol/host-info.js';
import type { AvatarMetaDto, WorldMetaDto } from '../../../server/protocol/uploads.js';
import { formatBytes } from '../../shared/bytes.js';
import { ApiError, describeError } from '../../shared/api-client.js';
import { CopyButton } from '../../shared/copy-button.js';
import { useSession } from '../../shared/session.js';
import { formatDate } from '../../shared/time.js';
import { Alert } from '../../shared/ui.js';
import {
  buildFileIds,
  fileUrl,
  imageChoices,
  isImageName,
  scriptUsers,
  TYPE_NAMES,
  type MyUpload,
} from './content-api.js';
import { DetailsEditor } from './details-editor.js';
import type { ContentState } from './hooks.js';
import { plainMessage } from './job-text.js';
import { platformName, publicityName, type AssetKind } from './meta-form.js';
import { ImagePreview } from './meta-fields.js';
import { badgeOf } from './upload-list.js';

const PLATFORMS = [BuildPlatform.Windows, BuildPlatform.Android] as const;

type Asset = AvatarMetaDto | WorldMetaDto;

function imageOf(asset: Asset): string {
  return 'ImageURL' in asset ? asset.ImageURL : asset.ThumbnailURL;
}

/**
 * Your avatars or worlds with a build matrix (one column per platform), and edit details, update, copy id and
 * delete.
 */
export function MyAssets({
  kind,
  state,
  rules,
  fileOrigin,
  onUpdate,
  onChanged,
  onRetry,
}: {
  kind: AssetKind;
  state: ContentState;
  /** The host's upload rules, for the details form; null until known. */
  rules: UploadRulesDto | null;
  /** Where stored file URLs point (content-api.ts `shareableOrigin`). */
  fileOrigin: string;
  onUpdate(kind: AssetKind, id: string, platform: BuildPlatform): void;
  /** After a deletion or saved details: a sentence to announce (the list is fetched again). */
  onChanged(message: string): void;
  onRetry(): void;
}) {
  const headingId = useId();
  const headingRef = useRef<HTMLHeadingElement>(null);
  const assets: Asset[] = (kind === 'avatar' ? state.content?.Avatars : state.content?.Worlds) ?? [];
  const noun = kind === 'avatar' ? 'avatars' : 'worlds';
  const title = kind === 'avatar' ? 'My avatars' : 'My worlds';
  const images = imageChoices(state.content, fileOrigin);

  return (
    <section className="card" aria-labelledby={headingId} aria-busy={state.loading}>
      <div className="card-heading">
        <h2 id={headingId} className="card-title" ref={headingRef} tabIndex={-1}>
          {title}
        </h2>
        {state.content ? <span className="count-badge">{assets.length}</span> : null}
      </div>
      {state.error ? (
        <Alert tone="error">
          Could not load your {noun}: {state.error}{' '}
          <button type="button" className="link-button" onClick={onRetry}>
            Try again
          </button>
        </Alert>
      ) : null}
      {state.content === null ? (
        <p className="muted placeholder-line">{state.error ? '' : `Loading your ${noun}…`}</p>
      ) : assets.length === 0 ? (
        <p className="muted">
          No {noun} yet. Upload a {kind === 'avatar' ? '.hna' : '.hnw'} file above to create one.
        </p>
      ) : (
        <table className="matrix" data-testid={`${kind}-matrix`}>
          <caption className="visually-hidden">Your {noun} and which platforms have a build</caption>
          <thead>
            <tr>
              <th scope="col">{kind === 'avatar' ? 'Avatar' : 'World'}</th>
              {PLATFORMS.map((p) => (
                <th scope="col" key={p} className="build-col">
                  {platformName(p)}
                </th>
              ))}
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {assets.map((asset) => (
              <AssetRow
                key={asset.Id}
                kind={kind}
                asset={asset}
                images={images}
                rules={rules}
                onUpdate={onUpdate}
                onSaved={(name) => onChanged(`Saved the details of the ${kind} “${name}”.`)}
                onDeleted={(name) => {
                  onChanged(`Deleted the ${kind} “${name}”.`);
                  headingRef.current?.focus();
                }}
              />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function AssetRow({
  kind,
  asset,
  images,
  rules,
  onUpdate,
  onSaved,
  onDeleted,
}: {
  kind: AssetKind;
  asset: Asset;
  images: { url: string; name: string }[];
  rules: UploadRulesDto | null;
  onUpdate(kind: AssetKind, id: string, platform: BuildPlatform): void;
  onSaved(name: string): void;
  onDeleted(name: string): void;
}) {
  const { authedCall } = useSession();
  const [editing, setEditing] = useState(false);
  const editRef = useRef<HTMLButtonElement>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const deleteRef = useRef<HTMLButtonElement>(null);
  const keepRef = useRef<HTMLButtonElement>(null);
  const name = asset.Name || 'Untitled';
  const builds = asset.Builds.map((b) => platformName(b.BuildPlatform));
  // "Update" replaces a build it has (Windows first); adding a missing one is that column's own button.
  const updatePlatform =
    PLATFORMS.find((p) => asset.Builds.some((b) => b.BuildPlatform === p)) ?? BuildPlatform.Windows;

  async function remove(): Promise<void> {
    setBusy(true);
    setError(null);
    try {
      await authedCall(`remove/${kind}`, kind === 'avatar' ? { avatarid: asset.Id } : { worldid: asset.Id });
      onDeleted(name);
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.code === ErrorCode.CONTENT_NOT_FOUND
          ? `The ${kind} is already gone from the host.`
          : failure instanceof ApiError
            ? plainMessage(failure.message)
            : describeError(failure),
      );
      setBusy(false);
    }
  }

  return (
    <>
      <tr data-testid="asset-row" data-asset-id={asset.Id}>
        <th scope="row" className="asset-cell">
          <ImagePreview url={imageOf(asset)} label={`Image of ${name}`} size="small" />
          <span className="asset-text">
            <span className="asset-name breakable">{name}</span>
            <span className="muted small">
              {publicityName(asset.Publicity)} · updated {formatDate(asset.DateUpdated)}
              {asset.Tags.length > 0 ? ` · ${asset.Tags.join(', ')}` : ''}
            </span>
            <span className="mono faint small breakable">{asset.Id}</span>
          </span>
        </th>
        {PLATFORMS.map((p) => {
          const build = asset.Builds.find((b) => b.BuildPlatform === p);
          const scripts = build && 'ServerScripts' in build ? (build.ServerScripts as string[]).length : 0;
          return (
            <td
              key={p}
              className="build-cell"
              data-label={platformName(p)}
              data-testid={`build-${platformName(p)}`}
            >
              {build ? (
                <span className="build is-present" title={`Build file ${build.FileId}`}>
                  <span className="build-mark" aria-hidden="true">
                    ✓
                  </span>
                  Present
                  {scripts > 0 ? (
                    <span className="muted small">
                      {' '}
                      · {scripts} script{scripts === 1 ? '' : 's'}
                    </span>
                  ) : null}
                </span>
              ) : (
                <span className="build is-missing">
                  <span className="build-mark" aria-hidden="true">
                    –
                  </span>
                  Missing{' '}
                  <button
                    type="button"
                    className="link-button small"
                    aria-label={`Upload the ${platformName(p)} build of ${name}`}
                    onClick={() => onUpdate(kind, asset.Id, p)}
                  >
                    Upload
                  </button>
                </span>
              )}
            </td>
          );
        })}
        <td className="asset-actions">
          <button
            ref={editRef}
            type="button"
            className="button secondary small"
            aria-label={`Edit details of ${name}`}
            aria-expanded={editing}
            onClick={() => setEditing((open) => !open)}
          >
            Edit details
          </button>
          <button
            type="button"
            className="button secondary small"
            aria-label={`Update ${name}`}
            onClick={() => onUpdate(kind, asset.Id, updatePlatform)}
          >
            Update
          </button>
          <CopyButton text={asset.Id} label="Copy id" what={`the id of ${name}`} />
          <button
            ref={deleteRef}
            type="button"
            className="button ghost small danger-text"
            aria-label={`Delete ${name}`}
            aria-expanded={confirming}
            onClick={() => {
              setConfirming(true);
              requestAnimationFrame(() => keepRef.current?.focus());
            }}
          >
            Delete
          </button>
        </td>
      </tr>
      {editing ? (
        <tr className="confirm-row edit-row">
          <td colSpan={4}>
            <DetailsEditor
              kind={kind}
              asset={asset}
              images={images}
              rules={rules}
              onSaved={(saved) => {
                setEditing(false);
                onSaved(saved || 'Untitled');
                requestAnimationFrame(() => editRef.current?.focus());
              }}
              onCancel={() => {
                setEditing(false);
                requestAnimationFrame(() => editRef.current?.focus());
              }}
            />
          </td>
        </tr>
      ) : null}
      {confirming ? (
        <tr className="confirm-row">
          <td colSpan={4}>
            <div className="inline-confirm" role="group" aria-label={`Confirm deleting ${name}`}>
              <p>
                Delete the {kind} <strong>“{name}”</strong>?{' '}
                {builds.length > 0
                  ? `Its ${builds.join(' and ')} build${builds.length === 1 ? ' is' : 's are'} deleted from this host too`
                  : 'It is deleted from this host'}
                , and nobody can use it any more. This can&apos;t be undone.
              </p>
              {error ? <p className="job-error">{error}</p> : null}
              <div className="button-row">
                <button
                  type="button"
                  className="button danger small"
                  disabled={busy}
                  onClick={() => void remove()}
                >
                  {busy ? 'Deleting…' : `Delete “${name}”`}
                </button>
                <button
                  ref={keepRef}
                  type="button"
                  className="button ghost small"
                  disabled={busy}
                  onClick={() => {
                    setConfirming(false);
                    setError(null);
                    requestAnimationFrame(() => deleteRef.current?.focus());
                  }}
                >
                  Keep it
                </button>
              </div>
            </div>
          </td>
        </tr>
      ) : null}
    </>
  );
}

/** Images, videos and scripts (and builds no avatar or world uses any more), with copy-URL and delete. */
export function MyFiles({
  state,
  fileOrigin,
  onChanged,
}: {
  state: ContentState;
  /** Where copied file URLs point (content-api.ts `shareableOrigin`). */
  fileOrigin: string;
  onChanged(message: string): void;
}) {
  const headingId = useId();
  const headingRef = useRef<HTMLHeadingElement>(null);
  const content = state.content;
  const builds = content ? buildFileIds(content) : new Set<string>();
  const usedBy = content ? scriptUsers(content) : new Map<string, string[]>();
  const files = (content?.Uploads ?? []).filter((u) => !builds.has(u.FileId));

  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-heading">
        <h2 id={headingId} className="card-title" ref={headingRef} tabIndex={-1}>
          Images, videos and scripts
        </h2>
        {content ? <span className="count-badge">{files.length}</span> : null}
      </div>
      <p className="muted small">
        An image&apos;s URL can be an avatar image, a world thumbnail or an icon; a script&apos;s URL goes
        into a world build.
      </p>
      {content === null ? (
        <p className="muted placeholder-line">{state.error ? '' : 'Loading your files…'}</p>
      ) : files.length === 0 ? (
        <p className="muted">No files yet. Drop images, videos or .js / .lua scripts above.</p>
      ) : (
        <ul className="files" data-testid="file-list">
          {files.map((file) => (
            <FileRow
              key={file.FileId}
              file={file}
              url={fileUrl(fileOrigin, file.UserId, file.FileId)}
              usedBy={usedBy.get(file.FileId) ?? []}
              onDeleted={(name) => {
                onChanged(`Deleted “${name}”.`);
                headingRef.current?.focus();
              }}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

function FileRow({
  file,
  url,
  usedBy,
  onDeleted,
}: {
  file: MyUpload;
  /** Its address, as stored and copied. */
  url: string;
  usedBy: string[];
  onDeleted(name: string): void;
}) {
  const { authedCall } = useSession();
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const keepRef = useRef<HTMLButtonElement>(null);
  const deleteRef = useRef<HTMLButtonElement>(null);
  const name = file.OriginalName || file.FileName;
  const isBuild = file.UploadType === UploadType.Avatar || file.UploadType === UploadType.World;
  const kind =
    file.UploadType === UploadType.Media
      ? 'media'
      : file.UploadType === UploadType.ServerScript
        ? 'script'
        : file.UploadType === UploadType.Avatar
          ? 'avatar'
          : 'world';

  async function remove(): Promise<void> {
    setBusy(true);
    setError(null);
    try {
      await authedCall('remove/file', { fileid: file.FileId });
      onDeleted(name);
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.code === ErrorCode.FILE_IN_USE
          ? 'A world build uses this script, so it stays. Upload that build again without it first.'
          : failure instanceof ApiError
            ? plainMessage(failure.message)
            : describeError(failure),
      );
      setBusy(false);
    }
  }

  return (
    <li className="file-row" data-testid="file-row" data-file-id={file.FileId}>
      <div className="file-main">
        {isImageName(file.FileName) ? (
          <ImagePreview url={url} label={name} size="small" />
        ) : (
          <span className={`kind-badge kind-${kind}`} aria-hidden="true">
            {badgeOf(file.FileName)}
          </span>
        )}
        <span className="asset-text">
          <span className="asset-name breakable">{name}</span>
          <span className="muted small">
            {isBuild ? `${TYPE_NAMES[file.UploadType]} no avatar or world uses` : TYPE_NAMES[file.UploadType]}{' '}
            · {formatBytes(file.Size)} · {formatDate(file.DateUploaded)}
          </span>
          {usedBy.length > 0 ? (
            <span className="small used-by">Used by {usedBy.map((n) => `“${n}”`).join(', ')}</span>
          ) : null}
        </span>
        <span className="file-actions">
          {!isBuild ? <CopyButton text={url} label="Copy URL" what={`the address of ${name}`} /> : null}
          {usedBy.length === 0 ? (
            <button
              ref={deleteRef}
              type="button"
              className="button ghost small danger-text"
              aria-label={`Delete ${name}`}
              aria-expanded={confirming}
              onClick={() => {
                setConfirming(true);
                requestAnimationFrame(() => keepRef.current?.focus());
              }}
            >
              Delete
            </button>
          ) : null}
        </span>
      </div>
      {confirming ? (
        <div className="inline-confirm" role="group" aria-label={`Confirm deleting ${name}`}>
          <p>
            Delete <strong>“{name}”</strong> from this host? Avatars or worlds that show it by URL lose the
            image. This can&apos;t be undone.
          </p>
          {error ? <p className="job-error">{error}</p> : null}
          <div className="button-row">
            <button
              type="button"
              className="button danger small"
              disabled={busy}
              onClick={() => void remove()}
            >
              {busy ? 'Deleting…' : `Delete “${name}”`}
            </button>
            <button
              ref={keepRef}
              type="button"
              className="button ghost small"
              disabled={busy}
              onClick={() => {
                setConfirming(false);
                setError(null);
                requestAnimationFrame(() => deleteRef.current?.focus());
              }}
            >
              Keep it
            </button>
          </div>
        </div>
      ) : null}
    </li>
  );
}
