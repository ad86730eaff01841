import { Probot, ProbotOctokit } from 'probot';
import { AppError, httpStatusOf, isRetryableHttpStatus } from '../app-error.js';
import type { Logger } from '../observability/logger.js';

/**
 * The part of an Octokit client this module needs: `request(route, params)`
 * (https://github.com/octokit/request.js). Both Probot's `context.octokit` and `@octokit/rest`'s
 * `Octokit` satisfy it, so callers pass whichever they hold. Responses are outside data: callers
 * check them with zod.
 */
export interface GitHubRequester {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown; status: number }>;
}

/** An installation-authenticated Probot Octokit (REST methods, pagination, retries, throttling). */
export type InstallationOctokit = InstanceType<typeof ProbotOctokit>;

/**
 * Wrap a failed GitHub API call as AppError `GITHUB_API_ERROR` with `details.status`; retryable for
 * 5xx, 429 and network errors (no status), as `pipeline/outcome.ts` classifies them.
 */
export function githubError(err: unknown, what: string): AppError {
  if (err instanceof AppError) return err;
  const status = httpStatusOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return new AppError('GITHUB_API_ERROR', `${what}: ${status ? `HTTP ${status}: ` : ''}${message}`, {
    retryable: isRetryableHttpStatus(status),
    cause: err,
    details: status === undefined ? undefined : { status },
  });
}

/**
 * The GitHub App identity used by `serve` and `worker`: a Probot instance configured for the
 * GitHub Enterprise Server (`baseUrl` = `${GHE_PROTOCOL}://${GHE_HOST}/api/v3`), whose
 * `auth(installationId)` exchanges the App JWT for an installation token and caches it in process
 * memory (Probot's LRU cache, 59 minutes) — the token is never written anywhere else.
 *
 * Probot's own Redis throttling is not used (`redisConfig` unset): the queue's Redis holds no
 * tokens or rate-limit state.
 */
export function createProbotApp(options: {
  appId: number;
  privateKey: string;
  webhookSecret: string;
  webhookPath?: string;
  githubApiUrl: string;
  logger: Logger;
  /**
   * Octokit's request throttling (@octokit/plugin-throttling: write requests at least 1 s apart,
   * content-creating ones 3 s apart, to stay under GitHub's secondary rate limits). Default true.
   * `serve` turns it off: it writes one comment and one reaction per labelling, and a webhook must
   * be answered in well under GitHub's 10 s.
   */
  throttle?: boolean;
}): Probot {
  const throttle = options.throttle ?? true;
  return new Probot({
    appId: options.appId,
    privateKey: options.privateKey,
    secret: options.webhookSecret,
    webhookPath: options.webhookPath,
    baseUrl: options.githubApiUrl,
    log: options.logger.child({ name: 'probot' }),
    // A function, not an object: Probot sets its own throttle options on top of object defaults.
    ...(throttle ? {} : { Octokit: ProbotOctokit.defaults(withoutThrottling) }),
  });
}

function withoutThrottling(options: Record<string, unknown>): Record<string, unknown> {
  const throttle = (options.throttle ?? {}) as Record<string, unknown>;
  return { ...options, throttle: { ...throttle, enabled: false } };
}

/** Installation-authenticated clients of one GitHub App, one per installation, cached. */
export interface InstallationClients {
  /**
   * The client of `installationId`. Its first use exchanges the App JWT for an installation token
   * (kept in this process's memory by @octokit/auth-app, renewed before it expires); this call does
   * that exchange at once so a failure surfaces here.
   *
   * @throws AppError `GITHUB_API_ERROR` when the exchange fails (retryable for 5xx and network errors).
   */
  get(installationId: number): Promise<InstallationOctokit>;
}

/**
 * Create {@link InstallationClients} for the worker.
 *
 * Why not Probot's `app.auth(installationId)`: Probot 14 gives @octokit/auth-app a `request`
 * without the GitHub Enterprise `baseUrl`, so `octokit.auth({ type: 'installation' })` — which the
 * worker needs to get the installation token for `git clone` — asks api.github.com instead of the
 * GHES host. Constructing `ProbotOctokit` directly lets the auth strategy use the client's own
 * `request` (with `baseUrl`), so both API calls and the explicit token request go to the GHES host.
 */
export function createInstallationClients(options: {
  appId: number;
  privateKey: string;
  githubApiUrl: string;
  logger: Logger;
  /** Octokit's request throttling (see {@link createProbotApp}); default true. */
  throttle?: boolean;
}): InstallationClients {
  const cache = new Map<number, InstallationOctokit>();
  const Octokit = (options.throttle ?? true) ? ProbotOctokit : ProbotOctokit.defaults(withoutThrottling);
  const log = options.logger.child({ name: 'octokit' });
  return {
    async get(installationId) {
      let octokit = cache.get(installationId);
      if (!octokit) {
        octokit = new Octokit({
          baseUrl: options.githubApiUrl,
          auth: { appId: options.appId, privateKey: options.privateKey, installationId },
          log,
        });
        cache.set(installationId, octokit);
      }
      try {
        await octokit.auth({ type: 'installation' });
      } catch (err) {
        cache.delete(installationId);
        throw githubError(err, `installation token for installation ${installationId}`);
      }
      return octokit;
    },
  };
}
