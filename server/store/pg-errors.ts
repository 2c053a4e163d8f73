import pg from 'pg';
import { StorageUnavailableError } from '../errors.js';
import { OUTDATED_HOST } from './pg-migrations.js';

/**
 * What a failed PostgreSQL call means for the store: run the transaction again (a serialization failure or a
 * deadlock: PostgreSQL rolled it back), the database is unavailable (unreachable, restarting, too slow: refuse
 * the request within its time limits), or anything else (a bug: let it through).
 */
export type PgFailure = 'retry' | 'unavailable' | 'other';

/** SQLSTATEs PostgreSQL answers when the same transaction may simply run again. */
const RETRY = new Set(['40001', '40P01']);
/**
 * SQLSTATEs of a database that cannot serve now: connection failures (08), shutting down or restarting (57P01-3),
 * too many connections (53300), a statement or lock wait past its limit (57014, 55P03), out of disk (53100).
 */
const UNAVAILABLE = /^(08|57P0|53)|^57014$|^55P03$/;

/** What a request is told when its host is older than the database (another host was updated). */
const OUTDATED_MESSAGE =
  'This host runs an older version of Hypernex Companion than its database (another host was updated): it saves ' +
  'nothing until it is updated too. Nothing was changed.';

/** Whether PostgreSQL refused a commit because a newer version of the program migrated the database. */
export function isOutdatedHost(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === OUTDATED_HOST;
}

export function classifyPgError(error: unknown): PgFailure {
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? '';
    if (RETRY.has(code)) return 'retry';
    return UNAVAILABLE.test(code) || code === OUTDATED_HOST ? 'unavailable' : 'other';
  }
  if (error instanceof StorageUnavailableError) return 'unavailable';
  // Not an answer from PostgreSQL: the connection could not be made, broke, or a client-side time limit passed.
  return isConnectionError(error) ? 'unavailable' : 'other';
}

/** An error of the connection itself (no answer from PostgreSQL): its outcome is unknown. */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return false;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && /^E[A-Z]+/.test(code)) return true;
  const message = error instanceof Error ? error.message : String(error);
  return /Connection terminated|timeout|Client has encountered a connection error|not queryable|Client was closed/i.test(
    message,
  );
}

/** `error` as the store throws it: unavailability becomes a StorageUnavailableError, the rest as it is. */
export function storageError(error: unknown): unknown {
  if (isOutdatedHost(error)) return new StorageUnavailableError(error, OUTDATED_MESSAGE);
  return classifyPgError(error) === 'unavailable' && !(error instanceof StorageUnavailableError)
    ? new StorageUnavailableError(error)
    : error;
}
