import { ErrorCode, type FieldErrors } from '../../../server/protocol/errors.js';
import type { UploadDataDto } from '../../../server/protocol/uploads.js';
import { ApiError, call, describeError } from '../../shared/api-client.js';
import { hostBridge } from '../../shared/host-bridge.js';
import type { Session } from '../../shared/session.js';
import { isAbort, postForm } from '../../shared/upload-request.js';
import { bytesIn, chunkBytes, chunkRange, missingChunks, planChunks, type ChunkPlan } from './chunks.js';
import type { MetaValues } from './meta-form.js';
import { SpeedMeter } from './progress.js';
import {
  createResumeStore,
  sameFile,
  type ResumeRecord,
  type ResumeStore,
  type SentMeta,
  type UploadKind,
} from './resume-store.js';
import { browserStorage, readUploadSettings, type UploadSettings } from './upload-settings.js';

/**
 * The upload list: jobs run one at a time, in order. Small files go up in one multipart request; big ones in parts
 * (`uploadPart`) that survive a broken connection (retried on their own) and a reload (remembered in the resume
 * store, continued when the same file is picked again). It lives outside React so uploads keep going while the
 * person looks at another section; components read it through `subscribe`/`getSnapshot`.
 */

export type JobState =
  | 'queued'
  | 'uploading'
  | 'finishing'
  | 'paused'
  /** The connection to the host broke: it continues by itself when the host is reachable again. */
  | 'hostDown'
  | 'done'
  | 'failed'
  | 'cancelled';

export interface JobSpec {
  file: File;
  kind: UploadKind;
  meta: SentMeta | null;
  /** What the list calls it, e.g. `New avatar "Robot"`. */
  title: string;
  /** The details form as filled in, to reopen it after a refusal. */
  values: MetaValues | null;
}

export interface UploadOutcome {
  UploadData: UploadDataDto;
  AvatarId?: string;
  WorldId?: string;
}

export interface JobError {
  code: string;
  message: string;
  fields: FieldErrors;
}

export interface Job extends JobSpec {
  id: number;
  state: JobState;
  chunked: boolean;
  /** File bytes the host has (or is receiving) so far. */
  sent: number;
  /** Bytes per second, null until measurable. */
  speed: number | null;
  secondsLeft: number | null;
  parts: { done: number; total: number } | null;
  chunkId: string | null;
  /** A passing remark: resuming, reconnecting. */
  note: string | null;
  error: JobError | null;
  outcome: UploadOutcome | null;
}

export interface QueueSnapshot {
  jobs: readonly Job[];
  /** Chunked uploads the host holds parts of that no job in this list is working on. */
  interrupted: readonly ResumeRecord[];
}

interface PartAnswer {
  chunkNumber: number;
  chunkId: string;
  received: number;
  missingChunks: number[];
}

export interface PartStatus {
  chunkId: string;
  originalFileName: string;
  amountOfChunks: number;
  received: number[];
  receivedBytes: number;
  expiresAt: number;
}

/** Waits before retrying a part after the connection broke: about 15 s in all, then the job fails (resumable). */
const RETRY_DELAYS_MS = [1000, 2000, 4000, 8000];
/**
 * After the connection broke (the host stopped, the network dropped), a job waits in `hostDown` and tries again
 * after these waits, and at once when the socket says the host is back. Past the last wait it keeps waiting for
 * the host, unless the host is reachable meanwhile: then the failure is the upload's own and it shows Retry.
 */
const OUTAGE_RETRY_MS = [5_000, 15_000, 30_000];
/** Progress redraws at most this often; state changes always redraw at once. */
const EMIT_INTERVAL_MS = 100;
/** Refusals after which the host has dropped the chunk set (reference 5.5: "the set is spent either way"). */
const SPENT_CODES = new Set<string>([
  ErrorCode.INVALID_META,
  ErrorCode.META_TYPE_MISMATCH,
  ErrorCode.NOT_OWNER,
  ErrorCode.CONTENT_NOT_FOUND,
  ErrorCode.FILE_TOO_LARGE,
  ErrorCode.FILE_TYPE_NOT_ALLOWED,
]);

const LIVE_STATES: ReadonlySet<JobState> = new Set([
  'queued',
  'uploading',
  'finishing',
  'paused',
  'hostDown',
]);

export function isLive(job: Job): boolean {
  return LIVE_STATES.has(job.state);
}

export function hasFieldErrors(job: Job): boolean {
  return job.error !== null && Object.keys(job.error.fields).length > 0;
}

interface QueueDeps {
  resume: ResumeStore;
  settings: () => UploadSettings;
  /** Milliseconds from a monotonic clock. */
  now: () => number;
}

export class UploadQueue {
  private jobs: Job[] = [];
  private snapshot: QueueSnapshot = { jobs: [], interrupted: [] };
  private readonly listeners = new Set<() => void>();
  private readonly failureListeners = new Set<(job: Job) => void>();
  private active: { id: number; controller: AbortController } | null = null;
  private nextId = 1;
  private lastEmit = 0;
  private emitTimer: ReturnType<typeof setTimeout> | null = null;
  private disposed = false;
  private credentialsRejected: (() => void) | null = null;
  /** What the socket last said: false while the host cannot be reached. */
  private reachable = true;
  /** Jobs waiting for the host: how many timed tries they had, and the next one. */
  private readonly outages = new Map<
    number,
    { tries: number; timer: ReturnType<typeof setTimeout> | null }
  >();

  constructor(
    readonly session: Session,
    private readonly deps: QueueDeps,
  ) {
    this.snapshot = this.makeSnapshot();
  }

  belongsTo(session: Session): boolean {
    return this.session.userid === session.userid && this.session.tokenContent === session.tokenContent;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getSnapshot = (): QueueSnapshot => this.snapshot;

  /** Called with each job that fails, e.g. to reopen its details next to the host's field errors. */
  onFailure(listener: (job: Job) => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /** What to do when the host refuses the token mid-upload (the app's usual "session ended" path). */
  setCredentialsRejectedHandler(handler: (() => void) | null): void {
    this.credentialsRejected = handler;
  }

  /**
   * Told by the shell whenever the connection to the host changes. When the host comes back, every upload the
   * outage stopped continues by itself (chunked ones from the parts the host has).
   */
  setHostReachable(up: boolean): void {
    const cameBack = up && !this.reachable;
    this.reachable = up;
    if (!cameBack || this.disposed) return;
    let resumed = false;
    for (const job of this.jobs) {
      if (job.state === 'hostDown' || (job.state === 'failed' && job.error?.code === 'NETWORK_ERROR')) {
        this.endOutage(job.id);
        this.patch(job.id, { state: 'queued', error: null, note: 'The host is back: continuing.' }, true);
        resumed = true;
      }
    }
    if (resumed) this.pump();
  }

  /** The remembered interrupted upload this file would continue, if any. */
  findInterrupted(file: File): ResumeRecord | undefined {
    return this.deps.resume.find(this.session.userid, file);
  }

  add(spec: JobSpec): number {
    const id = this.nextId++;
    const resumable = this.findInterrupted(spec.file) !== undefined;
    this.jobs = [
      ...this.jobs,
      {
        ...spec,
        id,
        state: 'queued',
        chunked: resumable || spec.file.size > this.deps.settings().chunkThreshold,
        sent: 0,
        speed: null,
        secondsLeft: null,
        parts: null,
        chunkId: null,
        note: null,
        error: null,
        outcome: null,
      },
    ];
    this.emit(true);
    this.pump();
    return id;
  }

  /** Stops a job for good. Parts already on the host are left to expire there (there is no call to drop them). */
  cancel(id: number): void {
    const job = this.get(id);
    if (
      !job ||
      !(
        job.state === 'queued' ||
        job.state === 'uploading' ||
        job.state === 'paused' ||
        job.state === 'hostDown'
      )
    )
      return;
    this.endOutage(id);
    // Cancelling means "not this upload": nothing is offered for resuming afterwards.
    const chunkId = job.chunkId ?? this.findInterrupted(job.file)?.chunkId;
    if (chunkId) this.deps.resume.forget(chunkId);
    this.patch(id, { state: 'cancelled', speed: null, secondsLeft: null, note: null }, true);
    if (this.active?.id === id) this.active.controller.abort();
  }

  /** Stops a chunked job so it can continue later from the parts the host has. */
  pause(id: number): void {
    const job = this.get(id);
    if (!job || !job.chunked || job.state !== 'uploading') return;
    this.patch(id, { state: 'paused', speed: null, secondsLeft: null, note: null }, true);
    if (this.active?.id === id) this.active.controller.abort();
  }

  /** Puts a paused, failed or cancelled job back in line; chunked ones continue where the host left off. */
  retry(id: number): void {
    const job = this.get(id);
    if (
      !job ||
      !(
        job.state === 'paused' ||
        job.state === 'failed' ||
        job.state === 'cancelled' ||
        job.state === 'hostDown'
      )
    )
      return;
    this.endOutage(id);
    this.patch(id, { state: 'queued', error: null, outcome: null, note: null }, true);
    this.pump();
  }

  remove(id: number): void {
    const job = this.get(id);
    if (!job || isLive(job)) return;
    this.jobs = this.jobs.filter((j) => j.id !== id);
    this.emit(true);
  }

  clearFinished(): void {
    this.jobs = this.jobs.filter((j) => j.state !== 'done' && j.state !== 'cancelled');
    this.emit(true);
  }

  forgetInterrupted(chunkId: string): void {
    this.deps.resume.forget(chunkId);
    this.emit(true);
  }

  dispose(): void {
    this.disposed = true;
    for (const id of [...this.outages.keys()]) this.endOutage(id);
    this.active?.controller.abort();
    this.listeners.clear();
    this.failureListeners.clear();
    if (this.emitTimer !== null) clearTimeout(this.emitTimer);
    window.removeEventListener('beforeunload', warnBeforeLeaving);
  }

  private get(id: number): Job | undefined {
    return this.jobs.find((j) => j.id === id);
  }

  private patch(id: number, changes: Partial<Job>, urgent = false): void {
    this.jobs = this.jobs.map((j) => (j.id === id ? { ...j, ...changes } : j));
    this.emit(urgent);
  }

  private makeSnapshot(): QueueSnapshot {
    // A failed job still in the list offers its own Retry, so it is not listed twice.
    const listed = this.jobs.filter((j) => isLive(j) || j.state === 'failed');
    const interrupted = this.deps.resume
      .list(this.session.userid)
      .filter((r) => !listed.some((j) => j.chunkId === r.chunkId || sameFile(j.file, r)));
    return { jobs: this.jobs, interrupted };
  }

  private emit(urgent: boolean): void {
    if (this.disposed) return;
    const now = this.deps.now();
    if (!urgent && now - this.lastEmit < EMIT_INTERVAL_MS) {
      this.emitTimer ??= setTimeout(() => {
        this.emitTimer = null;
        this.emit(true);
      }, EMIT_INTERVAL_MS);
      return;
    }
    if (this.emitTimer !== null) {
      clearTimeout(this.emitTimer);
      this.emitTimer = null;
    }
    this.lastEmit = now;
    this.snapshot = this.makeSnapshot();
    this.guardUnload();
    for (const listener of this.listeners) listener();
  }

  /**
   * Closing a browser tab mid-upload asks first: a whole-file upload would be lost, a chunked one paused. Not in
   * the desktop window: Electron cancels a close silently on `beforeunload` unless the main process asks the
   * person itself, and a window that will not close is worse than a lost upload.
   */
  private guardUnload(): void {
    if (hostBridge()) return;
    const busy = this.jobs.some(
      (j) =>
        j.state === 'queued' || j.state === 'uploading' || j.state === 'finishing' || j.state === 'hostDown',
    );
    if (busy) window.addEventListener('beforeunload', warnBeforeLeaving);
    else window.removeEventListener('beforeunload', warnBeforeLeaving);
  }

  private pump(): void {
    if (this.active || this.disposed) return;
    const next = this.jobs.find((j) => j.state === 'queued');
    if (next) void this.run(next.id);
  }

  private async run(id: number): Promise<void> {
    const controller = new AbortController();
    this.active = { id, controller };
    const meter = new SpeedMeter();
    this.patch(id, { state: 'uploading', error: null, note: null, speed: null, secondsLeft: null }, true);
    const job = this.get(id)!;
    const report = (sent: number): void => {
      const current = this.get(id);
      if (!current || current.state !== 'uploading') return;
      meter.add(this.deps.now(), sent);
      this.patch(id, { sent, speed: meter.speed(), secondsLeft: meter.secondsLeft(current.file.size) });
    };
    try {
      const outcome = job.chunked
        ? await this.sendChunked(job, controller.signal, report)
        : await this.sendWhole(job, controller.signal, report);
      // Even a cancel that came too late ends here: the host has the file, so the list says so. A note about
      // resuming stays: it explains why fewer bytes went over the wire.
      this.endOutage(id);
      this.patch(id, { state: 'done', outcome, sent: job.file.size, speed: null, secondsLeft: null }, true);
    } catch (error) {
      if (isNetworkError(error) && !controller.signal.aborted && this.waitForHost(id, error)) {
        // Waiting for the host: it continues by itself.
      } else if (!(isAbort(error) || controller.signal.aborted)) {
        this.endOutage(id);
        this.patch(
          id,
          { state: 'failed', error: jobError(error), speed: null, secondsLeft: null, note: null },
          true,
        );
        const failed = this.get(id);
        if (failed) for (const listener of this.failureListeners) listener(failed);
        if (error instanceof ApiError && error.code === ErrorCode.INVALID_TOKEN) this.credentialsRejected?.();
      }
    } finally {
      if (this.active?.id === id) this.active = null;
      this.pump();
    }
  }

  /**
   * Puts a job the connection failed into `hostDown` with its next timed try; false when it should fail instead
   * (its timed tries are spent while the host is reachable: the problem is this upload, not the host).
   */
  private waitForHost(id: number, error: unknown): boolean {
    const entry = this.outages.get(id) ?? { tries: 0, timer: null };
    const delay = OUTAGE_RETRY_MS[entry.tries];
    if (delay === undefined && this.reachable) return false;
    if (entry.timer !== null) clearTimeout(entry.timer);
    entry.timer = null;
    if (delay !== undefined) {
      entry.tries++;
      entry.timer = setTimeout(() => {
        entry.timer = null;
        if (this.get(id)?.state !== 'hostDown') return;
        this.patch(id, { state: 'queued', note: null }, true);
        this.pump();
      }, delay);
    }
    this.outages.set(id, entry);
    this.patch(
      id,
      { state: 'hostDown', error: jobError(error), speed: null, secondsLeft: null, note: null },
      true,
    );
    return true;
  }

  private endOutage(id: number): void {
    const entry = this.outages.get(id);
    if (entry?.timer) clearTimeout(entry.timer);
    this.outages.delete(id);
  }

  private credentials(): Record<string, string> {
    return { userid: this.session.userid, tokenContent: this.session.tokenContent };
  }

  private async sendWhole(
    job: Job,
    signal: AbortSignal,
    report: (sent: number) => void,
  ): Promise<UploadOutcome> {
    const form = new FormData();
    // Credentials and details before the file: the host checks them before storing a byte.
    for (const [key, value] of Object.entries(this.credentials())) form.append(key, value);
    if (job.meta) form.append(job.meta.field, job.meta.json);
    form.append('file', job.file, job.file.name);
    return postForm<UploadOutcome>('upload', form, {
      signal,
      onProgress: (loaded, total) => report(share(loaded, total, job.file.size)),
      onSent: () => this.finishing(job.id),
    });
  }

  private finishing(id: number): void {
    if (this.get(id)?.state === 'uploading') {
      this.patch(id, { state: 'finishing', speed: null, secondsLeft: null }, true);
    }
  }

  private async status(chunkId: string, signal: AbortSignal): Promise<PartStatus> {
    return call<PartStatus>('uploadPartStatus', { ...this.credentials(), chunkId }, { signal });
  }

  private async sendChunked(
    job: Job,
    signal: AbortSignal,
    report: (sent: number) => void,
  ): Promise<UploadOutcome> {
    const { file } = job;
    let plan: ChunkPlan = planChunks(file.size, this.deps.settings().chunkSize);
    let chunkId = '';
    let received = new Set<number>();
    const remembered = this.findInterrupted(file);
    if (remembered) {
      try {
        const status = await this.status(remembered.chunkId, signal);
        const rememberedPlan = planChunks(file.size, remembered.chunkSize);
        if (status.amountOfChunks === rememberedPlan.amount && status.originalFileName === file.name) {
          plan = rememberedPlan;
          chunkId = remembered.chunkId;
          received = new Set(status.received.filter((n) => n >= 0 && n < plan.amount));
          this.patch(
            job.id,
            {
              chunkId,
              sent: bytesIn(plan, received),
              note:
                received.size > 0
                  ? `Resumed: the host already had ${received.size} of ${plan.amount} parts.`
                  : null,
            },
            true,
          );
        } else {
          this.deps.resume.forget(remembered.chunkId);
        }
      } catch (error) {
        if (!(error instanceof ApiError && error.code === ErrorCode.UNKNOWN_CHUNK_SET)) throw error;
        this.deps.resume.forget(remembered.chunkId);
        this.patch(
          job.id,
          { note: 'The host no longer had the earlier parts (they expire), so this starts over.' },
          true,
        );
      }
    }

    const remember = (): void => {
      this.deps.resume.save({
        userId: this.session.userid,
        chunkId,
        name: file.name,
        size: file.size,
        lastModified: file.lastModified,
        chunkSize: plan.chunkSize,
        amountOfChunks: plan.amount,
        kind: job.kind,
        meta: job.meta,
        title: job.title,
        values: job.values,
        savedAt: Date.now(),
      });
    };

    for (let restarts = 0; ; restarts++) {
      try {
        return await this.sendParts(job, plan, chunkId, received, signal, report, remember, (id) => {
          chunkId = id;
        });
      } catch (error) {
        if (!(error instanceof ApiError && error.code === ErrorCode.UNKNOWN_CHUNK_SET) || restarts > 0) {
          if (chunkId && error instanceof ApiError && SPENT_CODES.has(error.code))
            this.forgetChunks(job.id, chunkId);
          throw error;
        }
        // The set expired (a long pause): start over once with a fresh one.
        if (chunkId) this.deps.resume.forget(chunkId);
        chunkId = '';
        received = new Set();
        plan = planChunks(file.size, this.deps.settings().chunkSize);
        this.patch(
          job.id,
          { chunkId: null, sent: 0, note: 'The host had dropped the earlier parts, so this starts over.' },
          true,
        );
      }
    }
  }

  /** Sends the parts the host lacks until one answer completes the set. */
  private async sendParts(
    job: Job,
    plan: ChunkPlan,
    firstChunkId: string,
    received: Set<number>,
    signal: AbortSignal,
    report: (sent: number) => void,
    remember: () => void,
    setChunkId: (chunkId: string) => void,
  ): Promise<UploadOutcome> {
    let chunkId = firstChunkId;
    for (let round = 0; round < 3; round++) {
      for (const n of missingChunks(plan, received)) {
        const base = bytesIn(plan, received);
        const partBytes = chunkBytes(plan, n);
        const completes = received.size === plan.amount - 1;
        this.patch(job.id, { parts: { done: received.size, total: plan.amount } });
        const answer = await this.withRetries(job.id, signal, () =>
          this.sendPart(job, plan, n, chunkId, signal, completes, (loaded, total) =>
            report(base + share(loaded, total, partBytes)),
          ),
        );
        if ('UploadData' in answer) {
          if (chunkId) this.forgetChunks(job.id, chunkId);
          return answer;
        }
        // An answer that raced a pause or cancel is not remembered: cancel has just forgotten this set.
        if (signal.aborted) throw new DOMException('The upload was aborted.', 'AbortError');
        if (!chunkId) {
          chunkId = answer.chunkId;
          setChunkId(chunkId);
          this.patch(job.id, { chunkId }, true);
        }
        received.add(n);
        remember();
        this.patch(job.id, { parts: { done: received.size, total: plan.amount } }, true);
      }
      // Every part was sent yet none completed the set: ask the host what it holds and send the rest.
      const status = await this.status(chunkId, signal);
      received.clear();
      for (const n of status.received) received.add(n);
    }
    throw new ApiError(
      ErrorCode.MISSING_CHUNKS,
      'The host did not put the parts together. Retry to send the missing ones.',
    );
  }

  private forgetChunks(id: number, chunkId: string): void {
    this.deps.resume.forget(chunkId);
    this.patch(id, { chunkId: null });
  }

  private sendPart(
    job: Job,
    plan: ChunkPlan,
    n: number,
    chunkId: string,
    signal: AbortSignal,
    completes: boolean,
    onProgress: (loaded: number, total: number) => void,
  ): Promise<PartAnswer | UploadOutcome> {
    const form = new FormData();
    for (const [key, value] of Object.entries(this.credentials())) form.append(key, value);
    form.append('chunkId', chunkId);
    form.append('chunkNumber', String(n));
    form.append('amountOfChunks', String(plan.amount));
    form.append('originalFileName', job.file.name);
    // Sent with every part: the host keeps the latest, so a resumed upload carries the same details.
    if (job.meta) form.append(job.meta.field, job.meta.json);
    const { start, end } = chunkRange(plan, n);
    form.append('file', job.file.slice(start, end), job.file.name);
    return postForm<PartAnswer | UploadOutcome>('uploadPart', form, {
      signal,
      onProgress,
      ...(completes ? { onSent: () => this.finishing(job.id) } : {}),
    });
  }

  private async withRetries<T>(id: number, signal: AbortSignal, attempt: () => Promise<T>): Promise<T> {
    for (let tries = 0; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        const delay = RETRY_DELAYS_MS[tries];
        // While the host is known to be down, waiting here helps nobody: the job waits for it to come back.
        if (!isNetworkError(error) || delay === undefined || !this.reachable) throw error;
        this.patch(
          id,
          { note: `Connection lost. Trying again in ${delay / 1000} s…`, speed: null, secondsLeft: null },
          true,
        );
        await sleep(delay, signal);
        if (this.get(id)?.state === 'finishing') this.patch(id, { state: 'uploading' }, true);
        this.patch(id, { note: null }, true);
      }
    }
  }
}

function warnBeforeLeaving(event: BeforeUnloadEvent): void {
  event.preventDefault();
}

/** The file's share of a multipart body's progress (the body also carries fields and part headers). */
function share(loaded: number, total: number, fileBytes: number): number {
  if (total <= 0) return 0;
  return Math.min(fileBytes, Math.round((loaded / total) * fileBytes));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new DOMException('The upload was aborted.', 'AbortError'));
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new DOMException('The upload was aborted.', 'AbortError'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function isNetworkError(error: unknown): boolean {
  return error instanceof ApiError && error.code === 'NETWORK_ERROR';
}

function jobError(error: unknown): JobError {
  if (error instanceof ApiError) return { code: error.code, message: error.message, fields: error.fields };
  return { code: 'INTERNAL_ERROR', message: describeError(error), fields: {} };
}

let shared: UploadQueue | null = null;

/**
 * The upload list of this session. One per page: signing in as someone else (or again) ends the previous list's
 * uploads, since they would run with credentials that are no longer ours.
 */
export function uploadQueueFor(session: Session): UploadQueue {
  if (shared?.belongsTo(session)) return shared;
  shared?.dispose();
  const storage = browserStorage();
  shared = new UploadQueue(session, {
    resume: createResumeStore(storage),
    settings: () => readUploadSettings(storage),
    now: () => performance.now(),
  });
  return shared;
}
