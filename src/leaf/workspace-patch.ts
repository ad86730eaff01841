import { AppError } from '../app-error.js';
import type { Sandbox } from '../sandbox/sandbox.js';

/**
 * Untracked files that never belong in a patch, whatever the repository's `.gitignore` says: caches
 * that running the tests leaves behind (`__pycache__`, `.pytest_cache`…). Tracked files matching
 * them are still diffed (`core.excludesFile` only applies to untracked files).
 */
export const ALWAYS_EXCLUDED = [
  '__pycache__/',
  '*.py[cod]',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.tox/',
];

/** Patches larger than this many bytes are refused rather than cut (a cut patch would not apply). */
export const MAX_PATCH_BYTES = 64 * 1024 * 1024;

// `-c` options shared by every git call inside the sandbox: the workspace may be owned by another uid
// than the one running git (bubblewrap as root, pods as uid 1000), and a checkout's own config must not
// turn on CRLF conversion, external diff drivers or colour.
const GIT = 'git -c safe.directory=* -c core.autocrlf=false -c core.quotepath=off -c color.ui=false';

/**
 * Read the commit the workspace starts from (`git rev-parse HEAD` inside the sandbox).
 *
 * @returns the full commit id, or `null` when the workspace is not a git repository with a commit.
 */
export async function readBaseCommit(sandbox: Sandbox, signal?: AbortSignal): Promise<string | null> {
  const r = await sandbox.exec(`${GIT} rev-parse --verify HEAD^{commit}`, { timeoutMs: 30_000, signal });
  if (r.exitCode !== 0) return null;
  const sha = r.stdout.toString('utf8').trim();
  return /^[0-9a-f]{40,64}$/.test(sha) ? sha : null;
}

/**
 * The patch of the workspace against `baseCommit`: `git diff --binary`, including new, deleted and
 * renamed files and binary files (base85), excluding what `.gitignore` ignores. Uses a throw-away
 * index (`GIT_INDEX_FILE` in the sandbox's `/tmp`), so the model's own index and commits are left as
 * they are and a commit made by the model is still part of the patch.
 *
 * @returns the patch text ("" when nothing changed).
 * @throws AppError `PATCH_FAILED` when git fails or the patch exceeds {@link MAX_PATCH_BYTES}.
 */
export async function computeWorkspacePatch(
  sandbox: Sandbox,
  baseCommit: string,
  signal?: AbortSignal,
): Promise<string> {
  if (!/^[0-9a-f]{40,64}$/.test(baseCommit)) {
    throw new AppError('PATCH_FAILED', `not a commit id: ${JSON.stringify(baseCommit)}`);
  }
  const script = [
    'set -e',
    'idx=$(mktemp /tmp/frognano-index.XXXXXX)',
    'ex=$(mktemp /tmp/frognano-exclude.XXXXXX)',
    'trap \'rm -f "$idx" "$ex"\' EXIT',
    `printf '%s\\n' ${ALWAYS_EXCLUDED.map((p) => `'${p}'`).join(' ')} > "$ex"`,
    'export GIT_INDEX_FILE="$idx"',
    `${GIT} read-tree ${baseCommit}`,
    `${GIT} -c core.excludesFile="$ex" add -A`,
    `${GIT} diff --cached --binary --no-ext-diff --no-renames --full-index ${baseCommit}`,
  ].join('\n');
  const r = await sandbox.exec(script, { timeoutMs: 120_000, maxOutputBytes: MAX_PATCH_BYTES + 1, signal });
  if (r.exitCode !== 0 || r.timedOut) {
    throw new AppError(
      'PATCH_FAILED',
      `git diff failed in the sandbox: ${r.stderr.toString('utf8').trim()}`,
      {
        retryable: false,
      },
    );
  }
  if (r.outputTruncated || r.stdout.length > MAX_PATCH_BYTES) {
    throw new AppError('PATCH_FAILED', `the patch is larger than ${MAX_PATCH_BYTES} bytes`);
  }
  return r.stdout.toString('utf8');
}

/**
 * Paths touched by a patch, from its `diff --git a/X b/Y` headers (the `b/` side; deleted files keep
 * their name). Quoted paths are unquoted. Units: one entry per file.
 */
export function filesInPatch(patch: string): string[] {
  const files: string[] = [];
  for (const m of patch.matchAll(
    /^diff --git (?:"a\/(?:[^"\\]|\\.)*"|a\/\S+) ("b\/(?:[^"\\]|\\.)*"|b\/.+)$/gm,
  )) {
    let p = m[1] ?? '';
    if (p.startsWith('"')) p = JSON.parse(p) as string;
    files.push(p.slice(2));
  }
  return files;
}
