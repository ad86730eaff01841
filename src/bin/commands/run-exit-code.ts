import type { Outcome } from '../../pipeline/outcome.js';

/**
 * Exit codes of `frognano-bot run`, one per way a run ends (the README's table, "frognano-bot run",
 * lists the same). 2 (usage) and 3 (no model server at the start) are given before any run.
 */
export const RUN_EXIT_CODES = {
  /** The change passed every check and its tests: `patch.diff` is ready. */
  patchReady: 0,
  /** No change, out of time, or another failure. */
  failed: 1,
  usage: 2,
  /** The model server could not be reached or failed. */
  modelUnreachable: 3,
  /** The change is ready but flagged: it modifies tests (test tampering); read it before using it. */
  patchFlagged: 4,
  /** The change was written, but its tests fail. */
  testsFailing: 5,
  /** A check refused the change (protected path, patch limits, secret). */
  refused: 6,
  /** The sandbox failed or could reach the network (the run refuses to go on). */
  sandboxFailed: 7,
  /** Interrupted (SIGINT/SIGTERM), as shells report a SIGINT. */
  cancelled: 130,
} as const;

/** The exit code of `frognano-bot run` for how the run ended. */
export function exitCodeOf(outcome: Outcome): number {
  switch (outcome.kind) {
    case 'patch_ready':
    case 'pr_opened':
      return 'flagged' in outcome && outcome.flagged
        ? RUN_EXIT_CODES.patchFlagged
        : RUN_EXIT_CODES.patchReady;
    case 'tests_failing':
      return RUN_EXIT_CODES.testsFailing;
    case 'refused':
      return RUN_EXIT_CODES.refused;
    case 'sandbox_failed':
      return RUN_EXIT_CODES.sandboxFailed;
    case 'llm_unreachable':
      return RUN_EXIT_CODES.modelUnreachable;
    case 'cancelled':
      return RUN_EXIT_CODES.cancelled;
    case 'no_change':
    case 'timed_out':
    case 'github_error':
    case 'failed':
      return RUN_EXIT_CODES.failed;
  }
}
