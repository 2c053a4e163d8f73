import { useEffect, useRef, useState } from 'react';
import { navigate } from '../../shared/route.js';
import { useForm } from '../../shared/form.js';
import { useSession } from '../../shared/session.js';
import { FormStatus, SubmitButton, TextField } from '../../shared/ui.js';
import {
  rankName,
  whyNotModeratable,
  type LogEntry,
  type LookupUser,
  type ModerationState,
} from './moderation-model.js';
import { UserPanel } from './user-panel.js';
import { AuditLog, EMPTY_AUDIT_FILTER, type AuditFilterState } from './audit-log.js';

/** Find a user, see their standing, act on them within your rank, and read the moderation log. */
/** `userId`: the user named in the address (#/moderation/user_…), opened at once. */
export function ModerationPage({ userId = null }: { userId?: string | null }) {
  const { authedCall } = useSession();
  const [results, setResults] = useState<LookupUser[] | null>(null);
  const [selected, setSelected] = useState<LookupUser | null>(null);
  const [filter, setFilter] = useState<AuditFilterState>(EMPTY_AUDIT_FILTER);
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
            setFilter({ ...EMPTY_AUDIT_FILTER, target: selected.Username });
            logRef.current?.scrollIntoView({ behavior: 'smooth', block: 'start' });
          }}
        />
      ) : null}

      <AuditLog
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
