import type { FeedbackItem } from './feedback.js';

/**
 * What the pipeline needs to know about one requested run of an issue: who asked, where, and when.
 * Defined here, not in the queue, so the pipeline does not depend on how a job was delivered; the
 * queue's job data (`src/queue/job-data.ts`, BullMQ `data`, zod-validated) satisfies it as it is.
 */
export interface JobRequest {
  /** `X-GitHub-Delivery` of the webhook that created the job (for logs and de-duplication). */
  deliveryId: string;
  /** GitHub App installation id; the worker mints an installation token for it. */
  installationId: number;
  owner: string;
  repo: string;
  issueNumber: number;
  /** The label that triggered the job (the configured label at the time). */
  label: string;
  /** Who added the label: co-author of the commit and reviewer requested on the pull request. */
  triggeredBy: { login: string; id?: number | undefined };
  /** ISO 8601 time the job was enqueued. */
  enqueuedAt: string;
  /** Id of the issue's status comment, when `serve` created it before enqueueing. */
  statusCommentId?: number | undefined;
  /**
   * Set for a follow-up run on the draft pull request the app opened for the issue (issue 11):
   * reviewers asked for changes. `issueNumber` stays the original issue's.
   */
  followUp?: FollowUpRequest | undefined;
}

/** A follow-up round on the app's pull request, with the reviewer feedback it addresses. */
export interface FollowUpRequest {
  /** The pull request the app opened for the issue. */
  pullNumber: number;
  /** Its head branch (`frognano/issue-<n>`), where the new commit goes. */
  headRef: string;
  /** 1 for the first follow-up of this pull request, 2 for the next, … */
  round: number;
  /**
   * The reviewer requests of this round, oldest first (drained from the pull request's pending
   * list by the worker when the round starts; everything that arrived until then). Always set on
   * what the worker hands to the follow-up runner (`FollowUpRunner` in queue/worker.ts); optional
   * here only so that queued job data (which holds no feedback) still satisfies this type.
   */
  feedback?: FeedbackItem[] | undefined;
}
