import { DelayedError, Queue, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { AppError } from '../app-error.js';
import { createJobLogger, type Logger } from '../observability/logger.js';
import type { JobFacts, WorkerMetrics } from '../observability/metrics.js';
import { parseFeedbackItems, type FeedbackItem } from '../pipeline/feedback.js';
import type { FollowUpRequest, JobRequest } from '../pipeline/job-request.js';
import { classifyError, classifyQueueFailure, type Outcome } from '../pipeline/outcome.js';
import type { JobProgress } from '../pipeline/run-job.js';
import {
  createCancelRequests,
  createCancelWatcher,
  type CancelRequest,
  type CancelWatcher,
} from './cancellation.js';
import type { ConcurrencyLimiter } from './concurrency-limiter.js';
import { createFollowUpStore } from './follow-ups.js';
import { createIssueGuard } from './issue-guard.js';
import { jobDataSchema, type JobData } from './job-data.js';
import type { JobReport, JobReporter, JobReporterFactory } from './job-reporter.js';
import { JOB_NAME, type JobResult } from './job-queue.js';
import { appKeys, issueKey, type PullRef } from './queue-keys.js';

/**
 * Progress reported by the pipeline while a job runs (`runJob`'s `progress` callback), shown in the
 * status comment ("running (step n of max)") and stored as the BullMQ job progress.
 */
export type { JobProgress };

/** What the job runner gets besides the job data. */
export interface JobRunContext<Client = unknown> {
  /** BullMQ job id. */
  jobId: string;
  /** 1 for the first run, 2 after a retry, … */
  attempt: number;
  /**
   * Aborted when the job is cancelled (label removed, issue closed) or the worker shuts down; the
   * reason is an AppError `CANCELLED` whose `details.by` names who cancelled (null on shutdown).
   * The runner must stop and destroy its sandbox within 10 s.
   */
  signal: AbortSignal;
  /** Child logger carrying `{jobId, repo, issue}`. */
  logger: Logger;
  /** Report progress; never throws, returns at once (the comment is written in the background). */
  progress: (p: JobProgress) => Promise<void>;
  /**
   * The client `getClient` gave for the job's installation (in `bin`, an installation-authenticated
   * Octokit whose token lives only in this process).
   */
  client: Client;
}

/**
 * Runs one job and says how it ended; must never throw (the pipeline's `runJob` bound to its
 * dependencies). A thrown error is treated as an infrastructure failure and retried by the queue.
 */
export type JobRunner<Client = unknown> = (data: JobData, ctx: JobRunContext<Client>) => Promise<Outcome>;

/**
 * Runs one follow-up round (issue 11): `request.followUp` carries the pull request and the reviewer
 * feedback drained for this round. Same contract as {@link JobRunner}. `bin` wires the pipeline's
 * follow-up run; the default is {@link refuseFollowUp}.
 */
export type FollowUpRunner<Client = unknown> = (
  request: JobRequest & { followUp: FollowUpRequest & { feedback: FeedbackItem[] } },
  ctx: JobRunContext<Client>,
) => Promise<Outcome>;

/**
 * The follow-up runner until the pipeline has one: every round ends `failed` with code
 * `FOLLOW_UP_UNAVAILABLE` ("follow-up runs are not available yet"), not retried. Its feedback is
 * put back (the agent never started), so it is not lost.
 */
export const refuseFollowUp: FollowUpRunner = () =>
  Promise.resolve(
    classifyError(new AppError('FOLLOW_UP_UNAVAILABLE', 'follow-up runs are not available yet')),
  );

/** Per-repository concurrency, through the policy module's limiter. */
export interface RepoConcurrency {
  limiter: ConcurrencyLimiter;
  /** Jobs of `repo` (`owner/name`) allowed at once (admin policy `concurrencyPerRepo`). */
  perRepoLimit: (repo: string) => number;
  /**
   * How long a job refused a slot waits in the delayed set before it tries again, ms: this plus a
   * random part of up to the same again, so waiting jobs do not all come back at once. Default 5 000.
   */
  retryDelayMs?: number;
}

/** Options of {@link createJobWorker}. */
export interface JobWorkerOptions<Client = unknown> {
  /** A `worker`-role connection (`maxRetriesPerRequest: null`); owned by the caller. */
  redis: Redis;
  /** A `subscriber`-role connection for cancel requests; owned by the caller. */
  subscriber: Redis;
  prefix: string;
  queueName: string;
  /** Jobs this process runs at once (WORKER_CONCURRENCY). */
  concurrency: number;
  /** BullMQ lock of an active job, ms; renewed every half of it while this process lives. */
  lockDurationMs: number;
  /** How often this worker looks for stalled jobs, ms. */
  stalledIntervalMs: number;
  /** Times a job whose worker died goes back to the queue before it fails. */
  maxStalledCount: number;
  /** Polling period of the cancel key of each running job, ms. */
  cancelPollMs: number;
  /** At close, how long active jobs may finish before they are cancelled and re-queued, ms. */
  shutdownTimeoutMs: number;
  /** The client for an installation (in `bin`: installation-authenticated, token kept in memory). */
  getClient: (installationId: number) => Promise<Client>;
  run: JobRunner<Client>;
  /** Runs follow-up rounds (job data with `followUp`); default {@link refuseFollowUp}. */
  runFollowUp?: FollowUpRunner<Client>;
  /** Where each job's reports go (in `bin`: the issue's status comment). */
  reporterFor: JobReporterFactory<Client>;
  concurrencyLimit?: RepoConcurrency;
  /** Minimum time between two "running (step n)" edits of the status comment, ms (default 10 000). */
  progressIntervalMs?: number;
  logger: Logger;
  metrics?: WorkerMetrics;
}

/** A running queue worker. */
export interface JobWorker {
  readonly worker: Worker<JobData, JobResult, typeof JOB_NAME>;
  /** Job ids running in this process now. */
  activeJobIds(): string[];
  /**
   * Stop taking jobs; wait up to `shutdownTimeoutMs` for active jobs; then cancel the rest, which
   * go back to the queue (not counted as a failure) to run on another worker. Does not close the
   * connections. Idempotent.
   */
  close(): Promise<void>;
}

/** Extra wait after cancelling jobs at shutdown, ms: the runner has 10 s to destroy its sandbox. */
const SHUTDOWN_CANCEL_GRACE_MS = 15_000;

/**
 * Create the BullMQ worker of FrogNano jobs (https://docs.bullmq.io/guide/workers).
 *
 * Per job: validate the data with zod (invalid → failed without retry), check for a cancel request
 * that arrived before the job started, take a per-repository slot (else re-delay the job), get an
 * installation client, set the status comment to "preparing", run the pipeline with an AbortSignal
 * wired to cancel requests (pub/sub + polling, see cancellation.ts) and to shutdown, then record
 * metrics, write the outcome into the status comment and release the per-issue guard.
 *
 * Never silence: a job that fails for good (attempts exhausted, or stalled more than
 * `maxStalledCount` times because its worker kept dying) gets its status comment set to "failed"
 * by the `failed` event handler here.
 */
export async function createJobWorker<Client>(options: JobWorkerOptions<Client>): Promise<JobWorker> {
  const { redis, prefix, queueName, logger, metrics } = options;
  const keys = appKeys(prefix);
  const guard = createIssueGuard(redis, keys);
  const cancelRequests = createCancelRequests(redis, keys);
  const followUps = createFollowUpStore(redis, keys);
  // Next follow-up rounds are added by the worker that ends the previous one.
  const nextRounds = new Queue<JobData, JobResult, typeof JOB_NAME>(queueName, { connection: redis, prefix });
  nextRounds.on('error', (err) => logger.warn({ err }, 'follow-up queue error'));
  const runFollowUp = options.runFollowUp ?? (refuseFollowUp as FollowUpRunner<Client>);
  const watcher: CancelWatcher = await createCancelWatcher({
    subscriber: options.subscriber,
    requests: cancelRequests,
    keys,
    pollMs: options.cancelPollMs,
    logger,
  });
  const progressIntervalMs = options.progressIntervalMs ?? 10_000;
  /** Active jobs of this process: how to stop each one for shutdown. */
  const active = new Map<string, { shutdown: () => void }>();

  const processor = async (
    job: Job<JobData, JobResult, typeof JOB_NAME>,
    token?: string,
    bullSignal?: AbortSignal,
  ): Promise<JobResult> => {
    const started = Date.now();
    const jobId = job.id ?? '';
    const parsed = jobDataSchema.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(`invalid job data: ${z.prettifyError(parsed.error)}`);
    }
    const data = parsed.data;
    const repoName = `${data.owner}/${data.repo}`;
    const log = createJobLogger(logger, { jobId, repo: repoName, issue: data.issueNumber });
    if (job.attemptsMade === 0 && job.processedOn) {
      metrics?.pickupLatencySeconds.observe(Math.max(0, job.processedOn - job.timestamp) / 1000);
    }

    const controller = new AbortController();
    let cancelRequest: CancelRequest | null = null;
    let shutdownAbort = false;
    const abortForShutdown = () => {
      if (controller.signal.aborted) return;
      shutdownAbort = true;
      controller.abort(
        new AppError('CANCELLED', 'the worker is shutting down; the job will run again', {
          details: { by: null },
        }),
      );
    };
    const onBullAbort = () => abortForShutdown();
    bullSignal?.addEventListener('abort', onBullAbort);
    active.set(jobId, { shutdown: abortForShutdown });
    const unwatch = watcher.watch(jobId, (req) => {
      if (controller.signal.aborted && !shutdownAbort) return;
      cancelRequest = req;
      shutdownAbort = false;
      log.info({ by: req.by, reason: req.reason }, 'cancel request received; stopping the job');
      controller.abort(new AppError('CANCELLED', req.reason, { details: { by: req.by } }));
    });

    let slotHeld = false;
    /** A stage after `preparing` was reported: the agent ran (a failed round keeps no feedback then). */
    let agentStarted = false;
    let stopKeepAlive: (() => void) | undefined;
    try {
      const early = await cancelRequests.get(jobId);
      if (early) cancelRequest = early;

      if (!cancelRequest && options.concurrencyLimit) {
        const { limiter, perRepoLimit, retryDelayMs = 5_000 } = options.concurrencyLimit;
        const slot = await limiter.acquire(repoName, jobId, perRepoLimit(repoName));
        if (!slot.acquired) {
          // Not a failure: the job waits in the delayed set and tries again (no attempt is used).
          log.info({ limit: slot.limit }, 'concurrency limit reached; job delayed');
          await job.moveToDelayed(
            Date.now() + retryDelayMs + Math.floor(Math.random() * retryDelayMs),
            token,
          );
          throw new DelayedError();
        }
        slotHeld = true;
        stopKeepAlive = limiter.keepAlive(repoName, jobId, {
          onLost: () => log.warn('concurrency slot lease lost (Redis unreachable?); continuing'),
          onError: (err) => log.debug({ err }, 'slot renewal failed'),
        });
      }

      const client = await options.getClient(data.installationId);
      const status = options.reporterFor(client, data, { jobId, logger: log });
      const show = (state: JobReport) =>
        status.update(state).then(
          () => undefined,
          (err: unknown) => log.warn({ err }, 'status comment update failed'),
        );

      let outcome: Outcome;
      if (cancelRequest !== null) {
        const req: CancelRequest = cancelRequest;
        outcome = { kind: 'cancelled', by: req.by, reason: `${req.reason} before the job started` };
      } else {
        await show({ phase: 'preparing' });
        const report = createProgressReporter(job, show, progressIntervalMs, log, 'preparing');
        const progress = (p: JobProgress) => {
          if (p.stage !== 'preparing') agentStarted = true;
          return report(p);
        };
        const ctx = {
          jobId,
          attempt: job.attemptsMade + 1,
          signal: controller.signal,
          logger: log,
          progress,
          client,
        };
        outcome = data.followUp
          ? await runFollowUp({ ...data, followUp: await drainRound(data, data.followUp, jobId, log) }, ctx)
          : await options.run(data, ctx);
      }

      if (shutdownAbort && cancelRequest === null && outcome.kind === 'cancelled') {
        // Stopped by our shutdown, not by a person: the job goes back to the queue and runs again
        // on a live worker. (A run that finished anyway keeps its outcome.)
        log.info('job interrupted by shutdown; back to the queue');
        await job.moveToWait(token);
        await show({ phase: 'queued', position: null, again: 'The worker running this job was shut down' });
        throw new WaitingError();
      }
      if (outcome.kind === 'cancelled' && cancelRequest !== null) {
        const req: CancelRequest = cancelRequest;
        outcome = { ...outcome, by: outcome.by ?? req.by };
      }

      const attempts = job.opts.attempts ?? 1;
      if (isRetryableOutcome(outcome) && job.attemptsMade + 1 < attempts) {
        await show({
          phase: 'retrying',
          retry: job.attemptsMade + 1,
          maxRetries: attempts - 1,
          reason: outcomeReason(outcome),
        });
        throw new AppError('RETRYABLE_OUTCOME', `${outcome.kind}: ${outcomeReason(outcome)}`, {
          retryable: true,
        });
      }

      metrics?.recordJob(jobFacts(outcome, Date.now() - started));
      await writeFinal(status, outcome, log);
      await finishIssue(data, jobId);
      await finishRound(job, data, { outcome, agentStarted, client, log });
      log.info({ outcome: outcome.kind, elapsedMs: Date.now() - started }, 'job finished');
      return toJobResult(outcome);
    } finally {
      unwatch();
      stopKeepAlive?.();
      if (slotHeld) await options.concurrencyLimit?.limiter.release(repoName, jobId).catch(() => undefined);
      bullSignal?.removeEventListener('abort', onBullAbort);
      active.delete(jobId);
    }
  };

  /**
   * Release the per-issue guard and the cancel request of a job that ended for good. (A follow-up
   * job holds its pull request's guard instead: {@link finishRound} releases it.)
   */
  async function finishIssue(data: JobData, jobId: string): Promise<void> {
    await cancelRequests.clear(jobId).catch(() => undefined);
    if (data.followUp) return;
    const key = issueKey({ owner: data.owner, repo: data.repo, issueNumber: data.issueNumber });
    await guard
      .release(key, jobId)
      .catch((err: unknown) =>
        logger.warn({ err, jobId }, 'could not release the issue guard (it will be taken over)'),
      );
  }

  /** Move the pull request's pending feedback into this round and parse it (see follow-ups.ts). */
  async function drainRound(
    data: JobData,
    followUp: NonNullable<JobData['followUp']>,
    jobId: string,
    log: Logger,
  ): Promise<FollowUpRequest & { feedback: FeedbackItem[] }> {
    const stored = await followUps.drain(pullOf(data, followUp), jobId);
    const { items, invalid } = parseFeedbackItems(stored);
    if (invalid > 0) log.warn({ invalid }, 'dropped malformed feedback items');
    log.info({ round: followUp.round, feedback: items.length }, 'follow-up round starts');
    return { ...followUp, feedback: items };
  }

  /**
   * A follow-up round ended for good: keep or forget its feedback, release the pull request's
   * guard, THEN start the next round if feedback is pending (follow-ups.ts: this order leaves
   * exactly one job for pending feedback whatever the interleaving).
   *
   * A round that failed before the agent started (sandbox, policy, no runner) puts its feedback
   * back at the head of the pending list and starts no next round (it would fail the same way):
   * the next request, or `/frognano` again, runs it. Any other end forgets the round's feedback.
   */
  async function finishRound(
    job: Job<JobData, JobResult, typeof JOB_NAME>,
    data: JobData,
    end: { outcome: Outcome; agentStarted: boolean; client: Client; log: Logger },
  ): Promise<void> {
    if (!data.followUp) return;
    const jobId = job.id ?? '';
    const pull = pullOf(data, data.followUp);
    const { log } = end;
    try {
      const keep = isFailure(end.outcome) && !end.agentStarted;
      if (keep)
        log.info(
          { restored: await followUps.restore(pull, jobId) },
          'round failed before the agent ran; feedback kept',
        );
      else await followUps.forgetRound(jobId);
      await followUps.release(pull, jobId);
      if (keep) return;
      const next = await followUps.next(pull);
      if (next.result !== 'acquired') return;
      const nextData: JobData = {
        ...data,
        followUp: { ...data.followUp, round: next.round },
        enqueuedAt: new Date().toISOString(),
      };
      try {
        await nextRounds.add(JOB_NAME, nextData, { jobId: next.jobId, attempts: job.opts.attempts ?? 1 });
      } catch (err) {
        await followUps.release(pull, next.jobId).catch(() => undefined);
        throw err;
      }
      log.info(
        { nextJobId: next.jobId, round: next.round },
        'feedback arrived during the round; next round queued',
      );
      await options
        .reporterFor(end.client, nextData, { jobId: next.jobId, logger: log })
        .update({ phase: 'queued', position: null })
        .catch((err: unknown) => log.warn({ err }, 'status comment update failed'));
    } catch (err) {
      log.error(
        { err },
        'could not finish the follow-up round (pending feedback waits for the next request)',
      );
    }
  }

  const worker = new Worker<JobData, JobResult, typeof JOB_NAME>(queueName, processor, {
    connection: redis,
    prefix,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: options.maxStalledCount,
    autorun: true,
  });

  worker.on('error', (err) => logger.warn({ err }, 'worker error'));
  worker.on('stalled', (jobId) =>
    logger.warn({ jobId }, 'job stalled (its worker stopped renewing the lock); back to the queue'),
  );
  worker.on('lockRenewalFailed', (jobIds) => logger.warn({ jobIds }, 'job lock renewal failed'));
  worker.on('failed', (job, err) => {
    void onFailed(job, err);
  });

  /** The `failed` event: when the job will not run again, say so in its status comment. */
  async function onFailed(
    job: Job<JobData, JobResult, typeof JOB_NAME> | undefined,
    err: Error,
  ): Promise<void> {
    if (!job) return;
    const jobId = job.id ?? '';
    try {
      const state = await job.getState();
      if (state !== 'failed') {
        logger.warn({ jobId, attemptsMade: job.attemptsMade, err }, 'job attempt failed; it will run again');
        return;
      }
      const parsed = jobDataSchema.safeParse(job.data);
      if (!parsed.success) {
        logger.error({ jobId, err }, 'job with invalid data failed; no status comment can be written');
        return;
      }
      const data = parsed.data;
      const log = createJobLogger(logger, {
        jobId,
        repo: `${data.owner}/${data.repo}`,
        issue: data.issueNumber,
      });
      const outcome = classifyQueueFailure(err);
      log.error(
        { code: outcome.kind === 'failed' ? outcome.code : outcome.kind, err },
        'job failed for good',
      );
      metrics?.recordJob(jobFacts(outcome, Date.now() - (job.processedOn ?? job.timestamp)));
      try {
        const client = await options.getClient(data.installationId);
        const status = options.reporterFor(client, data, { jobId, logger: log });
        await writeFinal(status, outcome, log);
        await finishIssue(data, jobId);
        await finishRound(job, data, {
          outcome,
          agentStarted: progressStage(job) !== 'preparing',
          client,
          log,
        });
      } catch (e) {
        log.error({ err: e }, 'could not write the failure into the status comment');
        await finishIssue(data, jobId);
      }
    } catch (e) {
      logger.error({ jobId, err: e }, 'failed-job handling failed');
    }
  }

  let closing: Promise<void> | null = null;
  return {
    worker,
    activeJobIds: () => [...active.keys()],
    close() {
      closing ??= (async () => {
        const graceful = worker.close();
        const finished = await settleWithin(graceful, options.shutdownTimeoutMs);
        if (!finished) {
          logger.warn(
            { jobs: [...active.keys()] },
            'shutdown timeout: cancelling active jobs; they go back to the queue',
          );
          for (const a of active.values()) a.shutdown();
          if (!(await settleWithin(graceful, SHUTDOWN_CANCEL_GRACE_MS))) {
            logger.error(
              'active jobs did not stop in time; forcing the worker closed (their locks expire and they are retried)',
            );
            await worker.close(true).catch(() => undefined);
          }
        }
        await watcher.close();
        await nextRounds.close().catch(() => undefined);
      })();
      return closing;
    },
  };
}

/** The final status comment write, retried a few times: it is the one a person reads. */
async function writeFinal(status: JobReporter, outcome: Outcome, log: Logger): Promise<void> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await status.update({ phase: 'finished', outcome });
      return;
    } catch (err) {
      log.warn({ attempt, err: err }, 'final status comment update failed');
      if (attempt < 3) await new Promise((r) => setTimeout(r, 1000 * attempt));
    }
  }
  log.error({ outcome: outcome.kind }, 'the outcome could not be written into the status comment');
}

/**
 * A progress callback that stores every report as the BullMQ job progress and edits the status
 * comment on each phase change, and for agent steps at most once per `intervalMs` (GitHub's
 * secondary rate limits punish bursts of edits). Returns at once; writes happen in order.
 */
function createProgressReporter(
  job: Job<JobData, JobResult, typeof JOB_NAME>,
  show: (s: JobReport) => Promise<void>,
  intervalMs: number,
  log: Logger,
  shownPhase: string | null = null,
): (p: JobProgress) => Promise<void> {
  let lastPhase: string | null = shownPhase;
  let lastWrite = shownPhase === null ? 0 : Date.now();
  return (p) => {
    void job
      .updateProgress(p as unknown as Record<string, unknown>)
      .catch((err: unknown) => log.debug({ err }, 'job progress not stored'));
    const now = Date.now();
    const phaseChanged = p.stage !== lastPhase;
    if (!phaseChanged && now - lastWrite < intervalMs) return Promise.resolve();
    lastPhase = p.stage;
    lastWrite = now;
    const state: JobReport =
      p.stage === 'running'
        ? { phase: 'running', step: p.step ?? 0, maxSteps: p.maxSteps ?? null }
        : { phase: p.stage };
    void show(state);
    return Promise.resolve();
  };
}

/** The pull request of a follow-up job. */
function pullOf(data: JobData, followUp: NonNullable<JobData['followUp']>): PullRef {
  return { owner: data.owner, repo: data.repo, pullNumber: followUp.pullNumber };
}

/** Outcomes that are neither a result for the reviewers nor a cancel. */
function isFailure(outcome: Outcome): boolean {
  return !['pr_opened', 'no_change', 'tests_failing', 'cancelled'].includes(outcome.kind);
}

/** The last stage a job reported (its BullMQ progress), `preparing` when none. */
function progressStage(job: Job): string {
  const p = job.progress as { stage?: unknown } | number | undefined;
  return typeof p === 'object' && typeof p.stage === 'string' ? p.stage : 'preparing';
}

/** Outcomes worth another run of the whole job: transient GitHub errors and retryable failures. */
export function isRetryableOutcome(outcome: Outcome): boolean {
  return (outcome.kind === 'github_error' || outcome.kind === 'failed') && outcome.retryable;
}

function outcomeReason(outcome: Outcome): string {
  return 'message' in outcome ? outcome.message : outcome.kind;
}

function toJobResult(outcome: Outcome): JobResult {
  const pullUrl = 'pullUrl' in outcome && typeof outcome.pullUrl === 'string' ? outcome.pullUrl : undefined;
  return pullUrl ? { outcome: outcome.kind, pullUrl } : { outcome: outcome.kind };
}

/** True when `p` settled within `ms`. */
async function settleWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The facts of a finished job that the metrics record (they take no pipeline types). */
function jobFacts(outcome: Outcome, durationMs: number): JobFacts {
  const summary = 'summary' in outcome ? outcome.summary : undefined;
  return {
    outcome: outcome.kind,
    durationMs,
    ...(summary
      ? {
          run: {
            steps: summary.steps,
            promptTokens: summary.promptTokens,
            completionTokens: summary.completionTokens,
          },
        }
      : {}),
  };
}
