import { runGit } from './run-git.js';

/** A git identity (author or committer). */
export interface GitIdentity {
  name: string;
  email: string;
}

/** Options of {@link commitChanges}. */
export interface CommitOptions {
  /** Author and committer of the commit. */
  author: GitIdentity;
  /** Full commit message (subject, blank line, body, trailers). */
  message: string;
  /** Author and committer date; default now. */
  date?: Date;
  /**
   * The new commit's parent; default the current `HEAD`. Given, `HEAD` is first moved to it without
   * touching the index (`git reset --soft`), so the commit's tree is still exactly what is staged.
   */
  parent?: string;
  signal?: AbortSignal;
}

/**
 * Commit what is staged in the index (nothing else) as one commit on the current branch (or on
 * `parent`). Hooks do not
 * run (`--no-verify`) and nothing is signed: the worker's clone is not a developer's checkout.
 *
 * @returns the new commit's id.
 * @throws AppError `GIT_FAILED` when git refuses (e.g. nothing is staged).
 */
export async function commitChanges(dir: string, options: CommitOptions): Promise<string> {
  const date = (options.date ?? new Date()).toISOString();
  const identity = {
    GIT_AUTHOR_NAME: options.author.name,
    GIT_AUTHOR_EMAIL: options.author.email,
    GIT_AUTHOR_DATE: date,
    GIT_COMMITTER_NAME: options.author.name,
    GIT_COMMITTER_EMAIL: options.author.email,
    GIT_COMMITTER_DATE: date,
  };
  if (options.parent !== undefined) {
    await runGit(['reset', '--quiet', '--soft', options.parent], { cwd: dir, signal: options.signal });
  }
  await runGit(['commit', '--quiet', '--no-verify', '--no-gpg-sign', '--cleanup=verbatim', '--file=-'], {
    cwd: dir,
    env: identity,
    input: options.message.endsWith('\n') ? options.message : `${options.message}\n`,
    signal: options.signal,
  });
  const head = await runGit(['rev-parse', 'HEAD'], { cwd: dir });
  return head.stdout.toString('utf8').trim();
}
