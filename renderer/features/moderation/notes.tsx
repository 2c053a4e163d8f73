import { useEffect, useId, useState } from 'react';
import { USER_NOTE_MAX, type UserNoteDto } from '../../../server/protocol/moderation-tools.js';
import { textProblem } from '../../../server/protocol/text-rules.js';
import { describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import { formatDateTime } from '../../shared/time.js';
import { Alert, FormStatus, SubmitButton } from '../../shared/ui.js';
import type { LookupUser } from './moderation-model.js';

function noteProblem(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return 'Write the note first';
  if (trimmed.length > USER_NOTE_MAX) return `At most ${USER_NOTE_MAX} characters (now ${trimmed.length})`;
  const hidden = textProblem(trimmed, 'multiline');
  return hidden ? `The note ${hidden}` : undefined;
}

/**
 * Private notes on a user (issue 28): moderators ranked above the user read and add them; the user never sees
 * them. Authors delete their own notes, Admin and above any.
 */
export function UserNotes({ user }: { user: LookupUser }) {
  const { authedCall } = useSession();
  const [notes, setNotes] = useState<UserNoteDto[] | null>(null);
  const [text, setText] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [formError, setFormError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const id = useId();

  useEffect(() => {
    let live = true;
    authedCall<{ Notes: UserNoteDto[] }>('userNotes', { targetUserId: user.Id })
      .then(({ Notes }) => live && setNotes(Notes))
      .catch((failure: unknown) => live && setFormError(describeError(failure)));
    return () => {
      live = false;
    };
    // authedCall is a new function each render; the user is what matters.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [user.Id]);

  async function submit(): Promise<void> {
    const problem = noteProblem(text);
    setError(problem);
    if (problem) return;
    setPending(true);
    setFormError(null);
    try {
      const { Note } = await authedCall<{ Note: UserNoteDto }>('addUserNote', {
        targetUserId: user.Id,
        text,
      });
      setNotes((old) => [Note, ...(old ?? [])]);
      setText('');
    } catch (failure) {
      setFormError(describeError(failure));
    } finally {
      setPending(false);
    }
  }

  async function remove(note: UserNoteDto): Promise<void> {
    try {
      await authedCall('removeUserNote', { noteId: note.id });
      setNotes((old) => (old ?? []).filter((n) => n.id !== note.id));
    } catch (failure) {
      setFormError(describeError(failure));
    }
  }

  return (
    <section className="mod-notes" aria-labelledby={`${id}-title`} data-testid="user-notes">
      <h3 id={`${id}-title`} className="subheading">
        Private notes on {user.Username}
      </h3>
      <p className="muted small">
        Only moderators ranked above {user.Username} see these; {user.Username} never does.
      </p>
      <form
        className="form"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          submit().catch(() => undefined);
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-text`}>New note</label>
          <textarea
            id={`${id}-text`}
            value={text}
            rows={3}
            maxLength={USER_NOTE_MAX + 100}
            onChange={(event) => setText(event.target.value)}
            aria-invalid={error ? true : undefined}
            aria-describedby={`${id}-message`}
          />
          <p id={`${id}-message`} className={error ? 'field-message is-error' : 'field-message'}>
            {error ?? `Up to ${USER_NOTE_MAX} characters.`}
          </p>
        </div>
        <SubmitButton pending={pending} pendingLabel="Adding…">
          Add note
        </SubmitButton>
        <FormStatus message={formError} />
      </form>
      {notes === null ? null : notes.length === 0 ? (
        <p className="muted small">No notes yet.</p>
      ) : (
        <ul className="log-list compact notes-list">
          {notes.map((note) => (
            <li key={note.id} className="note-row" data-testid="user-note">
              <p className="note-text">{note.text}</p>
              <p className="muted small">
                {note.authorName}, {formatDateTime(note.createdAt)}
                {note.canDelete ? (
                  <>
                    {' · '}
                    <button
                      type="button"
                      className="link-button small"
                      aria-label={`Delete note by ${note.authorName} from ${formatDateTime(note.createdAt)}`}
                      onClick={() => {
                        remove(note).catch(() => undefined);
                      }}
                    >
                      Delete
                    </button>
                  </>
                ) : null}
              </p>
            </li>
          ))}
        </ul>
      )}
      {notes === null && !formError ? <Alert tone="info">Loading notes…</Alert> : null}
    </section>
  );
}
