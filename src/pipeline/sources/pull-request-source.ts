import { join } from 'node:path';
import { AppError, isAppError } from '../../app-error.js';
import { archiveTrackedFiles } from '../../git/archive-tracked-files.js';
import { cloneRepository, fetchBranch, type GitHttpAuth } from '../../git/clone-repository.js';
import { repositoryUrl } from '../../git/git-auth.js';
import { runGit } from '../../git/run-git.js';
import { wholeChange } from '../../git/whole-change.js';
import type { FeedbackItem } from '../feedback.js';
import { buildFollowUpInstruction } from '../follow-up-instruction.js';
import type { GitHubClient } from '../github-client.js';
import type { JobContext } from '../job-context.js';
import type { FollowUpRequest, JobRequest } from '../job-request.js';
import type { JobSource, PreparedJob } from './job-source.js';
import { openRepository, type ResolvePolicy } from './repository-policy.js';

/**
 * What the follow-up publisher needs from a follow-up round on the app's pull request
 * (`PreparedJob<FollowUpTarget>['target']`).
 */
export interface FollowUpTarget {
  owner: string;
  repo: string;
  pullNumber: number;
  /** `html_url` of the pull request. */
  pullUrl: string;
  /** The original issue the pull request resolves. */
  issueNumber: number;
  issueTitle: string;
  /**
   * Head branch name (e.g. `frognano/issue-12`) and the head commit this round started from: the
   * push only fast-forwards from it.
   */
  headRef: string;
  headSha: string;
  /**
   * The pull request's base branch and base commit (merge base of the base branch and the head)
   * the whole change is measured from; `PreparedJob.baseSha` equals `baseSha`.
   */
  baseRef: string;
  baseSha: string;
  /** Shown round number (2 = first follow-up; the first run is round 1). */
  round: number;
  /** This round's feedback, in the order written. */
  feedback: FeedbackItem[];
  /** Who asked this round (feedback authors, unique, in order). */
  requestedBy: string[];
  /** Who labelled the issue (`JobRequest.triggeredBy`). */
  labelledBy: { login: string; id?: number };
}

/** A follow-up request as the queue worker hands it over: the round's feedback drained. */
export type FollowUpJobRequest = JobRequest & { followUp: FollowUpRequest & { feedback: FeedbackItem[] } };

/** What {@link createPullRequestSource} needs. */
export interface PullRequestSourceOptions {
  request: FollowUpJobRequest;
  /** Installation-authenticated client. */
  octokit: GitHubClient;
  /** A valid installation token: goes to git through its environment only (never a URL, argv, log). */
  getInstallationToken: () => Promise<string>;
  /** `${protocol}://${host}` of GitHub (Enterprise Server). */
  gitBaseUrl: string;
  /** The repository's effective policy (see `createRepositoryPolicyResolver`); throws to refuse. */
  resolvePolicy: ResolvePolicy;
  /** The app's login (`<slug>[bot]`): only its pull requests get follow-up rounds. */
  appLogin: string;
}

/**
 * The source of a follow-up round on the app's draft pull request (issue 11): the pull request and
 * the original issue read through the API (refused when the pull request is closed or merged, not
 * the app's, or its head is in another repository), the policy resolved as for the issue, the
 * base branch cloned with its history and the head branch fetched (the installation token only in
 * git's environment) into `<workspace>/repo`, checked out at the merge base. The agent's sandbox
 * gets the head's tracked files (`<workspace>/head`, a worktree at the head commit), and what is
 * verified and published is the whole change since the merge base (`wholeChange`).
 *
 * @throws (from `prepare`) AppError `POLICY_REFUSED` (also when the head branch cannot be fetched or
 *   shares no history with the base), `CONFIG_INVALID`, `GITHUB_API_ERROR`; Octokit's RequestError.
 */
export function createPullRequestSource(options: PullRequestSourceOptions): JobSource<FollowUpTarget> {
  const { request, octokit } = options;
  const { owner, repo, issueNumber } = request;
  const { pullNumber } = request.followUp;
  return {
    async prepare(ctx: JobContext, workspace: string): Promise<PreparedJob<FollowUpTarget>> {
      const { data: pull } = await octokit.rest.pulls.get({ owner, repo, pull_number: pullNumber });
      refuseForeignPull(pull, options.appLogin);
      const { data: issue } = await octokit.rest.issues.get({ owner, repo, issue_number: issueNumber });
      const { policy } = await openRepository(octokit, request, options.resolvePolicy, 'ask again');
      ctx.signal.throwIfAborted();
      const dir = join(workspace, 'repo');
      const auth = { token: await options.getInstallationToken(), baseUrl: options.gitBaseUrl };
      const { headSha, baseSha } = await checkOutPullRequest(
        ctx,
        dir,
        { owner, repo, baseRef: pull.base.ref, headRef: pull.head.ref },
        auth,
      );
      const headDir = join(workspace, 'head');
      await runGit(['worktree', 'add', '--quiet', '--detach', headDir, headSha], { cwd: dir });
      ctx.logger.info(
        { baseRef: pull.base.ref, baseSha, headRef: pull.head.ref, headSha },
        'pull request fetched',
      );
      const feedback = request.followUp.feedback;
      const instruction = (testCommand: string | null): string =>
        buildFollowUpInstruction({
          repository: `${owner}/${repo}`,
          issueNumber,
          pullNumber,
          title: issue.title,
          body: issue.body ?? null,
          instructions: policy.instructions,
          testCommand,
          feedback,
        });
      const { login, id } = request.triggeredBy;
      const target: FollowUpTarget = {
        owner,
        repo,
        pullNumber,
        pullUrl: pull.html_url,
        issueNumber,
        issueTitle: issue.title,
        headRef: pull.head.ref,
        headSha,
        baseRef: pull.base.ref,
        baseSha,
        round: request.followUp.round + 1,
        feedback,
        requestedBy: [...new Set(feedback.map((f) => f.author))],
        labelledBy: id === undefined ? { login } : { login, id },
      };
      return {
        policy,
        dir,
        baseSha,
        instruction,
        target,
        sandboxTree: () => archiveTrackedFiles(headDir, { signal: ctx.signal }),
        wholeChange: (patch) =>
          wholeChange({
            dir,
            baseSha,
            headSha,
            patch,
            indexFile: join(workspace, 'whole-change.index'),
            signal: ctx.signal,
          }),
      };
    },
  };
}

/** The parts of a pull request (`GET /repos/{o}/{r}/pulls/{n}`) the source checks. */
interface PullFacts {
  number: number;
  state: string;
  merged?: boolean | null;
  user: { login: string } | null;
  head: { ref: string; repo: { id: number } | null };
  base: { ref: string; repo: { id: number } };
}

/** @throws AppError `POLICY_REFUSED` for a closed or merged pull request, another author's, or a fork's. */
function refuseForeignPull(pull: PullFacts, appLogin: string): void {
  const n = pull.number;
  if (pull.merged) throw new AppError('POLICY_REFUSED', `pull request #${n} is already merged`);
  if (pull.state !== 'open') throw new AppError('POLICY_REFUSED', `pull request #${n} is closed`);
  if (pull.user?.login.toLowerCase() !== appLogin.toLowerCase()) {
    throw new AppError(
      'POLICY_REFUSED',
      `pull request #${n} was not opened by ${appLogin}: I only change my own pull requests`,
    );
  }
  if (pull.head.repo?.id !== pull.base.repo.id) {
    throw new AppError(
      'POLICY_REFUSED',
      `the branch of pull request #${n} is in another repository (a fork): I cannot push to it`,
    );
  }
}

/**
 * Clone `baseRef` with its history into `dir`, fetch `headRef`, and check `dir` out (detached) at
 * their merge base.
 *
 * @throws AppError `POLICY_REFUSED` when the head branch cannot be fetched or shares no history
 *   with the base; `GITHUB_API_ERROR` when the clone fails.
 */
async function checkOutPullRequest(
  ctx: JobContext,
  dir: string,
  where: { owner: string; repo: string; baseRef: string; headRef: string },
  auth: GitHttpAuth,
): Promise<{ headSha: string; baseSha: string }> {
  const { signal } = ctx;
  await cloneRepository({
    url: repositoryUrl(auth.baseUrl, where.owner, where.repo),
    dir,
    branch: where.baseRef,
    depth: 'full',
    auth,
    signal,
  });
  const { sha: headSha } = await fetchBranch(dir, where.headRef, { auth, signal }).catch((err: unknown) => {
    if (isAppError(err, 'GITHUB_API_ERROR') && !err.retryable) {
      throw new AppError(
        'POLICY_REFUSED',
        `the branch ${where.headRef} of the pull request cannot be fetched (deleted?): ${err.message}`,
        { cause: err },
      );
    }
    throw err;
  });
  const merged = await runGit(['merge-base', 'HEAD', headSha], { cwd: dir, signal }).catch(() => null);
  const baseSha = merged?.stdout.toString('utf8').trim();
  if (!baseSha) {
    throw new AppError(
      'POLICY_REFUSED',
      `the branch ${where.headRef} shares no history with ${where.baseRef}: there is no base to compare with`,
    );
  }
  await runGit(['checkout', '--quiet', '--detach', baseSha], { cwd: dir, signal });
  return { headSha, baseSha };
}
