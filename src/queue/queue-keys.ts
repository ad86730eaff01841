/**
 * Names of the Redis keys and the pub/sub channel this app writes next to BullMQ's own keys, and
 * the BullMQ job id scheme.
 *
 * All keys start with the queue prefix (QUEUE_PREFIX) and `:app:`, so they never collide with
 * BullMQ's `<prefix>:<queue>:…` keys and one `prefix` isolates a test or a deployment completely.
 */

/** An issue of a repository. Owner and repository names are case-insensitive on GitHub. */
export interface IssueRef {
  owner: string;
  repo: string;
  issueNumber: number;
}

/** Stable, case-folded text key of an issue: `owner/repo#n` in lower case. */
export function issueKey(ref: IssueRef): string {
  return `${ref.owner.toLowerCase()}/${ref.repo.toLowerCase()}#${ref.issueNumber}`;
}

/**
 * The BullMQ job id of the job created by webhook delivery `deliveryId` for `ref`:
 * `<owner>.<repo>.<n>.<delivery>`, case-folded, characters other than letters, digits, `.`, `_`
 * and `-` replaced by `_`.
 *
 * Why this shape: BullMQ refuses ids containing `:` and ids made of digits only (they clash with
 * its own counters), and silently ignores an `add` with an id that already exists. An id derived
 * from the delivery makes a delivery received twice map to the same job, while every new labelling
 * (a new delivery) gets a new id — so labelling again after a job finished starts a new job.
 */
export function makeJobId(ref: IssueRef, deliveryId: string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_');
  return `${clean(ref.owner.toLowerCase())}.${clean(ref.repo.toLowerCase())}.${ref.issueNumber}.${clean(deliveryId)}`;
}

/** The Redis keys and channel of one deployment (one queue prefix). */
export interface AppKeys {
  /** Per-issue guard: `issue key → "<job id> <reserved at ms>"` while a job is waiting or active. */
  guard(issue: string): string;
  /** Seen webhook delivery: `delivery id → "<job id> <reserved at ms>"`, with a TTL. */
  delivery(deliveryId: string): string;
  /** Cancel request of a job: JSON {@link CancelRequest} with a TTL. */
  cancel(jobId: string): string;
  /** Pub/sub channel where cancel requests are announced (message: the job id). */
  readonly cancelChannel: string;
}

/** Keys under `prefix` (QUEUE_PREFIX). */
export function appKeys(prefix: string): AppKeys {
  const base = `${prefix}:app`;
  return {
    guard: (issue) => `${base}:issue:${issue}`,
    delivery: (id) => `${base}:delivery:${id}`,
    cancel: (jobId) => `${base}:cancel:${jobId}`,
    cancelChannel: `${base}:cancel-requests`,
  };
}
