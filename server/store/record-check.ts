import { join, relative, sep } from 'node:path';
import type { z } from 'zod';
import { CorruptDataFileError } from './durable-file.js';
import { logEntrySchema, recordSchema } from './record-schemas.js';

/**
 * A record read at startup that does not have its schema's shape (record-schemas.ts). The start stops before
 * anything is written; the message names the file (relative to the data folder), the record in it and what is
 * wrong with which field, for the operator who has to mend it.
 */
export class InvalidRecordError extends CorruptDataFileError {
  constructor(
    readonly dir: string,
    /** The file, relative to the data folder, with `/` between folders (e.g. `wal/3.log`). */
    readonly file: string,
    /** Which record of the file (e.g. `users/user_1`, `line 3`, `line 2, users/user_1`); null: the whole file. */
    readonly record: string | null,
    readonly problems: string[],
  ) {
    super(join(dir, file), new Error(problems.join('; ')));
    this.name = 'InvalidRecordError';
    const what = record === null ? 'is invalid' : `holds an invalid record (${record})`;
    const mend = record === null ? 'correct it' : 'correct or remove that record';
    this.message =
      `Data file ${file} ${what}: ${problems.join('; ')}. The host did not start and changed nothing in the data ` +
      `folder ${dir}: ${mend} (or restore the file from a backup), then start again.`;
  }
}

/** Problems shown in a refusal; one bad record usually has one, a record of another kind many. */
const SHOWN_PROBLEMS = 3;

/**
 * Checks what a start reads from the data folder `dir` against the schemas. The checks return the problems (null
 * when there are none) and `refuse` makes the refusal, so a file's name and a record's place are only spelled out
 * for a record that is refused, not for each of the many that pass.
 */
export class FolderChecker {
  constructor(readonly dir: string) {}

  /** `path` (absolute) relative to the data folder, as the refusal names it. */
  name(path: string): string {
    return relative(this.dir, path).split(sep).join('/');
  }

  /**
   * What is wrong with a version of record `id` of `collection`. null data is a deletion; a collection without a
   * schema (a test's own) is not checked.
   */
  recordProblems(collection: string, id: string, data: unknown): string[] | null {
    if (data === null) return null;
    const schema = recordSchema(collection, id);
    return schema ? problemsOf(schema, data) : null;
  }

  /** What is wrong with an entry of the store log `log` (a log without a schema, a test's own, is not checked). */
  logEntryProblems(log: string, entry: unknown): string[] | null {
    const schema = logEntrySchema(log);
    return schema ? problemsOf(schema, entry) : null;
  }

  /** The refusal of record `record` of `file` (relative to the data folder; record null: the whole file). */
  refuse(file: string, record: string | null, problems: string[]): InvalidRecordError {
    return new InvalidRecordError(this.dir, file, record, problems);
  }

  /** Checks any other value read from `file`; throws its refusal. */
  value(file: string, record: string | null, schema: z.ZodType, value: unknown): void {
    const problems = problemsOf(schema, value);
    if (problems) throw this.refuse(file, record, problems);
  }
}

/** What is wrong with `value` for `schema`, in words (null when nothing is). */
export function problemsOf(schema: z.ZodType, value: unknown): string[] | null {
  // The parsed value is checked as it is (the schema's output, a copy, is not kept). Without reportInput zod takes
  // its fast path (two to five times faster on a user record); only a refused record is parsed again, for the
  // values its problems quote.
  if (schema.safeParse(value).success) return null;
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return null;
  const issues = result.error.issues;
  const shown = issues.slice(0, SHOWN_PROBLEMS).map(describeIssue);
  if (issues.length > SHOWN_PROBLEMS) shown.push(`and ${issues.length - SHOWN_PROBLEMS} more problems`);
  return shown;
}

/** e.g. `Bio.Status`, `AccountTokens[0].hash`; the record itself when the path is empty. */
function fieldName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? 'the record' : out;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'a boolean (true or false)',
  array: 'a list',
  object: 'an object',
  record: 'an object',
  null: 'null',
};

/** How a value found in a file reads in a refusal: its type for containers, the value (shortened) otherwise. */
function found(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') {
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    return JSON.stringify(shown);
  }
  return String(value);
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'boolean') return 'a boolean';
  return `a ${typeof value}`;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldName(issue.path);
  switch (issue.code) {
    case 'invalid_type': {
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      if (issue.input === undefined) return `${field} is missing (expected ${expected})`;
      const actual = issue.expected === 'int' ? found(issue.input) : typeOf(issue.input);
      return `${field} should be ${expected}, not ${actual}`;
    }
    case 'invalid_value':
      return `${field} should be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, not ${found(issue.input)}`;
    case 'invalid_union':
      if ('options' in issue && Array.isArray(issue.options))
        return `${field} should be one of ${issue.options.map((v) => JSON.stringify(v)).join(', ')}`;
      return `${field} matches none of its accepted forms`;
    case 'too_small':
      return `${field} should be at least ${String(issue.minimum)}, not ${found(issue.input)}`;
    case 'too_big':
      return `${field} should be at most ${String(issue.maximum)}, not ${found(issue.input)}`;
    default:
      return `${field}: ${issue.message}`;
  }
}
