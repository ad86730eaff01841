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

/** A pull request of a repository (a pull request is an issue in the Issues API: same numbers). */
export interface PullRef {
  owner: string;
  repo: string;
  pullNumber: number;
}

/** Stable, case-folded text key of a pull request: `owner/repo#n` in lower case. */
export function pullKey(ref: PullRef): string {
  return issueKey({ owner: ref.owner, repo: ref.repo, issueNumber: ref.pullNumber });
}

/**
 * The guard name of a pull request's follow-up jobs, given to the per-issue guard
 * (`queue/issue-guard.ts`) so that at most one follow-up job per pull request is waiting or
 * active: `pr:owner/repo#n`, never equal to an issue's key.
 */
export function followUpGuardName(ref: PullRef): string {
  return `pr:${pullKey(ref)}`;
}

/**
 * The BullMQ job id of follow-up round `round` of `ref`: `<owner>.<repo>.pr<n>.r<round>.<random>`,
 * case-folded and cleaned like {@link makeJobId}. Not derived from a delivery: a round is made by
 * whichever event or finished round comes first; the random part (8 hex digits) keeps a round
 * re-made after a cancel distinct from the cancelled one.
 */
export function makeFollowUpJobId(ref: PullRef, round: number, random: string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_');
  return `${clean(ref.owner.toLowerCase())}.${clean(ref.repo.toLowerCase())}.pr${ref.pullNumber}.r${round}.${clean(random)}`;
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
  /** Pending reviewer feedback of a pull request ({@link pullKey}): a list of JSON `FeedbackItem`s. */
  feedback(pull: string): string;
  /**
   * The feedback a follow-up job drained (list of JSON `FeedbackItem`s), kept until the job ends
   * so that a retry or a job handed back at shutdown runs with the same feedback.
   */
  roundFeedback(jobId: string): string;
  /** Follow-up rounds queued for a pull request ({@link pullKey}), a counter (admin cap `maxFollowUps`). */
  followUpRounds(pull: string): string;
  /** Pull requests ({@link pullKey}) with follow-up work for an issue ({@link issueKey}): a set. */
  issuePulls(issue: string): string;
}

/** Keys under `prefix` (QUEUE_PREFIX). */
export function appKeys(prefix: string): AppKeys {
  const base = `${prefix}:app`;
  return {
    guard: (issue) => `${base}:issue:${issue}`,
    delivery: (id) => `${base}:delivery:${id}`,
    cancel: (jobId) => `${base}:cancel:${jobId}`,
    cancelChannel: `${base}:cancel-requests`,
    feedback: (pull) => `${base}:feedback:${pull}`,
    roundFeedback: (jobId) => `${base}:round-feedback:${jobId}`,
    followUpRounds: (pull) => `${base}:follow-up-rounds:${pull}`,
    issuePulls: (issue) => `${base}:issue-pulls:${issue}`,
  };
}
