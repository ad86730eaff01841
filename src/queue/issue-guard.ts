import type { Redis } from 'ioredis';
import type { AppKeys } from './queue-keys.js';

/**
 * The per-issue guard: at most one waiting-or-active job per issue, and one job per webhook
 * delivery, decided atomically in Redis (one Lua script, so two deliveries racing for the same
 * issue cannot both win).
 *
 * The guard key holds `"<job id> <reserved at, ms since epoch>"` and is deleted when the job ends
 * (compare-and-delete: only by the job that holds it). The delivery key remembers a delivery for
 * {@link DELIVERY_TTL_S} seconds. Neither needs a TTL tied to job length: a holder that no longer
 * exists in the queue is recognised as stale by the caller ({@link GuardHolder.reservedAtMs} tells
 * an enqueue in progress from a leftover of a crash) and taken over with {@link IssueGuard.acquire}'s
 * `expectedHolder`.
 */
export interface IssueGuard {
  /**
   * Reserve the issue for `jobId` and record the delivery.
   *
   * @param expectedHolder take the guard over from this stale holder (its job id) instead of
   *   requiring it free.
   * @returns `acquired`; or `duplicate_delivery` with the job the delivery already made; or `busy`
   *   with the job holding the issue.
   */
  acquire(
    issue: string,
    jobId: string,
    deliveryId: string,
    expectedHolder?: string,
  ): Promise<{ result: 'acquired' } | { result: 'duplicate_delivery' | 'busy'; holder: GuardHolder }>;
  /** The job holding the issue, or null. */
  holder(issue: string): Promise<GuardHolder | null>;
  /** Release the issue if `jobId` holds it (compare-and-delete). True when released. */
  release(issue: string, jobId: string): Promise<boolean>;
  /** Forget a delivery record if it points at `jobId` (its enqueue failed). */
  forgetDelivery(deliveryId: string, jobId: string): Promise<void>;
}

/** A guard or delivery record. */
export interface GuardHolder {
  jobId: string;
  /** When the reservation was made, milliseconds since the epoch. */
  reservedAtMs: number;
}

/** How long a delivery id is remembered, seconds (GitHub keeps deliveries for redelivery 3 days). */
export const DELIVERY_TTL_S = 3 * 24 * 3600;

// KEYS[1] guard key, KEYS[2] delivery key
// ARGV[1] holder value "<jobId> <ms>", ARGV[2] delivery TTL (s), ARGV[3] expected stale holder job id or ''
const ACQUIRE = `
local d = redis.call('GET', KEYS[2])
if d then return {'duplicate_delivery', d} end
local cur = redis.call('GET', KEYS[1])
if cur then
  local curJob = string.match(cur, '^(%S+)')
  if ARGV[3] == '' or curJob ~= ARGV[3] then return {'busy', cur} end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[1], 'EX', tonumber(ARGV[2]))
return {'acquired', ARGV[1]}
`;

/**
 * Lua: compare-and-delete of a `"<job id> <ms>"` record. KEYS[1] the key; ARGV[1] the job id.
 * Deletes the key when its value's job id is ARGV[1]; returns 1 when deleted. (Also used for the
 * follow-up guard, queue/follow-ups.ts.)
 */
export const DELETE_IF_HOLDER = `
local cur = redis.call('GET', KEYS[1])
if cur and string.match(cur, '^(%S+)') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

/** Read a `"<job id> <ms>"` guard or delivery record. */
export function parseHolder(value: string): GuardHolder {
  const [jobId = '', ms = '0'] = value.split(' ');
  return { jobId, reservedAtMs: Number(ms) || 0 };
}

/** Create the guard on `redis` (a producer or worker connection) with the keys of one prefix. */
export function createIssueGuard(redis: Redis, keys: AppKeys, now: () => number = Date.now): IssueGuard {
  return {
    async acquire(issue, jobId, deliveryId, expectedHolder) {
      const reply = (await redis.eval(
        ACQUIRE,
        2,
        keys.guard(issue),
        keys.delivery(deliveryId),
        `${jobId} ${now()}`,
        String(DELIVERY_TTL_S),
        expectedHolder ?? '',
      )) as [string, string];
      const [result, value] = reply;
      if (result === 'acquired') return { result: 'acquired' };
      return { result: result as 'duplicate_delivery' | 'busy', holder: parseHolder(value) };
    },
    async holder(issue) {
      const value = await redis.get(keys.guard(issue));
      return value === null ? null : parseHolder(value);
    },
    async release(issue, jobId) {
      return (await redis.eval(DELETE_IF_HOLDER, 1, keys.guard(issue), jobId)) === 1;
    },
    async forgetDelivery(deliveryId, jobId) {
      await redis.eval(DELETE_IF_HOLDER, 1, keys.delivery(deliveryId), jobId);
    },
  };
}
