import { applyPatch, resetToHead, stagedDiffStat, type FileChange } from '../git/apply-patch.js';
import { archiveTrackedFiles } from '../git/archive-tracked-files.js';
import type { Logger } from '../observability/logger.js';
import type { TrajectoryStore } from '../observability/trajectory-store.js';
import type { SandboxFactory, SandboxSettings } from '../sandbox/sandbox.js';
import { checkPatch } from './verification/check-patch.js';
import type { PatchLimits } from './verification/patch-limits.js';
import {
  compareTestRuns,
  type TestComparison,
  type TestRunResult,
} from './verification/compare-test-runs.js';
import { detectTestTampering, type TamperingReport } from './verification/test-tampering.js';
import { runTests, type TestRun } from './run-tests.js';

/**
 * The test run on the base tree, shared by the candidates of a job: run by the first verify that
 * needs it (`run` is `undefined` until then; `null` when the base tree has no test command).
 */
export interface BaseTestsMemo {
  run?: TestRun | null;
}

/** Options of {@link verifyPatch}. */
export interface VerifyPatchOptions {
  /** The worker's clone, at the base commit with a clean index. */
  dir: string;
  /** The agent's patch (`git diff --binary` against the base); not empty. */
  patch: string;
  jobId: string;
  sandboxFactory: SandboxFactory;
  /** The policy's sandbox settings, given to every test sandbox (base and head). */
  sandboxSettings?: SandboxSettings;
  /** Test command from the configuration; `null` = detect. */
  testCommand: string | null;
  /** Run no tests (`run --test-command none`): both sides count as "no test command". */
  skipTests?: boolean;
  setupCommand: string | null;
  /** Wall-clock limit of the test command, in milliseconds. */
  testTimeoutMs?: number;
  /** Protected path globs of the effective policy (a patch touching one is refused). */
  protectedPaths: readonly string[];
  /** Patch limits; absent fields use `DEFAULT_PATCH_LIMITS`. */
  limits?: Partial<PatchLimits>;
  /** The base run, shared across the candidates of the job. */
  base: BaseTestsMemo;
  /**
   * Name of this patch's test run: its sandbox is `<jobId>-<name>` and its log `<name>.log` in the
   * store. Default `tests-head`; best-of-N uses `tests-head-candidate-<n>`.
   */
  headName?: string;
  /** Where the full test logs are kept (`<jobId>/tests-base.log`, `<jobId>/<headName>.log`). */
  store: TrajectoryStore;
  signal: AbortSignal;
  logger: Logger;
}

/** A patch a check refused: no test ran for it. */
export interface RefusedPatch {
  refused: true;
  /** Which check refused. */
  check: 'protected_path' | 'patch_limits';
  /** One sentence for the status comment (names the paths, never a secret). */
  reason: string;
  details: string[];
  diffstat: string;
  files: FileChange[];
  /** Lines added plus removed. */
  linesChanged: number;
}

/** A patch that passed the checks, with the evidence for the pull request. */
export interface VerifiedPatch {
  refused: false;
  /** `git diff --stat` of the change, for people. */
  diffstat: string;
  /** Per-file added/removed lines. */
  files: FileChange[];
  /** Lines added plus removed. */
  linesChanged: number;
  /** The tests on the patched tree; `null` when no test command was configured or detected. */
  tests: TestRun | null;
  /** The tests on the base tree (the same command, in its own fresh sandbox). */
  baseTests: TestRun | null;
  /** Base → head; `null` when either side did not run. */
  comparison: TestComparison | null;
  tampering: TamperingReport;
}

/**
 * The verify stage of one patch: apply it to the worker's clone (index and tree, all or nothing),
 * run the checks that can refuse it (protected paths, then size limits, binary files, symbolic links
 * leaving the repository, secrets), then — for a patch that passes — the tests on the base tree
 * (once per job, see {@link BaseTestsMemo}) and on the patched tree, each in a fresh sandbox; compare
 * them and look for test tampering. Full test outputs are stored next to the trajectory.
 *
 * The clone is left with the patch applied (refused or not); the caller resets it
 * (`resetToHead`) before verifying another patch.
 *
 * @throws AppError `PATCH_DOES_NOT_APPLY`, `GIT_FAILED`, sandbox errors from the test sandboxes,
 *   `CANCELLED`.
 */
export async function verifyPatch(options: VerifyPatchOptions): Promise<RefusedPatch | VerifiedPatch> {
  const { dir, logger, signal } = options;
  await applyPatch(dir, options.patch, { signal });
  const { stat, files } = await stagedDiffStat(dir);
  logger.info({ files: files.length }, 'patch applied to the clone');

  const checked = await checkPatch({
    patch: options.patch,
    dir,
    protectedPaths: options.protectedPaths,
    limits: options.limits,
    signal,
  });
  if (checked.refused) {
    logger.info({ check: checked.check, details: checked.details.length }, 'patch refused by a check');
    return {
      refused: true,
      check: checked.check,
      reason: checked.reason,
      details: checked.details,
      diffstat: stat,
      files,
      linesChanged: checked.linesChanged,
    };
  }

  const test = async (sandboxName: string): Promise<TestRun | null> =>
    options.skipTests
      ? null
      : runTests({
          sandboxFactory: options.sandboxFactory,
          sandboxId: `${options.jobId}-${sandboxName}`,
          sandboxSettings: options.sandboxSettings,
          tree: () => archiveTrackedFiles(dir, { signal }),
          testCommand: options.testCommand,
          setupCommand: options.setupCommand,
          timeoutMs: options.testTimeoutMs,
          signal,
          logger,
        });

  if (options.base.run === undefined) {
    // The base tree is the clone without the patch: step back, test, and apply again.
    await resetToHead(dir, { signal });
    options.base.run = await test('tests-base');
    await saveLog(options, 'tests-base', options.base.run);
    await applyPatch(dir, options.patch, { signal });
  }
  const headName = options.headName ?? 'tests-head';
  const tests = await test(headName);
  await saveLog(options, headName, tests);

  const baseTests = options.base.run;
  const comparison = baseTests && tests ? compareTestRuns(asResult(baseTests), asResult(tests)) : null;
  const tampering = detectTestTampering({ files: checked.files, comparison });
  return {
    refused: false,
    diffstat: stat,
    files,
    linesChanged: checked.linesChanged,
    tests,
    baseTests,
    comparison,
    tampering,
  };
}

/** A test run as the comparison sees it. */
export function asResult(run: TestRun): TestRunResult {
  const setupFailed = run.setup !== undefined && (run.setup.exitCode !== 0 || run.setup.timedOut);
  return {
    passed: run.passed,
    completed: !run.timedOut && run.exitCode !== null && !setupFailed,
    tests: run.tests ?? null,
    format: run.reportFormat ?? null,
  };
}

async function saveLog(options: VerifyPatchOptions, name: string, run: TestRun | null): Promise<void> {
  if (!run) return;
  try {
    await options.store.saveLog(options.jobId, name, `$ ${run.command}\n${run.output}`);
  } catch (err) {
    options.logger.warn({ err }, 'could not store the test log');
  }
}
