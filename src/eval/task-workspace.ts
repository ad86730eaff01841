import { runGit } from '../git/run-git.js';

/**
 * The worker-side git clones of an evaluation: one per task (grading) or per mined commit. They
 * never go into a sandbox: the sandbox gets their tracked files through `archiveTrackedFiles`.
 */

/**
 * Clone `source` (a local repository, bare or not, or a clone URL) into `dir` and check out
 * `commit` detached, with no hooks (`--template=`) and no remote left behind.
 *
 * @throws AppError `GIT_FAILED` (e.g. the commit is not in the repository), `CANCELLED`.
 */
export async function cloneAtCommit(
  source: string,
  commit: string,
  dir: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  const { signal } = options;
  await runGit(['clone', '--quiet', '--template=', '--no-checkout', source, dir], { signal });
  await runGit(['checkout', '--quiet', '--detach', commit], { cwd: dir, signal });
  await runGit(['remote', 'remove', 'origin'], { cwd: dir, signal }).catch(() => undefined);
}

/** Check out `commit` detached, dropping any change to the index and the working tree. */
export async function checkoutClean(
  dir: string,
  commit: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  await runGit(['reset', '--quiet', '--hard'], { cwd: dir, signal: options.signal });
  await runGit(['clean', '-q', '-f', '-d', '-x'], { cwd: dir, signal: options.signal });
  await runGit(['checkout', '--quiet', '--detach', commit], { cwd: dir, signal: options.signal });
}

/** The files of the index (what the sandbox gets), repository-relative with `/`. */
export async function trackedFiles(dir: string): Promise<Set<string>> {
  const r = await runGit(['ls-files', '-z'], { cwd: dir });
  return new Set(
    r.stdout
      .toString('utf8')
      .split('\0')
      .filter((p) => p !== ''),
  );
}

/** Paths changed between two commits (no rename detection: a rename is a delete and an add). */
export async function changedPaths(dir: string, from: string, to: string): Promise<string[]> {
  const r = await runGit(['diff', '--name-only', '--no-renames', '-z', from, to], { cwd: dir });
  return r.stdout
    .toString('utf8')
    .split('\0')
    .filter((p) => p !== '');
}

/**
 * `git diff --binary` between two commits, limited to `paths` (literal pathspecs); `''` when
 * `paths` is empty.
 */
export async function diffOfPaths(
  dir: string,
  from: string,
  to: string,
  paths: readonly string[],
): Promise<string> {
  if (paths.length === 0) return '';
  const r = await runGit(
    ['diff', '--binary', '--no-renames', '--no-color', from, to, '--', ...paths.map((p) => `:(literal)${p}`)],
    { cwd: dir },
  );
  return r.stdout.toString('utf8');
}

/**
 * Put `paths` back to their state at `HEAD` in the index and working tree: files that exist at
 * `HEAD` are checked out, others are removed. Used before the hidden test patch is applied, so that a
 * model's edits to those test files do not decide whether it applies (SWE-bench's harness does the
 * same: it checks out the test files of `base_commit` first).
 */
export async function restorePathsToHead(dir: string, paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const spec = `:(literal)${path}`;
    const atHead = await runGit(['cat-file', '-e', `HEAD:${path}`], { cwd: dir }).then(
      () => true,
      () => false,
    );
    if (atHead) await runGit(['checkout', '--quiet', 'HEAD', '--', spec], { cwd: dir });
    else await runGit(['rm', '--quiet', '-f', '-r', '--ignore-unmatch', '--', spec], { cwd: dir });
  }
}
