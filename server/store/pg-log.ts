import type { LogFilter, LogPage, ReadLog } from './seam.js';

/** A field a history may be filtered by: a plain name, written into the query as a JSON key. */
const FIELD = /^[A-Za-z][A-Za-z0-9]*$/;
const LOG_NAME = /^[a-z][a-z0-9-]*$/;

interface Source {
  query<R extends Record<string, unknown>>(text: string, values: unknown[], name?: string): Promise<R[]>;
}

/**
 * A history (the moderation log) on PostgreSQL: rows of `hx_log_entries`, numbered in commit order. A host holds
 * none of it: each page is a query, filtered on the entry's own fields (migration 5 indexes those the moderation
 * panel filters by), newest first.
 */
export class PgLog<E extends { seq: number }, K> implements ReadLog<E, K> {
  constructor(
    readonly name: string,
    private readonly source: Source,
  ) {}

  async query(filter: LogFilter<K>, offset: number, limit: number): Promise<LogPage<E>> {
    if (!LOG_NAME.test(this.name)) throw new Error(`history name ${JSON.stringify(this.name)} is not plain`);
    // The log's name written in (not a parameter), so PostgreSQL uses the indexes made for that log.
    const values: unknown[] = [];
    const where = [`log = '${this.name}'`];
    for (const [field, value] of Object.entries(filter).sort(([a], [b]) => a.localeCompare(b))) {
      if (value === undefined) continue;
      if (!FIELD.test(field))
        throw new Error(`cannot filter history ${this.name} by ${JSON.stringify(field)}`);
      where.push(...conditionsOf(field, value, values));
    }
    const condition = where.join(' AND ');
    // One statement: the page and the count from the same snapshot.
    const rows = await this.source.query<{ seq: string; entry: E; total: string }>(
      `SELECT seq, entry, count(*) OVER () AS total FROM hx_log_entries WHERE ${condition}
        ORDER BY seq DESC OFFSET $${values.length + 1} LIMIT $${values.length + 2}`,
      [...values, offset, limit],
    );
    if (rows.length === 0 && offset > 0) {
      // Past the last page: the count alone.
      const counted = await this.source.query<{ n: string }>(
        `SELECT count(*) AS n FROM hx_log_entries WHERE ${condition}`,
        values,
      );
      return { entries: [], total: Number(counted[0]?.n ?? 0) };
    }
    return {
      entries: rows.map((row) => ({ ...row.entry, seq: Number(row.seq) })),
      total: Number(rows[0]?.total ?? 0),
    };
  }
}

/** The SQL conditions of one filtered field (its values pushed onto `values`): equality, `anyOf` or a range. */
function conditionsOf(field: string, value: unknown, values: unknown[]): string[] {
  if (value !== null && typeof value === 'object') {
    if ('anyOf' in value) {
      values.push((value.anyOf as readonly unknown[]).map(String));
      return [`entry->>'${field}' = ANY($${values.length}::text[])`];
    }
    // A range on a number field: no index needed (a page of the log is a bounded read either way).
    const out: string[] = [];
    const range = value as { from?: number; to?: number };
    if (range.from !== undefined) {
      values.push(range.from);
      out.push(`(entry->>'${field}')::numeric >= $${values.length}`);
    }
    if (range.to !== undefined) {
      values.push(range.to);
      out.push(`(entry->>'${field}')::numeric <= $${values.length}`);
    }
    return out;
  }
  values.push(String(value));
  return [`entry->>'${field}' = $${values.length}`];
}
