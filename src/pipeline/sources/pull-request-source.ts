import type { FeedbackItem } from '../feedback.js';

/**
 * What the follow-up publisher needs from a follow-up round on the app's pull request
 * (`PreparedJob<FollowUpTarget>['target']`).
 */
export interface FollowUpTarget {
  owner: string;
  repo: string;
  pullNumber: number;
  /** `html_url` of the pull request. */
  pullUrl: string;
  /** The original issue the pull request resolves. */
  issueNumber: number;
  issueTitle: string;
  /**
   * Head branch name (e.g. `frognano/issue-12`) and the head commit this round started from: the
   * push only fast-forwards from it.
   */
  headRef: string;
  headSha: string;
  /**
   * The pull request's base branch and base commit (merge base of the base branch and the head)
   * the whole change is measured from; `PreparedJob.baseSha` equals `baseSha`.
   */
  baseRef: string;
  baseSha: string;
  /** Shown round number (2 = first follow-up; the first run is round 1). */
  round: number;
  /** This round's feedback, in the order written. */
  feedback: FeedbackItem[];
  /** Who asked this round (feedback authors, unique, in order). */
  requestedBy: string[];
  /** Who labelled the issue (`JobRequest.triggeredBy`). */
  labelledBy: { login: string; id?: number };
}
