import { useEffect, useId, useRef, useState, type RefObject } from 'react';
import { navigate } from '../../shared/route.js';
import { ErrorCode } from '../../../server/protocol/errors.js';
import { MODERATION_ACTIONS, type ModerationAction } from '../../../server/protocol/schemas.js';
import type { PublicUserDto } from '../../../server/protocol/types.js';
import { ApiError, call, describeError } from '../../shared/api-client.js';
import { FormProblem, useForm } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import { localTimeZone } from '../../shared/time.js';
import { Alert, FormStatus, Spinner, SubmitButton, TextField } from '../../shared/ui.js';
import { useNow } from '../../shared/use-now.js';
import {
  ACTION_LABELS,
  rankName,
  whyNotModeratable,
  type LogEntry,
  type LookupUser,
  type ModerationState,
} from './moderation-model.js';
import { LogRow, UserPanel } from './user-panel.js';

interface Who {
  id: string;
  label: string;
}

interface LogFilter {
  target: Who | null;
  moderator: Who | null;
  action: ModerationAction | null;
}

const NO_FILTER: LogFilter = { target: null, moderator: null, action: null };
const PER_PAGE = 20;

/** Find a user, see their standing, act on them within your rank, and read the moderation log. */
/** `userId`: the user named in the address (#/moderation/user_…), opened at once. */
export function ModerationPage({ userId = null }: { userId?: string | null }) {
  const { authedCall } = useSession();
  const [results, setResults] = useState<LookupUser[] | null>(null);
  const [selected, setSelected] = useState<LookupUser | null>(null);
  const [filter, setFilter] = useState<LogFilter>(NO_FILTER);
  const [logVersion, setLogVersion] = useState(0);
  const logRef = useRef<HTMLElement>(null);

  function updated(state: ModerationState, entry: LogEntry): void {
    const merge = (u: LookupUser): LookupUser =>
      u.Id === state.Id ? { ...u, ...state, RecentActions: [entry, ...u.RecentActions].slice(0, 10) } : u;
    setSelected((old) => (old ? merge(old) : old));
    setResults((old) => old?.map(merge) ?? old);
    setLogVersion((n) => n + 1);
  }

  async function openById(id: string): Promise<void> {
    const { Users } = await authedCall<{ Users: LookupUser[] }>('moderationLookup', { query: id });
    const found = Users.find((u) => u.Id === id);
    if (found) setSelected(found);
  }

  // The address names the open user: a link opens them, Back returns to the previous one.
  const openRef = useRef(openById);
  useEffect(() => {
    openRef.current = openById;
  });
  const selectedId = selected?.Id ?? null;
  useEffect(() => {
    if (userId && userId !== selectedId) void openRef.current(userId).catch(() => undefined);
    // Only a change of address opens someone; selecting in the page changes the address first.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [userId]);
  function select(user: LookupUser | null): void {
    setSelected(user);
    if (user) navigate('moderation', user.Id);
  }

  return (
    <div className="page">
      <header className="page-header">
        <h1>Moderation</h1>
        <p className="muted">
          Find a user by name or id to see their standing and act on it. Every action is logged with who did
          it.
        </p>
      </header>

      <FindUser
        results={results}
        selectedId={selected?.Id ?? null}
        onResults={(users) => {
          setResults(users);
          select(users.length === 1 ? (users[0] ?? null) : null);
        }}
        onSelect={select}
      />

      {selected ? (
        <UserPanel
          key={selected.Id}
          user={selected}
          onUpdated={updated}
          onShowLog={() => {
            setFilter({ ...NO_FILTER, target: { id: selected.Id, label: selected.Username } });
            logRef.current?.scrollIntoView({ behavior: 'smooth', block: 'start' });
          }}
        />
      ) : null}

      <ModerationLog
        sectionRef={logRef}
        filter={filter}
        onFilter={setFilter}
        version={logVersion}
        onOpenTarget={(id) => navigate('moderation', id)}
      />
    </div>
  );
}

function FindUser({
  results,
  selectedId,
  onResults,
  onSelect,
}: {
  results: LookupUser[] | null;
  selectedId: string | null;
  onResults(users: LookupUser[]): void;
  onSelect(user: LookupUser): void;
}) {
  const { authedCall, user: me } = useSession();
  const form = useForm({ query: '' }, (v) => ({
    query: v.query.trim() === '' ? 'Type a name or a user id' : undefined,
  }));
  const [searched, setSearched] = useState<string | null>(null);

  return (
    <section className="card" aria-labelledby="find-title">
      <h2 id="find-title" className="card-title">
        Find a user
      </h2>
      <form
        className="form inline-form"
        role="search"
        noValidate
        aria-label="Find a user"
        onSubmit={form.handleSubmit(async ({ query }) => {
          const { Users } = await authedCall<{ Users: LookupUser[] }>('moderationLookup', {
            query: query.trim(),
          });
          setSearched(query.trim());
          onResults(Users);
        })}
      >
        <TextField
          label="Name or user id"
          name="query"
          value={form.values.query}
          onValueChange={(v) => form.setValue('query', v)}
          error={form.errors.query}
          hint="The start of a username, or an exact id (user_…)."
          autoComplete="off"
          spellCheck={false}
          autoCapitalize="off"
        />
        <SubmitButton pending={form.pending} pendingLabel="Searching…">
          Search
        </SubmitButton>
      </form>
      <FormStatus message={form.formError} />

      {results !== null && searched !== null ? (
        results.length === 0 ? (
          <p className="empty-state">No user matches “{searched}”.</p>
        ) : (
          <ul className="row-list" aria-label="Matching users">
            {results.map((u) => {
              const locked = whyNotModeratable({ Id: me.Id, Rank: me.Rank }, u) !== null;
              return (
                <li
                  key={u.Id}
                  className={u.Id === selectedId ? 'row is-selected' : 'row'}
                  data-testid="lookup-row"
                  data-username={u.Username}
                >
                  <span className="avatar small" aria-hidden="true">
                    {u.Username.charAt(0).toUpperCase()}
                  </span>
                  <div className="row-main">
                    <p className="row-title">
                      <strong>{u.Username}</strong>{' '}
                      <span className="rank-badge inline" data-rank={u.Rank}>
                        {rankName(u.Rank)}
                      </span>
                    </p>
                    <p className="row-meta muted small">
                      {[
                        u.isBanned ? 'Banned' : null,
                        u.WarnStatus.isWarned ? 'Warned' : null,
                        `${u.BanCount} ban${u.BanCount === 1 ? '' : 's'}`,
                        `${u.WarnCount} warning${u.WarnCount === 1 ? '' : 's'}`,
                        locked ? 'You cannot act on them' : null,
                      ]
                        .filter(Boolean)
                        .join(' · ')}
                    </p>
                  </div>
                  <button
                    type="button"
                    className="button small secondary"
                    aria-pressed={u.Id === selectedId}
                    onClick={() => onSelect(u)}
                  >
                    {u.Id === selectedId ? 'Showing' : 'View'}
                  </button>
                </li>
              );
            })}
          </ul>
        )
      ) : null}
    </section>
  );
}

/** A username or an id typed into a filter, as an id; a username nobody has is a field error. */
async function resolveWho(input: string, field: string): Promise<Who | null> {
  const value = input.trim();
  if (value === '') return null;
  if (value.startsWith('user_')) return { id: value, label: value };
  try {
    const { UserData } = await call<{ UserData: PublicUserDto }>('getUser', { username: value });
    return { id: UserData.Id, label: UserData.Username };
  } catch (failure) {
    if (failure instanceof ApiError && failure.code === ErrorCode.USER_NOT_FOUND) {
      throw new FormProblem(`No user is called “${value}”.`, { [field]: 'No user has that name' });
    }
    throw failure;
  }
}

function ModerationLog({
  sectionRef,
  filter,
  onFilter,
  version,
  onOpenTarget,
}: {
  sectionRef: RefObject<HTMLElement | null>;
  filter: LogFilter;
  onFilter(filter: LogFilter): void;
  version: number;
  onOpenTarget(userId: string): void;
}) {
  const { authedCall } = useSession();
  const now = useNow(30_000);
  // The page belongs to a filter: a new filter starts again at the newest entries.
  const [paging, setPaging] = useState({ filter, page: 0 });
  const page = paging.filter === filter ? paging.page : 0;
  const setPage = (next: number): void => setPaging({ filter, page: next });
  // Each answer remembers which request it answers, so "loading" is simply "the last answer is for another one".
  const request = JSON.stringify([filter.target?.id, filter.moderator?.id, filter.action, page, version]);
  const [answer, setAnswer] = useState<{
    request: string;
    page: number;
    entries: LogEntry[];
    total: number;
    error: string | null;
  } | null>(null);
  // The session's call changes identity on every app render; the latest one is enough.
  const callRef = useRef(authedCall);
  useEffect(() => {
    callRef.current = authedCall;
  }, [authedCall]);

  useEffect(() => {
    let live = true;
    callRef
      .current<{ Entries: LogEntry[]; Total: number }>('moderationLog', {
        page,
        itemsPerPage: PER_PAGE,
        ...(filter.target ? { targetUserId: filter.target.id } : {}),
        ...(filter.moderator ? { moderatorId: filter.moderator.id } : {}),
        ...(filter.action ? { action: filter.action } : {}),
      })
      .then(({ Entries, Total }) => {
        if (live) setAnswer({ request, page, entries: Entries, total: Total, error: null });
      })
      .catch((failure: unknown) => {
        if (live) {
          setAnswer((old) => ({
            request,
            page: old?.page ?? 0,
            entries: old?.entries ?? [],
            total: old?.total ?? 0,
            error: `Could not load the log: ${describeError(failure)}`,
          }));
        }
      });
    return () => {
      live = false;
    };
  }, [filter, page, version, request]);

  const loading = answer?.request !== request;
  const error = answer?.error ?? null;
  const data = answer && (answer.error === null || answer.entries.length > 0) ? answer : null;
  const total = data?.total ?? 0;
  // What is on screen: the page the shown entries belong to, not the one being fetched.
  const shownPage = data?.page ?? 0;
  const first = total === 0 ? 0 : shownPage * PER_PAGE + 1;
  const last = Math.min(total, (shownPage + 1) * PER_PAGE);
  const filtered = filter.target !== null || filter.moderator !== null || filter.action !== null;

  return (
    <section className="card" aria-labelledby="log-title" ref={sectionRef}>
      <div className="card-heading spread">
        <h2 id="log-title" className="card-title">
          Moderation log
        </h2>
        {loading ? <span className="spinner small-spinner" aria-label="Loading" /> : null}
      </div>
      {/* Keyed by the filter, so one set from outside (the user panel's "show all") shows in the boxes too. */}
      <LogFilterForm
        key={`${filter.target?.id}|${filter.moderator?.id}|${filter.action}`}
        filter={filter}
        filtered={filtered}
        onFilter={onFilter}
      />

      {error ? <Alert tone="error">{error}</Alert> : null}
      {data === null ? (
        error ? null : (
          <Spinner label="Loading the log…" />
        )
      ) : data.entries.length === 0 ? (
        <p className="empty-state">
          {filtered ? 'No entries match these filters.' : 'No moderation actions yet.'}
        </p>
      ) : (
        <ul className="log-list" aria-label="Log entries" data-testid="mod-log">
          {data.entries.map((entry) => (
            <LogRow
              key={entry.id}
              entry={entry}
              now={now}
              onOpenTarget={() => onOpenTarget(entry.targetUserId)}
            />
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
            disabled={page === 0 || loading}
            onClick={() => setPage(Math.max(0, page - 1))}
          >
            Newer
          </button>
          <button
            type="button"
            className="button small secondary"
            disabled={last >= total || loading}
            onClick={() => setPage(page + 1)}
          >
            Older
          </button>
        </div>
      </div>
    </section>
  );
}

function LogFilterForm({
  filter,
  filtered,
  onFilter,
}: {
  filter: LogFilter;
  filtered: boolean;
  onFilter(filter: LogFilter): void;
}) {
  const actionId = useId();
  const form = useForm(
    {
      target: filter.target?.label ?? '',
      moderator: filter.moderator?.label ?? '',
      action: filter.action ?? '',
    },
    () => ({}),
  );
  return (
    <>
      <form
        className="form filter-form"
        noValidate
        aria-label="Filter the log"
        onSubmit={form.handleSubmit(async (v) => {
          const [target, moderator] = await Promise.all([
            resolveWho(v.target, 'target'),
            resolveWho(v.moderator, 'moderator'),
          ]);
          onFilter({ target, moderator, action: (v.action || null) as ModerationAction | null });
        })}
      >
        <TextField
          label="Target"
          name="target"
          value={form.values.target}
          onValueChange={(v) => form.setValue('target', v)}
          error={form.errors.target}
          hint="Username or id"
          autoComplete="off"
        />
        <TextField
          label="Moderator"
          name="moderator"
          value={form.values.moderator}
          onValueChange={(v) => form.setValue('moderator', v)}
          error={form.errors.moderator}
          hint="Username or id"
          autoComplete="off"
        />
        <div className="field">
          <label htmlFor={actionId}>Action</label>
          <select
            id={actionId}
            className="select"
            value={form.values.action}
            onChange={(event) => form.setValue('action', event.target.value)}
          >
            <option value="">Any action</option>
            {MODERATION_ACTIONS.map((action) => (
              <option key={action} value={action}>
                {ACTION_LABELS[action]}
              </option>
            ))}
          </select>
          <p className="field-message" />
        </div>
        <div className="filter-buttons">
          <SubmitButton pending={form.pending} pendingLabel="Filtering…">
            Filter
          </SubmitButton>
          {filtered ? (
            <button type="button" className="button ghost" onClick={() => onFilter(NO_FILTER)}>
              Clear
            </button>
          ) : null}
        </div>
      </form>
      <FormStatus message={form.formError} />
    </>
  );
}
