import type { Outcome } from './outcome.js';
import type { JobPublisher } from './publishers/job-publisher.js';
import { runPipeline } from './run-pipeline.js';
import { createRunContext, type RunJobContext, type RunJobDeps } from './run-job.js';
import { tokenFromOctokit } from './sources/github-issue-source.js';
import {
  createPullRequestSource,
  type FollowUpJobRequest,
  type FollowUpTarget,
} from './sources/pull-request-source.js';

/** What {@link runFollowUp} needs: the first run's dependencies, the app's login and the publisher. */
export interface RunFollowUpDeps extends Omit<RunJobDeps, 'publishPullRequest'> {
  /** The app's login (`<slug>[bot]`): only its pull requests get follow-up rounds. */
  appLogin: string;
  /** Publishes a round (the follow-up publisher: new commit on the branch, Rounds table, replies). */
  publisher: JobPublisher<FollowUpTarget>;
}

/**
 * Run one follow-up round on the app's pull request (issue 11): the chain of `runPipeline` with the
 * pull request source (head tree in the sandbox, whole change since the base verified) and the
 * given publisher, every sandbox from the probed factory as for a first run. Never throws.
 */
export async function runFollowUp(
  request: FollowUpJobRequest,
  deps: RunFollowUpDeps,
  ctx: RunJobContext,
): Promise<Outcome> {
  const getInstallationToken = deps.getInstallationToken ?? (() => tokenFromOctokit(deps.octokit));
  const jobContext = createRunContext(
    deps,
    ctx,
    ctx.jobId ??
      `${request.owner}.${request.repo}.pr${request.followUp.pullNumber}.${request.followUp.round}`,
  );
  const source = createPullRequestSource({ ...deps, request, getInstallationToken });
  return runPipeline(jobContext, source, deps.publisher);
}
