import { z } from 'zod';
import type { JobRequest } from '../pipeline/job-request.js';

/**
 * The data of one queued job (BullMQ job `data`), versioned. Validated with {@link parseJobData} when
 * the job is added and again when a worker takes it, so a job written by an older or newer release is
 * refused with a clear error instead of half-running.
 *
 * The issue's title and body are NOT stored here: the worker reads them from the API when the job
 * starts, so an edited issue is taken as it is then, and Redis holds no repository content.
 */
export const jobDataSchema = z.object({
  version: z.literal(1),
  /** `X-GitHub-Delivery` of the webhook that created the job (for logs and de-duplication). */
  deliveryId: z.string().min(1),
  installationId: z.number().int().positive(),
  owner: z.string().min(1),
  repo: z.string().min(1),
  issueNumber: z.number().int().positive(),
  /** The label that triggered the job (the configured label at the time). */
  label: z.string().min(1),
  /** Who added the label: co-author of the commit and reviewer requested on the pull request. */
  triggeredBy: z.object({ login: z.string().min(1), id: z.number().int().optional() }),
  /** ISO 8601 time the job was enqueued. */
  enqueuedAt: z.string().datetime(),
  /**
   * Id of the issue's status comment (`<!-- frognano:status -->`), created by `serve` before the job
   * was enqueued, so the worker edits it instead of looking for it. Optional: without it the worker
   * finds the comment by its marker.
   */
  statusCommentId: z.number().int().positive().optional(),
  /**
   * Set for a follow-up round on the draft pull request the app opened (issue 11). The reviewer
   * feedback is not here: it waits in the pull request's pending list in Redis
   * (`AppKeys.feedback` in queue-keys.ts) and the worker drains it when the round starts. With it,
   * `statusCommentId` is the pull request's status comment.
   */
  followUp: z
    .object({
      pullNumber: z.number().int().positive(),
      /** The pull request's head branch. */
      headRef: z.string().min(1),
      /** 1 for the first follow-up of the pull request, 2 for the next, … */
      round: z.number().int().positive(),
    })
    .optional(),
});

/** Job data, version 1. */
export type JobData = z.infer<typeof jobDataSchema>;

/**
 * Parse untrusted job data (from Redis). Throws a ZodError describing every problem.
 */
export function parseJobData(data: unknown): JobData {
  return jobDataSchema.parse(data);
}

// The pipeline defines the job request it needs; queued job data must keep satisfying it (the
// follow-up's feedback is added by the worker, from Redis).
type JobDataIsJobRequest = JobData extends JobRequest ? true : never;
const _jobDataIsJobRequest: JobDataIsJobRequest = true;
