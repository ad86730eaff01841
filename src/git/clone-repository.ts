import { AppError, isAppError } from '../app-error.js';
import { gitAuthEnv } from './git-auth.js';
import { runGit } from './run-git.js';

/** Credentials for git over HTTPS: the installation token and the server it may be sent to. */
export interface GitHttpAuth {
  /** Installation token; lives in worker memory only. */
  token: string;
  /** `${protocol}://${host}` of the server; the token is sent to URLs below it only. */
  baseUrl: string;
}

/** Options of {@link cloneRepository}. */
export interface CloneOptions {
  /** Remote URL without credentials (see `repositoryUrl`). Written to `.git/config` as `origin`. */
  url: string;
  /** Directory to clone into; must not exist or be empty. */
  dir: string;
  /** Branch to check out (the default branch of the repository). */
  branch: string;
  auth?: GitHttpAuth;
  /**
   * History depth in commits (default 1: a shallow clone is enough to commit on top and push);
   * `'full'`: the whole history of the branch (to find a merge base).
   */
  depth?: number | 'full';
  /** Wall-clock limit in milliseconds (default 600 000). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Clone one branch of a repository (shallow, no tags, no submodules) over HTTPS, sending the token
 * only through git's environment.
 *
 * @returns the commit id checked out (the tip of `branch`).
 * @throws AppError `GITHUB_API_ERROR` (retryable unless the repository or branch does not exist) when
 *   the clone fails; `CANCELLED` when `signal` aborted.
 */
export async function cloneRepository(options: CloneOptions): Promise<{ headSha: string }> {
  const auth = options.auth ? gitAuthEnv(options.auth.token, options.auth.baseUrl) : undefined;
  try {
    await runGit(
      [
        'clone',
        '--quiet',
        '--no-tags',
        '--single-branch',
        ...(options.depth === 'full' ? [] : [`--depth=${options.depth ?? 1}`]),
        '--branch',
        options.branch,
        // A repository's own config cannot turn these on, but the system config could: keep the
        // checkout byte-exact (no CRLF conversion) so the sandbox and the worker see the same bytes.
        '--config',
        'core.autocrlf=false',
        '--',
        options.url,
        options.dir,
      ],
      { env: auth?.env, secrets: auth?.secrets, timeoutMs: options.timeoutMs, signal: options.signal },
    );
  } catch (err) {
    throw remoteError(err, `could not clone ${options.url} (branch ${options.branch})`);
  }
  const head = await runGit(['rev-parse', 'HEAD'], { cwd: options.dir });
  return { headSha: head.stdout.toString('utf8').trim() };
}

/**
 * Fetch one more branch of `origin` (its whole history, no tags) into `refs/remotes/origin/<branch>`,
 * the token only in git's environment as for {@link cloneRepository}.
 *
 * @returns the fetched tip's commit id.
 * @throws AppError `GITHUB_API_ERROR` (see {@link remoteError}: not retryable when the branch does
 *   not exist); `CANCELLED`.
 */
export async function fetchBranch(
  dir: string,
  branch: string,
  options: { auth?: GitHttpAuth; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<{ sha: string }> {
  const auth = options.auth ? gitAuthEnv(options.auth.token, options.auth.baseUrl) : undefined;
  const ref = `refs/remotes/origin/${branch}`;
  try {
    await runGit(['fetch', '--quiet', '--no-tags', 'origin', `+refs/heads/${branch}:${ref}`], {
      cwd: dir,
      env: auth?.env,
      secrets: auth?.secrets,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
    });
  } catch (err) {
    throw remoteError(err, `could not fetch the branch ${branch}`);
  }
  const tip = await runGit(['rev-parse', '--verify', `${ref}^{commit}`], { cwd: dir });
  return { sha: tip.stdout.toString('utf8').trim() };
}

/** libcurl's messages (GnuTLS and OpenSSL builds) for a server certificate git does not trust. */
const UNTRUSTED_CERTIFICATE =
  /server certificate verification failed|SSL certificate problem|certificate verify failed|certificate is not trusted/i;

/**
 * Turn a failed git network operation into a `GITHUB_API_ERROR`: the server (or the way to it) failed.
 * Not retryable when the repository or branch does not exist, or when git does not trust the
 * server's certificate (the message then names GIT_SSL_CAINFO). Cancellation passes through unchanged.
 */
export function remoteError(err: unknown, what: string): AppError {
  if (isAppError(err, 'CANCELLED')) return err;
  const stderr = isAppError(err, 'GIT_FAILED') && err.details ? err.details.stderr : '';
  const missing = /not found|couldn't find remote ref|Remote branch .* not found/i.test(stderr);
  const untrusted = UNTRUSTED_CERTIFICATE.test(stderr);
  // The server refused (archived repository, protected branch, a hook, no write access): the same
  // push would be refused again.
  const refused =
    /\[remote rejected\]|hook declined|\bGH\d{3}:|protected branch|archived|read-only|denied|returned error: 403/i.test(
      stderr,
    );
  const message = err instanceof Error ? err.message : String(err);
  const hint = untrusted
    ? '; git does not trust the server certificate: set GIT_SSL_CAINFO to your internal CA bundle (README "Internal certificate authority")'
    : '';
  return new AppError('GITHUB_API_ERROR', `${what}: ${message}${hint}`, {
    retryable: !missing && !untrusted && !refused,
    cause: err,
  });
}
