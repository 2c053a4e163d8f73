import { useEffect, useId, useRef, useState, type ReactNode, type TextareaHTMLAttributes } from 'react';
import { Rank } from '../../../server/protocol/enums.js';
import { textProblem } from '../../../server/protocol/text-rules.js';
import { isUntilLifted } from '../../../server/protocol/audit.js';
import {
  MOD_DESCRIPTION_MAX,
  MOD_REASON_MAX,
  normaliseBadge,
  passwordProblem,
  TIME_END_MAX,
  type ModerationAction,
} from '../../../server/protocol/schemas.js';
import { describeError } from '../../shared/api-client.js';
import { useConfirm, type ConfirmRequest } from '../../shared/confirm-dialog.js';
import { FormProblem, useForm, type FieldErrorMap } from '../../shared/form.js';
import { PastTime } from '../../shared/past-time.js';
import { useSession } from '../../shared/session.js';
import {
  formatDateTime,
  formatPast,
  formatRelative,
  isEffectivelyForever,
  localTimeZone,
} from '../../shared/time.js';
import { Alert, FormStatus, NewPasswordFields, SubmitButton, TextField } from '../../shared/ui.js';
import { useNow } from '../../shared/use-now.js';
import {
  ACTION_LABELS,
  BAN_PRESETS,
  banEnd,
  describeEntry,
  grantableRanks,
  rankName,
  toLocalInput,
  whyNotModeratable,
  type BanPreset,
  type LogEntry,
  type LookupUser,
  type ModerationState,
} from './moderation-model.js';
import { ContentTab } from './content-tab.js';
import { UserNotes } from './notes.js';

type Perform = (action: ModerationAction, fields: Record<string, unknown>) => Promise<ModerationState>;
type Confirm = (request: ConfirmRequest, work: () => Promise<void>) => Promise<boolean>;

type Tab = 'ban' | 'warn' | 'rank' | 'badges' | 'content' | 'password';

export interface UserPanelProps {
  user: LookupUser;
  onUpdated(state: ModerationState, entry: LogEntry): void;
  onShowLog(): void;
}

/** One user's moderation state, what you may do to them, and their recent history. */
export function UserPanel({ user, onUpdated, onShowLog }: UserPanelProps) {
  const { authedCall, user: me } = useSession();
  const now = useNow(30_000);
  const { confirmThen, dialog } = useConfirm();
  const [tab, setTab] = useState<Tab>('ban');
  const [done, setDone] = useState<string | null>(null);
  const [actionsDone, setActionsDone] = useState(0);
  const focusAfterAction = useRef(false);
  const refusal = whyNotModeratable({ Id: me.Id, Rank: me.Rank }, user);
  const name = user.Username;

  const perform: Perform = async (action, fields) => {
    setDone(null);
    const { ModerationState, LogEntry } = await authedCall<{
      ModerationState: ModerationState;
      LogEntry: LogEntry;
    }>('moderation', { action, targetUserId: user.Id, ...fields });
    onUpdated(ModerationState, LogEntry);
    setDone(successText(LogEntry));
    setActionsDone((n) => n + 1);
    focusAfterAction.current = true;
    return ModerationState;
  };

  // A success starts the forms afresh (and closes the question), which takes the focused control away: focus
  // goes back to the chosen tab, so a keyboard user carries on from the panel instead of the top of the page.
  useEffect(() => {
    if (dialog || !focusAfterAction.current) return;
    focusAfterAction.current = false;
    const active = document.activeElement;
    if (active === null || active === document.body) document.getElementById(`mod-tab-${tab}`)?.focus();
  }, [dialog, actionsDone, tab]);

  const tabs: { id: Tab; label: string }[] = [
    { id: 'ban', label: user.isBanned ? 'Ban again' : 'Ban' },
    { id: 'warn', label: 'Warn' },
    { id: 'rank', label: 'Rank' },
    { id: 'badges', label: 'Badges' },
    { id: 'content', label: 'Content' },
    // The owner and admins set a new password for someone ranked below them (issue 18: no email here).
    ...(me.Rank >= Rank.Admin ? [{ id: 'password' as const, label: 'Password' }] : []),
  ];

  return (
    <section className="card mod-panel" aria-labelledby="mod-user-title" data-testid="mod-panel">
      <div className="mod-panel-head">
        <span className="avatar" aria-hidden="true">
          {name.charAt(0).toUpperCase()}
        </span>
        <div className="mod-panel-name">
          <h2 id="mod-user-title" className="card-title">
            {name}
          </h2>
          <p className="muted small mono breakable">{user.Id}</p>
        </div>
        <div className="mod-pills">
          <span className="rank-badge boxed" data-rank={user.Rank}>
            {rankName(user.Rank)}
          </span>
          {user.isBanned ? (
            <span className="state-pill" data-state="banned">
              Banned
            </span>
          ) : null}
          {user.WarnStatus.isWarned ? (
            <span className="state-pill" data-state="warned">
              Warned
            </span>
          ) : null}
          {!user.isBanned && !user.WarnStatus.isWarned ? (
            <span className="state-pill" data-state="good">
              In good standing
            </span>
          ) : null}
        </div>
      </div>

      <dl className="facts columns mod-facts">
        <div>
          <dt>Ban</dt>
          <dd data-testid="mod-ban-state">
            {user.isBanned
              ? isEffectivelyForever(user.BanStatus.BanEnd, now)
                ? 'Banned until lifted'
                : `Banned until ${formatDateTime(user.BanStatus.BanEnd)} (${formatRelative(user.BanStatus.BanEnd, now)})`
              : 'Not banned'}
            {user.isBanned && user.BanStatus.BanReason ? (
              <span className="fact-note">Reason: {user.BanStatus.BanReason}</span>
            ) : null}
            <span className="fact-note">
              {user.BanCount === 1 ? 'Banned once so far' : `Banned ${user.BanCount} times so far`}
            </span>
          </dd>
          {user.isBanned && !refusal ? (
            <LiftButton
              label="Unban"
              what={`Unban ${name}?`}
              effect={`${name} can sign in again right away. The ban stays in the log and in their ban count.`}
              confirmThen={confirmThen}
              run={() => perform('unbanuser', {})}
            />
          ) : null}
        </div>
        <div>
          <dt>Warning</dt>
          <dd data-testid="mod-warn-state">
            {user.WarnStatus.isWarned ? (
              <>
                Warned
                {user.WarnStatus.TimeWarned > 0 ? (
                  <>
                    {' '}
                    <PastTime unixSeconds={user.WarnStatus.TimeWarned} />
                  </>
                ) : null}
              </>
            ) : (
              'No active warning'
            )}
            {user.WarnStatus.isWarned && user.WarnStatus.WarnReason ? (
              <span className="fact-note">Reason: {user.WarnStatus.WarnReason}</span>
            ) : null}
            <span className="fact-note">
              {user.WarnCount === 1 ? 'Warned once so far' : `Warned ${user.WarnCount} times so far`}
            </span>
          </dd>
          {user.WarnStatus.isWarned && !refusal ? (
            <LiftButton
              label="Lift warning"
              what={`Lift ${name}'s warning?`}
              effect={`${name} will not be shown the warning at their next sign-in. It stays in the log and in their warning count.`}
              confirmThen={confirmThen}
              run={() => perform('unwarnuser', {})}
            />
          ) : null}
        </div>
        <div>
          <dt>Badges</dt>
          <dd>{user.Badges.length === 0 ? 'None' : user.Badges.join(', ')}</dd>
        </div>
      </dl>

      {done ? (
        <Alert tone="success">
          <span data-testid="mod-done">{done}</span>
        </Alert>
      ) : null}

      {refusal ? (
        <Alert tone="info" title="No actions available">
          <span data-testid="mod-refusal">{refusal}</span>
        </Alert>
      ) : (
        <div className="mod-actions">
          <div className="tabs" role="tablist" aria-label={`Actions on ${name}`}>
            {tabs.map((t) => (
              <button
                key={t.id}
                type="button"
                role="tab"
                id={`mod-tab-${t.id}`}
                aria-selected={tab === t.id}
                aria-controls="mod-tabpanel"
                className="tab"
                onClick={() => setTab(t.id)}
              >
                {t.label}
              </button>
            ))}
          </div>
          {/* Keyed by the number of actions done: each success starts the forms afresh. */}
          <div
            key={actionsDone}
            className="tabpanel"
            role="tabpanel"
            id="mod-tabpanel"
            aria-labelledby={`mod-tab-${tab}`}
          >
            {tab === 'ban' ? <BanForm user={user} perform={perform} confirmThen={confirmThen} /> : null}
            {tab === 'warn' ? <WarnForm user={user} perform={perform} confirmThen={confirmThen} /> : null}
            {tab === 'rank' ? (
              <RankForm
                key={user.Rank}
                user={user}
                callerRank={me.Rank}
                perform={perform}
                confirmThen={confirmThen}
              />
            ) : null}
            {tab === 'badges' ? <BadgesForm user={user} perform={perform} confirmThen={confirmThen} /> : null}
            {tab === 'content' ? (
              <ContentTab user={user} perform={perform} confirmThen={confirmThen} />
            ) : null}
            {tab === 'password' ? (
              <PasswordResetForm
                user={user}
                confirmThen={confirmThen}
                onDone={(text) => {
                  setDone(text);
                  setActionsDone((n) => n + 1);
                }}
              />
            ) : null}
          </div>
        </div>
      )}

      {refusal ? null : <UserNotes key={user.Id} user={user} />}

      <div className="mod-recent">
        <div className="card-heading spread">
          <h3 className="subheading">Recent actions on {name}</h3>
          <button type="button" className="link-button small" onClick={onShowLog}>
            Show all in the log
          </button>
        </div>
        {user.RecentActions.length === 0 ? (
          <p className="muted small">Nothing yet.</p>
        ) : (
          <ul className="log-list compact">
            {user.RecentActions.map((entry) => (
              <LogRow key={entry.id} entry={entry} now={now} />
            ))}
          </ul>
        )}
      </div>
      {dialog}
    </section>
  );
}

function successText(entry: LogEntry): string {
  const name = entry.targetName;
  const f = entry.fields;
  switch (entry.action) {
    case 'banuser':
      if (typeof f.timeEnd === 'number' && isUntilLifted(f.timeEnd))
        return `Banned ${name} until a moderator lifts it. They were signed out everywhere.`;
      return `Banned ${name} until ${typeof f.timeEnd === 'number' ? formatDateTime(f.timeEnd) : '…'}. They were signed out everywhere.`;
    case 'unbanuser':
      return `Unbanned ${name}.`;
    case 'warnuser':
      return `Warned ${name}. They see it at their next sign-in.`;
    case 'unwarnuser':
      return `Lifted ${name}'s warning.`;
    case 'setrank':
      return `${name} is now ${rankName(entry.after.Rank)}.`;
    case 'addbadge':
      return `Gave ${name} the badge “${String(f.badgeName)}”.`;
    case 'removebadge':
      return `Removed the badge “${String(f.badgeName)}” from ${name}.`;
    case 'deleteavatar':
      return `Deleted avatar ${String(f.avatarId)} of ${name}.`;
    case 'deleteworld':
      return `Deleted world ${String(f.worldId)} of ${name}.`;
    case 'deletefile':
      return `Deleted file ${String(f.fileId)} of ${name}.`;
  }
}

export function LogRow({
  entry,
  now,
  onOpenTarget,
}: {
  entry: LogEntry;
  now: number;
  onOpenTarget?(): void;
}) {
  const detail = describeEntry(entry);
  return (
    <li className="log-row" data-testid="log-row" data-action={entry.action}>
      <time
        className="log-time"
        dateTime={new Date(entry.time * 1000).toISOString()}
        title={formatDateTime(entry.time)}
      >
        <span>{formatPast(entry.time, now)}</span>
        <span className="muted small">{formatDateTime(entry.time)}</span>
      </time>
      <LogRowMain
        action={entry.action}
        label={ACTION_LABELS[entry.action]}
        targetName={entry.targetName}
        moderatorName={entry.moderatorName}
        detail={detail}
        onOpenTarget={onOpenTarget}
      />
    </li>
  );
}

/** A row of the moderation log or the audit log: the action, its target (a link when it opens), who did it. */
export function LogRowMain({
  action,
  label,
  targetName,
  moderatorName,
  detail,
  onOpenTarget,
}: {
  action: string;
  label: string;
  targetName: string;
  moderatorName: string;
  detail: string | null | undefined;
  onOpenTarget?(): void;
}) {
  return (
    <div className="log-main">
      <p>
        <span className="action-pill" data-action={action}>
          {label}
        </span>{' '}
        {onOpenTarget ? (
          <button type="button" className="link-button" onClick={onOpenTarget}>
            {targetName}
          </button>
        ) : (
          <strong>{targetName}</strong>
        )}{' '}
        <span className="muted">by {moderatorName}</span>
      </p>
      {detail ? <p className="muted small breakable">{detail}</p> : null}
    </div>
  );
}

function LiftButton({
  label,
  what,
  effect,
  confirmThen,
  run,
}: {
  label: string;
  what: string;
  effect: string;
  confirmThen: Confirm;
  run(): Promise<unknown>;
}) {
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <div className="lift">
      <button
        type="button"
        className="button small secondary"
        onClick={() => {
          setProblem(null);
          confirmThen(
            {
              title: what,
              body: <p className="form-intro">{effect}</p>,
              confirmLabel: label,
              tone: 'primary',
            },
            async () => {
              await run();
            },
          ).catch((failure: unknown) => setProblem(describeError(failure)));
        }}
      >
        {label}
      </button>
      {problem ? (
        <p className="row-error" role="alert">
          {problem}
        </p>
      ) : null}
    </div>
  );
}

interface FormProps {
  user: LookupUser;
  perform: Perform;
  confirmThen: Confirm;
}

function reasonProblem(value: string, max: number, required: boolean, label: string): string | undefined {
  const trimmed = value.trim();
  if (required && trimmed === '') return `${label} is required`;
  if (trimmed.length > max) return `${label} must be at most ${max} characters`;
  // The host's rule for free text: a reason is one line, details may have several.
  const hidden = textProblem(trimmed, max === MOD_REASON_MAX ? 'line' : 'multiline');
  return hidden ? `${label} ${hidden}` : undefined;
}

/** Runs the confirmed action; a cancel is not an error. */
async function confirmed(
  confirmThen: Confirm,
  request: ConfirmRequest,
  work: () => Promise<unknown>,
): Promise<void> {
  await confirmThen(request, async () => {
    await work();
  });
}

function BanForm({ user, perform, confirmThen }: FormProps) {
  const [preset, setPreset] = useState<BanPreset>('1d');
  const now = useNow(30_000);
  const name = user.Username;
  const form = useForm(
    { banReason: '', banDescription: '', timeEnd: '' },
    (v): FieldErrorMap<'banReason' | 'banDescription' | 'timeEnd'> => {
      // `now` ticks every 30 s; the submit checks again against the clock at that moment.
      const end = banEnd(preset, now, v.timeEnd);
      return {
        banReason: reasonProblem(v.banReason, MOD_REASON_MAX, true, 'A reason'),
        banDescription: reasonProblem(v.banDescription, MOD_DESCRIPTION_MAX, false, 'Details'),
        timeEnd: 'problem' in end ? end.problem : undefined,
      };
    },
  );
  const end = banEnd(preset, now, form.values.timeEnd);
  const groupId = useId();

  async function submit(v: Record<'banReason' | 'banDescription' | 'timeEnd', string>): Promise<void> {
    // eslint-disable-next-line react-hooks/purity -- runs on submit; handleSubmit only wraps it during render
    const submittedAt = Date.now();
    const chosen = banEnd(preset, submittedAt, v.timeEnd);
    if ('problem' in chosen) throw new FormProblem(chosen.problem, { timeEnd: chosen.problem });
    const until = formatDateTime(chosen.timeEnd);
    await confirmed(
      confirmThen,
      {
        title: `Ban ${name}?`,
        body: (
          <>
            <p className="form-intro">
              <strong>{name}</strong> is signed out everywhere at once and cannot sign in{' '}
              {isUntilLifted(chosen.timeEnd) ? (
                <strong>until a moderator lifts the ban</strong>
              ) : (
                <>
                  until <strong>{until}</strong> ({formatRelative(chosen.timeEnd, submittedAt)})
                </>
              )}
              .
            </p>
            <p className="muted small">Reason shown to them: {v.banReason.trim()}</p>
          </>
        ),
        confirmLabel: `Ban ${name}`,
        pendingLabel: 'Banning…',
      },
      async () => {
        await perform('banuser', {
          banReason: v.banReason.trim(),
          banDescription: v.banDescription.trim(),
          timeEnd: chosen.timeEnd,
        });
      },
    );
  }

  return (
    <form
      className="form mod-form"
      noValidate
      aria-label={`Ban ${name}`}
      onSubmit={form.handleSubmit(submit)}
    >
      <TextField
        label="Reason"
        name="banReason"
        value={form.values.banReason}
        onValueChange={(v) => form.setValue('banReason', v)}
        error={form.errors.banReason}
        hint="Shown to them when they try to sign in."
        maxLength={MOD_REASON_MAX + 50}
      />
      <TextAreaField
        label="Details (optional)"
        name="banDescription"
        value={form.values.banDescription}
        onValueChange={(v) => form.setValue('banDescription', v)}
        error={form.errors.banDescription}
        rows={2}
      />
      <fieldset
        className="field choice-field presets"
        aria-describedby={`${groupId}-end`}
        aria-invalid={form.errors.timeEnd ? true : undefined}
      >
        <legend>Duration</legend>
        <div className="choices">
          {BAN_PRESETS.map((p) => (
            <label key={p.id} className="choice">
              <input
                type="radio"
                name="ban-duration"
                value={p.id}
                checked={preset === p.id}
                onChange={() => {
                  setPreset(p.id);
                  if (p.id === 'custom' && form.values.timeEnd === '') {
                    form.setValue('timeEnd', toLocalInput(Date.now() + 3 * 86_400_000));
                  }
                }}
              />
              <span className="choice-text">{p.label}</span>
            </label>
          ))}
        </div>
        {preset === 'custom' ? (
          <div className="custom-end">
            <label htmlFor={`${groupId}-custom`}>Ends at (your time, {localTimeZone()})</label>
            <input
              id={`${groupId}-custom`}
              type="datetime-local"
              value={form.values.timeEnd}
              min={toLocalInput(now)}
              max={toLocalInput(TIME_END_MAX * 1000)}
              aria-invalid={form.errors.timeEnd ? true : undefined}
              onChange={(event) => form.setValue('timeEnd', event.target.value)}
            />
          </div>
        ) : null}
        <p
          id={`${groupId}-end`}
          className={form.errors.timeEnd ? 'field-message is-error' : 'field-message ends-at'}
          data-testid="ban-ends"
        >
          {form.errors.timeEnd ??
            ('timeEnd' in end
              ? isUntilLifted(end.timeEnd)
                ? 'No end date: lasts until a moderator lifts it'
                : `Ends ${formatDateTime(end.timeEnd)} (${formatRelative(end.timeEnd, now)})`
              : end.problem)}
        </p>
      </fieldset>
      <div className="button-row">
        <SubmitButton pending={form.pending} pendingLabel="Banning…">
          Ban {name}…
        </SubmitButton>
      </div>
      <FormStatus message={form.formError} />
    </form>
  );
}

function WarnForm({ user, perform, confirmThen }: FormProps) {
  const name = user.Username;
  const form = useForm({ warnReason: '', warnDescription: '' }, (v) => ({
    warnReason: reasonProblem(v.warnReason, MOD_REASON_MAX, true, 'A reason'),
    warnDescription: reasonProblem(v.warnDescription, MOD_DESCRIPTION_MAX, false, 'Details'),
  }));
  return (
    <form
      className="form mod-form"
      noValidate
      aria-label={`Warn ${name}`}
      onSubmit={form.handleSubmit(async (v) => {
        await confirmed(
          confirmThen,
          {
            title: `Warn ${name}?`,
            body: (
              <>
                <p className="form-intro">
                  <strong>{name}</strong> is signed out and shown this warning once, when they next sign in.
                  Their warning count goes up by one.
                </p>
                <p className="muted small">Reason: {v.warnReason.trim()}</p>
              </>
            ),
            confirmLabel: `Warn ${name}`,
            pendingLabel: 'Warning…',
          },
          async () => {
            await perform('warnuser', {
              warnReason: v.warnReason.trim(),
              warnDescription: v.warnDescription.trim(),
            });
          },
        );
      })}
    >
      <TextField
        label="Reason"
        name="warnReason"
        value={form.values.warnReason}
        onValueChange={(v) => form.setValue('warnReason', v)}
        error={form.errors.warnReason}
        hint="Shown to them at their next sign-in."
      />
      <TextAreaField
        label="Details (optional)"
        name="warnDescription"
        value={form.values.warnDescription}
        onValueChange={(v) => form.setValue('warnDescription', v)}
        error={form.errors.warnDescription}
        rows={2}
      />
      <div className="button-row">
        <SubmitButton pending={form.pending} pendingLabel="Warning…">
          Warn {name}…
        </SubmitButton>
      </div>
      <FormStatus message={form.formError} />
    </form>
  );
}

/** A new password for a user ranked below you; they are signed out everywhere and sign in with it. */
function PasswordResetForm({
  user,
  confirmThen,
  onDone,
}: {
  user: LookupUser;
  confirmThen: Confirm;
  onDone(text: string): void;
}) {
  const { authedCall } = useSession();
  const name = user.Username;
  const form = useForm({ newPassword: '', confirm: '' }, (v) => {
    const problem = passwordProblem(v.newPassword);
    return {
      newPassword: problem
        ? v.newPassword === ''
          ? 'Choose the new password'
          : `Password ${problem}`
        : undefined,
      confirm: !problem && v.confirm !== v.newPassword ? 'Passwords do not match' : undefined,
    };
  });
  return (
    <form
      className="form mod-form"
      noValidate
      aria-label={`Reset ${name}'s password`}
      onSubmit={form.handleSubmit(async (v) => {
        await confirmed(
          confirmThen,
          {
            title: `Reset ${name}'s password?`,
            body: (
              <p className="form-intro">
                <strong>{name}</strong> is signed out everywhere (windows, browsers, game clients) and signs
                in again with the new password. This host sends no email: tell them the password yourself.
              </p>
            ),
            confirmLabel: 'Reset password',
            pendingLabel: 'Resetting…',
          },
          async () => {
            await authedCall('resetUserPassword', { targetUserId: user.Id, newPassword: v.newPassword });
            onDone(`Set a new password for ${name}. They were signed out everywhere.`);
          },
        );
      })}
    >
      <p className="muted small">
        For someone who forgot theirs. Their current password stops working at once.
      </p>
      <NewPasswordFields form={form} name="newPassword" label="New password" />
      <div className="button-row">
        <SubmitButton pending={form.pending} pendingLabel="Resetting…">
          Reset password…
        </SubmitButton>
      </div>
      <FormStatus message={form.formError} />
    </form>
  );
}

function RankForm({ user, callerRank, perform, confirmThen }: FormProps & { callerRank: Rank }) {
  const name = user.Username;
  const options = grantableRanks(callerRank, user.Rank);
  const form = useForm({ newRank: String(options[0] ?? '') }, (v) => ({
    newRank: options.some((r) => String(r) === v.newRank) ? undefined : 'Pick a rank',
  }));
  const selectId = useId();
  if (options.length === 0) return <p className="muted">There is no other rank you may give {name}.</p>;
  return (
    <form
      className="form mod-form"
      noValidate
      aria-label={`Change ${name}'s rank`}
      onSubmit={form.handleSubmit(async (v) => {
        const newRank = Number(v.newRank);
        await confirmed(
          confirmThen,
          {
            title: `Change ${name}'s rank?`,
            body: (
              <p className="form-intro">
                <strong>{name}</strong> goes from {rankName(user.Rank)} to{' '}
                <strong>{rankName(newRank)}</strong>
                {newRank > user.Rank ? ', with everything that rank may do.' : '.'}
              </p>
            ),
            confirmLabel: `Make ${rankName(newRank)}`,
            pendingLabel: 'Saving…',
            tone: 'primary',
          },
          () => perform('setrank', { newRank }),
        );
      })}
    >
      <div className="field">
        <label htmlFor={selectId}>New rank</label>
        <select
          id={selectId}
          className="select"
          value={form.values.newRank}
          aria-invalid={form.errors.newRank ? true : undefined}
          aria-describedby={`${selectId}-message`}
          onChange={(event) => form.setValue('newRank', event.target.value)}
        >
          {options.map((rank) => (
            <option key={rank} value={rank}>
              {rankName(rank)}
            </option>
          ))}
        </select>
        <p
          id={`${selectId}-message`}
          className={form.errors.newRank ? 'field-message is-error' : 'field-message'}
        >
          {form.errors.newRank ??
            `Now ${rankName(user.Rank)}. You can give ranks below your own (${rankName(callerRank)}).`}
        </p>
      </div>
      <div className="button-row">
        <SubmitButton pending={form.pending} pendingLabel="Saving…">
          Change rank…
        </SubmitButton>
      </div>
      <FormStatus message={form.formError} />
    </form>
  );
}

function BadgesForm({ user, perform, confirmThen }: FormProps) {
  const name = user.Username;
  const [removeProblem, setRemoveProblem] = useState<string | null>(null);
  const form = useForm({ badgeName: '' }, (v) => {
    const normal = normaliseBadge(v.badgeName);
    if ('problem' in normal) return { badgeName: `Badge name ${normal.problem}` };
    return { badgeName: user.Badges.includes(normal.badge) ? `${name} already has that badge` : undefined };
  });
  return (
    <div className="mod-form">
      {user.Badges.length > 0 ? (
        <ul className="badge-chips" aria-label={`${name}'s badges`}>
          {user.Badges.map((badge) => (
            <li key={badge} className="badge-chip">
              <span>{badge}</span>
              <button
                type="button"
                className="chip-remove"
                aria-label={`Remove badge ${badge}`}
                onClick={() => {
                  setRemoveProblem(null);
                  confirmed(
                    confirmThen,
                    {
                      title: `Remove “${badge}” from ${name}?`,
                      body: <p className="form-intro">The badge disappears from {name}&apos;s profile.</p>,
                      confirmLabel: 'Remove badge',
                      pendingLabel: 'Removing…',
                    },
                    () => perform('removebadge', { badgeName: badge }),
                  ).catch((failure: unknown) => setRemoveProblem(describeError(failure)));
                }}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted small">{name} has no badges.</p>
      )}
      {removeProblem ? (
        <p className="row-error" role="alert">
          {removeProblem}
        </p>
      ) : null}
      <form
        className="form inline-form"
        noValidate
        aria-label={`Add a badge to ${name}`}
        onSubmit={form.handleSubmit(async (v) => {
          const normal = normaliseBadge(v.badgeName);
          if ('problem' in normal) return;
          await confirmed(
            confirmThen,
            {
              title: `Give ${name} the badge “${normal.badge}”?`,
              body: <p className="form-intro">Badges show on {name}&apos;s profile to everyone.</p>,
              confirmLabel: 'Add badge',
              pendingLabel: 'Adding…',
              tone: 'primary',
            },
            async () => {
              await perform('addbadge', { badgeName: normal.badge });
            },
          );
        })}
      >
        <TextField
          label="New badge"
          name="badgeName"
          value={form.values.badgeName}
          onValueChange={(v) => form.setValue('badgeName', v)}
          error={form.errors.badgeName}
          hint="Lowercase letters, digits, spaces, dot, dash, underscore."
        />
        <SubmitButton pending={form.pending} pendingLabel="Adding…">
          Add badge…
        </SubmitButton>
      </form>
      <FormStatus message={form.formError} />
    </div>
  );
}

type TextAreaProps = Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, 'id' | 'value' | 'onChange'>;

function TextAreaField({
  label,
  value,
  onValueChange,
  error,
  hint,
  ...rest
}: TextAreaProps & {
  label: string;
  value: string;
  onValueChange(value: string): void;
  error?: string | undefined;
  hint?: ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea
        {...rest}
        id={id}
        value={value}
        onChange={(event) => onValueChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={`${id}-message`}
      />
      <p id={`${id}-message`} className={error ? 'field-message is-error' : 'field-message'}>
        {error ?? hint ?? ''}
      </p>
    </div>
  );
}
