import type { ApplicationFunction, Probot } from 'probot';
import type { ApprovalEvent } from '../observability/approval-entry.js';
import type { Logger } from '../observability/logger.js';
import type { GitHubClient } from '../pipeline/github-client.js';
import { approveHumanReviewCheck, findHumanReviewCheck } from './check-run.js';

/** Permissions whose approval counts as the human review (REST `permission` / `role_name`). */
const WRITE_ROLES = new Set(['admin', 'maintain', 'write']);

/** The fields of a `pull_request_review.submitted` payload the handler reads. */
export interface ReviewSubmittedPayload {
  review: {
    /** `approved`, `commented`, `changes_requested` (webhooks send lower case; compared case-insensitively). */
    state: string;
    /** The commit the review was made on. */
    commit_id: string | null;
    user: { login: string; type?: string } | null;
    html_url?: string | null;
    id?: number;
    submitted_at?: string | null;
  };
  pull_request: { number: number; head: { sha: string } };
  repository: { name: string; owner: { login: string } };
}

/** What the handler did, for logs and tests. */
export type ReviewHandlerResult =
  { action: 'approved'; checkRunId: number; reviewer: string } | { action: 'ignored'; reason: string };

/** Options of {@link handleReviewSubmitted}. */
export interface ReviewHandlerOptions {
  /** This GitHub App's id: only its own check runs are considered. Without it, the check's name decides. */
  appId?: number;
  /**
   * Called when an approval counts as the human review: appends it to the run record chain
   * (`writeApproval`). Its errors are logged; the check run is already green.
   */
  recordApproval?: (approval: ApprovalEvent) => Promise<unknown>;
}

/**
 * Handle `pull_request_review.submitted`: when the review approves the pull request's current head
 * commit and its author is a person (not a bot) with write, maintain or admin permission on the
 * repository — looked up through the API, not trusted from `author_association` — turn this app's
 * "FrogNano human review" check run on that commit to `success`.
 *
 * Ignored (with the reason returned and logged): reviews that do not approve; approvals of an older
 * commit (new commits need a new approval); approvals by bots; approvals by users without write
 * access; pull requests without this app's check run on the head commit (not the bot's pull request).
 *
 * @throws Octokit's RequestError when GitHub fails (Probot then answers the webhook with an error,
 *   so GitHub shows the failed delivery and it can be redelivered).
 */
export async function handleReviewSubmitted(
  context: { octokit: GitHubClient; payload: ReviewSubmittedPayload; logger: Logger; deliveryId?: string },
  options: ReviewHandlerOptions = {},
): Promise<ReviewHandlerResult> {
  const { octokit, payload, logger } = context;
  const owner = payload.repository.owner.login;
  const repo = payload.repository.name;
  const pullNumber = payload.pull_request.number;
  const headSha = payload.pull_request.head.sha;
  const reviewer = payload.review.user?.login ?? null;
  const ignore = (reason: string): ReviewHandlerResult => {
    logger.info(
      { owner, repo, pullNumber, reviewer, reason },
      'review does not resolve the human review check',
    );
    return { action: 'ignored', reason };
  };

  if (payload.review.state.toLowerCase() !== 'approved') return ignore('the review does not approve');
  if (!reviewer) return ignore('the review has no author');
  if (payload.review.user?.type === 'Bot') return ignore('approvals by bots do not count as a human review');
  if (payload.review.commit_id !== headSha) {
    return ignore(
      `the approval is for commit ${String(payload.review.commit_id).slice(0, 12)}, not the head commit`,
    );
  }

  const check = await findHumanReviewCheck(octokit, { owner, repo, sha: headSha, appId: options.appId });
  if (!check) return ignore('no FrogNano human review check run on the head commit');

  const { data: perm } = await octokit.rest.repos.getCollaboratorPermissionLevel({
    owner,
    repo,
    username: reviewer,
  });
  const roleName = (perm as { role_name?: string }).role_name;
  if (!WRITE_ROLES.has(perm.permission) && !(roleName !== undefined && WRITE_ROLES.has(roleName))) {
    return ignore(`@${reviewer} has ${perm.permission} permission, not write`);
  }

  if (check.conclusion !== 'success') {
    await approveHumanReviewCheck(
      octokit,
      { owner, repo, checkRunId: check.id },
      { reviewer, reviewUrl: payload.review.html_url ?? null, commitId: headSha },
    );
  }
  logger.info(
    { owner, repo, pullNumber, reviewer, checkRunId: check.id },
    'human review check turned success',
  );
  if (options.recordApproval) {
    await options
      .recordApproval({
        owner,
        repo,
        jobId: check.externalId,
        reviewer,
        permission: perm.permission,
        roleName: roleName ?? null,
        commit: headSha,
        pullNumber,
        reviewUrl: payload.review.html_url ?? null,
        checkRunId: check.id,
        reviewId: payload.review.id ?? null,
        submittedAt: payload.review.submitted_at ?? null,
        deliveryId: context.deliveryId ?? null,
      })
      .catch((err: unknown) => logger.error({ err }, 'could not record the approval in the run record'));
  }
  return { action: 'approved', checkRunId: check.id, reviewer };
}

/**
 * Register {@link handleReviewSubmitted} on a Probot app for `pull_request_review.submitted`.
 * Call once from the server's wiring.
 */
export function registerReviewHandler(app: Probot, options: ReviewHandlerOptions = {}): void {
  app.on('pull_request_review.submitted', async (context) => {
    await handleReviewSubmitted(
      { octokit: context.octokit, payload: context.payload, logger: context.log, deliveryId: context.id },
      options,
    );
  });
}

/**
 * {@link registerReviewHandler} as a Probot application function, for `startServer`'s extra
 * handlers (`createFrognanoApp(deps, [createReviewHandlerApp()])`).
 */
export function createReviewHandlerApp(options: ReviewHandlerOptions = {}): ApplicationFunction {
  return (app) => registerReviewHandler(app, options);
}
