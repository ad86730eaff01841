import { isAppError } from '../app-error.js';
import { applyPatch } from '../git/apply-patch.js';
import { parsePatch } from '../pipeline/verification/parse-patch.js';
import type { TestStatus } from '../pipeline/test-reports/test-report-parsers.js';
import type { SweBenchTask } from './swe-bench-task.js';
import { restorePathsToHead } from './task-workspace.js';
import { runTaskTests, type TaskTestSettings } from './run-task-tests.js';

/**
 * Grading of one candidate patch against a task, as SWE-bench's harness decides "resolved": the
 * model patch is applied, then the hidden `test_patch` (after the test files it touches are put back
 * to `base_commit`), the tests run in a FRESH sandbox, and the task is resolved when every
 * `FAIL_TO_PASS` and every `PASS_TO_PASS` test passes.
 */

/** How the tests of one list came out. A test absent from the run is `missing` (not passing). */
export interface TestListOutcome {
  passed: string[];
  failed: string[];
  missing: string[];
}

/** The grade of one candidate. */
export interface GradeResult {
  resolved: boolean;
  /** Why not resolved, for people ("the model patch does not apply: …"); `null` when resolved. */
  reason: string | null;
  failToPass: TestListOutcome;
  passToPass: TestListOutcome;
  /** The test command run, its exit status and duration (ms); `null` when no tests ran. */
  tests: { command: string; exitCode: number | null; timedOut: boolean; durationMs: number } | null;
}

/** Options of {@link gradeTask}. */
export interface GradeTaskOptions extends TaskTestSettings {
  task: SweBenchTask;
  /** The candidate's patch (`git diff --binary` against `base_commit`); `''` = no change. */
  modelPatch: string;
  /**
   * A clean clone of the task's repository with `base_commit` checked out (e.g. from
   * `cloneAtCommit`); it is changed (patches applied to its index), so use one per candidate.
   */
  workspaceDir: string;
  /** Id of the grading sandbox (e.g. `<instance_id>-grade-<k>`). */
  sandboxId: string;
}

const EMPTY: TestListOutcome = { passed: [], failed: [], missing: [] };

/**
 * Grade a candidate.
 *
 * @returns the grade; a patch that does not apply, an empty patch, a task without `FAIL_TO_PASS`
 *   tests and a run without a per-test report are "not resolved" with the reason.
 * @throws sandbox errors (`EGRESS_NOT_BLOCKED`, `SANDBOX_UNAVAILABLE`…), `CANCELLED`, `GIT_FAILED`.
 */
export async function gradeTask(options: GradeTaskOptions): Promise<GradeResult> {
  const { task, workspaceDir: dir, signal } = options;
  const notResolved = (reason: string): GradeResult => ({
    resolved: false,
    reason,
    failToPass: { ...EMPTY, missing: [...task.FAIL_TO_PASS] },
    passToPass: { ...EMPTY, missing: [...task.PASS_TO_PASS] },
    tests: null,
  });
  if (task.FAIL_TO_PASS.length === 0) return notResolved('the task names no FAIL_TO_PASS test');
  if (options.modelPatch.trim() === '') return notResolved('the candidate made no change');
  const applied = await tryApply(dir, options.modelPatch, signal);
  if (applied) return notResolved(`the model patch does not apply: ${applied}`);
  if (task.test_patch.trim() !== '') {
    await restorePathsToHead(
      dir,
      parsePatch(task.test_patch).map((f) => f.path),
    );
    const hidden = await tryApply(dir, task.test_patch, signal);
    if (hidden) return notResolved(`the test patch does not apply after the model patch: ${hidden}`);
  }
  const { run, statuses } = await runTaskTests(dir, options.sandboxId, options);
  if (!run) return notResolved('no test command configured or detected');
  const tests = {
    command: run.command,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    durationMs: run.durationMs,
  };
  if (!statuses) return { ...notResolved('the test run gave no per-test report'), tests };
  return decideResolved(task, statuses, tests);
}

/** `resolved` from the statuses of a run: every `FAIL_TO_PASS` and `PASS_TO_PASS` test passed. */
export function decideResolved(
  task: Pick<SweBenchTask, 'FAIL_TO_PASS' | 'PASS_TO_PASS'>,
  statuses: ReadonlyMap<string, TestStatus>,
  tests: GradeResult['tests'] = null,
): GradeResult {
  const outcome = (ids: readonly string[]): TestListOutcome => {
    const o: TestListOutcome = { passed: [], failed: [], missing: [] };
    for (const id of ids) {
      const s = statuses.get(id);
      if (s === 'passed') o.passed.push(id);
      else if (s === undefined) o.missing.push(id);
      else o.failed.push(id);
    }
    return o;
  };
  const failToPass = outcome(task.FAIL_TO_PASS);
  const passToPass = outcome(task.PASS_TO_PASS);
  const problems: string[] = [];
  const say = (list: TestListOutcome, name: string): void => {
    if (list.failed.length > 0)
      problems.push(`${list.failed.length} ${name} test(s) fail: ${list.failed.slice(0, 5).join(', ')}`);
    if (list.missing.length > 0)
      problems.push(
        `${list.missing.length} ${name} test(s) did not run: ${list.missing.slice(0, 5).join(', ')}`,
      );
  };
  say(failToPass, 'FAIL_TO_PASS');
  say(passToPass, 'PASS_TO_PASS');
  if (tests?.timedOut) problems.push('the test run timed out');
  return {
    resolved: problems.length === 0,
    reason: problems.length === 0 ? null : problems.join('; '),
    failToPass,
    passToPass,
    tests,
  };
}

/** Apply a patch to the index and working tree; the reason when git refuses it, else `null`. */
async function tryApply(dir: string, patch: string, signal: AbortSignal | undefined): Promise<string | null> {
  try {
    await applyPatch(dir, patch, { signal });
    return null;
  } catch (err) {
    if (isAppError(err, 'PATCH_DOES_NOT_APPLY')) {
      const m = err.message.replace(/^the patch from the sandbox does not apply to the clone: /, '');
      return m.trim().split('\n').slice(0, 3).join(' ');
    }
    throw err;
  }
}
