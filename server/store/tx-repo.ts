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
    /** The ids a list index holds under `key`, as the transaction sees them. */
    listIds(index: string, key: string): string[] | Promise<string[]>;
  },
): TxRepo<T> {
  const read = async (id: string): Promise<T | undefined> => (await ops.read(id)) as T | undefined;
  return {
    get: read,
    has: async (id) => (await read(id)) !== undefined,
    find: async (index, key) => (await ops.find(index, key)) as T | undefined,
    list: async (index, key) => {
      const found: T[] = [];
      for (const id of await ops.listIds(index, key)) {
        const record = await read(id);
        if (record !== undefined) found.push(record);
      }
      return found;
    },
    put: (id, data) => {
      const frozen = freeze(data, true);
      ops.write(id, frozen);
      return frozen;
    },
    update: async (id, recipe) => {
      const current = await read(id);
      if (current === undefined) throw new Error(`no record ${name}/${id}`);
      const next = freeze(produce(current, recipe), true) as T;
      ops.write(id, next);
      return next;
    },
    remove: async (id) => {
      await read(id);
      ops.write(id, null);
    },
  };
}
