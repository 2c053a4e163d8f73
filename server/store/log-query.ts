import type { LogFilter, LogPage } from './seam.js';

/** Whether a key field's value meets a filter's LogMatch (a value, `anyOf`, or a `from`/`to` range). */
export function logMatches(actual: unknown, wanted: unknown): boolean {
  if (wanted !== null && typeof wanted === 'object') {
    if ('anyOf' in wanted) return (wanted.anyOf as readonly unknown[]).includes(actual);
    const range = wanted as { from?: number; to?: number };
    if (typeof actual !== 'number') return false;
    return (
      (range.from === undefined || actual >= range.from) && (range.to === undefined || actual <= range.to)
    );
  }
  return actual === wanted;
}

/** A history held as keys in memory, its entries read by position (the embedded store's logs). */
export interface PositionalLog<E, K> {
  readonly length: number;
  indexAt(position: number): { key: K } | undefined;
  read(position: number): Promise<E>;
}

/**
 * A page of `log`, newest first, of the entries whose key matches `filter`: the keys are walked from the newest
 * (all of them, to count the matches), and only the entries of the page are read.
 */
export async function queryByKeys<E, K>(
  log: PositionalLog<E, K>,
  filter: LogFilter<K>,
  offset: number,
  limit: number,
): Promise<LogPage<E>> {
  const fields = Object.entries(filter).filter(([, value]) => value !== undefined) as Array<
    [keyof K, unknown]
  >;
  const wanted: number[] = [];
  let total = 0;
  for (let position = log.length - 1; position >= 0; position--) {
    const key = log.indexAt(position)!.key;
    if (!fields.every(([field, value]) => logMatches(key[field], value))) continue;
    if (total >= offset && wanted.length < limit) wanted.push(position);
    total++;
  }
  return { entries: await Promise.all(wanted.map((position) => log.read(position))), total };
}
