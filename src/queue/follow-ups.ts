import type { Redis } from 'ioredis';
import type { FeedbackItem } from '../pipeline/feedback.js';
import { DELETE_IF_HOLDER, DELIVERY_TTL_S, parseHolder, type GuardHolder } from './issue-guard.js';
import {
  followUpGuardName,
  issueKey,
  makeFollowUpJobId,
  pullKey,
  type AppKeys,
  type IssueRef,
  type PullRef,
} from './queue-keys.js';

/**
 * Follow-up rounds on the app's pull requests (issue 11): the pending reviewer feedback of each
 * pull request lives in Redis, never in job data only, and at most one follow-up job per pull
 * request is waiting or active (the per-issue guard's key, under {@link followUpGuardName}).
 *
 * The ordering that makes every interleaving end with exactly one job for pending feedback:
 * - intake APPENDS the item, THEN tries the guard (one Lua script, {@link FollowUpStore.add}): if
 *   acquired it enqueues a round, else the waiting or running job is there and takes it;
 * - a round DRAINS the list when it starts ({@link FollowUpStore.drain}), so a job still waiting
 *   takes everything that arrived before it started;
 * - when a round ends, the worker RELEASES the guard, THEN looks at the list
 *   ({@link FollowUpStore.next}) and, if non-empty, acquires the guard and enqueues the next round.
 * A request that lands while a round runs therefore either is drained by that round (arrived before
 * its start) or stays in the list and is seen by the release-then-check of whoever ends last.
 */
export interface FollowUpStore {
  /**
   * Append `items` (one request: a comment, or a review with its inline comments) to the pull request's pending feedback (once per webhook delivery), then try to
   * take the guard for a new round. Also records the pull request under its issue (for
   * `issues.unlabeled`).
   *
   * @returns `duplicate` when the delivery was handled before (nothing appended); `acquired` with
   *   the new round's job id and number (the caller enqueues it, or {@link abandon}s); `busy` with
   *   the job that holds the pull request (it, or the round after it, takes the item).
   */
  add(pull: PullRef, issue: IssueRef, items: readonly FeedbackItem[], deliveryId: string): Promise<AddResult>;
  /**
   * Take the guard for a new round when the pending list is not empty: from nobody, or from the
   * stale holder `expectedHolder` (its job no longer exists).
   */
  next(pull: PullRef, expectedHolder?: string): Promise<NextResult>;
  /** The job holding the pull request's guard, or null. */
  holder(pull: PullRef): Promise<GuardHolder | null>;
  /** Release the guard if `jobId` holds it. True when released. */
  release(pull: PullRef, jobId: string): Promise<boolean>;
  /** Undo an {@link add} whose enqueue failed: release, forget the delivery and the item, un-count the round. */
  abandon(pull: PullRef, jobId: string, deliveryId: string, items: readonly FeedbackItem[]): Promise<void>;
  /**
   * Move the pending list into the round's own list (atomically) and return all of the round's
   * items as stored (JSON), oldest first: a retried round gets what it had plus what came since.
   */
  drain(pull: PullRef, jobId: string): Promise<string[]>;
  /** Put the round's items back at the head of the pending list (the round failed before the agent ran). */
  restore(pull: PullRef, jobId: string): Promise<number>;
  /** Forget the round's items (it ended; they were addressed or the round was cancelled). */
  forgetRound(jobId: string): Promise<void>;
  /** Delete the pending feedback (cancel). Returns how many items were dropped. */
  clearPending(pull: PullRef): Promise<number>;
  /** Items waiting for the next round. */
  pendingCount(pull: PullRef): Promise<number>;
  /** Follow-up rounds queued so far for the pull request (admin cap `maxFollowUps`). */
  rounds(pull: PullRef): Promise<number>;
  /** Pull requests (numbers) that had follow-up requests for `issue`. */
  pullsOf(issue: IssueRef): Promise<number[]>;
}

/** Result of {@link FollowUpStore.add}. */
export type AddResult =
  | { result: 'duplicate'; holder: GuardHolder }
  | { result: 'acquired'; jobId: string; round: number }
  | { result: 'busy'; holder: GuardHolder };

/** Result of {@link FollowUpStore.next}. */
export type NextResult =
  | { result: 'empty' }
  | { result: 'acquired'; jobId: string; round: number }
  | { result: 'busy'; holder: GuardHolder };

/** How long a round's drained feedback is kept, seconds (longer than any job waits or runs). */
const ROUND_TTL_S = 7 * 24 * 3600;

// Shared tail of ADD and NEXT: take the free guard for round INCR(rounds).
// KEYS[g] guard, KEYS[r] rounds; ARGV[p] job id prefix, ARGV[x] random, ARGV[t] now ms.
const TAKE = (g: number, r: number, p: number, x: number, t: number) => `
local round = redis.call('INCR', KEYS[${r}])
local holder = ARGV[${p}] .. '.r' .. round .. '.' .. ARGV[${x}] .. ' ' .. ARGV[${t}]
redis.call('SET', KEYS[${g}], holder)
`;

// KEYS: 1 delivery, 2 pending, 3 guard, 4 rounds, 5 issue's pulls
// ARGV: 1 unused, 2 now ms, 3 delivery TTL s, 4 random, 5 job id prefix, 6 pull key, 7… item JSONs
const ADD = `
local seen = redis.call('GET', KEYS[1])
if seen then return {'duplicate', seen} end
for i = 7, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('SADD', KEYS[5], ARGV[6])
local cur = redis.call('GET', KEYS[3])
if cur then
  redis.call('SET', KEYS[1], cur, 'EX', tonumber(ARGV[3]))
  return {'busy', cur}
end
${TAKE(3, 4, 5, 4, 2)}
redis.call('SET', KEYS[1], holder, 'EX', tonumber(ARGV[3]))
return {'acquired', holder, tostring(round)}
`;

// KEYS: 1 pending, 2 guard, 3 rounds. ARGV: 1 expected stale holder job id or '', 2 now ms,
// 3 random, 4 job id prefix
const NEXT = `
if redis.call('LLEN', KEYS[1]) == 0 then return {'empty', ''} end
local cur = redis.call('GET', KEYS[2])
if cur and (ARGV[1] == '' or string.match(cur, '^(%S+)') ~= ARGV[1]) then return {'busy', cur} end
${TAKE(2, 3, 4, 3, 2)}
return {'acquired', holder, tostring(round)}
`;

// KEYS: 1 pending, 2 round list. ARGV: 1 TTL s
const DRAIN = `
local items = redis.call('LRANGE', KEYS[1], 0, -1)
for _, item in ipairs(items) do redis.call('RPUSH', KEYS[2], item) end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIRE', KEYS[2], tonumber(ARGV[1])) end
return redis.call('LRANGE', KEYS[2], 0, -1)
`;

// KEYS: 1 pending, 2 round list
const RESTORE = `
local items = redis.call('LRANGE', KEYS[2], 0, -1)
for i = #items, 1, -1 do redis.call('LPUSH', KEYS[1], items[i]) end
redis.call('DEL', KEYS[2])
return #items
`;

function random(): string {
  return Math.floor(Math.random() * 0xffffffff)
    .toString(16)
    .padStart(8, '0');
}

/** The job id up to the round (`<owner>.<repo>.pr<n>`), see {@link makeFollowUpJobId}. */
function jobIdPrefix(pull: PullRef): string {
  return makeFollowUpJobId(pull, 0, '').replace(/\.r0\.$/, '');
}

function acquiredOrBusy(reply: [string, string, string?]): NextResult {
  const [result, value, round] = reply;
  if (result === 'empty') return { result: 'empty' };
  const holder = parseHolder(value);
  if (result === 'acquired') return { result: 'acquired', jobId: holder.jobId, round: Number(round) };
  return { result: 'busy', holder };
}

/** The follow-up store on `redis` (a producer or worker connection) under `keys`. */
export function createFollowUpStore(
  redis: Redis,
  keys: AppKeys,
  now: () => number = Date.now,
): FollowUpStore {
  const guardKey = (pull: PullRef) => keys.guard(followUpGuardName(pull));
  return {
    async add(pull, issue, items, deliveryId) {
      const reply = (await redis.eval(
        ADD,
        5,
        keys.delivery(deliveryId),
        keys.feedback(pullKey(pull)),
        guardKey(pull),
        keys.followUpRounds(pullKey(pull)),
        keys.issuePulls(issueKey(issue)),
        '',
        String(now()),
        String(DELIVERY_TTL_S),
        random(),
        jobIdPrefix(pull),
        String(pull.pullNumber),
        ...items.map((item) => JSON.stringify(item)),
      )) as [string, string, string?];
      if (reply[0] === 'duplicate') return { result: 'duplicate', holder: parseHolder(reply[1]) };
      return acquiredOrBusy(reply) as AddResult;
    },
    async next(pull, expectedHolder) {
      const reply = (await redis.eval(
        NEXT,
        3,
        keys.feedback(pullKey(pull)),
        guardKey(pull),
        keys.followUpRounds(pullKey(pull)),
        expectedHolder ?? '',
        String(now()),
        random(),
        jobIdPrefix(pull),
      )) as [string, string, string?];
      return acquiredOrBusy(reply);
    },
    async holder(pull) {
      const value = await redis.get(guardKey(pull));
      return value === null ? null : parseHolder(value);
    },
    async release(pull, jobId) {
      return (await redis.eval(DELETE_IF_HOLDER, 1, guardKey(pull), jobId)) === 1;
    },
    async abandon(pull, jobId, deliveryId, items) {
      await redis.eval(DELETE_IF_HOLDER, 1, guardKey(pull), jobId);
      await redis.eval(DELETE_IF_HOLDER, 1, keys.delivery(deliveryId), jobId);
      const tx = redis.multi();
      for (const item of items) tx.lrem(keys.feedback(pullKey(pull)), -1, JSON.stringify(item));
      await tx.decr(keys.followUpRounds(pullKey(pull))).exec();
    },
    async drain(pull, jobId) {
      return (await redis.eval(
        DRAIN,
        2,
        keys.feedback(pullKey(pull)),
        keys.roundFeedback(jobId),
        String(ROUND_TTL_S),
      )) as string[];
    },
    async restore(pull, jobId) {
      return (await redis.eval(
        RESTORE,
        2,
        keys.feedback(pullKey(pull)),
        keys.roundFeedback(jobId),
      )) as number;
    },
    async forgetRound(jobId) {
      await redis.del(keys.roundFeedback(jobId));
    },
    async clearPending(pull) {
      const [[, count] = [null, 0]] =
        ((await redis
          .multi()
          .llen(keys.feedback(pullKey(pull)))
          .del(keys.feedback(pullKey(pull)))
          .exec()) as [Error | null, number][] | null) ?? [];
      return Number(count);
    },
    async pendingCount(pull) {
      return redis.llen(keys.feedback(pullKey(pull)));
    },
    async rounds(pull) {
      return Number((await redis.get(keys.followUpRounds(pullKey(pull)))) ?? 0);
    },
    async pullsOf(issue) {
      const members = await redis.smembers(keys.issuePulls(issueKey(issue)));
      return members.map(Number).filter((n) => Number.isSafeInteger(n) && n > 0);
    },
  };
}
