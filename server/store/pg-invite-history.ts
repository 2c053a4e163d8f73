import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptDataFileError } from './durable-file.js';
import { INVITE_LOG_FILE, type InviteEvent } from './file-invite-history.js';
import {
  InvitesInFlight,
  type InviteHistory,
  type SentInvite,
  type StoredInviteRequest,
  type StoredInviteState,
} from './invite-history.js';
import type { PgStore } from './pg-store.js';

/** Targets whose requests past the bound are deleted at most this often (a few extra rows meanwhile are harmless). */
const PRUNE_EVERY_MS = 10_000;
/**
 * The shortest time between two inserts of one host (ms), per host sharing the database, at most MAX_INSERT_GAP_MS:
 * under load the community sends PostgreSQL about as many statements however many hosts it has (each costs it
 * the same whatever it carries), for a few ms more before a sender hears "sent".
 */
const INSERT_GAP_MS = 5;
const MAX_INSERT_GAP_MS = 20;

/** The gap between two inserts of a host when `hosts` share the database. */
export const insertGap = (hosts: number): number => Math.min(INSERT_GAP_MS * hosts, MAX_INSERT_GAP_MS);
/** Requests per statement when a folder's history moves into the database. */
const IMPORT_BATCH = 5000;

const COLUMNS = 'request_id, to_user, from_user, sent_at, expires_at, state, updated_at';

const INSERT = `INSERT INTO hx_invite_requests (${COLUMNS})
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[])
  ON CONFLICT (request_id) DO NOTHING RETURNING request_id`;

/** Deletes each listed target's requests older than its newest `$2`. */
const PRUNE = `DELETE FROM hx_invite_requests r USING (
    SELECT t.to_user, (SELECT seq FROM hx_invite_requests WHERE to_user = t.to_user
                        ORDER BY seq DESC OFFSET $2 LIMIT 1) AS cut
      FROM unnest($1::text[]) AS t(to_user)) c
  WHERE r.to_user = c.to_user AND c.cut IS NOT NULL AND r.seq <= c.cut`;

interface Row {
  request_id: string;
  to_user: string;
  from_user: string;
  sent_at: string;
  expires_at: string;
  state: StoredInviteState;
  updated_at: string;
}

type Columns = [string[], string[], string[], number[], number[], string[], number[]];

function stored(row: Row): StoredInviteRequest {
  return {
    requestId: row.request_id,
    fromUserId: row.from_user,
    sentAt: Number(row.sent_at),
    expiresAt: Number(row.expires_at),
    state: row.state,
    updatedAt: Number(row.updated_at),
  };
}

/** Adds a request to the insert's arrays, one per column (values copied now: later changes are not sent). */
function addRow(c: Columns, to: string, r: StoredInviteRequest): void {
  c[0].push(r.requestId);
  c[1].push(to);
  c[2].push(r.fromUserId);
  c[3].push(r.sentAt);
  c[4].push(r.expiresAt);
  c[5].push(r.state);
  c[6].push(r.updatedAt);
}

function columnsOf(items: ReadonlyArray<{ to: string; request: StoredInviteRequest }>): Columns {
  const c: Columns = [[], [], [], [], [], [], []];
  for (const { to, request } of items) addRow(c, to, request);
  return c;
}

/**
 * The invite-request history on PostgreSQL: one row per request in `hx_invite_requests`, indexed by target and by
 * sender, shared by every host. A host holds none of it: each list is a query. Requests arriving while an insert
 * is on its way share the next one (one statement for many requests under load).
 */
export class PgInviteHistory implements InviteHistory {
  readonly #inFlight = new InvitesInFlight();
  #next: { columns: Columns; saved: Promise<void> } | null = null;
  #writing: Promise<void> = Promise.resolve();
  /** When the last insert was sent (ms). */
  #sentAt = 0;
  /** Targets this host added requests for since the last prune. */
  #touched = new Set<string>();
  #prunedAt = 0;

  constructor(
    private readonly store: PgStore,
    private readonly bound: number,
  ) {}

  add(to: string, request: StoredInviteRequest): Promise<void> {
    return this.#inFlight.adding(to, request, () => this.#insert(to, request));
  }

  #insert(to: string, request: StoredInviteRequest): Promise<void> {
    if (!this.#next) {
      const columns: Columns = [[], [], [], [], [], [], []];
      const saved = this.#writing.then(async () => {
        // Under load, statements at most every insertGap: a request alone goes at once.
        const wait = this.#sentAt + insertGap(this.store.hostCount()) - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.#next = null;
        this.#sentAt = Date.now();
        await this.store.writeIdempotent(INSERT, columns, 'hx_invite_insert');
      });
      this.#next = { columns, saved };
      this.#writing = saved.catch(() => undefined);
    }
    addRow(this.#next.columns, to, request);
    this.#touched.add(to);
    return this.#next.saved;
  }

  setState(to: string, stored: StoredInviteRequest, state: StoredInviteState, at: number): Promise<void> {
    return this.#inFlight.changing(stored, state, at, async () => {
      // A request still on its way is inserted first: its change follows it.
      await this.#writing;
      await this.store.writeIdempotent(
        'UPDATE hx_invite_requests SET state = $3, updated_at = $4 WHERE request_id = $1 AND to_user = $2',
        [stored.requestId, to, state, at],
        'hx_invite_state',
      );
    });
  }

  async find(to: string, requestId: string): Promise<StoredInviteRequest | undefined> {
    const pending = this.#inFlight.find(to, requestId);
    if (pending) return pending;
    const rows = await this.store.query<Row>(
      `SELECT ${COLUMNS} FROM hx_invite_requests WHERE request_id = $1 AND to_user = $2`,
      [requestId, to],
      'hx_invite_find',
    );
    return rows[0] ? stored(rows[0]) : undefined;
  }

  async latestFrom(to: string, from: string): Promise<StoredInviteRequest | undefined> {
    const pending = this.#inFlight.latestFrom(to, from);
    if (pending) return pending;
    const rows = await this.store.query<Row>(
      `SELECT ${COLUMNS} FROM hx_invite_requests WHERE to_user = $1 AND from_user = $2 ORDER BY seq DESC LIMIT 1`,
      [to, from],
      'hx_invite_latest',
    );
    return rows[0] ? stored(rows[0]) : undefined;
  }

  async inbox(to: string): Promise<StoredInviteRequest[]> {
    const rows = await this.store.query<Row>(
      `SELECT ${COLUMNS} FROM hx_invite_requests WHERE to_user = $1 ORDER BY seq DESC LIMIT $2`,
      [to, this.bound],
      'hx_invite_inbox',
    );
    return rows.reverse().map(stored);
  }

  async outbox(from: string): Promise<SentInvite[]> {
    const rows = await this.store.query<Row>(
      `SELECT ${COLUMNS} FROM hx_invite_requests WHERE from_user = $1 ORDER BY seq DESC LIMIT $2`,
      [from, this.bound],
      'hx_invite_outbox',
    );
    return rows.reverse().map((row) => ({ to: row.to_user, stored: stored(row) }));
  }

  /** Drops the requests past the bound of the targets this host added to lately. */
  async sweep(): Promise<void> {
    const now = Date.now();
    if (this.#touched.size === 0 || now - this.#prunedAt < PRUNE_EVERY_MS) return;
    this.#prunedAt = now;
    const targets = [...this.#touched];
    this.#touched = new Set();
    try {
      await this.store.query(PRUNE, [targets, this.bound]);
    } catch (error) {
      // Tried again with the next sweep.
      for (const to of targets) this.#touched.add(to);
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.#writing;
  }

  /**
   * Moves a history the data folder still holds (written by hosts of an earlier version, or left there by
   * `migrate`) into the table, each target's newest requests up to the bound with their last state, then renames
   * the file `invite-requests.jsonl.imported`. Requests the table holds are skipped, so a host stopped before the
   * rename, or two hosts starting together, add nothing twice. Returns how many requests moved.
   */
  async importFolder(dataDir: string): Promise<number> {
    const path = join(dataDir, INVITE_LOG_FILE);
    const found = await readFolderHistory(path);
    if (found === null) return 0;
    const perTarget = new Map<string, number>();
    const moving: Array<{ to: string; request: StoredInviteRequest }> = [];
    for (const item of [...found.values()].reverse()) {
      const count = perTarget.get(item.to) ?? 0;
      if (count >= this.bound) continue;
      perTarget.set(item.to, count + 1);
      moving.push(item);
    }
    moving.reverse();
    let moved = 0;
    for (let start = 0; start < moving.length; start += IMPORT_BATCH) {
      const batch = columnsOf(moving.slice(start, start + IMPORT_BATCH));
      moved += (await this.store.writeIdempotent(INSERT, batch)).length;
    }
    await rename(path, `${path}.imported`).catch((error: unknown) => {
      // Another host starting at the same time moved it first.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    });
    return moved;
  }
}

/** The requests of a folder's history file with their last state, in order; null when there is no file. */
async function readFolderHistory(
  path: string,
): Promise<Map<string, { to: string; request: StoredInviteRequest }> | null> {
  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CorruptDataFileError(path, error);
  }
  const found = new Map<string, { to: string; request: StoredInviteRequest }>();
  const lines = content.split('\n');
  // The last piece has no newline: empty, or an append that died half-way (never acknowledged).
  for (let i = 0; i < lines.length - 1; i++) {
    let event: InviteEvent;
    try {
      event = JSON.parse(lines[i]!) as InviteEvent;
    } catch (error) {
      throw new CorruptDataFileError(path, new Error(`line ${i + 1}: ${(error as Error).message}`));
    }
    if (event.t === 'request') {
      if (!found.has(event.request.requestId))
        found.set(event.request.requestId, { to: event.to, request: { ...event.request } });
      continue;
    }
    const kept = found.get(event.requestId);
    if (kept) {
      kept.request.state = event.state;
      kept.request.updatedAt = event.at;
    }
  }
  return found;
}
