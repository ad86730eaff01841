import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { isAppError, isRetryableHttpStatus } from '../app-error.js';
import type { Logger } from '../observability/logger.js';

/**
 * The webhook intake (DESIGN.md "The way a job flows"): a verified delivery is recorded in Redis as
 * a BullMQ job of the `<QUEUE_NAME>-intake` queue and answered at once; the GitHub side (trigger
 * rules, permission, policy, status comment, reaction) runs in that queued step, retried with
 * exponential backoff, so an unreachable GitHub delays a job and never drops the label event.
 *
 * Deduplication: the intake job id is derived from `X-GitHub-Delivery`, so a redelivery of a
 * delivery still recorded (completed ones are kept {@link INTAKE_KEEP_SECONDS}) adds nothing; past
 * that, the handlers' own per-delivery reservation (queue/issue-guard.ts) still holds.
 */

/** One verified delivery, as recorded. */
export interface WebhookDelivery {
  /** `X-GitHub-Delivery`. */
  id: string;
  /** `X-GitHub-Event`, e.g. `issues`. */
  name: string;
  /** The parsed body (signature verified). */
  payload: unknown;
}

/** Options of {@link createWebhookIntake}. */
export interface WebhookIntakeOptions {
  /** A `producer` connection (fails fast while Redis is down: the webhook answers 503). */
  redis: Redis;
  /** QUEUE_PREFIX. */
  prefix: string;
  /** QUEUE_NAME; the intake queue is `<queueName>-intake`. */
  queueName: string;
  /** Tries of the GitHub side per delivery (INTAKE_ATTEMPTS). */
  attempts: number;
  /** First retry delay, ms, doubling each try (INTAKE_BACKOFF_MS). */
  backoffMs: number;
  /**
   * The GitHub side of one delivery (Probot's `receive`). A throw with `status` 503 or
   * `retryable: true` (also inside an AggregateError) is retried; any other throw ends the delivery
   * as failed, kept in Redis with its payload.
   */
  process: (delivery: WebhookDelivery) => Promise<void>;
  logger: Logger;
}

/** The running intake. */
export interface WebhookIntake {
  /**
   * Record a delivery (one Redis round trip). Resolves once it is stored.
   *
   * @throws the Redis error when Redis is unreachable (answer 5xx: GitHub may redeliver).
   */
  record(delivery: WebhookDelivery): Promise<void>;
  /** Start processing recorded deliveries on `connection` (a `worker` connection: blocking reads). */
  start(connection: Redis, concurrency?: number): void;
  /** Deliveries waiting or being retried, for `/readyz` and tests. */
  pending(): Promise<number>;
  /**
   * Resolve once no delivery is waiting, delayed or being processed (polls every 20 ms).
   *
   * @throws Error after `timeoutMs` (default 30 000).
   */
  idle(timeoutMs?: number): Promise<void>;
  /** Stop processing (the current step finishes) and close the queue. Idempotent. */
  close(): Promise<void>;
}

/** Seconds a processed delivery is kept, so that a redelivery within that time is recognised. */
export const INTAKE_KEEP_SECONDS = 24 * 3600;

/** BullMQ job ids must not contain `:`; GitHub delivery ids are GUIDs. */
export function intakeJobId(deliveryId: string): string {
  return `delivery-${deliveryId.replace(/[^A-Za-z0-9._-]/g, '_')}`;
}

/** Create the intake; {@link WebhookIntake.start} begins processing. */
export function createWebhookIntake(options: WebhookIntakeOptions): WebhookIntake {
  const name = `${options.queueName}-intake`;
  const queue = new Queue<WebhookDelivery>(name, { connection: options.redis, prefix: options.prefix });
  queue.on('error', (err) => options.logger.warn({ err: { message: err.message } }, 'intake queue error'));
  let worker: Worker<WebhookDelivery> | null = null;
  let closing: Promise<void> | null = null;

  const run = async (job: Job<WebhookDelivery>): Promise<void> => {
    try {
      await options.process(job.data);
    } catch (err) {
      const log = { deliveryId: job.data.id, event: job.data.name, try: job.attemptsMade + 1 };
      if (!isRetryable(err)) {
        options.logger.error({ ...log, err: { message: (err as Error).message } }, 'webhook intake failed');
        throw new UnrecoverableError((err as Error).message);
      }
      options.logger.warn(
        { ...log, of: options.attempts, err: { message: (err as Error).message } },
        'webhook intake: GitHub side failed; retrying with backoff',
      );
      throw err;
    }
  };

  return {
    async record(delivery) {
      // BullMQ waits for a connection that is not ready; the webhook must fail at once instead.
      if (options.redis.status !== 'ready')
        throw new Error(`Redis is not connected (${options.redis.status})`);
      await queue.add(delivery.name, delivery, {
        jobId: intakeJobId(delivery.id),
        attempts: options.attempts,
        backoff: { type: 'exponential', delay: options.backoffMs },
        removeOnComplete: { age: INTAKE_KEEP_SECONDS },
        removeOnFail: { age: 7 * INTAKE_KEEP_SECONDS },
      });
    },
    start(connection, concurrency = 8) {
      if (worker) return;
      worker = new Worker<WebhookDelivery>(name, run, { connection, prefix: options.prefix, concurrency });
      worker.on('error', (err) =>
        options.logger.warn({ err: { message: err.message } }, 'intake worker error'),
      );
      worker.on('failed', (job, err) => {
        if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
          options.logger.error(
            { deliveryId: job.data.id, event: job.data.name, err: { message: err.message } },
            'webhook intake gave up; the delivery stays in the failed intake jobs',
          );
        }
      });
    },
    async pending() {
      const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    async idle(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      while ((await this.pending()) > 0) {
        if (Date.now() > until) throw new Error(`webhook intake not idle after ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close() {
      closing ??= (async () => {
        // A worker that never reached Redis would wait for it forever: bound the close.
        const bounded = (p: Promise<unknown>) =>
          Promise.race([
            p.catch(() => undefined),
            new Promise((resolve) => setTimeout(resolve, 5000).unref()),
          ]);
        await bounded(worker?.close() ?? Promise.resolve());
        await bounded(queue.close());
      })();
      return closing;
    },
  };
}

/**
 * Whether a failed GitHub side is worth another try: an AppError says so itself (`retryable`); an
 * HTTP error is retried for 5xx and 429 (a refused connection is a 500 in Octokit); anything else
 * is retried too (bounded by the attempts). Looks through the AggregateError of `@octokit/webhooks`
 * and the `cause` chain (app.ts wraps handler errors).
 */
function isRetryable(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.some(isRetryable);
  if (isAppError(err)) return err.retryable;
  const e = err as { status?: unknown; cause?: unknown } | null;
  if (e?.cause !== undefined && e.cause !== err) return isRetryable(e.cause);
  // Anything but a number means no HTTP answer came (a network error).
  return isRetryableHttpStatus(typeof e?.status === 'number' ? e.status : undefined);
}
