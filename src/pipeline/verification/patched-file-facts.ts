import { runGit } from '../../git/run-git.js';
import type { PatchedFileFacts } from './patch-limits.js';

/**
 * Mode and size of files in the index of the worker's clone after `git apply --index`, read from git
 * itself (`git ls-files --stage`, then `git cat-file --batch-check`), so no path of the patch is
 * ever opened on the host file system (a symbolic link in the tree cannot lead the worker anywhere).
 *
 * @param dir the worker's clone with the patch applied to its index.
 * @param paths the paths to describe (e.g. the added and modified files of the patch); others are
 *   not returned. Paths not in the index (deleted files) are absent from the result.
 * @returns facts by path. Units: bytes.
 * @throws AppError `GIT_FAILED` (from runGit) when git fails; `CANCELLED` when `signal` aborted.
 */
export async function readPatchedFileFacts(
  dir: string,
  paths: readonly string[],
  options: { signal?: AbortSignal } = {},
): Promise<Map<string, PatchedFileFacts>> {
  const wanted = new Set(paths);
  const facts = new Map<string, PatchedFileFacts>();
  if (wanted.size === 0) return facts;
  const listed = await runGit(['ls-files', '--stage', '-z'], { cwd: dir, signal: options.signal });
  const entries: Array<{ path: string; mode: string; object: string }> = [];
  for (const record of listed.stdout.toString('utf8').split('\0')) {
    // "<mode> <object> <stage>\t<path>" (git-ls-files(1), --stage).
    const m = /^(\d{6}) ([0-9a-f]+) \d\t(.+)$/s.exec(record);
    if (!m || !wanted.has(m[3] ?? '')) continue;
    entries.push({ mode: m[1] ?? '', object: m[2] ?? '', path: m[3] ?? '' });
  }
  // A submodule's object is a commit of another repository: there is no blob to measure.
  const blobs = entries.filter((e) => e.mode !== '160000');
  if (blobs.length > 0) {
    const sized = await runGit(['cat-file', '--batch-check=%(objectname) %(objectsize)'], {
      cwd: dir,
      input: blobs.map((e) => `${e.object}\n`).join(''),
      signal: options.signal,
    });
    const sizes = new Map<string, number>();
    for (const line of sized.stdout.toString('utf8').split('\n')) {
      const m = /^([0-9a-f]+) (\d+)$/.exec(line);
      if (m) sizes.set(m[1] ?? '', Number(m[2]));
    }
    for (const e of blobs) facts.set(e.path, { mode: e.mode, sizeBytes: sizes.get(e.object) ?? 0 });
  }
  for (const e of entries) if (e.mode === '160000') facts.set(e.path, { mode: e.mode, sizeBytes: 0 });
  return facts;
}
