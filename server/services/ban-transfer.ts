import {
  BAN_IMPORT_MAX_BYTES,
  BAN_IMPORT_MAX_LINES,
  BAN_UNTIL_LIFTED,
  type AuditFilter,
  type BanImportResult,
  type BanRecordDto,
  type ExportFormat,
} from '../protocol/audit.js';
import { ErrorCode } from '../protocol/errors.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import type { AuditLog, AuditLogEntry } from './audit-log.js';
import { unixSeconds, type Clock } from './context.js';
import { csvLine, parseCsv, undefuse } from './csv.js';
import type { ModerationService } from './moderation.js';

/**
 * Export of the audit log and of the bans in force (CSV or JSON), and import of a bans file on another host: each
 * imported ban is a normal `banuser` action (rank rules, log entry), matched to a user by username.
 */
const LOG_COLUMNS = [
  'time',
  'timeUnix',
  'action',
  'moderatorId',
  'moderatorName',
  'targetUserId',
  'targetId',
  'targetName',
  'fields',
] as const;
export const BAN_COLUMNS = [
  'username',
  'userId',
  'banReason',
  'banDescription',
  'banBegin',
  'banEnd',
  'untilLifted',
] as const;

/** The audit log matching `filter` as a file, a chunk at a time. */
export async function* exportLog(
  audit: Pick<AuditLog, 'all'>,
  filter: AuditFilter,
  format: ExportFormat,
): AsyncGenerator<string> {
  if (format === 'csv') yield csvLine(LOG_COLUMNS);
  else yield '[';
  let first = true;
  for await (const entry of audit.all(filter)) {
    if (format === 'csv') yield csvLine(logRow(entry));
    else yield `${first ? '' : ','}\n${JSON.stringify(entry)}`;
    first = false;
  }
  if (format === 'json') yield '\n]\n';
}

function logRow(entry: AuditLogEntry): unknown[] {
  return [
    new Date(entry.time * 1000).toISOString(),
    entry.time,
    entry.action,
    entry.moderatorId,
    entry.moderatorName,
    entry.targetUserId ?? '',
    'targetId' in entry ? entry.targetId : entry.targetUserId,
    entry.targetName,
    JSON.stringify(entry.fields),
  ];
}

export function exportBans(bans: BanRecordDto[], format: ExportFormat): string {
  if (format === 'json') return `${JSON.stringify({ bans }, null, 2)}\n`;
  return csvLine(BAN_COLUMNS) + bans.map((ban) => csvLine(BAN_COLUMNS.map((c) => ban[c]))).join('');
}

interface ImportRow {
  line: number;
  username: string;
  banReason: string;
  banDescription: string;
  banEnd: number;
}

type Problem = { line: number; username: string; reason: string };

/** Refuses the whole file (strict mode, or a file past the bounds): nothing is imported. */
function refuse(message: string, line?: number): never {
  throw new AppError(
    ErrorCode.INVALID_PARAMETERS,
    line === undefined ? `Import refused: ${message}.` : `Import refused: line ${line}: ${message}.`,
    { content: line === undefined ? message : `line ${line}: ${message}` },
  );
}

/** The bans of a file, and the lines that are not a ban (each with why). */
export function parseBans(content: string, format: ExportFormat): { rows: ImportRow[]; bad: Problem[] } {
  if (Buffer.byteLength(content, 'utf8') > BAN_IMPORT_MAX_BYTES) {
    refuse(`the file is larger than ${BAN_IMPORT_MAX_BYTES} bytes`);
  }
  const records = format === 'json' ? jsonRecords(content) : csvRecords(content);
  if (records.length > BAN_IMPORT_MAX_LINES) refuse(`the file holds more than ${BAN_IMPORT_MAX_LINES} bans`);
  const rows: ImportRow[] = [];
  const bad: Problem[] = [];
  for (const { line, record } of records) {
    const username = typeof record.username === 'string' ? record.username.trim() : '';
    const banEnd = Number(
      record.untilLifted === true || record.untilLifted === 'true' ? BAN_UNTIL_LIFTED : record.banEnd,
    );
    const banReason = typeof record.banReason === 'string' ? record.banReason.trim() : '';
    const reason =
      typeof record.malformed === 'string'
        ? record.malformed
        : username === ''
          ? 'no username'
          : banReason === ''
            ? 'no banReason'
            : !Number.isInteger(banEnd) || banEnd <= 0
              ? 'banEnd is not a Unix time in seconds'
              : null;
    if (reason) bad.push({ line, username, reason });
    else {
      const banDescription = typeof record.banDescription === 'string' ? record.banDescription : '';
      rows.push({ line, username, banReason, banDescription, banEnd: Math.min(banEnd, BAN_UNTIL_LIFTED) });
    }
  }
  return { rows, bad };
}

type RecordAt = { line: number; record: Record<string, unknown> };

function jsonRecords(content: string): RecordAt[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch (error) {
    refuse(`the file is not JSON (${(error as Error).message})`);
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { bans?: unknown } | null)?.bans;
  if (!Array.isArray(list)) refuse('the JSON holds no list of bans (expected {"bans": [...]})');
  if (list.length > BAN_IMPORT_MAX_LINES) refuse(`the file holds more than ${BAN_IMPORT_MAX_LINES} bans`);
  // JSON has no useful lines: a ban is named by its place in the list, from 1.
  return list.map((record, i) => ({
    line: i + 1,
    record: record !== null && typeof record === 'object' ? (record as Record<string, unknown>) : {},
  }));
}

function csvRecords(content: string): RecordAt[] {
  const parsed = parseCsv(content.replace(/^\uFEFF/, ''), BAN_IMPORT_MAX_LINES + 1);
  if ('problem' in parsed) {
    if (parsed.problem.startsWith('more than'))
      refuse(`the file holds more than ${BAN_IMPORT_MAX_LINES} bans`);
    refuse(parsed.problem, parsed.line);
  }
  const [header, ...rows] = parsed.rows;
  const names = (header?.cells ?? []).map((c) => undefuse(c).trim());
  if (!names.includes('username')) refuse('the first line must name the columns, username among them', 1);
  return rows.map(({ line, cells }) => {
    if (cells.length !== names.length) {
      return { line, record: { malformed: `${cells.length} cells where the header has ${names.length}` } };
    }
    return { line, record: Object.fromEntries(names.map((n, i) => [n, undefuse(cells[i]!)])) };
  });
}

type ImportDeps = {
  users: { byUsername(name: string): Promise<StoredUser | undefined> };
  moderation: Pick<ModerationService, 'act'>;
  clock: Clock;
};

/**
 * Imports a bans file as `caller`. Strict: any bad line, unknown user, user ranked too high or ban already over
 * refuses the file, naming the line, before anything is done. Lenient: imports what it can, lists the rest.
 */
export async function importBans(
  deps: ImportDeps,
  caller: StoredUser,
  input: { content: string; format: ExportFormat; mode: 'strict' | 'lenient' },
): Promise<BanImportResult> {
  const { rows, bad } = parseBans(input.content, input.format);
  const skipped: Problem[] = [...bad];
  const ready: Array<ImportRow & { user: StoredUser }> = [];
  const now = unixSeconds(deps.clock);
  for (const row of rows) {
    const user = await deps.users.byUsername(row.username);
    const reason = !user
      ? 'no user has that username here'
      : user.Id === caller.Id || user.Rank >= caller.Rank
        ? 'ranked the same as or above you'
        : row.banEnd <= now
          ? 'the ban has already ended'
          : null;
    if (reason || !user) skipped.push({ line: row.line, username: row.username, reason: reason ?? '' });
    else ready.push({ ...row, user });
  }
  skipped.sort((a, b) => a.line - b.line);
  const firstBad = skipped[0];
  if (input.mode === 'strict' && firstBad)
    refuse(`${firstBad.reason} (${firstBad.username || 'no username'})`, firstBad.line);
  const imported: BanImportResult['Imported'] = [];
  for (const row of ready) {
    try {
      const fields = { banReason: row.banReason, banDescription: row.banDescription, timeEnd: row.banEnd };
      await deps.moderation.act(caller, 'banuser', row.user.Id, fields);
      imported.push({ line: row.line, username: row.username });
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      skipped.push({ line: row.line, username: row.username, reason: error.message });
    }
  }
  return { Imported: imported, Skipped: skipped.sort((a, b) => a.line - b.line) };
}
