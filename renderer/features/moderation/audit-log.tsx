import { useEffect, useId, useRef, useState, type RefObject } from 'react';
import {
  AUDIT_EXPORT_MIN_RANK,
  AUDIT_GROUPS,
  AUDIT_GROUP_NAMES,
  BAN_IMPORT_MAX_BYTES,
  type AuditAction,
  type AuditGroup,
  type BanImportResult,
} from '../../../server/protocol/audit.js';
import { API_BASE, readEnvelope, describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import { formatDateTime, localTimeZone } from '../../shared/time.js';
import { Alert, Spinner } from '../../shared/ui.js';
import { MODERATION_ACTIONS } from '../../../server/protocol/schemas.js';
import { RANK_NAMES, type Rank } from '../../../server/protocol/enums.js';
import { ACTION_LABELS, describeEntry, type LogEntry } from './moderation-model.js';
import { LogRowMain } from './user-panel.js';

/**
 * The audit log (issue 28, our addition): moderation actions and every other staff action, with filters, export
 * of the log and the bans (CSV, JSON), and ban import. Reads `auditLog`; real clients know nothing of it.
 */
export interface AuditEntry {
  id: string;
  time: number;
  moderatorId: string;
  moderatorName: string;
  action: AuditAction;
  targetUserId?: string;
  targetId?: string;
  targetName: string;
  fields: Record<string, unknown>;
  before?: { Rank: number };
  after?: { Rank: number };
}

export interface AuditFilterState {
  group: AuditGroup | '';
  action: AuditAction | '';
  moderator: string;
  target: string;
  from: string;
  to: string;
}

export const EMPTY_AUDIT_FILTER: AuditFilterState = {
  group: '',
  action: '',
  moderator: '',
  target: '',
  from: '',
  to: '',
};
const PER_PAGE = 20;

const GROUP_LABELS: Record<AuditGroup, string> = {
  moderation: 'Moderation',
  content: 'Content removal',
  accounts: 'Accounts',
  invites: 'Invite codes',
  gameservers: 'Game-server tokens',
  host: 'Host and webhook settings',
  builds: 'Client builds',
};

export const STAFF_LABELS: Record<string, string> = {
  resetpassword: 'Password reset',
  createuser: 'Account created',
  createinvitecode: 'Invite code made',
  revokeinvitecode: 'Invite code revoked',
  addgameservertoken: 'Game-server token added',
  revokegameservertoken: 'Game-server token revoked',
  changehostsettings: 'Host settings changed',
  changewebhook: 'Webhook changed',
  publishbuild: 'Build published',
  removebuild: 'Build removed',
};

export function auditLabel(action: AuditAction): string {
  return (ACTION_LABELS as Record<string, string>)[action] ?? STAFF_LABELS[action] ?? action;
}

/** The request body of the filters: dates are whole local days, `to` inclusive. */
function filterBody(f: AuditFilterState): Record<string, unknown> {
  const day = (value: string, end: boolean): number | undefined => {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
    const [y, m, d] = value.split('-').map(Number) as [number, number, number];
    const ms = end ? new Date(y, m - 1, d + 1).getTime() - 1000 : new Date(y, m - 1, d).getTime();
    return Math.floor(ms / 1000);
  };
  const out: Record<string, unknown> = {};
  if (f.group) out.group = f.group;
  if (f.action) out.action = f.action;
  if (f.moderator.trim()) out.moderator = f.moderator.trim();
  if (f.target.trim()) out.target = f.target.trim();
  const from = day(f.from, false);
  const to = day(f.to, true);
  if (from !== undefined) out.from = from;
  if (to !== undefined) out.to = to;
  return out;
}

function describeAudit(entry: AuditEntry): string {
  // Moderation entries read as they always have (they carry before and after).
  if ((MODERATION_ACTIONS as readonly string[]).includes(entry.action)) {
    return describeEntry(entry as LogEntry);
  }
  const f = entry.fields;
  const str = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
  switch (entry.action) {
    case 'createuser':
      return typeof f.rank === 'number' ? `Rank: ${RANK_NAMES[f.rank as Rank] ?? f.rank}` : '';
    case 'changehostsettings':
      return `Invite code required: ${f.requireInviteCode ? 'yes' : 'no'}`;
    case 'changewebhook':
      return [
        f.configured ? 'URL set' : 'no URL',
        f.urlChanged ? 'URL changed' : '',
        `moderation ${f.moderation ? 'on' : 'off'}`,
        `sign-ups ${f.signups ? 'on' : 'off'}`,
      ]
        .filter(Boolean)
        .join(' · ');
    default:
      return Object.entries(f)
        .map(([k, v]) => `${k}: ${str(v) || JSON.stringify(v)}`)
        .join(' · ');
  }
}

/** The audit log section of the moderation screen. */
export function AuditLog({
  sectionRef,
  filter,
  onFilter,
  version,
  onOpenTarget,
}: {
  sectionRef: RefObject<HTMLElement | null>;
  filter: AuditFilterState;
  onFilter(filter: AuditFilterState): void;
  version: number;
  onOpenTarget(userId: string): void;
}) {
  const { authedCall, user } = useSession();
  const [page, setPage] = useState({ filter, page: 0 });
  const current = page.filter === filter ? page.page : 0;
  const request = JSON.stringify([filter, current, version]);
  const [answer, setAnswer] = useState<{
    request: string;
    page: number;
    entries: AuditEntry[];
    total: number;
    error: string | null;
  } | null>(null);
  const callRef = useRef(authedCall);
  useEffect(() => {
    callRef.current = authedCall;
  }, [authedCall]);

  useEffect(() => {
    let live = true;
    callRef
      .current<{ Entries: AuditEntry[]; Total: number }>('auditLog', {
        ...filterBody(filter),
        page: current,
        itemsPerPage: PER_PAGE,
      })
      .then(({ Entries, Total }) => {
        if (live) setAnswer({ request, page: current, entries: Entries, total: Total, error: null });
      })
      .catch((failure: unknown) => {
        if (live)
          setAnswer({
            request,
            page: current,
            entries: [],
            total: 0,
            error: `Could not load the log: ${describeError(failure)}`,
          });
      });
    return () => {
      live = false;
    };
  }, [filter, current, request]);

  const loading = answer?.request !== request;
  const total = answer?.total ?? 0;
  const shown = answer?.page ?? 0;
  const first = total === 0 ? 0 : shown * PER_PAGE + 1;
  const last = Math.min(total, (shown + 1) * PER_PAGE);
  const filtered = JSON.stringify(filter) !== JSON.stringify(EMPTY_AUDIT_FILTER);
  const canExport = user.Rank >= AUDIT_EXPORT_MIN_RANK;

  return (
    <section className="card" aria-labelledby="log-title" ref={sectionRef}>
      <div className="card-heading spread">
        <h2 id="log-title" className="card-title">
          Audit log
        </h2>
        {loading ? <span className="spinner small-spinner" aria-label="Loading" /> : null}
      </div>
      <p className="muted small">
        Every action by staff: moderation, password resets, accounts made from the host&apos;s command line,
        invite codes, game-server tokens, host and webhook settings, client builds.
      </p>
      <AuditFilterForm key={JSON.stringify(filter)} filter={filter} filtered={filtered} onFilter={onFilter} />
      {answer?.error ? <Alert tone="error">{answer.error}</Alert> : null}
      {answer === null ? (
        <Spinner label="Loading the log…" />
      ) : answer.entries.length === 0 ? (
        answer.error ? null : (
          <p className="empty-state">
            {filtered ? 'No entries match these filters.' : 'No staff actions yet.'}
          </p>
        )
      ) : (
        <ul className="log-list" aria-label="Log entries" data-testid="mod-log">
          {answer.entries.map((entry) => (
            <AuditRow key={entry.id} entry={entry} onOpenTarget={onOpenTarget} />
          ))}
        </ul>
      )}
      <div className="pager">
        <p className="muted small" aria-live="polite">
          {total === 0 ? 'No entries' : `${first}–${last} of ${total}, newest first`} · times in{' '}
          {localTimeZone()}
        </p>
        <div className="button-row">
          <button
            type="button"
            className="button small secondary"
            disabled={current === 0 || loading}
            onClick={() => setPage({ filter, page: Math.max(0, current - 1) })}
          >
            Newer
          </button>
          <button
            type="button"
            className="button small secondary"
            disabled={last >= total || loading}
            onClick={() => setPage({ filter, page: current + 1 })}
          >
            Older
          </button>
        </div>
      </div>
      {canExport ? <TransferTools filter={filter} onImported={() => onFilter({ ...filter })} /> : null}
    </section>
  );
}

function AuditRow({ entry, onOpenTarget }: { entry: AuditEntry; onOpenTarget(userId: string): void }) {
  const detail = describeAudit(entry);
  const userId = entry.targetUserId;
  return (
    <li className="log-row" data-testid="log-row" data-action={entry.action}>
      <time className="log-time" dateTime={new Date(entry.time * 1000).toISOString()}>
        <span>{formatDateTime(entry.time)}</span>
      </time>
      <LogRowMain
        action={entry.action}
        label={auditLabel(entry.action)}
        targetName={entry.targetName}
        moderatorName={entry.moderatorName}
        detail={detail}
        onOpenTarget={userId ? () => onOpenTarget(userId) : undefined}
      />
    </li>
  );
}

function AuditFilterForm({
  filter,
  filtered,
  onFilter,
}: {
  filter: AuditFilterState;
  filtered: boolean;
  onFilter(filter: AuditFilterState): void;
}) {
  const id = useId();
  const [draft, setDraft] = useState(filter);
  const set = (patch: Partial<AuditFilterState>): void => setDraft((d) => ({ ...d, ...patch }));
  const text = (key: 'moderator' | 'target' | 'from' | 'to', label: string, type = 'text', hint = '') => (
    <div className="field">
      <label htmlFor={`${id}-${key}`}>{label}</label>
      <div className="input-wrap">
        <input
          id={`${id}-${key}`}
          type={type}
          name={key}
          autoComplete="off"
          value={draft[key]}
          aria-describedby={hint ? `${id}-${key}-hint` : undefined}
          onChange={(event) => set({ [key]: event.target.value })}
        />
      </div>
      <p className="field-message" id={`${id}-${key}-hint`}>
        {hint}
      </p>
    </div>
  );
  return (
    <form
      className="form filter-form audit-filter"
      noValidate
      aria-label="Filter the log"
      onSubmit={(event) => {
        event.preventDefault();
        onFilter(draft);
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-action`}>Action</label>
        <select
          id={`${id}-action`}
          className="select"
          value={draft.action || (draft.group ? `group:${draft.group}` : '')}
          onChange={(event) => {
            const value = event.target.value;
            const group = value.startsWith('group:') ? (value.slice(6) as AuditGroup) : '';
            set({ group, action: group || value === '' ? '' : (value as AuditAction) });
          }}
        >
          <option value="">Any action</option>
          {AUDIT_GROUP_NAMES.map((group) => (
            <optgroup key={group} label={GROUP_LABELS[group]}>
              <option value={`group:${group}`}>All: {GROUP_LABELS[group]}</option>
              {AUDIT_GROUPS[group].map((action) => (
                <option key={action} value={action}>
                  {auditLabel(action)}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
        <p className="field-message" />
      </div>
      {text('moderator', 'Moderator', 'text', 'Username or id')}
      {text('target', 'Target', 'text', 'Username or id')}
      {text('from', 'From', 'date')}
      {text('to', 'To', 'date')}
      <div className="filter-buttons">
        <button type="submit" className="button">
          Filter
        </button>
        {filtered ? (
          <button type="button" className="button ghost" onClick={() => onFilter(EMPTY_AUDIT_FILTER)}>
            Clear
          </button>
        ) : null}
      </div>
    </form>
  );
}

/** Export the log (current filters) and the bans; import bans from another host's export. */
function TransferTools({ filter, onImported }: { filter: AuditFilterState; onImported(): void }) {
  const { session, authedCall } = useSession();
  const [problem, setProblem] = useState<string | null>(null);
  const [result, setResult] = useState<BanImportResult | null>(null);
  const [mode, setMode] = useState<'strict' | 'lenient'>('strict');
  const [busy, setBusy] = useState(false);
  const fileRef = useRef<HTMLInputElement>(null);
  const id = useId();

  async function download(path: 'auditExport' | 'bansExport', format: 'csv' | 'json'): Promise<void> {
    setProblem(null);
    try {
      const res = await fetch(API_BASE + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...session, ...(path === 'auditExport' ? filterBody(filter) : {}), format }),
        cache: 'no-store',
      });
      const type = res.headers.get('content-type') ?? '';
      const disposition = res.headers.get('content-disposition') ?? '';
      if (!disposition.startsWith('attachment')) readEnvelope(await res.json());
      const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `${path}.${format}`;
      const url = URL.createObjectURL(new Blob([await res.arrayBuffer()], { type }));
      const link = document.createElement('a');
      link.href = url;
      link.download = name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (failure) {
      setProblem(`Could not export: ${describeError(failure)}`);
    }
  }

  async function importFile(): Promise<void> {
    setProblem(null);
    setResult(null);
    const file = fileRef.current?.files?.[0];
    if (!file) return setProblem('Choose a bans file (CSV or JSON) first.');
    if (file.size > BAN_IMPORT_MAX_BYTES) {
      return setProblem(`The file is larger than ${BAN_IMPORT_MAX_BYTES} bytes; split it.`);
    }
    const format = file.name.toLowerCase().endsWith('.json') ? 'json' : 'csv';
    setBusy(true);
    try {
      const content = await file.text();
      setResult(await authedCall<BanImportResult>('importBans', { mode, format, content }));
      onImported();
    } catch (failure) {
      setProblem(describeError(failure));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="audit-tools" data-testid="audit-tools">
      <h3 className="card-subtitle">Export</h3>
      <div className="button-row">
        <button
          type="button"
          className="button small secondary"
          onClick={() => download('auditExport', 'csv')}
        >
          Log as CSV
        </button>
        <button
          type="button"
          className="button small secondary"
          onClick={() => download('auditExport', 'json')}
        >
          Log as JSON
        </button>
        <button
          type="button"
          className="button small secondary"
          onClick={() => download('bansExport', 'csv')}
        >
          Bans as CSV
        </button>
        <button
          type="button"
          className="button small secondary"
          onClick={() => download('bansExport', 'json')}
        >
          Bans as JSON
        </button>
      </div>
      <h3 className="card-subtitle">Import bans</h3>
      <p className="muted small">
        A bans file exported from a host (CSV or JSON), matched by username. Each ban is a ban by you: rank
        rules apply and it is logged.
      </p>
      <div className="field">
        <label htmlFor={`${id}-file`}>Bans file</label>
        <input id={`${id}-file`} ref={fileRef} type="file" accept=".csv,.json,text/csv,application/json" />
      </div>
      <fieldset className="field choice-field">
        <legend>If a line is wrong</legend>
        <div className="choices">
          <label className="choice">
            <input
              type="radio"
              name={`${id}-mode`}
              checked={mode === 'strict'}
              onChange={() => setMode('strict')}
            />
            <span className="choice-text">Strict: refuse the file, import nothing</span>
          </label>
          <label className="choice">
            <input
              type="radio"
              name={`${id}-mode`}
              checked={mode === 'lenient'}
              onChange={() => setMode('lenient')}
            />
            <span className="choice-text">Lenient: import what matches, list what was skipped</span>
          </label>
        </div>
      </fieldset>
      <div className="button-row">
        <button type="button" className="button" disabled={busy} onClick={() => importFile()}>
          {busy ? 'Importing…' : 'Import bans'}
        </button>
      </div>
      {problem ? <Alert tone="error">{problem}</Alert> : null}
      {result ? (
        <div role="status" data-testid="import-result">
          <p>
            Imported {result.Imported.length} {result.Imported.length === 1 ? 'ban' : 'bans'}, skipped{' '}
            {result.Skipped.length}.
          </p>
          {result.Skipped.length > 0 ? (
            <ul className="small" aria-label="Skipped lines">
              {result.Skipped.map((s) => (
                <li key={s.line}>
                  Line {s.line}
                  {s.username ? ` (${s.username})` : ''}: {s.reason}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
