import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppError } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import { createCancelRequests, type CancelRequest, type CancelRequests } from './cancellation.js';
import { createIssueGuard, type GuardHolder, type IssueGuard } from './issue-guard.js';
import { jobDataSchema, parseJobData, type JobData } from './job-data.js';
import { createFollowUpStore, type FollowUpStore } from './follow-ups.js';
import type { FeedbackItem } from '../pipeline/feedback.js';
import {
  appKeys,
  followUpGuardName,
  issueKey,
  makeJobId,
  type AppKeys,
  type IssueRef,
  type PullRef,
} from './queue-keys.js';

/** BullMQ job name of every job of this app. */
export const JOB_NAME = 'issue';

/** What a finished job stores as its BullMQ return value: the outcome's kind and a short text. */
export interface JobResult {
  outcome: string;
  /** Pull request URL when one was opened or updated. */
  pullUrl?: string;
}

/** The BullMQ queue type of this app. */
export type FrognanoQueue = Queue<JobData, JobResult, typeof JOB_NAME>;

/** States in which a job counts as "waiting or active" for the per-issue guard. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);
/** States of a job not yet taken by a worker (removable). */
const WAITING_STATES = new Set(['waiting', 'delayed', 'prioritized']);

/** Result of {@link JobQueue.reserve}. */
export type ReserveResult =
  /** The issue is reserved for a new job `jobId`; `position` is its place in line (1 = next). */
  | { status: 'reserved'; jobId: string; position: number }
  /** This webhook delivery was seen before and made job `jobId`: do nothing. */
  | { status: 'duplicate_delivery'; jobId: string }
  /** Another job for the issue is waiting or active. */
  | { status: 'busy'; jobId: string; state: string };

/** Result of {@link JobQueue.requestFollowUp}. */
export type FollowUpRequestResult =
  /** A new round `round` is reserved as job `jobId` (enqueue it); `position` as in {@link ReserveResult}. */
  | { status: 'reserved'; jobId: string; round: number; position: number }
  /** This webhook delivery was seen before: nothing was added. */
  | { status: 'duplicate_delivery'; jobId: string }
  /** A follow-up job of the pull request is waiting or running: it, or the round after it, takes the request. */
  | { status: 'joined'; jobId: string; state: string };

/** Result of {@link JobQueue.cancel}. */
export type CancelResult =
  /** No job waiting or active for the issue. */
  | { status: 'none' }
  /** The job had not started: it was removed from the queue. `data` is null if it was malformed. */
  | { status: 'removed'; jobId: string; data: JobData | null }
  /** The job is running (or about to): its worker was asked to stop and will report the outcome. */
  | { status: 'signalled'; jobId: string };

/**
 * The producer side of the job queue, used by `serve`: per-issue reservation, enqueue, cancel.
 * Job data is validated with zod ({@link parseJobData}) before it is added.
 */
export interface JobQueue {
  readonly queue: FrognanoQueue;
  readonly guard: IssueGuard;
  readonly cancelRequests: CancelRequests;
  readonly keys: AppKeys;
  /**
   * Reserve `ref` for a job created by webhook delivery `deliveryId`. Atomic in Redis; a stale
   * reservation (its job finished, or never enqueued after {@link RESERVATION_GRACE_MS}) is taken
   * over. Throws (AppError `QUEUE_UNAVAILABLE`, retryable) when Redis cannot be reached.
   */
  reserve(ref: IssueRef, deliveryId: string): Promise<ReserveResult>;
  /**
   * Add the job reserved by {@link reserve}. Validates `data` (throws ZodError) and bounds the wait
   * for Redis (AppError `QUEUE_UNAVAILABLE`, retryable).
   *
   * @param options.attempts BullMQ attempts of this job (admin policy); default: the queue's.
   */
  enqueue(jobId: string, data: JobData, options?: { attempts?: number }): Promise<void>;
  /** Undo a {@link reserve} whose enqueue failed: release the issue and forget the delivery. Never throws. */
  abandon(ref: IssueRef, jobId: string, deliveryId: string): Promise<void>;
  /** Cancel the issue's waiting or active job (see {@link CancelResult}). */
  cancel(ref: IssueRef, request: Omit<CancelRequest, 'at'>): Promise<CancelResult>;
  /** Pending feedback and guard of follow-up rounds (issue 11). */
  readonly followUps: FollowUpStore;
  /**
   * Add reviewer feedback (one request's items) for the pull request `pull` of `issue` and reserve a follow-up round when
   * none is waiting or active (a stale reservation is taken over as in {@link reserve}).
   *
   * @throws AppError `QUEUE_UNAVAILABLE` (retryable) when Redis cannot be reached.
   */
  requestFollowUp(
    pull: PullRef,
    issue: IssueRef,
    items: readonly FeedbackItem[],
    deliveryId: string,
  ): Promise<FollowUpRequestResult>;
  /** The follow-up job holding `pull` and its BullMQ state (`queuing` while being enqueued), or null. */
  followUpJob(pull: PullRef): Promise<{ jobId: string; state: string } | null>;
  /** Cancel the pull request's waiting or active follow-up job and drop its pending feedback. */
  cancelFollowUp(pull: PullRef, request: Omit<CancelRequest, 'at'>): Promise<CancelResult>;
  /** Job counts by state, for `/metrics`. */
  counts(): Promise<Record<string, number>>;
  /** Close the BullMQ queue (not the connection, which the caller owns). */
  close(): Promise<void>;
}

/** How long a reservation may wait for its job to appear in the queue before it counts as stale, ms. */
export const RESERVATION_GRACE_MS = 60_000;

/** Bound on one Redis round trip of the webhook path, ms; beyond it the webhook gets a 5xx. */
const REDIS_TIMEOUT_MS = 5_000;

/**
 * Default BullMQ job options. `attempts` counts runs after a thrown error (infrastructure); an
 * {@link Outcome} is final. Finished jobs are kept a while for `/admin` and duplicate-delivery checks.
 */
export function defaultJobOptions(attempts: number, backoffMs = 30_000): JobsOptions {
  return {
    attempts,
    backoff: { type: 'exponential', delay: backoffMs },
    removeOnComplete: { age: 7 * 24 * 3600, count: 5000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 5000 },
  };
}

/**
 * Create the producer side of the queue.
 *
 * @param options.redis a connection from `createRedisConnection(url, 'producer')` (fails fast when
 *   Redis is down); owned by the caller.
 * @param options.prefix QUEUE_PREFIX; BullMQ keys are `<prefix>:<queueName>:…`.
 */
export function createJobQueue(options: {
  redis: Redis;
  prefix: string;
  queueName: string;
  attempts: number;
  /** First retry delay after an infrastructure error, ms (doubles each retry). Default 30 000. */
  backoffMs?: number;
  logger: Logger;
  now?: () => number;
}): JobQueue {
  const { redis, prefix, queueName, logger } = options;
  const now = options.now ?? Date.now;
  const keys = appKeys(prefix);
  const guard = createIssueGuard(redis, keys, now);
  const cancelRequests = createCancelRequests(redis, keys);
  const followUps = createFollowUpStore(redis, keys, now);
  const queue: FrognanoQueue = new Queue<JobData, JobResult, typeof JOB_NAME>(queueName, {
    connection: redis,
    prefix,
    defaultJobOptions: defaultJobOptions(options.attempts, options.backoffMs),
    // Not skipWaitingForReady: BullMQ's first command must see a ready connection, else the queue
    // stays broken after Redis comes back. Waits are bounded by `bounded()` below instead.
  });
  queue.on('error', (err) => logger.warn({ err }, 'queue error'));

  const bounded = <T>(p: Promise<T>, what: string): Promise<T> => withTimeout(p, REDIS_TIMEOUT_MS, what);

  const isYoung = (h: GuardHolder) => now() - h.reservedAtMs < RESERVATION_GRACE_MS;

  /** Cancel the job holding the guard `key` (an issue key or a follow-up guard name). */
  async function cancelGuarded(key: string, request: Omit<CancelRequest, 'at'>): Promise<CancelResult> {
    const holder = await bounded(guard.holder(key), 'read the issue guard');
    if (!holder) return { status: 'none' };
    const { jobId } = holder;
    const job = await bounded(queue.getJob(jobId), 'read the job');
    if (!job) {
      if (!isYoung(holder)) {
        await bounded(guard.release(key, jobId), 'release a stale guard');
        return { status: 'none' };
      }
      // Being enqueued right now: the worker will find the request when it starts the job.
      await bounded(cancelRequests.request(jobId, request), 'record the cancel request');
      return { status: 'signalled', jobId };
    }
    const state = await bounded(job.getState(), 'read job state');
    if (!LIVE_STATES.has(state)) {
      await bounded(guard.release(key, jobId), 'release a stale guard');
      return { status: 'none' };
    }
    // Record first: if the job becomes active between here and the removal, its worker sees it.
    await bounded(cancelRequests.request(jobId, request), 'record the cancel request');
    if (WAITING_STATES.has(state)) {
      const removed = await bounded(queue.remove(jobId), 'remove the job');
      if (removed === 1) {
        await bounded(guard.release(key, jobId), 'release the issue');
        await bounded(cancelRequests.clear(jobId), 'clear the cancel request');
        const parsed = jobDataSchema.safeParse(job.data);
        return { status: 'removed', jobId, data: parsed.success ? parsed.data : null };
      }
    }
    return { status: 'signalled', jobId };
  }

  return {
    queue,
    guard,
    cancelRequests,
    keys,

    async reserve(ref, deliveryId) {
      const key = issueKey(ref);
      const jobId = makeJobId(ref, deliveryId);
      let expected: string | undefined;
      // At most three rounds: a stale delivery record, then a stale guard, then the real answer.
      for (let round = 0; round < 3; round++) {
        const r = await bounded(guard.acquire(key, jobId, deliveryId, expected), 'reserve the issue');
        if (r.result === 'acquired') {
          const counts = await bounded(queue.getJobCounts('wait', 'prioritized'), 'count waiting jobs');
          const ahead = Object.values(counts).reduce((a, b) => a + b, 0);
          return { status: 'reserved', jobId, position: ahead + 1 };
        }
        const state = await bounded(queue.getJobState(r.holder.jobId), 'read job state');
        if (r.result === 'duplicate_delivery') {
          if (state !== 'unknown' || isYoung(r.holder))
            return { status: 'duplicate_delivery', jobId: r.holder.jobId };
          // The first handling of this delivery failed before its job was added: forget it.
          await bounded(guard.forgetDelivery(deliveryId, r.holder.jobId), 'forget delivery');
          continue;
        }
        if (LIVE_STATES.has(state) || (state === 'unknown' && isYoung(r.holder))) {
          return { status: 'busy', jobId: r.holder.jobId, state: state === 'unknown' ? 'queuing' : state };
        }
        // The holder finished (or never started) without releasing the guard: take it over.
        logger.info({ issue: key, staleJobId: r.holder.jobId, state }, 'taking over a stale issue guard');
        expected = r.holder.jobId;
      }
      throw new AppError('QUEUE_CONTENDED', `could not reserve ${key}: the guard changed three times`, {
        retryable: true,
      });
    },

    async enqueue(jobId, data, opts = {}) {
      const valid = parseJobData(data);
      const jobOpts: JobsOptions = { jobId };
      if (opts.attempts !== undefined) jobOpts.attempts = opts.attempts;
      await bounded(queue.add(JOB_NAME, valid, jobOpts), 'add the job');
    },

    async abandon(ref, jobId, deliveryId) {
      try {
        await bounded(guard.release(issueKey(ref), jobId), 'release the issue');
        await bounded(guard.forgetDelivery(deliveryId, jobId), 'forget delivery');
      } catch (err) {
        // Redis is down: the reservation becomes stale and is taken over after RESERVATION_GRACE_MS.
        logger.warn({ err, jobId }, 'could not undo a reservation');
      }
    },

    cancel(ref, request) {
      return cancelGuarded(issueKey(ref), request);
    },

    followUps,

    async requestFollowUp(pull, issue, items, deliveryId) {
      const added = await bounded(followUps.add(pull, issue, items, deliveryId), 'add the feedback');
      if (added.result === 'duplicate') return { status: 'duplicate_delivery', jobId: added.holder.jobId };
      let taken: { jobId: string; round: number } | null = added.result === 'acquired' ? added : null;
      if (added.result === 'busy') {
        const state = await bounded(queue.getJobState(added.holder.jobId), 'read job state');
        if (LIVE_STATES.has(state) || (state === 'unknown' && isYoung(added.holder))) {
          return {
            status: 'joined',
            jobId: added.holder.jobId,
            state: state === 'unknown' ? 'queuing' : state,
          };
        }
        logger.info(
          { pull: followUpGuardName(pull), staleJobId: added.holder.jobId, state },
          'taking over a stale guard',
        );
        const next = await bounded(followUps.next(pull, added.holder.jobId), 'reserve the pull request');
        if (next.result === 'busy') return { status: 'joined', jobId: next.holder.jobId, state: 'queuing' };
        if (next.result === 'acquired') taken = next;
      }
      if (!taken)
        throw new AppError('QUEUE_CONTENDED', 'the pending feedback vanished while reserving', {
          retryable: true,
        });
      const counts = await bounded(queue.getJobCounts('wait', 'prioritized'), 'count waiting jobs');
      const ahead = Object.values(counts).reduce((a, b) => a + b, 0);
      return { status: 'reserved', jobId: taken.jobId, round: taken.round, position: ahead + 1 };
    },

    async followUpJob(pull) {
      const holder = await bounded(followUps.holder(pull), 'read the pull request guard');
      if (!holder) return null;
      const state = await bounded(queue.getJobState(holder.jobId), 'read job state');
      if (LIVE_STATES.has(state)) return { jobId: holder.jobId, state };
      return state === 'unknown' && isYoung(holder) ? { jobId: holder.jobId, state: 'queuing' } : null;
    },

    async cancelFollowUp(pull, request) {
      const result = await cancelGuarded(followUpGuardName(pull), request);
      await bounded(followUps.clearPending(pull), 'drop the pending feedback');
      if (result.status === 'removed') await bounded(followUps.forgetRound(result.jobId), 'drop the round');
      return result;
    },

    async counts() {
      return bounded(
        queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed'),
        'count jobs',
      );
    },

    async close() {
      await queue.close();
    },
  };
}

/**
 * Resolve with `p`, or reject with AppError `QUEUE_UNAVAILABLE` (retryable) after `ms`.
 * The underlying operation is not cancelled; its late result is ignored.
 */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AppError('QUEUE_UNAVAILABLE', `Redis did not answer within ${ms} ms (${what})`, {
            retryable: true,
          }),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([p, timeout]);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('QUEUE_UNAVAILABLE', `Redis is unavailable (${what}): ${(err as Error).message}`, {
      retryable: true,
      cause: err,
    });
  } finally {
    clearTimeout(timer);
  }
}
