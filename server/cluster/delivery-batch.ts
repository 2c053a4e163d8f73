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
 * Deliveries to the same process asked for in the same turn of the event loop (requests handled side by side) go
 * out together: one PUBLISH, one message to parse on the other side, instead of one per request. Each caller hears
 * the batch's outcome: handed to that process, or not.
 */
export class DeliveryBatches {
  readonly #pending = new Map<string, Batch>();
  #scheduled = false;

  constructor(private readonly send: (processId: string, items: Delivery[]) => Promise<void>) {}

  add(processId: string, item: Delivery): Promise<void> {
    return new Promise((resolve, reject) => {
      let batch = this.#pending.get(processId);
      if (!batch) this.#pending.set(processId, (batch = { items: [], waiters: [] }));
      batch.items.push(item);
      batch.waiters.push({ resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#sendAll());
      }
    });
  }

  #sendAll(): void {
    this.#scheduled = false;
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
