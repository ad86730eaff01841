import picomatch from 'picomatch';
import type { EffectivePolicy } from '../../config/policy.js';

/**
 * Protected paths (issue 6, "Protected paths"): a patch that touches a file matching one of the
 * effective policy's `protectedPaths` globs is refused — no pull request. The globs are the built-in
 * ones (`BUILT_IN_PROTECTED_PATHS` of config/policy.ts: CI workflows, local actions, CODEOWNERS, this bot's own
 * configuration) plus what the admin policy, the organisation and the repository add
 * (`resolveEffectivePolicy` unions them, so no layer can drop a protection).
 */

/** One touched path that matches a protected glob. */
export interface ProtectedPathHit {
  /** The touched path (relative to the repository root). */
  path: string;
  /** The first glob it matches, as written in the policy. */
  pattern: string;
  /** Why the glob is protected, one sentence for people. */
  why: string;
}

/** Why each built-in glob is protected (shown in the status comment). */
const BUILT_IN_REASONS: Record<string, string> = {
  '.github/workflows/**':
    'workflow files run in CI with the repository’s secrets and a write token, so a change to them could leak or misuse them',
  '.github/actions/**':
    'local actions run inside the CI workflows with the same secrets and token as the workflows',
  CODEOWNERS: 'CODEOWNERS decides who must review changes; a machine must not change who reviews it',
  '.github/CODEOWNERS':
    'CODEOWNERS decides who must review changes; a machine must not change who reviews it',
  'docs/CODEOWNERS': 'CODEOWNERS decides who must review changes; a machine must not change who reviews it',
  '.github/frognano.yml':
    'it configures this bot (protected paths, test command); the bot must not change its own rules',
};

const ADDED_REASON =
  'the platform admins or the repository’s `.github/frognano.yml` protect it from machine-written changes';

/**
 * A matcher for a list of protected globs. Matching is picomatch with `dot: true` (so `.github/**`
 * matches dot files) and `nocase: true`: refusing `.GitHub/Workflows/x.yml` too costs nothing,
 * while missing a case variant on a case-insensitive checkout could let a workflow change through.
 * A glob without a `/` (`CODEOWNERS`) matches that name at the repository root only, as in the
 * policy's defaults where `.github/CODEOWNERS` is listed separately.
 *
 * @param patterns picomatch globs (the policy validated them as text; an invalid glob throws here).
 * @returns a function giving the hits of a set of touched paths, in input order.
 */
export function createProtectedPathMatcher(
  patterns: readonly string[],
): (paths: readonly string[]) => ProtectedPathHit[] {
  const compiled = patterns.map((pattern) => ({
    pattern,
    test: picomatch(pattern, { dot: true, nocase: true }),
    why: BUILT_IN_REASONS[pattern] ?? ADDED_REASON,
  }));
  return (paths) => {
    const hits: ProtectedPathHit[] = [];
    const seen = new Set<string>();
    for (const raw of paths) {
      const path = normalise(raw);
      if (seen.has(path)) continue;
      seen.add(path);
      const hit = compiled.find((c) => c.test(path));
      if (hit) hits.push({ path, pattern: hit.pattern, why: hit.why });
    }
    return hits;
  };
}

/**
 * The protected paths a patch touches, under the effective policy of the repository.
 *
 * @param paths every path the patch touches: added, modified and deleted files (with rename
 *   detection off a rename is a delete plus an add, so both names are here), and the targets of
 *   symbolic links it adds (a link is harmless, but a link pointing at a workflow file is not what a
 *   bug fix looks like).
 * @returns the hits, empty when the patch may go on.
 */
export function findProtectedPaths(
  paths: readonly string[],
  policy: Pick<EffectivePolicy, 'protectedPaths'>,
): ProtectedPathHit[] {
  return createProtectedPathMatcher(policy.protectedPaths)(paths);
}

/**
 * The refusal text for the status comment: which paths and why, and what a person can do.
 *
 * @param hits non-empty result of {@link findProtectedPaths}.
 */
export function describeProtectedPathRefusal(hits: readonly ProtectedPathHit[]): string {
  const shown = hits.slice(0, 10).map((h) => `\`${h.path}\` (protected by \`${h.pattern}\`: ${h.why})`);
  const more = hits.length > shown.length ? `, and ${hits.length - shown.length} more` : '';
  const list = shown.length === 1 ? (shown[0] ?? '') : shown.join('; ');
  return (
    `The change touches a protected path: ${list}${more}. ` +
    'No pull request was opened. If this change is really needed, a person has to make it.'
  );
}

/** `./a//b` → `a/b`; backslashes are kept (they are legal in git paths on POSIX). */
function normalise(path: string): string {
  return path.replace(/^(\.\/)+/, '').replace(/\/{2,}/g, '/');
}
