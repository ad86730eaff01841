import { cancelIssueJob } from './cancel-issue-job.js';
import { cancelFollowUpRound } from './pull-feedback.js';
import { issuesPayloadSchema } from './trigger-rules.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/**
 * `issues.unlabeled`: removing the trigger label cancels the issue's job (waiting: removed;
 * running: stopped by its worker) and the follow-up round of each pull request the app opened for
 * it (issue 11), dropping their pending feedback. Other labels are ignored.
 */
export async function handleIssuesUnlabeled(input: WebhookInput, deps: WebhookDeps): Promise<WebhookResult> {
  const p = issuesPayloadSchema.safeParse(input.payload);
  const repo = p.success ? `${p.data.repository.owner.login}/${p.data.repository.name}` : '';
  const label = deps.triggerLabel(repo);
  const reason = `the ${label} label was removed`;
  const result = await cancelIssueJob(input, deps, ({ labelName }) =>
    labelName !== null && labelName.toLowerCase() === label.toLowerCase() ? reason : null,
  );
  if (!p.success || result === 'ignored') return result;
  const { owner, name } = p.data.repository;
  const ref = { owner: owner.login, repo: name, issueNumber: p.data.issue.number };
  let followUps: WebhookResult | null = null;
  for (const pullNumber of await deps.jobs.followUps.pullsOf(ref)) {
    const log = input.logger.child({ repo, pull: pullNumber, deliveryId: input.deliveryId });
    const pull = { owner: ref.owner, repo: ref.repo, pullNumber };
    const r = await cancelFollowUpRound(input, deps, pull, { by: p.data.sender.login, reason }, log);
    if (r !== 'nothing_to_cancel') followUps = r;
  }
  return result === 'nothing_to_cancel' && followUps !== null ? followUps : result;
}
