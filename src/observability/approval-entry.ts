import type { RecordWriter, WriteState } from './record-writer.js';
import { approvalSchema, type Approval } from './run-record.js';

/** An approval that counts as the human review, as the review handler saw it. */
export interface ApprovalEvent {
  owner: string;
  repo: string;
  /** The job whose check run it turned (the check run's `external_id`), or null when unknown. */
  jobId: string | null;
  reviewer: string;
  /** The reviewer's permission as the API answered (`permission`, `role_name`). */
  permission: string;
  roleName: string | null;
  commit: string;
  pullNumber: number;
  reviewUrl: string | null;
  checkRunId: number;
  reviewId: number | null;
  submittedAt: string | null;
  deliveryId: string | null;
}

/**
 * Append an approval to the repository's run record chain (in the job's folder when the job is
 * known), through the writer: a store that is down keeps it pending. A redelivered webhook for the
 * same review is chained once (`id` is `review-<id>`).
 */
export async function writeApproval(
  writer: RecordWriter,
  event: ApprovalEvent,
  now = new Date(),
): Promise<WriteState> {
  const body: Approval = approvalSchema.parse({
    schema: 'frognano.approval/1',
    id: event.reviewId !== null ? `review-${event.reviewId}` : `approval-${event.commit}-${event.reviewer}`,
    reviewer: event.reviewer,
    permission: event.permission,
    roleName: event.roleName,
    commit: event.commit,
    pullNumber: event.pullNumber,
    reviewUrl: event.reviewUrl,
    checkRunId: event.checkRunId,
    submittedAt: event.submittedAt,
    deliveryId: event.deliveryId,
  });
  return writer.write({
    repository: `${event.owner}/${event.repo}`,
    kind: 'approval',
    jobId: event.jobId,
    body,
    at: now,
    files: [],
  });
}
