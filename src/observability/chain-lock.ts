import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError } from '../app-error.js';

/**
 * Mutual exclusion of appends to one repository's chain, so two workers (or a worker and `serve`
 * appending an approval) never both take the same sequence number.
 */
export interface ChainLock {
  /** Run `fn` holding the lock of `repo`. @throws AppError `RECORD_LOCK_TIMEOUT` (retryable). */
  withLock<T>(repo: string, fn: () => Promise<T>): Promise<T>;
}

// Delete the key only when it still holds our token: a lock that expired and was taken by another
// holder is not ours to release (the single-instance pattern of https://redis.io/docs/latest/develop/use/patterns/distributed-locks/).
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * A {@link ChainLock} held in Redis: `SET <prefix>:record-chain-lock:<repo> <token> NX PX <ttl>`,
 * polled until it is free, released by compare-and-delete. The lease (`leaseMs`, default 30 s)
 * bounds how long a crashed holder blocks others; one append takes a few store round trips.
 *
 * @param options.waitMs how long to wait for the lock before giving up (default 20 s).
 */
export function createRedisChainLock(options: {
  redis: Redis;
  prefix: string;
  leaseMs?: number;
  waitMs?: number;
}): ChainLock {
  const leaseMs = options.leaseMs ?? 30_000;
  const waitMs = options.waitMs ?? 20_000;
  return {
    async withLock(repo, fn) {
      const key = `${options.prefix}:record-chain-lock:${repo}`;
      const token = randomBytes(12).toString('hex');
      const deadline = Date.now() + waitMs;
      let delay = 20;
      for (;;) {
        const ok = await options.redis.set(key, token, 'PX', leaseMs, 'NX');
        if (ok === 'OK') break;
        if (Date.now() > deadline) {
          throw new AppError(
            'RECORD_LOCK_TIMEOUT',
            `the run record chain of ${repo} stayed locked for ${waitMs} ms`,
            {
              retryable: true,
            },
          );
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 250);
      }
      try {
        return await fn();
      } finally {
        await options.redis.eval(RELEASE, 1, key, token).catch(() => undefined);
      }
    },
  };
}

/**
 * A {@link ChainLock} for one process (the CLI, unit tests): appends of this process are serialised
 * per repository. Not safe across processes: a deployment with workers uses {@link createRedisChainLock}.
 */
export function createProcessChainLock(): ChainLock {
  const tails = new Map<string, Promise<unknown>>();
  return {
    async withLock(repo, fn) {
      const before = tails.get(repo) ?? Promise.resolve();
      const run = before.catch(() => undefined).then(fn);
      tails.set(repo, run);
      try {
        return await run;
      } finally {
        if (tails.get(repo) === run) tails.delete(repo);
      }
    },
  };
}
