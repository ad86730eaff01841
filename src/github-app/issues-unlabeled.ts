import { cancelIssueJob } from './cancel-issue-job.js';
import { issuesPayloadSchema } from './trigger-rules.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/**
 * `issues.unlabeled`: removing the trigger label cancels the issue's job (waiting: removed;
 * running: stopped by its worker). Other labels are ignored.
 */
export function handleIssuesUnlabeled(input: WebhookInput, deps: WebhookDeps): Promise<WebhookResult> {
  const p = issuesPayloadSchema.safeParse(input.payload);
  const repo = p.success ? `${p.data.repository.owner.login}/${p.data.repository.name}` : '';
  const label = deps.triggerLabel(repo);
  return cancelIssueJob(input, deps, ({ labelName }) =>
    labelName !== null && labelName.toLowerCase() === label.toLowerCase()
      ? `the ${label} label was removed`
      : null,
  );
}
