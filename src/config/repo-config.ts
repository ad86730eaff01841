import { z } from 'zod';
import { AppError, httpStatusOf, isRetryableHttpStatus } from '../app-error.js';
import {
  ADMIN_ONLY_KEYS,
  REPO_KEYS,
  SANDBOX_KEYS,
  renameDeprecatedKeys,
  repoReviewShape,
  repoSettingsSchema,
  type RepoSettings,
} from './settings-schema.js';
import { configInvalid, formatIssues, parseYamlText } from './validation-messages.js';

const REPO_REVIEW_KEYS = Object.keys(repoReviewShape);

/** Path of the repository configuration file, in the repository and in the owner's `.github` repository. */
export const REPO_CONFIG_PATH = '.github/frognano.yml';

/** Largest configuration file read, in bytes (a config is a few hundred bytes; this bounds abuse). */
export const MAX_REPO_CONFIG_BYTES = 64 * 1024;

/**
 * A parsed `.github/frognano.yml` (of a repository or of its owner's `.github` repository).
 * `source` names the file in messages and in {@link EffectivePolicy} clamps, e.g.
 * `.github/frognano.yml` or `acme/.github:.github/frognano.yml`.
 */
export interface RepoConfig {
  source: string;
  /** The file's values, deprecated key names already renamed (`attempts` → `candidates`). */
  settings: RepoSettings;
  /** Deprecation warnings (an old key name used), validation-message style; absent when none. */
  warnings?: string[];
}

/**
 * Why a key is refused in a repository file although the bot knows it: admin-only keys, keys that
 * belong under the admin policy's `sandbox:`, and the admin policy's own structure.
 */
function refusedRepoKey(path: readonly PropertyKey[], key: string): string | undefined {
  if (path.length !== 0) return undefined;
  if (ADMIN_ONLY_KEYS.includes(key)) {
    return 'is admin-only: only the platform admins can set it, in the admin policy (POLICY_FILE); remove it from this file';
  }
  if (SANDBOX_KEYS.includes(key)) {
    return `is admin-only: the sandbox ${key} is set by the platform admins (sandbox.${key} in the admin policy); remove it from this file`;
  }
  if (key === 'rules' || key === 'defaults') {
    return 'belongs to the admin policy file, not to a repository configuration (validate a policy with validate-config --policy)';
  }
  return undefined;
}

/**
 * Parse and validate the text of a `.github/frognano.yml`.
 *
 * @param text YAML text (UTF-8 decoded). An empty file is a valid, empty configuration.
 * @param source how messages name the file, e.g. `.github/frognano.yml`.
 * @throws AppError `CONFIG_INVALID` (not retryable) with `details.messages: string[]`, one
 *   Renovate-style message per problem: invalid YAML (with line and column), unknown keys (with a
 *   "did you mean" when close), admin-only keys, wrong types and values out of range.
 */
export function parseRepoConfig(text: string, source: string): RepoConfig {
  const parsed = parseYamlText(text, source);
  if (!parsed.ok) throw configInvalid(source, parsed.messages);
  const result = repoSettingsSchema.safeParse(parsed.value, { reportInput: true });
  if (!result.success) {
    throw configInvalid(
      source,
      formatIssues(source, result.error.issues, {
        knownKeys: (path) =>
          path.length === 0
            ? REPO_KEYS
            : path.length === 1 && path[0] === 'review'
              ? REPO_REVIEW_KEYS
              : undefined,
        refusedKey: refusedRepoKey,
      }),
    );
  }
  const { settings, warnings } = renameDeprecatedKeys(result.data, `${source}: `);
  return { source, settings, ...(warnings.length > 0 ? { warnings } : {}) };
}

/**
 * The part of an Octokit instance used here (`@octokit/rest`'s `Octokit`, Probot's `context.octokit`).
 * Kept minimal so config stays a leaf module.
 */
export interface OctokitRequester {
  request(route: string, params?: Record<string, unknown>): Promise<{ status: number; data: unknown }>;
}

/** Response of `GET /repos/{owner}/{repo}/contents/{path}` for a file (https://docs.github.com/en/rest/repos/contents#get-repository-content). */
const contentFileSchema = z.object({
  type: z.string(),
  size: z.number().int().nonnegative(),
  encoding: z.string().optional(),
  content: z.string().optional(),
});

/** Result of {@link loadRepoConfigs}. */
export interface LoadedRepoConfigs {
  /** `.github/frognano.yml` of the owner's `.github` repository, when present and valid. */
  orgConfig?: RepoConfig;
  /** `.github/frognano.yml` of the repository itself (default branch), when present and valid. */
  repoConfig?: RepoConfig;
  /**
   * Validation messages of both files. Non-empty means the job must not run: the pipeline throws
   * `AppError('CONFIG_INVALID', …, { details: { messages: errors } })` so the status comment lists them.
   */
  errors: string[];
}

/**
 * Read the configuration layers of a repository through the GitHub REST API:
 * 1. `{owner}/.github` → `.github/frognano.yml` on that repository's default branch (org layer),
 * 2. `{owner}/{repo}` → `.github/frognano.yml` at `ref=<defaultBranch>` (repository layer).
 *
 * Only default branches are read, never a branch a contributor controls, so a pull request cannot
 * change the bot's configuration before it is merged. A 404 means "no such file" (or no access to
 * the `.github` repository): that layer is absent. When `repo` is itself `.github`, its file is read
 * once, as the repository layer.
 *
 * Uses `GET /repos/{owner}/{repo}/contents/{path}` (JSON, base64 content). Files above
 * {@link MAX_REPO_CONFIG_BYTES}, directories and symlinks are reported in `errors`.
 *
 * @throws AppError `GITHUB_API_ERROR` (retryable for 5xx and 429, `details.status`) when GitHub
 *   answers with anything but 200 or 404.
 */
export async function loadRepoConfigs(
  octokit: OctokitRequester,
  owner: string,
  repo: string,
  defaultBranch: string,
): Promise<LoadedRepoConfigs> {
  const errors: string[] = [];
  const result: LoadedRepoConfigs = { errors };

  const load = async (
    targetRepo: string,
    ref: string | undefined,
    source: string,
  ): Promise<RepoConfig | undefined> => {
    const text = await fetchFile(octokit, owner, targetRepo, REPO_CONFIG_PATH, ref, source, errors);
    if (text === undefined) return undefined;
    try {
      return parseRepoConfig(text, source);
    } catch (err) {
      if (err instanceof AppError && err.code === 'CONFIG_INVALID') {
        errors.push(...((err.details?.messages as string[] | undefined) ?? [err.message]));
        return undefined;
      }
      throw err;
    }
  };

  if (repo.toLowerCase() !== '.github') {
    const orgConfig = await load('.github', undefined, `${owner}/.github:${REPO_CONFIG_PATH}`);
    if (orgConfig) result.orgConfig = orgConfig;
  }
  const repoConfig = await load(repo, defaultBranch, REPO_CONFIG_PATH);
  if (repoConfig) result.repoConfig = repoConfig;
  return result;
}

/** Fetch one file's text; `undefined` when absent (404) or unusable (a message is pushed). */
async function fetchFile(
  octokit: OctokitRequester,
  owner: string,
  repo: string,
  path: string,
  ref: string | undefined,
  source: string,
  errors: string[],
): Promise<string | undefined> {
  let data: unknown;
  try {
    const params: Record<string, unknown> = { owner, repo, path };
    if (ref !== undefined) params.ref = ref;
    ({ data } = await octokit.request('GET /repos/{owner}/{repo}/contents/{path}', params));
  } catch (err) {
    const status = httpStatusOf(err);
    if (status === 404) return undefined;
    throw new AppError(
      'GITHUB_API_ERROR',
      `could not read ${source} of ${owner}/${repo}: ${err instanceof Error ? err.message : String(err)}`,
      {
        retryable: isRetryableHttpStatus(status),
        cause: err,
        details: { status },
      },
    );
  }
  if (Array.isArray(data)) {
    errors.push(`${source}: must be a file, but it is a directory`);
    return undefined;
  }
  const file = contentFileSchema.safeParse(data);
  if (!file.success) {
    throw new AppError(
      'GITHUB_API_ERROR',
      `unexpected contents API answer for ${source} of ${owner}/${repo}`,
      {
        retryable: false,
        details: { issues: file.error.issues.map((i) => i.message) },
      },
    );
  }
  if (file.data.type !== 'file') {
    errors.push(`${source}: must be a regular file (got a ${file.data.type})`);
    return undefined;
  }
  if (
    file.data.size > MAX_REPO_CONFIG_BYTES ||
    file.data.encoding !== 'base64' ||
    file.data.content === undefined
  ) {
    errors.push(`${source}: is too large (${file.data.size} bytes; at most ${MAX_REPO_CONFIG_BYTES} bytes)`);
    return undefined;
  }
  return Buffer.from(file.data.content, 'base64').toString('utf8');
}
