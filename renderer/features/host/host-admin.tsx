import { useEffect, useEffectEvent, useId, useState } from 'react';
import type { GameServerTokenDto, HostStatusDto, InviteCodeDto } from '../../../server/protocol/host-info.js';
import { describeError } from '../../shared/api-client.js';
import { useConfirm } from '../../shared/confirm-dialog.js';
import { CopyButton } from '../../shared/copy-button.js';
import { useForm } from '../../shared/form.js';
import { textProblem } from '../../../server/protocol/text-rules.js';
import { useSession } from '../../shared/session.js';
import { useSocketStatus } from '../../shared/socket-context.js';
import { formatDateTime, formatPast, formatRelative } from '../../shared/time.js';
import { Alert, FormStatus, SubmitButton, TextField } from '../../shared/ui.js';
import { useNow } from '../../shared/use-now.js';
import { CommunityCard } from './community-card.js';
import {
  EXPIRY_CHOICES,
  INVITE_STATE_LABELS,
  inviteCodeState,
  maxUsesOf,
  usesCountProblem,
  usesText,
  type UsesChoice,
} from './host-admin-model.js';

/** How often the browser's Host screen reads the host status again while it is open and visible. */
const STATUS_REFRESH_MS = 10_000;

/**
 * The host as an admin in any window sees it (issue 18): bind address, whether other machines can connect, the
 * addresses to share and who is connected. Starting, stopping and the listening settings stay in the desktop
 * window, which has its own live version of this card.
 */
/** The addresses to share on the LAN, each with a copy button (desktop and browser Host screens alike). */
export function LanAddressList({ urls }: { urls: readonly string[] }) {
  return (
    <>
      <p className="muted small">
        Give one of these to people on your network: game clients use it as the server address, and browsers
        open it to use this app.
      </p>
      <ul className="address-list" aria-label="LAN addresses" data-testid="lan-addresses">
        {urls.map((url) => (
          <li key={url} className="address-row">
            <span className="mono breakable">{url}</span>
            <CopyButton text={url} label="Copy" what={url} />
          </li>
        ))}
      </ul>
    </>
  );
}

/** Users signed in on open connections, with how many each holds (desktop and browser Host screens alike). */
export function ConnectedUserList({
  users,
}: {
  users: ReadonlyArray<{ userId: string; username: string; sockets: number }>;
}) {
  return (
    <ul className="row-list" aria-label="Connected users" data-testid="host-clients">
      {users.map((u) => (
        <li key={u.userId} className="row" data-testid="host-client" data-username={u.username}>
          <span className="avatar small" aria-hidden="true">
            {u.username.charAt(0).toUpperCase()}
            <span className="status-dot" data-status={1} />
          </span>
          <div className="row-main">
            <p className="row-title">
              <strong>{u.username}</strong>
            </p>
            <p className="row-meta muted small">
              {u.sockets} {u.sockets === 1 ? 'connection' : 'connections'} (windows, browsers, game clients)
            </p>
          </div>
        </li>
      ))}
    </ul>
  );
}

export function HostStatusCard() {
  const { authedCall } = useSession();
  const { connection } = useSocketStatus();
  const [status, setStatus] = useState<HostStatusDto | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [loaded, setLoaded] = useState(-1);
  const loading = loaded !== version;

  const fetchStatus = useEffectEvent((asked: number, isLive: () => boolean) => {
    authedCall<HostStatusDto>('hostStatus')
      .then((s) => {
        if (!isLive()) return;
        setStatus(s);
        setError(null);
      })
      .catch((e: unknown) => {
        if (isLive()) setError(describeError(e));
      })
      .finally(() => {
        if (isLive()) setLoaded(asked);
      });
  });
  // Read again whenever the socket (re)connects: a host that came back may have new addresses or users.
  useEffect(() => {
    let live = true;
    fetchStatus(version, () => live);
    return () => {
      live = false;
    };
  }, [version, connection]);
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') setVersion((v) => v + 1);
    }, STATUS_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  const users = status?.connectedUsers ?? [];
  return (
    <>
      <section className="card" aria-labelledby="host-status-title" data-testid="host-status">
        <div className="card-heading spread">
          <h2 id="host-status-title" className="card-title">
            Server
          </h2>
          <button
            type="button"
            className="button small ghost"
            disabled={loading}
            onClick={() => setVersion((v) => v + 1)}
            aria-label="Refresh the host status"
          >
            {loading ? 'Refreshing…' : 'Refresh'}
          </button>
        </div>
        {error ? <Alert tone="error">Could not read the host status: {error}</Alert> : null}
        {status ? (
          <>
            {status.localOnly ? (
              <Alert tone="warning" title="Other machines cannot connect">
                <span data-testid="host-local-only">{status.openToLan}</span>
              </Alert>
            ) : null}
            <dl className="facts columns">
              <div>
                <dt>Listening on</dt>
                <dd className="mono">
                  {status.bindHost}:{status.port}
                </dd>
              </div>
              <div>
                <dt>Who can connect</dt>
                <dd>{status.localOnly ? 'This computer only' : 'Machines on your network'}</dd>
              </div>
              <div>
                <dt>Sign-ups</dt>
                <dd>{status.requireInviteCode ? 'Invite code needed' : 'Open to anyone'}</dd>
              </div>
            </dl>
            <p className="muted small">
              Starting and stopping the host, and its bind address, port and data folder, are changed on the
              machine that runs it: in the desktop window&apos;s Host screen, or with the options of{' '}
              <code>hypernex-companion serve</code>.
            </p>
          </>
        ) : !error ? (
          <p className="muted">Reading the host status…</p>
        ) : null}
      </section>

      {status ? <CommunityCard community={status.community} /> : null}

      {status ? (
        <section className="card" aria-labelledby="host-share-title">
          <h2 id="host-share-title" className="card-title">
            Addresses to share
          </h2>
          {status.lanUrls.length === 0 ? (
            <p className="muted">
              {status.localOnly
                ? 'None: the host only listens on this computer.'
                : 'The host found no network address on its machine.'}
            </p>
          ) : (
            <LanAddressList urls={status.lanUrls} />
          )}
        </section>
      ) : null}

      {status ? (
        <section className="card" aria-labelledby="host-users-title">
          <div className="card-heading">
            <h2 id="host-users-title" className="card-title">
              Connected users
            </h2>
            <span className="pill" data-testid="host-user-count">
              {users.length} {users.length === 1 ? 'user' : 'users'}
            </span>
          </div>
          {users.length === 0 ? (
            <p className="muted">Nobody is signed in on an open connection right now.</p>
          ) : (
            <ConnectedUserList
              users={users.map((u) => ({ userId: u.Id, username: u.Username, sockets: u.sockets }))}
            />
          )}
        </section>
      ) : null}
    </>
  );
}

/** Whether sign-up needs a code, and the codes themselves: made with a number of uses and an expiry, listed, revoked. */
export function InviteCodesCard() {
  const { authedCall } = useSession();
  const { confirmThen, dialog } = useConfirm();
  const now = useNow(30_000);
  const [codes, setCodes] = useState<InviteCodeDto[] | null>(null);
  const [required, setRequired] = useState<boolean | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [created, setCreated] = useState<{ code: string; record: InviteCodeDto } | null>(null);
  const [uses, setUses] = useState<UsesChoice>('once');
  const [expiry, setExpiry] = useState(7 * 86_400);
  const usesName = useId();
  const expiryId = useId();
  const form = useForm({ label: '', count: '10' }, (v) => ({
    label: labelProblem(v.label),
    count: uses === 'count' ? usesCountProblem(v.count) : undefined,
  }));

  const [version, setVersion] = useState(0);
  const load = (): void => setVersion((v) => v + 1);
  const fetchCodes = useEffectEvent((isLive: () => boolean) => {
    Promise.all([
      authedCall<{ InviteCodes: InviteCodeDto[] }>('inviteCodes'),
      authedCall<{ requireInviteCode: boolean }>('hostSettings'),
    ])
      .then(([list, settings]) => {
        if (!isLive()) return;
        setCodes(list.InviteCodes);
        setRequired(settings.requireInviteCode);
      })
      .catch((e: unknown) => {
        if (isLive()) setProblem(describeError(e));
      });
  });
  useEffect(() => {
    let live = true;
    fetchCodes(() => live);
    return () => {
      live = false;
    };
  }, [version]);

  async function setRequirement(value: boolean): Promise<void> {
    setProblem(null);
    setRequired(value);
    try {
      const settings = await authedCall<{ requireInviteCode: boolean }>('hostSettings', {
        requireInviteCode: value,
      });
      setRequired(settings.requireInviteCode);
    } catch (e) {
      setRequired(!value);
      setProblem(describeError(e));
    }
  }

  function revoke(code: InviteCodeDto): void {
    setProblem(null);
    void confirmThen(
      {
        title: `Revoke ${code.label ? `“${code.label}”` : 'this invite code'}?`,
        body: 'Nobody can sign up with it any more. Accounts already made with it stay.',
        confirmLabel: 'Revoke',
        pendingLabel: 'Revoking…',
      },
      async () => {
        await authedCall('revokeInviteCode', { codeId: code.id });
        if (created?.record.id === code.id) setCreated(null);
        load();
      },
    ).catch((e: unknown) => setProblem(describeError(e)));
  }

  const nowSeconds = Math.floor(now / 1000);
  return (
    <section className="card" aria-labelledby="invite-codes-title" data-testid="invite-codes">
      <h2 id="invite-codes-title" className="card-title">
        Invite codes
      </h2>
      {required !== null ? (
        <label className="check">
          <input type="checkbox" checked={required} onChange={(e) => void setRequirement(e.target.checked)} />{' '}
          New accounts need an invite code
        </label>
      ) : null}
      <p className="muted small">
        {required
          ? 'Only people with a code can create an account. Each code works as often as you choose, until it expires or you revoke it.'
          : 'Anyone who can reach the host can create an account. Codes still work, for when you turn the requirement on.'}
      </p>

      <form
        className="form"
        noValidate
        aria-label="Create an invite code"
        onSubmit={form.handleSubmit(async (v) => {
          setCreated(null);
          const answer = await authedCall<{ code: string; InviteCode: InviteCodeDto }>('createInviteCode', {
            label: v.label.trim(),
            maxUses: maxUsesOf(uses, v.count),
            expiresInSeconds: expiry,
          });
          setCreated({ code: answer.code, record: answer.InviteCode });
          form.reset();
          load();
        })}
      >
        <TextField
          label="Label (optional)"
          name="label"
          value={form.values.label}
          onValueChange={(v) => form.setValue('label', v)}
          error={form.errors.label}
          hint="Who or what it is for, e.g. “Saturday LAN party”. Only admins see it."
          autoComplete="off"
        />
        <div className="field-row">
          <fieldset className="field choice-field" aria-describedby={`${usesName}-message`}>
            <legend>Sign-ups it allows</legend>
            <div className="choices">
              {(
                [
                  ['once', 'Once'],
                  ['count', 'A number'],
                  ['unlimited', 'No limit'],
                ] as const
              ).map(([value, label]) => (
                <label key={value} className="choice">
                  <input
                    type="radio"
                    name={usesName}
                    checked={uses === value}
                    onChange={() => setUses(value)}
                  />
                  <span className="choice-text">
                    <span className="choice-label">{label}</span>
                  </span>
                </label>
              ))}
            </div>
            <p id={`${usesName}-message`} className="field-message">
              {uses === 'once'
                ? 'One account, then the code is used up.'
                : uses === 'unlimited'
                  ? 'Any number of accounts until it expires or is revoked.'
                  : 'This many accounts, then the code is used up.'}
            </p>
          </fieldset>
          <div className="field">
            <label htmlFor={expiryId}>Expires</label>
            <select
              id={expiryId}
              className="select"
              value={expiry}
              onChange={(e) => setExpiry(Number(e.target.value))}
              aria-describedby={`${expiryId}-message`}
            >
              {EXPIRY_CHOICES.map((c) => (
                <option key={c.value} value={c.value}>
                  {c.label}
                </option>
              ))}
            </select>
            <p id={`${expiryId}-message`} className="field-message">
              {expiry === 0 ? 'Works until you revoke it.' : 'Counted from when you create it.'}
            </p>
          </div>
        </div>
        {uses === 'count' ? (
          <TextField
            label="Number of sign-ups"
            name="count"
            value={form.values.count}
            onValueChange={(v) => form.setValue('count', v)}
            error={form.errors.count}
            inputMode="numeric"
            autoComplete="off"
            className="port-input"
          />
        ) : null}
        <div className="button-row">
          <SubmitButton pending={form.pending} pendingLabel="Creating…">
            Create invite code
          </SubmitButton>
        </div>
        <FormStatus message={form.formError} />
      </form>

      {created ? (
        <Alert tone="success" title="Invite code created">
          <p>Copy it now: it is shown this once (the host keeps only a fingerprint of it).</p>
          <div className="address-row">
            <span className="mono breakable" data-testid="new-invite-code">
              {created.code}
            </span>
            <CopyButton text={created.code} label="Copy code" what="the new invite code" />
          </div>
        </Alert>
      ) : null}
      {problem ? <Alert tone="error">{problem}</Alert> : null}

      <h3 className="subheading">Codes</h3>
      {codes === null ? (
        <p className="muted small">Loading…</p>
      ) : codes.length === 0 ? (
        <p className="muted small">No invite codes yet.</p>
      ) : (
        <ul className="row-list" aria-label="Invite codes">
          {codes.map((code) => {
            const state = inviteCodeState(code, nowSeconds);
            return (
              <li key={code.id} className="row" data-testid="invite-code-row" data-state={state}>
                <div className="row-main">
                  <p className="row-title">
                    <strong>{code.label || 'No label'}</strong>{' '}
                    <span
                      className="state-pill"
                      data-state={state === 'active' ? 'good' : state === 'revoked' ? 'banned' : 'expired'}
                    >
                      {INVITE_STATE_LABELS[state]}
                    </span>
                  </p>
                  <p className="row-meta muted small">
                    {usesText(code)} ·{' '}
                    {code.expiresAt === 0 ? (
                      'never expires'
                    ) : (
                      <span title={formatDateTime(code.expiresAt)}>
                        {code.expiresAt > nowSeconds ? 'expires' : 'expired'}{' '}
                        {formatRelative(code.expiresAt, now)}
                      </span>
                    )}{' '}
                    · made {formatPast(code.createdAt, now)}
                  </p>
                </div>
                {state === 'active' ? (
                  <div className="row-actions">
                    <button
                      type="button"
                      className="button ghost small"
                      aria-label={`Revoke ${code.label ? `the invite code “${code.label}”` : 'this invite code'}`}
                      onClick={() => revoke(code)}
                    >
                      Revoke
                    </button>
                  </div>
                ) : null}
              </li>
            );
          })}
        </ul>
      )}
      {dialog}
    </section>
  );
}

/** Which game servers may connect: tokens made here (shown once), listed and revoked. */
export function GameServerTokensCard() {
  const { authedCall } = useSession();
  const { confirmThen, dialog } = useConfirm();
  const now = useNow(30_000);
  const [tokens, setTokens] = useState<GameServerTokenDto[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [created, setCreated] = useState<{ token: string; record: GameServerTokenDto } | null>(null);
  const form = useForm({ label: '' }, (v) => ({
    label: v.label.trim() === '' ? 'Name the game server, e.g. “Basement PC”' : labelProblem(v.label),
  }));

  const [version, setVersion] = useState(0);
  const load = (): void => setVersion((v) => v + 1);
  const fetchTokens = useEffectEvent((isLive: () => boolean) => {
    authedCall<{ GameServerTokens: GameServerTokenDto[] }>('gameServerTokens')
      .then((list) => {
        if (isLive()) setTokens(list.GameServerTokens);
      })
      .catch((e: unknown) => {
        if (isLive()) setProblem(describeError(e));
      });
  });
  useEffect(() => {
    let live = true;
    fetchTokens(() => live);
    return () => {
      live = false;
    };
  }, [version]);

  function revoke(token: GameServerTokenDto): void {
    setProblem(null);
    void confirmThen(
      {
        title: `Revoke the token “${token.label || 'unnamed'}”?`,
        body: 'Game servers that use it are disconnected at once and cannot connect with it again.',
        confirmLabel: 'Revoke',
        pendingLabel: 'Revoking…',
      },
      async () => {
        await authedCall('revokeGameServerToken', { tokenId: token.id });
        if (created?.record.id === token.id) setCreated(null);
        load();
      },
    ).catch((e: unknown) => setProblem(describeError(e)));
  }

  return (
    <section className="card" aria-labelledby="gs-tokens-title" data-testid="game-server-tokens">
      <h2 id="gs-tokens-title" className="card-title">
        Game-server tokens
      </h2>
      <p className="muted small">
        A game server (Hypernex.Networking.Server) proves it may host instances with one of these tokens.
      </p>
      <form
        className="form inline-form"
        noValidate
        aria-label="Add a game-server token"
        onSubmit={form.handleSubmit(async (v) => {
          setCreated(null);
          const answer = await authedCall<{ token: string; GameServerToken: GameServerTokenDto }>(
            'addGameServerToken',
            { label: v.label.trim() },
          );
          setCreated({ token: answer.token, record: answer.GameServerToken });
          form.reset();
          load();
        })}
      >
        <TextField
          label="Game server name"
          name="label"
          value={form.values.label}
          onValueChange={(v) => form.setValue('label', v)}
          error={form.errors.label}
          autoComplete="off"
        />
        <SubmitButton pending={form.pending} pendingLabel="Adding…">
          Add token
        </SubmitButton>
        <FormStatus message={form.formError} />
      </form>
      {created ? (
        <Alert tone="success" title={`Token for “${created.record.label}”`}>
          <p>Copy it into the game server&apos;s settings now: it is shown this once.</p>
          <div className="address-row">
            <span className="mono breakable" data-testid="new-game-server-token">
              {created.token}
            </span>
            <CopyButton text={created.token} label="Copy token" what="the new game-server token" />
          </div>
        </Alert>
      ) : null}
      {problem ? <Alert tone="error">{problem}</Alert> : null}
      {tokens === null ? (
        <p className="muted small">Loading…</p>
      ) : tokens.length === 0 ? (
        <p className="muted small">
          No tokens made here. Tokens from the host&apos;s configuration (<code>--game-server-token</code>)
          are not listed.
        </p>
      ) : (
        <ul className="row-list" aria-label="Game-server tokens">
          {tokens.map((token) => (
            <li key={token.id} className="row" data-testid="game-server-token-row">
              <div className="row-main">
                <p className="row-title">
                  <strong>{token.label || 'Unnamed'}</strong>
                </p>
                <p className="row-meta muted small" title={formatDateTime(token.createdAt)}>
                  Added {formatPast(token.createdAt, now)}
                </p>
              </div>
              <div className="row-actions">
                <button
                  type="button"
                  className="button ghost small"
                  aria-label={`Revoke the token “${token.label || 'unnamed'}”`}
                  onClick={() => revoke(token)}
                >
                  Revoke
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      {dialog}
    </section>
  );
}

/** The same rules the host applies to a label: at most 100 characters, one line, no hidden characters. */
function labelProblem(value: string): string | undefined {
  const trimmed = value.trim();
  if (trimmed.length > 100) return 'At most 100 characters';
  const hidden = textProblem(trimmed, 'line');
  return hidden ? `The label ${hidden}` : undefined;
}
