/**
 * Pronouns as the real server stores and answers them (wire reference 4.4). Clients send ids through updateBio
 * (`{nominativeId, accusativeId, reflexiveId?, independentId?, dependentId?, DisplayThree}`); what is stored and
 * read back is the words for those ids plus how to show them. Pure data and functions: the UI uses the same table
 * to offer the choices and to preview what others will see.
 */

/** The five grammatical cases, numbered as `Display` holds them. */
export const PronounCase = {
  Nominative: 0,
  Accusative: 1,
  Reflexive: 2,
  IndependentGenitive: 3,
  DependentGenitive: 4,
} as const;
export type PronounCase = (typeof PronounCase)[keyof typeof PronounCase];

/** The stored field for each case, in case order. */
export const PRONOUN_CASE_FIELDS = [
  'NominativeCase',
  'AccusativeCase',
  'ReflexivePronoun',
  'IndependentGenitiveCase',
  'DependentGenitiveCase',
] as const;
export type PronounCaseField = (typeof PRONOUN_CASE_FIELDS)[number];

export const PRONOUN_CASE_LABELS: Record<PronounCase, string> = {
  0: 'Nominative (they)',
  1: 'Accusative (them)',
  2: 'Reflexive (themselves)',
  3: 'Independent genitive (theirs)',
  4: 'Dependent genitive (their)',
};

/** The words of one pronoun set; a case the set has no word for is absent. */
export interface PronounSet {
  id: number;
  words: Partial<Record<PronounCaseField, string>>;
}

const set = (id: number, ...words: Array<string | undefined>): PronounSet => ({
  id,
  words: Object.fromEntries(
    PRONOUN_CASE_FIELDS.flatMap((field, i) => (words[i] === undefined ? [] : [[field, words[i]]])),
  ) as PronounSet['words'],
});

/** Every pronoun set of the real server, by id (-3..13), in the order a picker shows them. */
export const PRONOUN_SETS: readonly PronounSet[] = [
  set(0, 'He', 'Him', 'Himself', 'His', 'His'),
  set(1, 'She', 'Her', 'Herself', 'Hers', 'Her'),
  set(2, 'They', 'Them', 'Themselves'),
  set(3, 'It', 'It', 'Itself', undefined, 'Its'),
  set(4, 'Any', 'Any'),
  set(5, 'Ze', 'Zir', 'Zirself', 'Zirs'),
  set(6, 'Ze', 'Hir', 'Hirself', 'Hirs'),
  set(7, 'Xe', 'Xem', 'Xyrself', 'Xyrs'),
  set(8, 'Ey', 'Em', 'Eirself', 'Eirs'),
  set(9, 'Fae', 'Faer', 'Faerself', 'Faers'),
  set(10, 'Em', 'Eir', 'Eirself', 'Eirs'),
  set(11, 'Ve', 'Ver', 'Verself', 'Vis'),
  set(12, 'Ne', 'Nem', 'Nemself', 'Nirs'),
  set(13, 'Per', 'Pers', 'Perself', 'Pers'),
  set(-1, 'Other', 'Other'),
  set(-2, 'Ask', 'Ask'),
  set(-3, 'Avoid', 'Avoid'),
];

const BY_ID = new Map(PRONOUN_SETS.map((s) => [s.id, s]));

export const PRONOUN_ID_MIN = -3;
export const PRONOUN_ID_MAX = 13;

/** What updateBio accepts for `Bio.Pronouns` besides the string "remove" (HypernexSharp's SetPronouns). */
export interface PronounIds {
  nominativeId: number;
  accusativeId: number;
  reflexiveId?: number;
  independentId?: number;
  dependentId?: number;
  DisplayThree: boolean;
  /** Our addition: which three cases to show (default nominative, accusative, reflexive). */
  Display?: [number, number, number];
}

/** `Bio.Pronouns` as stored and answered, as the real server's createPronouns builds it (reference 4.4). */
export interface PronounsDto {
  NominativeCase: string;
  AccusativeCase: string;
  ReflexivePronoun?: string;
  IndependentGenitiveCase?: string;
  DependentGenitiveCase?: string;
  /** Always false on the real server. */
  Action: boolean;
  /** Show three cases (he/him/himself) instead of two (he/him). */
  DisplayThree: boolean;
  /** The cases to show, by number (PronounCase). */
  Display: [number, number, number];
}

export const DEFAULT_PRONOUN_DISPLAY: [number, number, number] = [
  PronounCase.Nominative,
  PronounCase.Accusative,
  PronounCase.Reflexive,
];

function wordOf(id: number | undefined, field: PronounCaseField): string | undefined {
  return id === undefined ? undefined : BY_ID.get(id)?.words[field];
}

/** The stored shape for the ids a client sent. Ids must be valid (-3..13); the schema checks that first. */
export function pronounsFromIds(ids: PronounIds): PronounsDto {
  const out: PronounsDto = {
    NominativeCase: wordOf(ids.nominativeId, 'NominativeCase') ?? '',
    AccusativeCase: wordOf(ids.accusativeId, 'AccusativeCase') ?? '',
    Action: false,
    DisplayThree: ids.DisplayThree,
    Display: ids.Display ? [...ids.Display] : [...DEFAULT_PRONOUN_DISPLAY],
  };
  const reflexive = wordOf(ids.reflexiveId, 'ReflexivePronoun');
  if (reflexive !== undefined) out.ReflexivePronoun = reflexive;
  const independent = wordOf(ids.independentId, 'IndependentGenitiveCase');
  if (independent !== undefined) out.IndependentGenitiveCase = independent;
  const dependent = wordOf(ids.dependentId, 'DependentGenitiveCase');
  if (dependent !== undefined) out.DependentGenitiveCase = dependent;
  return out;
}

function isIdShape(value: object): value is PronounIds {
  return 'nominativeId' in value && typeof (value as { nominativeId: unknown }).nominativeId === 'number';
}

/**
 * The answerable shape of whatever a Bio holds: the stored shape as it is, or ids stored by earlier versions of
 * this host (which kept updateBio's input as sent) converted on the way out. Anything else reads as no pronouns.
 */
export function answeredPronouns(stored: unknown): PronounsDto | undefined {
  if (stored === null || typeof stored !== 'object') return undefined;
  if (isIdShape(stored)) return pronounsFromIds(stored);
  const dto = stored as Partial<PronounsDto>;
  if (typeof dto.NominativeCase !== 'string' || typeof dto.AccusativeCase !== 'string') return undefined;
  return {
    ...(dto as PronounsDto),
    Display: Array.isArray(dto.Display) ? [...dto.Display] : [...DEFAULT_PRONOUN_DISPLAY],
  };
}

/** A Bio with its Pronouns in the answered shape (or none), leaving every other field as it is. */
export function withAnsweredPronouns<B extends { Pronouns?: unknown }>(bio: B): B {
  if (bio.Pronouns === undefined) return bio;
  const { Pronouns, ...rest } = bio;
  const answered = answeredPronouns(Pronouns);
  return (answered === undefined ? rest : { ...rest, Pronouns: answered }) as B;
}

/** How the pronouns read, e.g. "He/Him/Himself" (three cases) or "They/Them" (two). */
export function pronounText(pronouns: PronounsDto): string {
  const shown = pronouns.DisplayThree ? pronouns.Display : pronouns.Display.slice(0, 2);
  return shown
    .map((c) => {
      const field = PRONOUN_CASE_FIELDS[c];
      return field === undefined ? undefined : pronouns[field];
    })
    .filter((w): w is string => typeof w === 'string' && w !== '')
    .join('/');
}
