/** One message for the sockets of some users held by another process. */
export interface Delivery {
  users: string[];
  json: string;
}

interface Batch {
  items: Delivery[];
  waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }>;
}

/**
 * The shortest time between two sends of deliveries (ms). Under load a host then sends at most one message per
 * other process every SEND_GAP_MS, however many requests it handles: measured with `node bench/run.js cluster
 * --rounds 3`, Redis's CPU per invite request on 2 hosts fell by a third and all processes' by an eighth, for at
 * most this much more time before a request reaches another host.
 */
const SEND_GAP_MS = 2;

/**
 * Deliveries to the same process asked for in the same turn of the event loop (requests handled side by side), or
 * under load within SEND_GAP_MS, go out together: one PUBLISH, one message to parse on the other side, instead of
 * one per request. Alone, a delivery goes at once. Each caller hears the batch's outcome: handed to that process,
 * or not.
 */
export class DeliveryBatches {
  readonly #pending = new Map<string, Batch>();
  #scheduled = false;
  /** When deliveries last went (performance.now()). */
  #sentAt = -Infinity;

  constructor(
    private readonly send: (processId: string, items: Delivery[]) => Promise<void>,
    private readonly gapMs = SEND_GAP_MS,
  ) {}

  add(processId: string, item: Delivery): Promise<void> {
    return new Promise((resolve, reject) => {
      let batch = this.#pending.get(processId);
      if (!batch) this.#pending.set(processId, (batch = { items: [], waiters: [] }));
      batch.items.push(item);
      batch.waiters.push({ resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        const wait = this.#sentAt + this.gapMs - performance.now();
        if (wait > 0) setTimeout(() => this.#sendAll(), wait);
        else setImmediate(() => this.#sendAll());
      }
    });
  }

  #sendAll(): void {
    this.#scheduled = false;
    this.#sentAt = performance.now();
    const batches = [...this.#pending];
    this.#pending.clear();
    for (const [processId, batch] of batches) {
      this.send(processId, batch.items).then(
        () => batch.waiters.forEach((w) => w.resolve()),
        (error: unknown) => batch.waiters.forEach((w) => w.reject(error)),
      );
    }
  }
}
