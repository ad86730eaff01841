import { join } from 'node:path';
import { AppError, isAppError } from '../../app-error.js';
import { cloneRepository } from '../../git/clone-repository.js';
import { repositoryUrl } from '../../git/git-auth.js';
import type { GitHubClient } from '../github-client.js';
import { buildInstruction } from '../instruction.js';
import type { JobContext } from '../job-context.js';
import type { JobRequest } from '../job-request.js';
import type { JobSource, PreparedJob } from './job-source.js';
import { openRepository, type ResolvePolicy } from './repository-policy.js';

/** What the pull request publisher needs from a GitHub issue job. */
export interface GitHubIssueTarget {
  owner: string;
  repo: string;
  issueNumber: number;
  issueTitle: string;
  /** The repository's default branch: cloned, and the pull request's base. */
  defaultBranch: string;
}

/** What {@link createGitHubIssueSource} needs. */
export interface GitHubIssueSourceOptions {
  request: JobRequest;
  /** Installation-authenticated client. */
  octokit: GitHubClient;
  /** A valid installation token: goes to git through its environment only (never a URL, argv, log). */
  getInstallationToken: () => Promise<string>;
  /** `${protocol}://${host}` of GitHub (Enterprise Server). */
  gitBaseUrl: string;
  /**
   * The repository's effective policy (see `createRepositoryPolicyResolver`). Throws AppError
   * `POLICY_REFUSED` / `CONFIG_INVALID` (with `details.messages`) to refuse the job.
   */
  resolvePolicy: ResolvePolicy;
}

/**
 * The source of a labelled issue: the issue and repository read through the API (a pull request,
 * a closed issue and an archived repository are refused), the policy resolved, the default branch
 * cloned over HTTPS (shallow; the installation token only in git's environment) into
 * `<workspace>/repo`. The instruction quotes the issue as data (`buildInstruction`).
 *
 * @throws (from `prepare`) AppError `POLICY_REFUSED` (also for an empty repository),
 *   `CONFIG_INVALID`, `GITHUB_API_ERROR`, `CLONE_FAILED`; Octokit's RequestError.
 */
export function createGitHubIssueSource(options: GitHubIssueSourceOptions): JobSource<GitHubIssueTarget> {
  const { request, octokit } = options;
  const { owner, repo, issueNumber } = request;
  return {
    async prepare(ctx: JobContext, workspace: string): Promise<PreparedJob<GitHubIssueTarget>> {
      const { data: issue } = await octokit.rest.issues.get({ owner, repo, issue_number: issueNumber });
      if (issue.pull_request)
        throw new AppError('POLICY_REFUSED', `#${issueNumber} is a pull request, not an issue`);
      if (issue.state !== 'open') throw new AppError('POLICY_REFUSED', `issue #${issueNumber} is closed`);
      const { defaultBranch, policy } = await openRepository(
        octokit,
        request,
        options.resolvePolicy,
        'label the issue again',
      );
      ctx.signal.throwIfAborted();
      const dir = join(workspace, 'repo');
      const { headSha: baseSha } = await cloneRepository({
        url: repositoryUrl(options.gitBaseUrl, owner, repo),
        dir,
        branch: defaultBranch,
        auth: { token: await options.getInstallationToken(), baseUrl: options.gitBaseUrl },
        signal: ctx.signal,
      }).catch(async (err: unknown) => {
        throw (await emptyRepositoryError(octokit, owner, repo, err)) ?? err;
      });
      ctx.logger.info({ defaultBranch, baseSha }, 'repository cloned');
      const instruction = (testCommand: string | null): string =>
        buildInstruction({
          repository: `${owner}/${repo}`,
          issueNumber,
          title: issue.title,
          body: issue.body ?? null,
          instructions: policy.instructions,
          testCommand,
        });
      const target = { owner, repo, issueNumber, issueTitle: issue.title, defaultBranch };
      return { policy, dir, baseSha, instruction, target };
    },
  };
}

/** The installation token from an Octokit with an app-installation auth strategy (Probot's or auth-app's). */
export async function tokenFromOctokit(octokit: GitHubClient): Promise<string> {
  const client = octokit as { auth?: (o: { type: string }) => Promise<unknown> };
  if (typeof client.auth !== 'function') {
    throw new AppError(
      'GITHUB_API_ERROR',
      'the GitHub client cannot give an installation token (no auth hook)',
    );
  }
  const result = (await client.auth({ type: 'installation' })) as { token?: unknown } | undefined;
  if (typeof result?.token !== 'string' || result.token === '') {
    throw new AppError('GITHUB_API_ERROR', 'the GitHub client returned no installation token', {
      retryable: true,
    });
  }
  return result.token;
}

/**
 * When the clone found no default branch: is the repository empty (no branch at all)? Then the
 * error says so instead of pointing at permissions; otherwise `null` (the clone's error stands).
 */
async function emptyRepositoryError(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  err: unknown,
): Promise<AppError | null> {
  if (!isAppError(err, 'GITHUB_API_ERROR') || err.retryable) return null;
  const branches = await octokit.rest.repos.listBranches({ owner, repo, per_page: 1 }).catch(() => null);
  if (!branches || branches.data.length > 0) return null;
  return new AppError(
    'POLICY_REFUSED',
    `the repository has no commits yet: ${owner}/${repo} has no branch to work on. Push a first commit ` +
      '(with the code the issue is about), then label the issue again.',
  );
}
