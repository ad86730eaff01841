import type { GitHubClient } from '../pipeline/github-client.js';

/**
 * Name of the check run that blocks merging until a person has reviewed the bot's pull request.
 * Branch protection can require it ("Require status checks to pass": FrogNano human review).
 */
export const HUMAN_REVIEW_CHECK_NAME = 'FrogNano human review';

/** Where a check run lives and what it describes. */
export interface HumanReviewCheckTarget {
  owner: string;
  repo: string;
  /** Commit the check run is attached to: the pull request's head commit. */
  headSha: string;
  /** Pull request the check is about (`details_url`, and named in the text). */
  pullNumber: number;
  pullUrl: string;
  /** The job that made the commit: the check's `external_id`, and named with how to fetch its run record. */
  jobId?: string;
}

/**
 * Create the "FrogNano human review" check run on the pull request's head commit, completed with
 * conclusion `action_required`: GitHub shows it as needing action, and a branch protection rule that
 * requires the check blocks merging until {@link approveHumanReviewCheck} turns it `success`.
 * (Checks API: https://docs.github.com/en/rest/checks/runs#create-a-check-run — `details_url` is
 * given because `action_required` should point to where the action is taken: the pull request.)
 *
 * @returns the check run id.
 * @throws Octokit's RequestError when GitHub refuses (the pipeline classifies it).
 */
export async function createHumanReviewCheck(
  octokit: GitHubClient,
  target: HumanReviewCheckTarget,
): Promise<number> {
  const { data } = await octokit.rest.checks.create({
    owner: target.owner,
    repo: target.repo,
    name: HUMAN_REVIEW_CHECK_NAME,
    head_sha: target.headSha,
    status: 'completed',
    conclusion: 'action_required',
    completed_at: new Date().toISOString(),
    details_url: target.pullUrl,
    ...(target.jobId ? { external_id: target.jobId } : {}),
    output: {
      title: 'Waiting for a human review',
      summary:
        `This change was written by a machine. It needs an approving review from a person with write access ` +
        `to the repository on pull request #${target.pullNumber} before it can be merged.`,
      text:
        `Review the diff of #${target.pullNumber} line by line, run it if you can, and approve it only if you ` +
        `would have approved the same change from a colleague. An approving review from a user with write, ` +
        `maintain or admin permission on the head commit turns this check to success. New commits need a new ` +
        `approval. The bot never approves, marks ready or merges its own pull requests.` +
        (target.jobId
          ? `\n\nJob \`${target.jobId.replace(/`/g, '')}\`; its run record (who asked, model, policy, tests, approvals): ` +
            `\`frognano-bot audit show ${target.jobId.replace(/`/g, '')}\`.`
          : ''),
    },
  });
  return data.id;
}

/**
 * Turn a human review check run to `success` after an approving review by `reviewer`.
 *
 * @throws Octokit's RequestError when GitHub refuses.
 */
export async function approveHumanReviewCheck(
  octokit: GitHubClient,
  target: { owner: string; repo: string; checkRunId: number },
  approval: { reviewer: string; reviewUrl: string | null; commitId: string },
): Promise<void> {
  await octokit.rest.checks.update({
    owner: target.owner,
    repo: target.repo,
    check_run_id: target.checkRunId,
    status: 'completed',
    conclusion: 'success',
    completed_at: new Date().toISOString(),
    output: {
      title: `Approved by @${approval.reviewer}`,
      summary:
        `@${approval.reviewer}, who has write access, approved commit ${approval.commitId.slice(0, 12)}` +
        (approval.reviewUrl ? ` ([review](${approval.reviewUrl})).` : '.'),
    },
  });
}

/**
 * The latest "FrogNano human review" check run on `sha` made by this app, or `null`. Check runs of
 * other apps with the same name are skipped: GitHub would not let this app update them anyway.
 *
 * @param appId this GitHub App's id, when known; without it the name alone decides.
 */
export async function findHumanReviewCheck(
  octokit: GitHubClient,
  where: { owner: string; repo: string; sha: string; appId?: number },
): Promise<{ id: number; conclusion: string | null; externalId: string | null } | null> {
  const { data } = await octokit.rest.checks.listForRef({
    owner: where.owner,
    repo: where.repo,
    ref: where.sha,
    check_name: HUMAN_REVIEW_CHECK_NAME,
    filter: 'latest',
    per_page: 100,
    ...(where.appId !== undefined ? { app_id: where.appId } : {}),
  });
  const run = data.check_runs.find(
    (r) => r.name === HUMAN_REVIEW_CHECK_NAME && (where.appId === undefined || r.app?.id === where.appId),
  );
  return run ? { id: run.id, conclusion: run.conclusion, externalId: run.external_id ?? null } : null;
}
