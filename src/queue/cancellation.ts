import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Logger } from '../observability/logger.js';
import type { AppKeys } from './queue-keys.js';

/**
 * Cross-process job cancellation.
 *
 * BullMQ's `Worker.cancelJob()` aborts a job only in the process that runs it
 * (https://docs.bullmq.io/guide/workers/cancelling-jobs), and the webhook arrives at `serve`, not at
 * the worker. So a cancel request is written to Redis as a key per job (durable: a worker that
 * starts or restarts the job later still sees it) and announced on a pub/sub channel (fast: the
 * worker running the job aborts within milliseconds). Because pub/sub drops messages while a
 * subscriber reconnects, each running job also polls its key every `pollMs`; the worst-case delay
 * is therefore `pollMs`.
 */
export const cancelRequestSchema = z.object({
  /** Login of who cancelled (removed the label, closed the issue), or null when unknown. */
  by: z.string().nullable(),
  /** Human-readable reason, e.g. "the frognano label was removed". */
  reason: z.string(),
  /** ISO 8601 time of the request. */
  at: z.string(),
});

/** A cancel request (stored as JSON under {@link AppKeys.cancel}). */
export type CancelRequest = z.infer<typeof cancelRequestSchema>;

/** How long a cancel request is kept, seconds (longer than any job waits or runs). */
export const CANCEL_TTL_S = 7 * 24 * 3600;

/** The writing side (used by `serve`) and reading side of cancel requests. */
export interface CancelRequests {
  /** Record a cancel request for `jobId` and announce it. */
  request(jobId: string, req: Omit<CancelRequest, 'at'>): Promise<void>;
  /** The cancel request of `jobId`, or null. A malformed record counts as none. */
  get(jobId: string): Promise<CancelRequest | null>;
  /** Delete the request once the job has ended. */
  clear(jobId: string): Promise<void>;
}

/** Cancel requests on `redis` under `keys`. */
export function createCancelRequests(redis: Redis, keys: AppKeys): CancelRequests {
  return {
    async request(jobId, req) {
      const record: CancelRequest = { ...req, at: new Date().toISOString() };
      await redis
        .multi()
        .set(keys.cancel(jobId), JSON.stringify(record), 'EX', CANCEL_TTL_S)
        .publish(keys.cancelChannel, jobId)
        .exec();
    },
    async get(jobId) {
      const raw = await redis.get(keys.cancel(jobId));
      if (raw === null) return null;
      try {
        const parsed = cancelRequestSchema.safeParse(JSON.parse(raw));
        return parsed.success ? parsed.data : null;
      } catch {
        return null;
      }
    },
    async clear(jobId) {
      await redis.del(keys.cancel(jobId));
    },
  };
}

/** Watches cancel requests for the jobs running in one worker process. */
export interface CancelWatcher {
  /**
   * Call `onCancel` (once) when a cancel request for `jobId` appears, through pub/sub or polling.
   * Returns a function that stops watching.
   */
  watch(jobId: string, onCancel: (req: CancelRequest) => void): () => void;
  /** Stop all watches and unsubscribe. Does not close the connections. */
  close(): Promise<void>;
}

/**
 * Create the watcher of one worker process.
 *
 * @param subscriber a connection used only for SUBSCRIBE (it can run nothing else).
 * @param requests where requests are read (the worker's command connection).
 * @param pollMs polling interval per watched job, milliseconds.
 */
export async function createCancelWatcher(options: {
  subscriber: Redis;
  requests: CancelRequests;
  keys: AppKeys;
  pollMs: number;
  logger: Logger;
}): Promise<CancelWatcher> {
  const { subscriber, requests, keys, pollMs, logger } = options;
  const watches = new Map<string, { check: () => Promise<void>; stop: () => void }>();

  const onMessage = (channel: string, message: string) => {
    if (channel !== keys.cancelChannel) return;
    void watches.get(message)?.check();
  };
  subscriber.on('message', onMessage);
  await subscriber.subscribe(keys.cancelChannel);

  return {
    watch(jobId, onCancel) {
      let done = false;
      let checking = false;
      const check = async () => {
        if (done || checking) return;
        checking = true;
        try {
          const req = await requests.get(jobId);
          if (req && !done) {
            stop();
            onCancel(req);
          }
        } catch (err) {
          logger.debug({ err, jobId }, 'cancel check failed; will poll again');
        } finally {
          checking = false;
        }
      };
      const timer = setInterval(() => void check(), pollMs);
      timer.unref();
      const stop = () => {
        done = true;
        clearInterval(timer);
        if (watches.get(jobId)?.stop === stop) watches.delete(jobId);
      };
      watches.set(jobId, { check, stop });
      void check();
      return stop;
    },
    async close() {
      for (const w of [...watches.values()]) w.stop();
      subscriber.off('message', onMessage);
      try {
        await subscriber.unsubscribe(keys.cancelChannel);
      } catch {
        // the connection is closing or down; nothing to undo
      }
    },
  };
}
