import { AppError, throwIfAborted } from '../../app-error.js';
import { applyPatch } from '../../git/apply-patch.js';
import { commitChanges, type GitIdentity } from '../../git/commit-changes.js';
import { fetchBranch } from '../../git/clone-repository.js';
import { BRANCH_MOVED_REASON, pushFastForward } from '../../git/push-branch.js';
import type { Trajectory } from '../../leaf/trajectory.js';
import type { Logger } from '../../observability/logger.js';
import type { FeedbackItem } from '../feedback.js';
import type { GitHubClient } from '../github-client.js';
import type { Outcome } from '../outcome.js';
import {
  askedLine,
  buildCommitMessage,
  noreplyEmail,
  type PullRequestBodyInput,
  type PullRequestRound,
} from '../publish-change.js';
import type { JobContext } from '../job-context.js';
import type { PreparedJob } from '../sources/job-source.js';
import type { FollowUpTarget } from '../sources/pull-request-source.js';
import type { JobPublisher } from './job-publisher.js';
import { pullRequestBodyInput, testCounts } from './pull-request-publisher.js';

/** What the GitHub side writes for one pushed follow-up round. */
export interface FollowUpRoundRequest {
  /** The round (its `headSha` is the head the round started from: the previous check run is on it). */
  target: FollowUpTarget;
  /** The round's new commit (pushed). */
  headSha: string;
  jobId: string;
  /** The body's evidence of the whole change since the base (the rounds are added by the GitHub side). */
  body: PullRequestBodyInput;
  /** This round's row of the "Rounds" table, without the commit (it is `headSha`). */
  round: Omit<PullRequestRound, 'commit'>;
  /** Labels the evidence asks for (e.g. `frognano:tests-modified`). */
  extraLabels: string[];
  /** The round's trajectory: its transcript section is appended to the check run's text. */
  trajectory?: Trajectory;
}

/** What the GitHub side did: the new check run, and what failed without stopping the round. */
export interface PublishedRound {
  checkRunId: number;
  warnings: string[];
}

/**
 * The GitHub-side operations of a follow-up round, implemented by `createFollowUpPullRequest` in
 * `src/github-app/follow-up-pull-request.ts` and passed in by bin (imports flow github-app →
 * pipeline, never back).
 */
export interface FollowUpPullRequest {
  /** The branch's head commit through the API, `null` when the branch is gone. */
  branchHead(
    octokit: GitHubClient,
    where: { owner: string; repo: string; branch: string },
  ): Promise<string | null>;
  /**
   * After the push: the "FrogNano human review" check run on the new head (requesters and
   * transcript carried forward), the body rewritten with the evidence and the "Rounds" table, the
   * labels, and a reply on each inline review comment of the round.
   *
   * @throws AppError `GITHUB_API_ERROR` when the check run or the body cannot be written.
   */
  publishRound(octokit: GitHubClient, request: FollowUpRoundRequest, logger: Logger): Promise<PublishedRound>;
}

/** What {@link createFollowUpPublisher} needs from the worker. */
export interface FollowUpPublisherOptions {
  /** Installation-authenticated client. */
  octokit: GitHubClient;
  followUpPullRequest: FollowUpPullRequest;
  /** A valid installation token, asked for again at push time (kept in memory, given to git's env). */
  getInstallationToken: () => Promise<string>;
  /** `${protocol}://${host}` of GitHub (Enterprise Server). */
  gitBaseUrl: string;
  /** Author of the bot's commits. */
  appIdentity: GitIdentity;
}

/**
 * The Rounds table's "what was asked" of a round: the first line of each feedback item that says
 * something, joined with ` · ` (a review's summary alone, often empty or "see comments", misses
 * its inline comments), cut to one line by `askedLine`.
 */
function askedOf(feedback: readonly FeedbackItem[]): string {
  return askedLine(
    feedback
      .map((f) => askedLine(f.body))
      .filter((line) => line !== '')
      .join(' · '),
  );
}

/**
 * The publisher of a follow-up round on the app's pull request (issue 11): one new commit on the
 * pull request's branch whose tree is the base plus the whole change and whose parent is the head
 * the round started from (so its diff from that head is the round's change), authored by the app
 * and co-authored by the round's feedback authors, pushed as a fast-forward only — never forced.
 * When the branch moved since the round started (checked through the API before pushing, and a
 * refused non-fast-forward push counts the same) nothing is pushed and the round ends `refused`
 * with {@link BRANCH_MOVED_REASON}. Then the GitHub side ({@link FollowUpPullRequest.publishRound}).
 * Changes whose tests count as failing are not pushed unless `allowDraftOnFailingTests` says so.
 */
export function createFollowUpPublisher(options: FollowUpPublisherOptions): JobPublisher<FollowUpTarget> {
  return {
    async publish(ctx, job, chosen, choice): Promise<Outcome> {
      const { policy, target } = job;
      const { patch, summary, testsFailing } = chosen;
      if (testsFailing && !policy.allowDraftOnFailingTests) return { kind: 'tests_failing', patch, summary };
      ctx.signal.throwIfAborted();
      await ctx.progress({ stage: 'publishing' });
      const auth = { token: await options.getInstallationToken(), baseUrl: options.gitBaseUrl };
      const branch = target.headRef;
      const moved = (actualSha: string | null) =>
        new AppError('BRANCH_MOVED', BRANCH_MOVED_REASON, {
          details: { branch, expectedSha: target.headSha, actualSha },
        });
      // The clone is at the base: the head commit becomes the parent, so it must be here.
      const fetched = await fetchBranch(job.dir, branch, { auth, signal: ctx.signal });
      if (fetched.sha !== target.headSha) throw moved(fetched.sha);
      await applyPatch(job.dir, patch, { signal: ctx.signal });
      const sha = await commitRound(ctx, job, options);
      throwIfAborted(ctx.signal);
      const where = { owner: target.owner, repo: target.repo, branch };
      const head = await options.followUpPullRequest.branchHead(options.octokit, where);
      if (head !== target.headSha) throw moved(head);
      await pushFastForward({
        dir: job.dir,
        branch,
        defaultBranch: target.baseRef,
        from: target.headSha,
        auth,
        signal: ctx.signal,
      });
      ctx.logger.info({ branch, sha, parent: target.headSha, round: target.round }, 'follow-up round pushed');
      // Pushed: the rest is completed even when cancelled, so the new commit gets its check run.
      const { evidence, body } = pullRequestBodyInput(job, chosen, choice, {
        issueNumber: target.issueNumber,
        requester: target.labelledBy.login,
      });
      const flagged = chosen.verified.tampering.flagged;
      const published = await options.followUpPullRequest.publishRound(
        options.octokit,
        {
          target,
          headSha: sha,
          jobId: ctx.jobId,
          body,
          extraLabels: evidence.labels,
          ...(chosen.state.trajectory ? { trajectory: chosen.state.trajectory } : {}),
          round: {
            round: target.round,
            requestedBy: target.requestedBy,
            asked: askedOf(target.feedback),
            ...testCounts(chosen.verified),
            outcome: testsFailing
              ? 'pushed; the tests fail'
              : flagged
                ? 'pushed; tests modified (flagged)'
                : 'pushed',
          },
        },
        ctx.logger,
      );
      const warned = published.warnings.length ? { warnings: published.warnings } : {};
      const opened = { pullNumber: target.pullNumber, pullUrl: target.pullUrl, summary, ...warned };
      if (testsFailing) return { kind: 'tests_failing', patch, ...opened };
      return { kind: 'pr_opened', updated: true, ...opened };
    },
  };
}

/**
 * The round's commit in the clone: the staged whole change on top of the head the round started
 * from, by the app, co-authored by the round's feedback authors. Returns its sha.
 */
async function commitRound(
  ctx: JobContext,
  job: PreparedJob<FollowUpTarget>,
  options: FollowUpPublisherOptions,
): Promise<string> {
  const { target } = job;
  const host = new URL(options.gitBaseUrl).hostname;
  return commitChanges(job.dir, {
    author: options.appIdentity,
    parent: target.headSha,
    date: ctx.now(),
    signal: ctx.signal,
    message: buildCommitMessage({
      issueTitle: target.issueTitle,
      issueNumber: target.issueNumber,
      jobId: ctx.jobId,
      round: { number: target.round, pullNumber: target.pullNumber },
      coAuthors: target.requestedBy.map((login) => ({ login, email: noreplyEmail({ login }, host) })),
    }),
  });
}
