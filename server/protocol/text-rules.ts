import type { z } from 'zod';

/**
 * The one rule for free text people give the host (issue 27): names, labels, reasons, status texts, tags and
 * descriptions. Other people read this text (in the UI, in game clients, in the moderation log), so it must not
 * carry characters that hide, reorder or fake what they see.
 *
 * Refused, never removed, in every kind of text. A removal would store something other than what the person typed
 * without telling them; a refusal names the field and the character, so the form shows it and they fix it:
 * - control characters: C0 (U+0000-U+001F), DEL and C1 (U+007F-U+009F), except the whitespace a multi-line
 *   text needs (tab, line feed, and a carriage return only as part of CRLF, which Windows clients send);
 * - text-direction embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): they reorder what follows
 *   them ("Trojan Source"), so a name can show something other than what it holds;
 * - line and paragraph separators (U+2028, U+2029): a hidden line break that some screens honour and others do not;
 * - invisible characters that no language needs and that hide or split words: soft hyphen U+00AD, Mongolian vowel
 *   separator U+180E, zero-width space U+200B, word joiner and invisible operators U+2060-U+2064, deprecated
 *   format controls U+206A-U+206F, byte-order mark U+FEFF, interlinear annotation U+FFF9-U+FFFB, and the Hangul
 *   filler letters U+3164 and U+FFA0 that draw as nothing (modern Korean never uses them);
 * - broken UTF-16 (a lone surrogate): not text, and PostgreSQL refuses to store it.
 *
 * Kept, because real text needs them: zero-width non-joiner and joiner (U+200C, U+200D: emoji sequences such as
 * family and profession emoji, Persian and Indic scripts), variation selectors (emoji presentation), tag characters
 * (subdivision flags), the direction marks U+200E, U+200F and U+061C (they set the direction of neutral characters
 * in mixed-direction text and reorder nothing else), combining marks and every kind of space.
 *
 * Kinds: `line` for one-line text (display names, status texts, asset names, tags, labels, moderation reasons),
 * `multiline` for descriptions, which may also hold tabs and line breaks.
 */
export type TextKind = 'line' | 'multiline';

/** Refused in every kind: DEL and C1, separators, direction controls, invisible characters. */
const ALWAYS =
  '\\u007F-\\u009F\\u00AD\\u180E\\u200B\\u2028\\u2029\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u206F\\u3164\\uFEFF\\uFFA0\\uFFF9-\\uFFFB';
/** A high surrogate with no low one after it, or a low one with no high one before it. */
const LONE_SURROGATE = '[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';

// No `u` flag on purpose: the patterns look at UTF-16 code units, which is how a lone surrogate is found.
const REFUSED: Record<TextKind, RegExp> = {
  line: new RegExp(`[\\u0000-\\u001F${ALWAYS}]|${LONE_SURROGATE}`),
  multiline: new RegExp(
    `[\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F${ALWAYS}]|\\r(?!\\n)|${LONE_SURROGATE}`,
  ),
};

/**
 * Why `value` is not acceptable text of this kind, or null. The reason reads after the field's name ("Name must
 * not contain ...") and says which character and where, since most of them cannot be seen.
 */
export function textProblem(value: string, kind: TextKind): string | null {
  const found = REFUSED[kind].exec(value);
  if (!found) return null;
  const unit = found[0].charCodeAt(0);
  // Counted in characters as a person counts them (code points), from 1.
  const at = `at character ${[...value.slice(0, found.index)].length + 1}`;
  return `${reasonFor(unit, kind)} (${codePoint(unit)} ${at})`;
}

function reasonFor(unit: number, kind: TextKind): string {
  if (unit >= 0xd800 && unit <= 0xdfff) return 'must be valid Unicode text';
  if (unit === 0x0a || unit === 0x0d || unit === 0x2028 || unit === 0x2029) {
    return kind === 'line' ? 'must be a single line' : 'may only break lines with a line feed (\\n)';
  }
  if (unit <= 0x1f || (unit >= 0x7f && unit <= 0x9f)) return 'must not contain control characters';
  if ((unit >= 0x202a && unit <= 0x202e) || (unit >= 0x2066 && unit <= 0x2069)) {
    return 'must not contain text-direction controls';
  }
  return 'must not contain invisible characters';
}

function codePoint(unit: number): string {
  return `U+${unit.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Adds the text rule to a string schema; a refusal names its field as every other field rule does. */
export function withTextRule<T extends z.ZodString>(schema: T, kind: TextKind): T {
  return schema.superRefine((value, ctx) => {
    const problem = textProblem(value, kind);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  });
}

/** One-line text: display names, status texts, asset names, tags, labels, moderation reasons. */
export const lineText = <T extends z.ZodString>(schema: T): T => withTextRule(schema, 'line');

/** Descriptions: tabs and line breaks allowed. */
export const multilineText = <T extends z.ZodString>(schema: T): T => withTextRule(schema, 'multiline');
