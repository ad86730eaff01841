import type { Redis } from 'ioredis';
import { AppError } from '../app-error.js';

/**
 * Per-repository concurrency limit plus a global cap, shared by every worker through Redis.
 *
 * Why not BullMQ: group concurrency ("at most N jobs per group") is a BullMQ Pro feature, not in the
 * open-source edition. So each running job holds a *slot*: a member of two sorted sets, one per
 * repository and one global, scored with the lease expiry time (ms, Redis server clock). Acquire,
 * renew and release are Lua scripts, so check-and-take is atomic across workers. A worker that dies
 * stops renewing; its lease expires and the next acquire purges it, so no slot leaks.
 *
 * Keys (`keyPrefix` e.g. `frognano:{concurrency}`; on Redis Cluster the prefix must hold a hash tag in
 * braces so both keys of a script live in one slot):
 * - `<keyPrefix>:repo:<owner/name lowercased>` — sorted set, member = job id, score = lease expiry ms
 * - `<keyPrefix>:global` — sorted set, same members and scores
 *
 * ## Use in the BullMQ worker
 *
 * BullMQ's documented way to postpone an active job (https://docs.bullmq.io/patterns/process-step-jobs,
 * section "Delaying"): move it to the delayed set with the worker's lock token, then throw
 * `DelayedError` so the worker neither completes nor fails it. The processor therefore starts with:
 *
 * ```ts
 * import { DelayedError, type Job } from 'bullmq';
 * async function process(job: Job<JobData>, token?: string) {
 *   const repo = `${job.data.owner}/${job.data.repo}`;
 *   const policy = resolveEffectivePolicy({ policy: policyStore.current(), repo });
 *   if (!(await limiter.tryAcquire(repo, job.id!, policy.concurrencyPerRepo))) {
 *     await job.moveToDelayed(Date.now() + 5_000 + Math.random() * 5_000, token);
 *     throw new DelayedError();            // not counted as an attempt
 *   }
 *   const stop = limiter.keepAlive(repo, job.id!, { onLost: () => abort.abort() });
 *   try { return await runJob(job); } finally { stop(); await limiter.release(repo, job.id!); }
 * }
 * ```
 *
 * The worker's own `concurrency` option should not exceed `globalLimit` by much: jobs above the cap
 * are picked up and immediately delayed again.
 */
export interface ConcurrencyLimiter {
  /**
   * Take a slot for `jobId` if the repository holds fewer than `perRepoLimit` slots and all
   * repositories together fewer than the global limit. Re-acquiring a slot the job already holds
   * renews it and succeeds.
   */
  tryAcquire(repo: string, jobId: string, perRepoLimit: number): Promise<boolean>;
  /** Like {@link tryAcquire}, and says which limit refused. */
  acquire(repo: string, jobId: string, perRepoLimit: number): Promise<AcquireResult>;
  /**
   * Extend the lease of a held slot by `leaseMs` from now. Returns false when the slot is no longer
   * held (the lease expired and was purged): the job should stop, someone else may hold its slot.
   */
  renew(repo: string, jobId: string): Promise<boolean>;
  /** Give the slot back. Idempotent. */
  release(repo: string, jobId: string): Promise<void>;
  /**
   * Renew every `intervalMs` (default a third of `leaseMs`) until the returned function is called.
   * `onLost` runs once if a renewal finds the slot gone; Redis errors are passed to `onError` and
   * the next tick tries again.
   */
  keepAlive(
    repo: string,
    jobId: string,
    options?: { intervalMs?: number; onLost?: () => void; onError?: (err: unknown) => void },
  ): () => void;
  /** Job ids holding a slot of `repo` (or globally, without `repo`) whose lease has not expired. */
  holders(repo?: string): Promise<string[]>;
}

/** Result of {@link ConcurrencyLimiter.acquire}. */
export type AcquireResult = { acquired: true } | { acquired: false; limit: 'repo' | 'global' };

/** Options of {@link createConcurrencyLimiter}. */
export interface ConcurrencyLimiterOptions {
  /** An ioredis connection (it may be shared; the limiter adds commands, no subscriptions). */
  redis: Redis;
  /** Prefix of the limiter's keys, e.g. `frognano:{concurrency}`. */
  keyPrefix: string;
  /** Jobs running at once across all repositories; 0 = no global cap. */
  globalLimit: number;
  /** Lease length in ms: a slot not renewed for this long is free again (e.g. 60 000). */
  leaseMs: number;
}

// The end of the acquire and renew scripts: (re)hold the lease of ARGV[1] in both sets until
// now + lease, and let the sets expire if nobody renews them. Needs `now` and `lease`.
const HOLD_LEASE_LUA = `
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease * 2)
redis.call('PEXPIRE', KEYS[2], lease * 2)
return 1
`;

// KEYS[1] repo set, KEYS[2] global set; ARGV: jobId, perRepoLimit, globalLimit (0 = none), leaseMs.
// Returns 1 acquired, 0 repo limit reached, -1 global limit reached.
const ACQUIRE_LUA =
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
  local global = tonumber(ARGV[3])
  if global > 0 and redis.call('ZCARD', KEYS[2]) >= global then return -1 end
end
` + HOLD_LEASE_LUA;

// KEYS[1] repo set, KEYS[2] global set; ARGV: jobId, leaseMs. Returns 1 renewed, 0 not held.
const RENEW_LUA =
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 0
end
` + HOLD_LEASE_LUA;

// KEYS[1] repo set, KEYS[2] global set; ARGV: jobId.
const RELEASE_LUA = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`;

// KEYS[1] a set; returns members whose lease has not expired.
const HOLDERS_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
`;

/** Commands defined on the connection by {@link createConcurrencyLimiter} (ioredis `defineCommand`). */
interface LimiterCommands {
  frognanoLimiterAcquire(
    k1: string,
    k2: string,
    jobId: string,
    repoLimit: number,
    globalLimit: number,
    leaseMs: number,
  ): Promise<number>;
  frognanoLimiterRenew(k1: string, k2: string, jobId: string, leaseMs: number): Promise<number>;
  frognanoLimiterRelease(k1: string, k2: string, jobId: string): Promise<number>;
  frognanoLimiterHolders(k1: string): Promise<string[]>;
}

/**
 * Create a Redis-backed concurrency limiter (see {@link ConcurrencyLimiter}). Scripts are sent with
 * EVALSHA through ioredis `defineCommand` (which falls back to EVAL after a server restart). Times
 * come from the Redis server clock, so worker clock skew does not matter.
 *
 * @throws AppError `CONFIG_INVALID` for a non-positive `leaseMs` or a negative `globalLimit`.
 */
export function createConcurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  const { redis, keyPrefix, globalLimit, leaseMs } = options;
  if (!Number.isInteger(leaseMs) || leaseMs <= 0) {
    throw new AppError(
      'CONFIG_INVALID',
      `concurrency limiter: leaseMs must be a positive whole number of ms (got ${leaseMs})`,
    );
  }
  if (!Number.isInteger(globalLimit) || globalLimit < 0) {
    throw new AppError(
      'CONFIG_INVALID',
      `concurrency limiter: globalLimit must be 0 (none) or more (got ${globalLimit})`,
    );
  }
  const commands = redis as unknown as Redis & LimiterCommands;
  if (typeof commands.frognanoLimiterAcquire !== 'function') {
    redis.defineCommand('frognanoLimiterAcquire', { numberOfKeys: 2, lua: ACQUIRE_LUA });
    redis.defineCommand('frognanoLimiterRenew', { numberOfKeys: 2, lua: RENEW_LUA });
    redis.defineCommand('frognanoLimiterRelease', { numberOfKeys: 2, lua: RELEASE_LUA });
    redis.defineCommand('frognanoLimiterHolders', { numberOfKeys: 1, lua: HOLDERS_LUA });
  }
  const globalKey = `${keyPrefix}:global`;
  const repoKey = (repo: string): string => `${keyPrefix}:repo:${repo.toLowerCase()}`;

  const acquire = async (repo: string, jobId: string, perRepoLimit: number): Promise<AcquireResult> => {
    if (!Number.isInteger(perRepoLimit) || perRepoLimit < 1) {
      throw new AppError(
        'CONFIG_INVALID',
        `concurrency limiter: perRepoLimit must be 1 or more (got ${perRepoLimit})`,
      );
    }
    const r = await commands.frognanoLimiterAcquire(
      repoKey(repo),
      globalKey,
      jobId,
      perRepoLimit,
      globalLimit,
      leaseMs,
    );
    if (r === 1) return { acquired: true };
    return { acquired: false, limit: r === 0 ? 'repo' : 'global' };
  };
  const renew = async (repo: string, jobId: string): Promise<boolean> =>
    (await commands.frognanoLimiterRenew(repoKey(repo), globalKey, jobId, leaseMs)) === 1;

  return {
    acquire,
    tryAcquire: async (repo, jobId, perRepoLimit) => (await acquire(repo, jobId, perRepoLimit)).acquired,
    renew,
    release: async (repo, jobId) => {
      await commands.frognanoLimiterRelease(repoKey(repo), globalKey, jobId);
    },
    holders: (repo) => commands.frognanoLimiterHolders(repo === undefined ? globalKey : repoKey(repo)),
    keepAlive: (repo, jobId, opts = {}) => {
      let stopped = false;
      const timer = setInterval(
        () => {
          renew(repo, jobId).then(
            (held) => {
              if (!held && !stopped) {
                stopped = true;
                clearInterval(timer);
                opts.onLost?.();
              }
            },
            (err: unknown) => opts.onError?.(err),
          );
        },
        opts.intervalMs ?? Math.max(1, Math.floor(leaseMs / 3)),
      );
      timer.unref();
      return () => {
        stopped = true;
        clearInterval(timer);
      };
    },
  };
}
