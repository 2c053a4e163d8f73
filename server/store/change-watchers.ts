/** Told of a committed change to a record (`id` null: changes may have been missed); `remote`: another host's. */
export type ChangeListener = (id: string | null, remote: boolean) => void;

/**
 * The listeners of HostStore.watch, per collection, for both stores: a listener that throws is reported and the
 * others are still told (a commit is never undone by what listens to it).
 */
export class ChangeWatchers {
  readonly #listeners = new Map<string, ChangeListener[]>();

  constructor(private readonly onError: (error: unknown, collection: string) => void) {}

  add(collection: string, listener: ChangeListener): void {
    this.#listeners.set(collection, [...(this.#listeners.get(collection) ?? []), listener]);
  }

  tell(collection: string, id: string | null, remote: boolean): void {
    for (const listener of this.#listeners.get(collection) ?? []) {
      try {
        listener(id, remote);
      } catch (error) {
        this.onError(error, collection);
      }
    }
  }
}
