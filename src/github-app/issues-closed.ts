import { cancelIssueJob } from './cancel-issue-job.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/** `issues.closed`: closing the issue cancels its job, whatever its state. */
export function handleIssuesClosed(input: WebhookInput, deps: WebhookDeps): Promise<WebhookResult> {
  return cancelIssueJob(input, deps, () => 'the issue was closed');
}
