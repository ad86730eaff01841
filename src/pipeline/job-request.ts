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
}
