import { AppError, isAppError } from '../app-error.js';
import { runGit } from './run-git.js';

/**
 * Apply a patch (`git diff --binary` output, as produced in the sandbox) to a working tree and its
 * index, all or nothing (`git apply --binary --index`). git's own safety rules stay on: no paths
 * outside the tree (`--unsafe-paths` is not given), no writes through a symbolic link.
 *
 * @param dir the worker's clone.
 * @param patch the patch text; must not be empty.
 * @throws AppError `PATCH_DOES_NOT_APPLY` (not retryable) when git refuses the patch; the tree and
 *   index are then unchanged. `CANCELLED` when `signal` aborted.
 */
export async function applyPatch(
  dir: string,
  patch: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  if (patch.length === 0) throw new AppError('PATCH_DOES_NOT_APPLY', 'the patch is empty');
  try {
    await runGit(['apply', '--binary', '--index', '--whitespace=nowarn', '-'], {
      cwd: dir,
      input: patch,
      signal: options.signal,
      timeoutMs: 120_000,
    });
  } catch (err) {
    throw patchDoesNotApply(err, 'the clone');
  }
}

/**
 * The error for a failed `git apply` of a patch from the sandbox onto `onto` ("the clone", "the
 * pull request's head"): `PATCH_DOES_NOT_APPLY` with git's stderr; a cancellation stays what it is.
 */
export function patchDoesNotApply(err: unknown, onto: string): AppError {
  if (isAppError(err, 'CANCELLED')) return err;
  const stderr = isAppError(err, 'GIT_FAILED') && err.details ? err.details.stderr : String(err);
  return new AppError(
    'PATCH_DOES_NOT_APPLY',
    `the patch from the sandbox does not apply to ${onto}: ${stderr}`,
    {
      cause: err,
    },
  );
}

/** One file of a staged change, from `git diff --cached --numstat`. Units: lines. */
export interface FileChange {
  path: string;
  /** `null` for a binary file. */
  added: number | null;
  /** `null` for a binary file. */
  removed: number | null;
}

/**
 * What the index changes against `HEAD`: the `git diff --cached --stat` text (for people) and the
 * per-file numbers (for checks). Renames are not detected, so every path is a plain path.
 */
export async function stagedDiffStat(dir: string): Promise<{ stat: string; files: FileChange[] }> {
  const stat = await runGit(['diff', '--cached', '--no-renames', '--stat=100,80', 'HEAD'], { cwd: dir });
  const numstat = await runGit(['diff', '--cached', '--no-renames', '--numstat', '-z', 'HEAD'], { cwd: dir });
  const files: FileChange[] = [];
  for (const record of numstat.stdout.toString('utf8').split('\0')) {
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(record);
    if (!m) continue;
    files.push({
      path: m[3] ?? '',
      added: m[1] === '-' ? null : Number(m[1]),
      removed: m[2] === '-' ? null : Number(m[2]),
    });
  }
  return { stat: stat.stdout.toString('utf8').trimEnd(), files };
}

/**
 * Undo an applied patch: index and working tree back to `HEAD` (`git reset --hard`; files the patch
 * added to the index are removed with it). Used between the candidates of a best-of-N job, which are
 * verified one after the other in the same clone.
 *
 * @throws AppError `GIT_FAILED`, `CANCELLED`.
 */
export async function resetToHead(dir: string, options: { signal?: AbortSignal } = {}): Promise<void> {
  await runGit(['reset', '--quiet', '--hard', 'HEAD'], {
    cwd: dir,
    signal: options.signal,
    timeoutMs: 120_000,
  });
}
