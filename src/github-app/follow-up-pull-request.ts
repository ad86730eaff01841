import { httpStatusOf } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import type { GitHubClient } from '../pipeline/github-client.js';
import { askedLine, type PullRequestRound } from '../pipeline/publish-change.js';
import type {
  FollowUpPullRequest,
  FollowUpRoundRequest,
  PublishedRound,
} from '../pipeline/publishers/follow-up-publisher.js';
import { createHumanReviewCheck, findHumanReviewCheck } from './check-run.js';
import { githubError } from './github-client.js';
import { addPullLabels, checkRunError, describeHttpError, renderPullRequestBody } from './pull-request.js';
import { readRoundsMarker } from './rounds-table.js';
import { appendTranscriptRound, renderTranscriptRound } from './transcript.js';

/**
 * The GitHub side of a follow-up round (issue 11), given to the pipeline's follow-up publisher
 * (`createFollowUpPublisher`) by bin: the branch head through the API, then, once the round's commit
 * is pushed, the human review check run on it, the pull request body with the "Rounds" table, the
 * labels and a reply on each inline review comment of the round.
 *
 * @param options.appId this app's id: only its own check runs are read (`findHumanReviewCheck`).
 */
export function createFollowUpPullRequest(options: { appId?: number } = {}): FollowUpPullRequest {
  return {
    async branchHead(octokit, where) {
      try {
        const { data } = await octokit.rest.git.getRef({
          owner: where.owner,
          repo: where.repo,
          ref: `heads/${where.branch}`,
        });
        return data.object.sha;
      } catch (err) {
        if (httpStatusOf(err) === 404) return null;
        throw githubError(err, `read the head of ${where.branch}`);
      }
    },
    publishRound: (octokit, request, logger) => publishFollowUpRound(octokit, request, logger, options.appId),
  };
}

/**
 * Check run first (it keeps the new commit from being merged unreviewed), then the body, labels and
 * replies. Threads are never resolved: a person does that.
 *
 * @throws AppError `GITHUB_API_ERROR` (with the pull request) when the check run or the body cannot
 *   be written; labels and replies that fail are warnings.
 */
async function publishFollowUpRound(
  octokit: GitHubClient,
  request: FollowUpRoundRequest,
  logger: Logger,
  appId: number | undefined,
): Promise<PublishedRound> {
  const { target } = request;
  const { owner, repo, pullNumber: number, pullUrl: url } = target;
  let checkRunId: number;
  try {
    const previous = await findHumanReviewCheck(octokit, { owner, repo, sha: target.headSha, appId });
    const section = request.trajectory
      ? renderTranscriptRound(request.trajectory, {
          round: target.round,
          note: `Asked for by ${target.requestedBy.map((l) => `@${l}`).join(', ')} on the pull request.`,
        })
      : null;
    const text = section
      ? appendTranscriptRound(previous?.output.text ?? null, section)
      : previous?.output.text;
    checkRunId = await createHumanReviewCheck(octokit, {
      owner,
      repo,
      headSha: request.headSha,
      pullNumber: number,
      pullUrl: url,
      jobId: request.jobId,
      requestedBy: [...(previous?.requestedBy ?? [target.labelledBy.login]), ...target.requestedBy],
      transcript: text ?? null,
    });
  } catch (err) {
    throw checkRunError(err, { number, url });
  }
  try {
    const { data } = await octokit.rest.pulls.get({ owner, repo, pull_number: number });
    const earlier = readRoundsMarker(data.body ?? null, logger) ?? [firstRunRound(target)];
    const rounds: PullRequestRound[] = [
      ...earlier.filter((r) => r.round < target.round),
      { ...request.round, commit: request.headSha },
    ];
    const body = renderPullRequestBody({ ...request.body, rounds }, { pullUrl: url });
    await octokit.rest.pulls.update({ owner, repo, pull_number: number, body });
  } catch (err) {
    throw githubError(err, 'rewrite the pull request body');
  }
  const warnings = request.extraLabels.length
    ? await addPullLabels(octokit, { owner, repo, number }, request.extraLabels, logger)
    : [];
  const reply = `Round ${target.round}: [\`${request.headSha.slice(0, 7)}\`](${url}/commits/${request.headSha}) — ${request.round.outcome}. Resolve this thread once the change is what you asked for.`;
  for (const item of target.feedback) {
    if (item.kind !== 'review-comment' || item.commentId === undefined) continue;
    try {
      await octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies', {
        owner,
        repo,
        pull_number: number,
        comment_id: item.commentId,
        body: reply,
      });
    } catch (err) {
      logger.warn({ err, commentId: item.commentId }, 'could not reply to a review comment');
      warnings.push(
        `The review comment ${item.url ?? item.commentId} got no reply (${describeHttpError(err)}).`,
      );
    }
  }
  return { checkRunId, warnings };
}

/** Round 1's row of a pull request whose body has no rounds marker (opened before it existed). */
function firstRunRound(target: FollowUpRoundRequest['target']): PullRequestRound {
  return {
    round: 1,
    requestedBy: [target.labelledBy.login],
    asked: askedLine(target.issueTitle),
    commit: null,
    fixed: null,
    broken: null,
    outcome: 'opened the draft pull request',
  };
}
