import { AppError, isAppError } from '../app-error.js';
import { remoteError, type GitHttpAuth } from './clone-repository.js';
import { gitAuthEnv } from './git-auth.js';
import type { GitIdentity } from './commit-changes.js';
import { runGit } from './run-git.js';

/** Options of {@link pushBranch}. */
export interface PushBranchOptions {
  /** The worker's clone; `HEAD` is pushed. Its `origin` remote is the repository. */
  dir: string;
  /** Branch name without `refs/heads/` (e.g. `frognano/issue-12`). */
  branch: string;
  /** The repository's default branch: never pushed to. */
  defaultBranch: string;
  /**
   * The app's commit identity. An existing branch is overwritten only when its tip commit's author
   * email is this identity's email (the bot made it); otherwise the push is refused.
   */
  owner: GitIdentity;
  auth?: GitHttpAuth;
  /** Wall-clock limit per git network call in milliseconds (default 600 000). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What {@link pushBranch} did. */
export interface PushResult {
  /** Commit id now at the tip of the branch. */
  sha: string;
  /** Tip of the branch before the push (a commit of the app), or `null` when the branch was new. */
  previousSha: string | null;
}

/**
 * Push `HEAD` to `refs/heads/<branch>`, creating the branch or replacing an earlier run's commit.
 *
 * Rules (DESIGN.md "Security model": the worker pushes only to its own branch prefix):
 * - never to the default branch, nor to a name git would not accept as a branch;
 * - an existing branch is force-pushed only when its tip commit was authored by `owner`; checked by
 *   fetching the tip, and enforced at push time with `--force-with-lease=<ref>:<that commit>`, so a
 *   commit pushed by someone in between makes the push fail instead of being overwritten. A new branch
 *   is pushed with an empty lease (it must still not exist).
 *
 * @throws AppError `POLICY_REFUSED` when the branch is the default branch, is not a valid branch name,
 *   or exists with a tip commit not authored by the app.
 * @throws AppError `GITHUB_API_ERROR` (retryable) when the server cannot be reached or rejects the
 *   push (including a lost lease); `CANCELLED` when `signal` aborted.
 */
export async function pushBranch(options: PushBranchOptions): Promise<PushResult> {
  const { dir, branch } = options;
  await assertPushableBranch(dir, branch, options.defaultBranch);
  const remote = remoteOptions(options);
  const ref = `refs/heads/${branch}`;

  let previousSha: string | null;
  try {
    const listed = await runGit(['ls-remote', '--exit-code', 'origin', ref], remote);
    previousSha = /^([0-9a-f]{40,64})\s/.exec(listed.stdout.toString('utf8'))?.[1] ?? null;
  } catch (err) {
    // `--exit-code` makes ls-remote exit with 2 when no ref matched: the branch is new.
    if (isAppError(err, 'GIT_FAILED') && err.details?.exitCode === 2) previousSha = null;
    else throw remoteError(err, `could not list ${ref} on the server`);
  }

  if (previousSha !== null) {
    const tracking = 'refs/frognano/previous-tip';
    try {
      await runGit(['fetch', '--quiet', '--no-tags', '--depth=1', 'origin', `+${ref}:${tracking}`], remote);
    } catch (err) {
      throw remoteError(err, `could not fetch ${ref} to check who made it`);
    }
    const log = await runGit(['log', '-1', '--format=%H%x00%an%x00%ae', tracking], { cwd: dir });
    const [sha = '', name = '', email = ''] = log.stdout.toString('utf8').trim().split('\0');
    if (email.toLowerCase() !== options.owner.email.toLowerCase()) {
      throw new AppError(
        'POLICY_REFUSED',
        `the branch ${branch} already exists and its last commit (${sha.slice(0, 12)}) was made by ` +
          `${name} <${email}>, not by the app; the app never force-pushes over someone else's work. ` +
          `Delete or rename that branch, then label the issue again.`,
        { details: { branch, sha, authorEmail: email } },
      );
    }
    previousSha = sha;
  }

  try {
    await runGit(
      [
        'push',
        '--quiet',
        '--porcelain',
        `--force-with-lease=${ref}:${previousSha ?? ''}`,
        'origin',
        `HEAD:${ref}`,
      ],
      remote,
    );
  } catch (err) {
    throw remoteError(err, `could not push ${ref}`);
  }
  const head = await runGit(['rev-parse', 'HEAD'], { cwd: dir });
  return { sha: head.stdout.toString('utf8').trim(), previousSha };
}

/**
 * Refuse branch names the worker must never push to.
 *
 * @throws AppError `POLICY_REFUSED` for the default branch or an invalid name.
 */
export async function assertPushableBranch(
  dir: string,
  branch: string,
  defaultBranch: string,
): Promise<void> {
  const bare = branch.replace(/^refs\/heads\//, '');
  if (bare === defaultBranch || branch.startsWith('refs/') || bare.length === 0 || bare.includes('@{')) {
    throw new AppError(
      'POLICY_REFUSED',
      `refusing to push to ${branch}: the app pushes only to its own branches`,
      {
        details: { branch },
      },
    );
  }
  try {
    await runGit(['check-ref-format', '--branch', bare], { cwd: dir });
  } catch {
    throw new AppError('POLICY_REFUSED', `"${branch}" is not a valid branch name (check the branch prefix)`, {
      details: { branch },
    });
  }
}

/** The `runGit` options of a call to `origin`: the token in git's environment, the time limit. */
function remoteOptions(options: Pick<PushBranchOptions, 'dir' | 'auth' | 'timeoutMs' | 'signal'>) {
  const auth = options.auth ? gitAuthEnv(options.auth.token, options.auth.baseUrl) : undefined;
  return {
    cwd: options.dir,
    env: auth?.env,
    secrets: auth?.secrets,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  };
}

/**
 * What a follow-up round says when the pull request's branch moved while it ran (someone pushed):
 * nothing is pushed; the reviewer asks again and the next round starts from the new head.
 */
export const BRANCH_MOVED_REASON = 'the branch changed while I was working; ask again';

/** Options of {@link pushFastForward}. */
export interface FastForwardOptions extends Omit<PushBranchOptions, 'owner'> {
  /** The branch head the new commit was made on (`HEAD`'s parent): the push only moves the branch from it. */
  from: string;
}

/**
 * Push `HEAD` to `refs/heads/<branch>` as a fast-forward only: a plain push (no `--force`, no
 * lease), which git refuses when the branch's head on the server is not an ancestor of `HEAD`. Used
 * by follow-up rounds, whose branch may hold commits people pushed: nothing is ever overwritten.
 *
 * @throws AppError `BRANCH_MOVED` (not retryable, message {@link BRANCH_MOVED_REASON}) when the push
 *   was refused as not a fast-forward (`[rejected] (non-fast-forward)` / `(fetch first)`).
 * @throws AppError `POLICY_REFUSED` for the default branch or an invalid name; `GITHUB_API_ERROR`
 *   when the server cannot be reached or refuses otherwise; `CANCELLED` when `signal` aborted.
 */
export async function pushFastForward(options: FastForwardOptions): Promise<void> {
  const { dir, branch } = options;
  await assertPushableBranch(dir, branch, options.defaultBranch);
  const ref = `refs/heads/${branch}`;
  try {
    await runGit(['push', '--quiet', 'origin', `HEAD:${ref}`], remoteOptions(options));
  } catch (err) {
    const stderr = isAppError(err, 'GIT_FAILED') && err.details ? err.details.stderr : '';
    if (/\[rejected\].*\((non-fast-forward|fetch first|stale info)\)/.test(stderr)) {
      throw new AppError('BRANCH_MOVED', BRANCH_MOVED_REASON, {
        cause: err,
        details: { branch, expectedSha: options.from, actualSha: null },
      });
    }
    throw remoteError(err, `could not push ${ref}`);
  }
}
