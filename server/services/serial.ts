/**
 * Runs work for one key strictly one after another (an asset, a moderation target, a chunk set), so each job sees
 * the state the previous one left; different keys run side by side. A failed job does not stop the next.
 */
export function createKeyedSerial(): <T>(key: string, work: () => Promise<T>) => Promise<T> {
  const chains = new Map<string, Promise<unknown>>();
  return <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = chains.get(key) ?? Promise.resolve();
    // The previous job's failure belongs to its own caller; the next job runs either way.
    const next = previous.catch(() => undefined).then(work);
    chains.set(key, next);
    void next
      .finally(() => {
        if (chains.get(key) === next) chains.delete(key);
        // Only tidies the map; `next` itself, failure included, goes back to the caller.
      })
      .catch(() => undefined);
    return next;
  };
}
