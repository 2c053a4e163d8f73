import { useId, useState, type FormEvent } from 'react';
import {
  answeredPronouns,
  DEFAULT_PRONOUN_DISPLAY,
  PRONOUN_SETS,
  pronounsFromIds,
  pronounText,
  type PronounCaseField,
  type PronounIds,
  type PronounsDto,
} from '../../../server/protocol/pronouns.js';
import type { BioDto } from '../../../server/protocol/types.js';
import { describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import { Alert, FormStatus } from '../../shared/ui.js';

const CASES: Array<{ field: PronounCaseField; key: keyof PronounIds; label: string; optional: boolean }> = [
  { field: 'NominativeCase', key: 'nominativeId', label: 'Subject (they)', optional: false },
  { field: 'AccusativeCase', key: 'accusativeId', label: 'Object (them)', optional: false },
  { field: 'ReflexivePronoun', key: 'reflexiveId', label: 'Reflexive (themselves)', optional: true },
  { field: 'IndependentGenitiveCase', key: 'independentId', label: 'Possessive (theirs)', optional: true },
  {
    field: 'DependentGenitiveCase',
    key: 'dependentId',
    label: 'Possessive before a noun (their)',
    optional: true,
  },
];

type Choice = Record<
  'nominativeId' | 'accusativeId' | 'reflexiveId' | 'independentId' | 'dependentId',
  string
>;

/** The ids whose words a stored set shows (the first set with that word, as several share some words). */
function choiceOf(stored: PronounsDto | undefined): Choice {
  const idFor = (field: PronounCaseField, fallback: string): string => {
    const word = stored?.[field];
    if (word === undefined) return stored ? '' : fallback;
    const found = PRONOUN_SETS.find((s) => s.words[field] === word);
    return found ? String(found.id) : '';
  };
  return {
    nominativeId: idFor('NominativeCase', '2'),
    accusativeId: idFor('AccusativeCase', '2'),
    reflexiveId: idFor('ReflexivePronoun', '2'),
    independentId: idFor('IndependentGenitiveCase', ''),
    dependentId: idFor('DependentGenitiveCase', ''),
  };
}

function idsOf(choice: Choice, displayThree: boolean): PronounIds {
  const num = (v: string): number | undefined => (v === '' ? undefined : Number(v));
  return {
    nominativeId: Number(choice.nominativeId),
    accusativeId: Number(choice.accusativeId),
    ...(num(choice.reflexiveId) !== undefined && { reflexiveId: num(choice.reflexiveId) }),
    ...(num(choice.independentId) !== undefined && { independentId: num(choice.independentId) }),
    ...(num(choice.dependentId) !== undefined && { dependentId: num(choice.dependentId) }),
    DisplayThree: displayThree,
  };
}

/** Pronouns with the real server's choices (wire reference 4.4), as others see them in the game and dashboard. */
export function PronounsCard() {
  const { user, authedCall, setUser } = useSession();
  const stored = answeredPronouns(user.Bio.Pronouns);
  const [choice, setChoice] = useState<Choice>(() => choiceOf(stored));
  const [displayThree, setDisplayThree] = useState(stored?.DisplayThree ?? true);
  const [pending, setPending] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const baseId = useId();
  const preview = pronounText({
    ...pronounsFromIds(idsOf(choice, displayThree)),
    Display: DEFAULT_PRONOUN_DISPLAY,
  });

  async function save(pronouns: PronounIds | 'remove'): Promise<void> {
    setPending(true);
    setProblem(null);
    setSaved(null);
    try {
      const { Bio } = await authedCall<{ Bio: BioDto }>('updateBio', { bio: { Pronouns: pronouns } });
      setUser((u) => ({ ...u, Bio }));
      if (pronouns === 'remove') {
        setChoice(choiceOf(undefined));
        setSaved('Pronouns removed.');
      } else setSaved(`Saved: ${Bio.Pronouns ? pronounText(Bio.Pronouns) : ''}`);
    } catch (error) {
      setProblem(describeError(error));
    } finally {
      setPending(false);
    }
  }

  function submit(event: FormEvent): void {
    event.preventDefault();
    void save(idsOf(choice, displayThree));
  }

  return (
    <section className="card" aria-labelledby="pronouns-title">
      <h2 id="pronouns-title" className="card-title">
        Pronouns
      </h2>
      <p className="muted small">
        Shown on your profile to everyone, in the game and on the web. Currently:{' '}
        <strong data-testid="current-pronouns">{stored ? pronounText(stored) : 'not set'}</strong>
      </p>
      <form className="form" onSubmit={submit} aria-label="Pronouns">
        <div className="field-row pronoun-grid">
          {CASES.map(({ field, key, label, optional }) => {
            const id = `${baseId}-${key}`;
            return (
              <div className="field" key={key}>
                <label htmlFor={id}>{label}</label>
                <select
                  id={id}
                  className="select"
                  value={choice[key as keyof Choice]}
                  onChange={(e) => setChoice((c) => ({ ...c, [key]: e.target.value }))}
                >
                  {optional ? <option value="">None</option> : null}
                  {PRONOUN_SETS.filter((s) => s.words[field] !== undefined).map((s) => (
                    <option key={s.id} value={s.id}>
                      {s.words[field]}
                      {s.id < 0 ? '' : ` (${s.words.NominativeCase}/${s.words.AccusativeCase})`}
                    </option>
                  ))}
                </select>
              </div>
            );
          })}
        </div>
        <label className="check">
          <input type="checkbox" checked={displayThree} onChange={(e) => setDisplayThree(e.target.checked)} />{' '}
          Show three words instead of two
        </label>
        <p className="small">
          Others will see: <strong data-testid="pronoun-preview">{preview}</strong>
        </p>
        <div className="button-row">
          <button type="submit" className="button primary" disabled={pending}>
            {pending ? 'Saving…' : 'Save pronouns'}
          </button>
          {stored ? (
            <button
              type="button"
              className="button ghost"
              disabled={pending}
              onClick={() => void save('remove')}
            >
              Remove pronouns
            </button>
          ) : null}
        </div>
        {saved ? <Alert tone="success">{saved}</Alert> : null}
        <FormStatus message={problem} />
      </form>
    </section>
  );
}
