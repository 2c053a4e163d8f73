import { freeze, produce } from 'immer';
import type { TxRepo } from './seam.js';

/**
 * A collection as a transaction sees it, built the same way for every store from three of the store's own
 * operations: `read` (the transaction's own write, else the newest committed version, noted as read), `write` (a
 * whole frozen record, or null to remove it) and `find` (the record holding a key of a unique index). Records are
 * deeply frozen here, so no store hands out anything a caller could change in place.
 */
export function txRepo<T>(
  name: string,
  ops: {
    read(id: string): unknown;
    write(id: string, data: unknown): void;
    find(index: string, key: string): unknown;
  },
): TxRepo<T> {
  return {
    get: (id) => ops.read(id) as T | undefined,
    has: (id) => ops.read(id) !== undefined,
    find: (index, key) => ops.find(index, key) as T | undefined,
    put: (id, data) => {
      const frozen = freeze(data, true);
      ops.write(id, frozen);
      return frozen;
    },
    update: (id, recipe) => {
      const current = ops.read(id) as T | undefined;
      if (current === undefined) throw new Error(`no record ${name}/${id}`);
      const next = freeze(produce(current, recipe), true) as T;
      ops.write(id, next);
      return next;
    },
    remove: (id) => {
      ops.read(id);
      ops.write(id, null);
    },
  };
}
