import { patchDoesNotApply } from './apply-patch.js';
import { runGit } from './run-git.js';

/** Options of {@link wholeChange}. */
export interface WholeChangeOptions {
  /** A clone holding both commits. Its own index and working tree are not touched. */
  dir: string;
  /** The commit the change is measured from (a pull request's merge base). */
  baseSha: string;
  /** The commit `patch` was made against (the pull request's head). */
  headSha: string;
  /** `git diff --binary` relative to `headSha`'s tree; may be empty. */
  patch: string;
  /** Absolute path of a scratch index file (created or overwritten). */
  indexFile: string;
  signal?: AbortSignal;
}

/**
 * The change from `baseSha` to `headSha` plus `patch`, as one patch: `headSha`'s tree read into a
 * scratch index (`GIT_INDEX_FILE`), `patch` applied to that index only (`git apply --cached`: no
 * file is written, so no symbolic link is followed), then `git diff --cached --binary --full-index
 * --no-renames <baseSha>` — the form the verification's patch parser reads.
 *
 * @returns the whole change (empty when the result is the base tree again).
 * @throws AppError `PATCH_DOES_NOT_APPLY` when `patch` does not apply to `headSha`'s tree;
 *   `GIT_FAILED`; `CANCELLED`.
 */
export async function wholeChange(options: WholeChangeOptions): Promise<string> {
  const { dir, signal } = options;
  const env = { GIT_INDEX_FILE: options.indexFile };
  await runGit(['read-tree', options.headSha], { cwd: dir, env, signal });
  if (options.patch !== '') {
    try {
      await runGit(['apply', '--cached', '--binary', '--whitespace=nowarn', '-'], {
        cwd: dir,
        env,
        input: options.patch,
        signal,
        timeoutMs: 120_000,
      });
    } catch (err) {
      throw patchDoesNotApply(err, "the pull request's head");
    }
  }
  const diff = await runGit(
    [
      'diff',
      '--cached',
      '--binary',
      '--full-index',
      '--no-renames',
      '--no-ext-diff',
      '--no-color',
      options.baseSha,
    ],
    { cwd: dir, env, signal },
  );
  return diff.stdout.toString('utf8');
}
