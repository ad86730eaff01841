import { AppError } from '../../app-error.js';
import { resolveEffectivePolicy, type AdminPolicy } from '../../config/policy.js';
import { loadRepoConfigs } from '../../config/repo-config.js';
import type { GitHubClient } from '../github-client.js';
import type { JobPolicy } from '../job-context.js';
import type { JobRequest } from '../job-request.js';

/**
 * Resolves a job's effective policy; throws AppError `POLICY_REFUSED` / `CONFIG_INVALID` (with
 * `details.messages`) to refuse the job. See {@link createRepositoryPolicyResolver}.
 */
export type ResolvePolicy = (request: JobRequest, context: { defaultBranch: string }) => Promise<JobPolicy>;

/**
 * The repository of a GitHub job read through the API, an archived one refused (nothing could be
 * pushed), and the job's policy resolved from its default branch.
 *
 * @param again what the person does to ask again once it is unarchived ("label the issue again").
 * @throws AppError `POLICY_REFUSED`, `CONFIG_INVALID` (from `resolvePolicy`); Octokit's RequestError.
 */
export async function openRepository(
  octokit: GitHubClient,
  request: JobRequest,
  resolvePolicy: ResolvePolicy,
  again: string,
): Promise<{ defaultBranch: string; policy: JobPolicy }> {
  const { owner, repo } = request;
  const { data: repository } = await octokit.rest.repos.get({ owner, repo });
  if (repository.archived) {
    throw new AppError(
      'POLICY_REFUSED',
      `${owner}/${repo} is archived (read-only): nothing can be pushed to it. Unarchive it in the ` +
        `repository settings, then ${again}.`,
    );
  }
  const defaultBranch = repository.default_branch;
  return { defaultBranch, policy: await resolvePolicy(request, { defaultBranch }) };
}

/**
 * The policy resolver of the worker's GitHub jobs: admin policy (`adminPolicy()`, the policy
 * file's current value), then the org and repository `.github/frognano.yml` read from their
 * default branches through `octokit`.
 *
 * @returns `(request, { defaultBranch }) => policy`, the shape `RunJobDeps.resolvePolicy` takes.
 *   It throws AppError `CONFIG_INVALID` (with `details.messages`) when a config file is invalid,
 *   `POLICY_REFUSED` when the admin policy does not enable the repository, and `GITHUB_API_ERROR`
 *   when the config files cannot be read.
 */
export function createRepositoryPolicyResolver(
  octokit: GitHubClient,
  adminPolicy: () => AdminPolicy,
): ResolvePolicy {
  return async (request, { defaultBranch }) => {
    const loaded = await loadRepoConfigs(octokit, request.owner, request.repo, defaultBranch);
    if (loaded.errors.length > 0) {
      throw new AppError('CONFIG_INVALID', 'the FrogNano configuration of this repository is invalid', {
        details: { messages: loaded.errors },
      });
    }
    const repo = `${request.owner}/${request.repo}`;
    const policy = resolveEffectivePolicy({
      policy: adminPolicy(),
      repo,
      orgConfig: loaded.orgConfig,
      repoConfig: loaded.repoConfig,
    });
    if (!policy.enabled) {
      throw new AppError('POLICY_REFUSED', `FrogNano bot is not enabled for ${repo} by the admin policy`);
    }
    return policy;
  };
}
