import { posix } from 'node:path';
import { changedLineCount, parsePatch, type PatchFile } from './parse-patch.js';
import {
  checkPatchLimits,
  describePatchViolations,
  type PatchLimits,
  type PatchViolation,
} from './patch-limits.js';
import { readPatchedFileFacts } from './patched-file-facts.js';
import {
  describeProtectedPathRefusal,
  findProtectedPaths,
  type ProtectedPathHit,
} from './protected-paths.js';

/**
 * The checks that can refuse a patch before any test runs (issue 6, "Protected paths" and "Patch
 * limits"), in one call for the verify stage: protected paths first (the reason people most need to
 * see), then the limits and secrets.
 */

/** Input of {@link checkPatch}. */
export interface CheckPatchInput {
  /** The agent's patch (`git diff --binary --no-renames`). */
  patch: string;
  /** The worker's clone with the patch applied to its index (`git apply --index`). */
  dir: string;
  /** Protected globs of the effective policy (`EffectivePolicy.protectedPaths`). */
  protectedPaths: readonly string[];
  /** Limits; absent fields use `DEFAULT_PATCH_LIMITS`. */
  limits?: Partial<PatchLimits>;
  signal?: AbortSignal;
}

/** What {@link checkPatch} decided. */
export type CheckPatchResult = {
  /** The parsed patch (for the tampering check and the diff size). */
  files: PatchFile[];
  /** Lines added plus removed. */
  linesChanged: number;
} & (
  | { refused: false }
  | {
      refused: true;
      /** Which check refused. */
      check: 'protected_path' | 'patch_limits';
      /** One sentence for the status comment (names the paths, never a secret). */
      reason: string;
      /** One line per problem. */
      details: string[];
      protectedPaths: ProtectedPathHit[];
      violations: PatchViolation[];
    }
);

/**
 * Check a patch. The protected-path check covers every touched path (with rename detection off, a
 * rename is a deletion plus an addition, so both names are checked) and where added symbolic links
 * point.
 *
 * @throws AppError `GIT_FAILED` / `CANCELLED` from reading the patched clone.
 */
export async function checkPatch(input: CheckPatchInput): Promise<CheckPatchResult> {
  const files = parsePatch(input.patch);
  const linesChanged = files.reduce((n, f) => n + changedLineCount(f), 0);
  const touched = files.flatMap((f) => {
    if (f.newMode !== '120000' || f.addedLines.length === 0) return [f.path];
    const target = f.addedLines.map((l) => l.text).join('\n');
    return [f.path, posix.normalize(posix.join(posix.dirname(f.path), target))];
  });
  const hits = findProtectedPaths(touched, { protectedPaths: [...input.protectedPaths] });
  if (hits.length > 0) {
    return {
      files,
      linesChanged,
      refused: true,
      check: 'protected_path',
      reason: describeProtectedPathRefusal(hits),
      details: [],
      protectedPaths: hits,
      violations: [],
    };
  }
  const facts = await readPatchedFileFacts(
    input.dir,
    files.filter((f) => f.status !== 'deleted').map((f) => f.path),
    { signal: input.signal },
  );
  const violations = checkPatchLimits({ files, facts, limits: input.limits });
  if (violations.length > 0) {
    const secrets = violations.some((v) => v.kind === 'secret');
    return {
      files,
      linesChanged,
      refused: true,
      check: 'patch_limits',
      reason: secrets
        ? 'The change adds what looks like a secret (a private key, cloud key or token). No pull request was opened, and the secret is not shown here.'
        : 'The change is outside the limits for machine-written changes. No pull request was opened.',
      details: describePatchViolations(violations),
      protectedPaths: [],
      violations,
    };
  }
  return { files, linesChanged, refused: false };
}
