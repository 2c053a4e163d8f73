import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import { Rank, RANK_NAMES } from '../protocol/enums.js';
import { ErrorCode } from '../protocol/errors.js';
import type { ContentJobDto, ContentJobFailure } from '../protocol/moderation-tools.js';
import type { HostStore, Tx } from '../store/seam.js';
import type { StoredUser, UsersRepo } from '../store/users.js';
import { unixSeconds, type Clock } from './context.js';
import type { ModerationService } from './moderation.js';
import type { UploadsService } from './uploads.js';
import { contentItems, listUserContent, type ContentItem } from './user-content.js';

/** The store collection of "remove all content" jobs: one record per target user, their latest job. */
export const CONTENT_JOBS = 'contentjobs';

/** A job as stored: what moderators see, plus who runs it (the lease) and which items failed (skipped). */
export interface StoredContentJob extends ContentJobDto {
  /** The process running it, or null when nobody is. */
  leaseBy: string | null;
  /** When the runner last said it is alive (Unix seconds). */
  leaseAt: number;
  /** Ids of items that failed: not tried again. */
  skipped: string[];
}

export interface ContentJobOptions {
  /** A pause before each removal (tests stop a host half-way through a job with it). */
  itemDelayMs?: number;
  /** How long a runner's claim lasts without renewal before another host takes the job over (default 30 s). */
  leaseSeconds?: number;
}

export interface ContentJobDeps {
  store: HostStore;
  users: UsersRepo;
  clock: Clock;
  log: Logger;
  moderation: Pick<ModerationService, 'act'>;
  uploads: Pick<UploadsService, 'avatars' | 'worlds' | 'filesOf'>;
  /** Whether other host processes share the store (PostgreSQL): then a lease of another process may be alive. */
  shared: boolean;
  options?: ContentJobOptions;
}

/** Refusals that no later item can escape: the job stops with the reason. */
const STOPPING: ReadonlySet<string> = new Set([
  ErrorCode.NOT_A_MODERATOR,
  ErrorCode.TARGET_RANK_TOO_HIGH,
  ErrorCode.CANNOT_MODERATE_SELF,
  ErrorCode.USER_NOT_FOUND,
]);
/** The item went meanwhile (its owner or another moderator removed it): nothing to count. */
const GONE: ReadonlySet<string> = new Set([ErrorCode.CONTENT_NOT_FOUND, ErrorCode.FILE_NOT_FOUND]);
const FAILURES_KEPT = 20;

export const jobIdOf = (targetUserId: string): string => `contentjob_${targetUserId}`;

export function publicJob(job: StoredContentJob): ContentJobDto {
  const { leaseBy: _by, leaseAt: _at, skipped: _skipped, ...dto } = job;
  return dto;
}

/** The rank rules of one removal, checked up front so a job that cannot do anything is refused at once. */
function refuseUnlessModeratable(caller: StoredUser, target: StoredUser | undefined): asserts target {
  if (caller.Rank < Rank.Moderator)
    throw new AppError(
      ErrorCode.NOT_A_MODERATOR,
      'Invalid permissions! This needs rank Moderator or higher.',
    );
  if (!target)
    throw new AppError(ErrorCode.USER_NOT_FOUND, 'Could not find user!', {
      targetUserId: 'no user has that id',
    });
  if (target.Id === caller.Id)
    throw new AppError(ErrorCode.CANNOT_MODERATE_SELF, 'You cannot moderate yourself.');
  if (target.Rank >= caller.Rank) {
    throw new AppError(
      ErrorCode.TARGET_RANK_TOO_HIGH,
      `You can only act on users ranked below you; ${target.Username} is ${RANK_NAMES[target.Rank]}.`,
    );
  }
}

/**
 * "Remove all content of this user" (issue 28) as a background job whose state is a store record: it survives a
 * restart (a starting host resumes unfinished jobs), and with several hosts on one database only the holder of the
 * job's lease runs it. Each item is removed by the moderation action a single removal uses (deleteavatar,
 * deleteworld, deletefile), as the moderator who started the job: the same rank rules, checked per item, and one
 * moderation-log entry per removal.
 */
export function createContentJobs(deps: ContentJobDeps) {
  const { store, users, clock, log } = deps;
  const processId = randomBytes(8).toString('hex');
  const leaseSeconds = deps.options?.leaseSeconds ?? 30;
  const running = new Map<string, Promise<void>>();
  const wakers = new Set<() => void>();
  let closing = false;
  let sweeper: NodeJS.Timeout | null = null;
  const jobs = () => store.collection<StoredContentJob>(CONTENT_JOBS);

  const runner = {
    processId,
    leaseSeconds,
    shared: deps.shared,
    clock,
    store,
    log,
    closing: () => closing,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, ms);
        wakers.add(wake);
      }),
  };

  function launch(jobId: string): void {
    if (closing || running.has(jobId)) return;
    const work = runJob(deps, runner, jobId)
      .catch((error: unknown) =>
        log.error({ err: error, jobId }, 'a content removal job failed; it resumes later'),
      )
      .finally(() => running.delete(jobId));
    running.set(jobId, work);
  }

  async function resumeAll(): Promise<void> {
    for await (const job of jobs().scan()) if (job.state === 'running') launch(job.id);
  }

  return {
    /** A user's content, for a moderator who may remove it (the rank rules of a removal). */
    async contentOf(caller: StoredUser, targetUserId: string) {
      const target = await users.get(targetUserId);
      refuseUnlessModeratable(caller, target);
      return listUserContent(deps.uploads, target);
    },
    async start(caller: StoredUser, targetUserId: string): Promise<ContentJobDto> {
      const target = await users.get(targetUserId);
      refuseUnlessModeratable(caller, target);
      const total = contentItems(await listUserContent(deps.uploads, target)).length;
      const job = await store.tx(async (t) => {
        const repo = t.repo<StoredContentJob>(CONTENT_JOBS);
        const current = await repo.get(jobIdOf(target.Id));
        // One job per user at a time: a second start (from any host) gets the running one.
        if (current?.state === 'running') return current;
        return repo.put(jobIdOf(target.Id), newJob(caller, target, total, unixSeconds(clock)));
      });
      launch(job.id);
      return publicJob(job);
    },
    async get(targetUserId: string): Promise<ContentJobDto | null> {
      const job = await jobs().get(jobIdOf(targetUserId));
      return job ? publicJob(job) : null;
    },
    async byId(jobId: string): Promise<ContentJobDto | null> {
      const job = await jobs().get(jobId);
      return job ? publicJob(job) : null;
    },
    /** Resumes the unfinished jobs now, and (several hosts) takes over the abandoned ones from time to time. */
    startRunning(): void {
      const sweep = (): void => {
        resumeAll().catch((error: unknown) =>
          log.error({ err: error }, 'resuming content removal jobs failed'),
        );
      };
      sweep();
      if (deps.shared) {
        sweeper = setInterval(sweep, leaseSeconds * 1000);
        sweeper.unref();
      }
    },
    /** Stops after the item in hand; the jobs stay `running` in the store, for the next start to resume. */
    async close(): Promise<void> {
      closing = true;
      if (sweeper) clearInterval(sweeper);
      for (const wake of [...wakers]) wake();
      await Promise.all(running.values());
    },
  };
}

function newJob(caller: StoredUser, target: StoredUser, total: number, now: number): StoredContentJob {
  return {
    id: jobIdOf(target.Id),
    targetUserId: target.Id,
    targetName: target.Username,
    moderatorId: caller.Id,
    moderatorName: caller.Username,
    state: 'running',
    total,
    done: 0,
    failed: 0,
    failures: [],
    stoppedReason: null,
    createdAt: now,
    updatedAt: now,
    leaseBy: null,
    leaseAt: 0,
    skipped: [],
  };
}

interface Runner {
  processId: string;
  shared: boolean;
  leaseSeconds: number;
  clock: Clock;
  store: HostStore;
  log: Logger;
  closing(): boolean;
  sleep(ms: number): Promise<void>;
}

/** Takes (or renews) the lease of a running job; null when it is done or another live process holds it. */
async function claim(run: Runner, jobId: string): Promise<StoredContentJob | null> {
  return run.store.tx(async (t) => {
    const repo = t.repo<StoredContentJob>(CONTENT_JOBS);
    const job = await repo.get(jobId);
    if (!job || job.state !== 'running') return null;
    const now = unixSeconds(run.clock);
    const free = job.leaseBy === null || job.leaseBy === run.processId;
    // On the embedded store one process owns the folder: a lease left by an earlier run is dead.
    if (!free && run.shared && now - job.leaseAt <= run.leaseSeconds) return null;
    return repo.put(jobId, { ...job, leaseBy: run.processId, leaseAt: now });
  });
}

/** Writes what `change` makes of the job, if this process still holds its lease; false when it does not. */
async function record(
  run: Runner,
  jobId: string,
  change: (job: StoredContentJob) => StoredContentJob,
): Promise<boolean> {
  return run.store.tx(async (t) => {
    const repo = t.repo<StoredContentJob>(CONTENT_JOBS);
    const job = await repo.get(jobId);
    if (!job || job.leaseBy !== run.processId || job.state !== 'running') return false;
    repo.put(jobId, { ...change(job), leaseAt: unixSeconds(run.clock), updatedAt: unixSeconds(run.clock) });
    return true;
  });
}

/** Renews the lease a third of its length at a time while an item is slow. */
function renewLease(run: Runner, jobId: string): NodeJS.Timeout {
  const timer = setInterval(
    () => {
      record(run, jobId, (job) => job).catch((error: unknown) =>
        run.log.warn({ err: error, jobId }, 'renewing a content job lease failed'),
      );
    },
    (run.leaseSeconds * 1000) / 3,
  );
  timer.unref();
  return timer;
}

async function runJob(deps: ContentJobDeps, run: Runner, jobId: string): Promise<void> {
  if (!(await claim(run, jobId))) return;
  const lease = renewLease(run, jobId);
  try {
    while (!run.closing()) {
      const next = await nextStep(deps, run, jobId);
      if (next === 'finished') return;
    }
    // Closing: the lease goes, so another host (or the next start) resumes at once.
    await run.store.tx(async (t) => {
      const repo = t.repo<StoredContentJob>(CONTENT_JOBS);
      const job = await repo.get(jobId);
      if (job?.leaseBy === run.processId) repo.put(jobId, { ...job, leaseBy: null });
    });
  } finally {
    clearInterval(lease);
  }
}

/** Removes the next item of the job, or ends it; 'finished' when the loop should end. */
async function nextStep(deps: ContentJobDeps, run: Runner, jobId: string): Promise<'finished' | 'more'> {
  const job = await deps.store.collection<StoredContentJob>(CONTENT_JOBS).get(jobId);
  if (!job || job.state !== 'running' || job.leaseBy !== run.processId) return 'finished';
  const [moderator, target] = await Promise.all([
    deps.users.get(job.moderatorId),
    deps.users.get(job.targetUserId),
  ]);
  const items = target
    ? contentItems(await listUserContent(deps.uploads, target)).filter((i) => !job.skipped.includes(i.id))
    : [];
  const item = items[0];
  if (!item) {
    await record(run, jobId, (j) => ({ ...j, state: 'done', total: j.done + j.failed, leaseBy: null }));
    return 'finished';
  }
  if (!moderator) return stop(run, jobId, 'The moderator who started the job no longer exists.');
  if (deps.options?.itemDelayMs) await run.sleep(deps.options.itemDelayMs);
  if (run.closing()) return 'more';
  const left = items.length - 1;
  // A removal is counted in its own commit: a host dying right after it leaves the count right.
  const removal = { counted: false, leaseHeld: false };
  const outcome = await removeOne(deps, moderator, job.targetUserId, item, async (t) => {
    const leaseHeld = await countRemoval(t, run, jobId, left);
    t.afterCommit(() => Object.assign(removal, { counted: true, leaseHeld }));
  });
  if (removal.counted) return removal.leaseHeld ? 'more' : 'finished';
  if (outcome.stop) return stop(run, jobId, outcome.stop);
  const kept = await record(run, jobId, (j) => {
    const failed = j.failed + (outcome.failure ? 1 : 0);
    const failures = outcome.failure ? [...j.failures, outcome.failure].slice(-FAILURES_KEPT) : j.failures;
    const skipped = outcome.failure ? [...j.skipped, item.id] : j.skipped;
    return { ...j, failed, failures, skipped, total: j.done + failed + left };
  });
  return kept ? 'more' : 'finished';
}

/**
 * Counts one removal of job `jobId` in the removal's commit `t` (`left`: items still to go); whether this process
 * still holds the job's lease (counted either way: the item is gone, whoever runs the job now).
 */
async function countRemoval(t: Tx, run: Runner, jobId: string, left: number): Promise<boolean> {
  const repo = t.repo<StoredContentJob>(CONTENT_JOBS);
  const job = await repo.get(jobId);
  if (!job) return false;
  const done = job.done + 1;
  const now = unixSeconds(run.clock);
  const leaseHeld = job.leaseBy === run.processId && job.state === 'running';
  repo.put(jobId, {
    ...job,
    done,
    total: done + job.failed + left,
    updatedAt: now,
    ...(leaseHeld && { leaseAt: now }),
  });
  return leaseHeld;
}

async function stop(run: Runner, jobId: string, reason: string): Promise<'finished'> {
  await record(run, jobId, (j) => ({ ...j, state: 'stopped', stoppedReason: reason, leaseBy: null }));
  return 'finished';
}

type Outcome = { removed?: true; failure?: ContentJobFailure; stop?: string };

async function removeOne(
  deps: ContentJobDeps,
  moderator: StoredUser,
  targetUserId: string,
  item: ContentItem,
  count: (t: Tx) => Promise<void>,
): Promise<Outcome> {
  const [action, fields] =
    item.kind === 'avatar'
      ? (['deleteavatar', { avatarId: item.id }] as const)
      : item.kind === 'world'
        ? (['deleteworld', { worldId: item.id }] as const)
        : (['deletefile', { fileId: item.id }] as const);
  try {
    await deps.moderation.act(moderator, action, targetUserId, fields, count);
    return { removed: true };
  } catch (error) {
    if (error instanceof AppError && STOPPING.has(error.code)) return { stop: error.message };
    if (error instanceof AppError && GONE.has(error.code)) return {};
    const reason = error instanceof Error ? error.message : String(error);
    if (!(error instanceof AppError)) deps.log.error({ err: error, item }, 'a content job removal failed');
    return { failure: { kind: item.kind, id: item.id, reason } };
  }
}

export type ContentJobs = ReturnType<typeof createContentJobs>;
