import type { ApplicationFunction, Context } from 'probot';
import { isAppError } from '../app-error.js';
import { handleIssuesClosed } from './issues-closed.js';
import { handleIssuesLabeled } from './issues-labeled.js';
import { handleIssuesUnlabeled } from './issues-unlabeled.js';
import { handlePullClosed, handlePullFeedback } from './pull-feedback.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/**
 * The Probot application function of FrogNano bot: registers the `issues` handlers of this module
 * (labeled → queue, unlabeled/closed → cancel), the reviewer feedback handlers of pull-feedback.ts
 * (comment, review comment, `changes_requested` review → follow-up round; pull request closed →
 * cancel) and any `extraHandlers` (the pull request review
 * handlers of the publish step).
 *
 * Errors: a handler error answers the webhook with 503 when it is retryable (Redis or GitHub
 * unavailable: the delivery shows as failed and can be redelivered) and 500 otherwise. Probot's
 * middleware takes the status from the thrown error's `status`.
 */
export function createFrognanoApp(
  deps: WebhookDeps,
  extraHandlers: readonly ApplicationFunction[] = [],
): ApplicationFunction {
  return async (app, options) => {
    const wrap =
      (name: string, handler: (input: WebhookInput, deps: WebhookDeps) => Promise<WebhookResult>) =>
      async (context: Context) => {
        const started = performance.now();
        const input: WebhookInput = {
          deliveryId: context.id,
          event: context.name,
          payload: context.payload,
          octokit: context.octokit,
          logger: deps.logger,
        };
        let result: WebhookResult | 'error' = 'error';
        try {
          result = await handler(input, deps);
        } catch (err) {
          throw toHttpError(err);
        } finally {
          deps.metrics?.webhooksTotal.inc({ event: name, result });
          deps.metrics?.webhookDurationSeconds.observe({ event: name }, (performance.now() - started) / 1000);
        }
      };
    app.on('issues.labeled', wrap('issues.labeled', handleIssuesLabeled));
    app.on('issues.unlabeled', wrap('issues.unlabeled', handleIssuesUnlabeled));
    app.on('issues.closed', wrap('issues.closed', handleIssuesClosed));
    app.on('issue_comment.created', wrap('issue_comment.created', handlePullFeedback));
    app.on(
      'pull_request_review_comment.created',
      wrap('pull_request_review_comment.created', handlePullFeedback),
    );
    app.on('pull_request_review.submitted', wrap('pull_request_review.submitted', handlePullFeedback));
    app.on('pull_request.closed', wrap('pull_request.closed', handlePullClosed));
    for (const extra of extraHandlers) await extra(app, options);
  };
}

/** An Error carrying the HTTP status the webhook should answer with. */
function toHttpError(err: unknown): Error & { status: number } {
  const retryable = isAppError(err) ? err.retryable : false;
  const message = err instanceof Error ? err.message : String(err);
  return Object.assign(new Error(message, { cause: err }), { status: retryable ? 503 : 500 });
}
