import type { IssueRef } from '../queue/queue-keys.js';
import { createStatusComment } from './status-comment.js';
import { issuesPayloadSchema } from './trigger-rules.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/**
 * Cancel the issue's job because of `input` (label removed or issue closed).
 *
 * A job that has not started is removed from the queue here and the status comment says who
 * cancelled it. A running job (in whichever worker process holds it) is asked to stop through its
 * cancel key and the cancel channel; its worker aborts the run (the sandbox is destroyed) and
 * writes the final status comment itself, so this handler does not touch the comment then (two
 * writers would race).
 *
 * Events caused by the app itself are ignored; anyone else who can remove the label or close the
 * issue may cancel.
 *
 * @param reason human-readable cause, e.g. "the frognano label was removed".
 * @throws when Redis or GitHub fails (the webhook answers 5xx).
 */
export async function cancelIssueJob(
  input: WebhookInput,
  deps: WebhookDeps,
  reason: (payload: { labelName: string | null }) => string | null,
): Promise<WebhookResult> {
  const parsed = issuesPayloadSchema.safeParse(input.payload);
  if (!parsed.success) {
    input.logger.warn({ issues: parsed.error.issues.slice(0, 5) }, 'issues payload not understood; ignored');
    return 'ignored';
  }
  const payload = parsed.data;
  const why = reason({ labelName: payload.label?.name ?? null });
  if (why === null) return 'ignored';
  const botLogin = deps.botLogin();
  if (botLogin !== undefined && payload.sender.login === botLogin) return 'ignored';

  const ref: IssueRef = {
    owner: payload.repository.owner.login,
    repo: payload.repository.name,
    issueNumber: payload.issue.number,
  };
  const log = input.logger.child({
    repo: `${ref.owner}/${ref.repo}`,
    issue: ref.issueNumber,
    deliveryId: input.deliveryId,
  });
  const by = payload.sender.login;
  const result = await deps.jobs.cancel(ref, { by, reason: why });

  switch (result.status) {
    case 'none':
      log.debug('nothing to cancel');
      return 'nothing_to_cancel';
    case 'signalled':
      log.info({ jobId: result.jobId, by }, 'asked the worker to cancel the running job');
      return 'cancel_requested';
    case 'removed': {
      log.info({ jobId: result.jobId, by }, 'removed the waiting job');
      const status = createStatusComment(
        input.octokit,
        { owner: ref.owner, repo: ref.repo, issue: ref.issueNumber },
        { commentId: result.data?.statusCommentId, botLogin, jobId: result.jobId, logger: log },
      );
      await status.update({
        phase: 'finished',
        outcome: { kind: 'cancelled', by, reason: `${why} before the job started` },
      });
      return 'cancelled';
    }
  }
}
