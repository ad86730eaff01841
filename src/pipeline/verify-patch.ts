import { applyPatch, stagedDiffStat, type FileChange } from '../git/apply-patch.js';
import { archiveTrackedFiles } from '../git/archive-tracked-files.js';
import type { Logger } from '../observability/logger.js';
import type { TrajectoryStore } from '../observability/trajectory-store.js';
import type { SandboxFactory } from '../sandbox/sandbox.js';
import { runTests, type TestRun } from './run-tests.js';

/** Options of {@link verifyPatch}. */
export interface VerifyPatchOptions {
  /** The worker's clone, at the base commit with a clean index. */
  dir: string;
  /** The agent's patch (`git diff --binary` against the base); not empty. */
  patch: string;
  jobId: string;
  sandboxFactory: SandboxFactory;
  /** Test command from the configuration; `null` = detect. */
  testCommand: string | null;
  setupCommand: string | null;
  /** Wall-clock limit of the test command, in milliseconds. */
  testTimeoutMs?: number;
  /** Where the full test log is kept (`<jobId>/tests-head.log`). */
  store: TrajectoryStore;
  signal: AbortSignal;
  logger: Logger;
}

/** What {@link verifyPatch} found. */
export interface VerifiedPatch {
  /** `git diff --stat` of the change, for people. */
  diffstat: string;
  /** Per-file added/removed lines (for the checks of issue 6: size limits, protected paths, tests). */
  files: FileChange[];
  /** The tests on the patched tree; `null` when no test command was configured or detected. */
  tests: TestRun | null;
}

/**
 * The verify stage: apply the agent's patch to the worker's clone (index and tree, all or nothing),
 * measure it, and run the tests on the patched tree in a fresh sandbox. The full test output is
 * stored next to the trajectory.
 *
 * Issue 6 extends this stage (protected paths, patch limits, test tampering, tests on the base tree
 * too) — each a step between the apply and the return, on `files` and `dir`.
 *
 * @throws AppError `PATCH_DOES_NOT_APPLY`, sandbox errors from the test sandbox, `CANCELLED`.
 */
export async function verifyPatch(options: VerifyPatchOptions): Promise<VerifiedPatch> {
  const { dir, logger } = options;
  await applyPatch(dir, options.patch, { signal: options.signal });
  const { stat, files } = await stagedDiffStat(dir);
  logger.info({ files: files.length }, 'patch applied to the clone');

  const tests = await runTests({
    sandboxFactory: options.sandboxFactory,
    sandboxId: `${options.jobId}-tests`,
    tree: () => archiveTrackedFiles(dir, { signal: options.signal }),
    testCommand: options.testCommand,
    setupCommand: options.setupCommand,
    timeoutMs: options.testTimeoutMs,
    signal: options.signal,
    logger,
  });
  if (tests) {
    try {
      await options.store.saveLog(options.jobId, 'tests-head', `$ ${tests.command}\n${tests.output}`);
    } catch (err) {
      logger.warn({ err }, 'could not store the test log');
    }
  }
  return { diffstat: stat, files, tests };
}
