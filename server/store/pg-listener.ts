import pg from 'pg';
import type { StoreLogger } from './store.js';

/** A lost listening connection is opened again after this long, doubling up to RELISTEN_MAX_MS. */
const RELISTEN_MS = 250;
const RELISTEN_MAX_MS = 10_000;
/** The listening connection is asked a question this often: a connection that died silently is noticed. */
const PROBE_MS = 5_000;

/**
 * The one connection each host keeps LISTENing for other hosts' commits. It reconnects by itself when it breaks
 * (or stops answering its probe); every (re)connection calls `onConnected`, since whatever was announced while
 * nobody listened is lost: the caller then treats everything as possibly changed.
 */
export class PgListener {
  #client: pg.Client | null = null;
  #timer: NodeJS.Timeout | null = null;
  #probe: NodeJS.Timeout | null = null;
  #delay = RELISTEN_MS;
  #closed = false;
  /** The listening connection's last query: the next waits for it (a pg client runs one query at a time). */
  #busy: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly channels: readonly string[],
    /** Names the listening connection (pg_stat_activity's application_name), so others can count it. */
    private readonly name: string,
    private readonly handlers: {
      onMessage: (channel: string, payload: string) => void;
      onConnected: () => void;
      logger: StoreLogger;
    },
  ) {}

  /** Connects and listens; rejects when the first connection cannot be made. */
  async start(): Promise<void> {
    await this.#connect();
    if (this.#closed) return;
    this.#probe = setInterval(() => this.#check(), PROBE_MS);
    this.#probe.unref();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ ...this.connection, application_name: this.name });
    client.on('notification', (message) => {
      if (message.payload) this.handlers.onMessage(message.channel, message.payload);
    });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      for (const channel of this.channels) await client.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    // Closed while connecting: nobody would end it.
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#delay = RELISTEN_MS;
    this.handlers.onConnected();
  }

  /**
   * NOTIFY on this connection, which waits behind no request's query; rejects when it is down. What it sends here
   * comes back here after everything committed before it.
   */
  async notify(channel: string, payload: string): Promise<void> {
    const client = this.#client;
    if (!client) throw new Error('not listening');
    // Prepared once per connection (beats go every few ms under load): no parse and plan each time.
    await this.#query(client, 'SELECT pg_notify($1, $2)', [channel, payload], 'hx_notify');
  }

  /** How many other connections named as this one are open (other hosts listening), asked on this one. */
  async others(): Promise<number> {
    const client = this.#client;
    if (!client) throw new Error('not listening');
    const rows = await this.#query<{ n: string }>(
      client,
      'SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
      [this.name],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Runs a query on `client` (a prepared statement when `name` is set) once the previous one is answered. */
  #query<R extends pg.QueryResultRow>(
    client: pg.Client,
    text: string,
    values: unknown[] = [],
    name?: string,
  ): Promise<R[]> {
    const run = this.#busy.then(async () => (await client.query<R>({ name, text, values })).rows);
    this.#busy = run.catch(() => undefined);
    return run;
  }

  /** Asks the connection a trivial question; no answer within the client's query timeout means it is gone. */
  #check(): void {
    const client = this.#client;
    if (!client) return;
    this.#query(client, 'SELECT 1').catch((error: unknown) => this.#lost(client, error as Error));
  }

  #lost(client: pg.Client, error?: Error): void {
    if (this.#client !== client) return;
    this.#client = null;
    if (this.#closed) return;
    this.handlers.logger.warn(
      { err: error },
      'lost the PostgreSQL connection that hears other hosts; reopening',
    );
    client.end().catch(() => undefined);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#connect().catch((error: unknown) => {
        this.handlers.logger.warn({ err: error }, 'PostgreSQL is still unreachable; trying again');
        this.#delay = Math.min(this.#delay * 2, RELISTEN_MAX_MS);
        this.#schedule();
      });
    }, this.#delay);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#probe) clearInterval(this.#probe);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
  }
}
