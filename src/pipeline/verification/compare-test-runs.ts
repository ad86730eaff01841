/**
 * The comparison of the base tree's test run with the patched ("head") tree's (issue 6, "Tests on
 * base and head"): per test when both sides gave a report, else by exit code ("suite" granularity).
 */
import type { TestCaseResult, TestReportFormat, TestStatus } from '../test-reports/test-report-parsers.js';

/** One side (base or head) of the comparison: a test run as the checks see it. */
export interface TestRunResult {
  /** The command exited 0 (and did not time out; setup, if any, succeeded). */
  passed: boolean;
  /** The command ran to its end: not timed out, not killed, setup succeeded. */
  completed: boolean;
  /** Per-test results, or `null` when the runner gave none (then the exit code decides). */
  tests: TestCaseResult[] | null;
  /** Which report the tests came from (`null` with `tests`). */
  format: TestReportFormat | null;
}

/** Counts of one run. */
export interface TestCounts {
  passed: number;
  failed: number;
  skipped: number;
}

/** A test that exists on one side only. */
export interface OneSidedTest {
  id: string;
  /** Its status on the side where it exists. */
  status: TestStatus;
}

/**
 * The base → head comparison. In `per-test` granularity every list holds test ids; in `suite`
 * granularity the whole suite is one test named {@link WHOLE_SUITE} and `newTests`/`removedTests`
 * are empty.
 */
export interface TestComparison {
  granularity: 'per-test' | 'suite';
  /** failed (or errored) on base → passed on head. */
  fixed: string[];
  /** passed on base → failed on head. */
  broken: string[];
  /** failed on both. */
  stillFailing: string[];
  /** Only on head, with their head status. */
  newTests: OneSidedTest[];
  /** Only on base, with their base status. */
  removedTests: OneSidedTest[];
  /** Passed on both (a count; the list would be long). */
  passingOnBoth: number;
  /** Per-test counts of each side, `null` in suite granularity. */
  baseCounts: TestCounts | null;
  headCounts: TestCounts | null;
  /**
   * Nothing got worse: no test went from passing to failing, no new test fails, and the head run
   * completed (a timed-out or crashed run proves nothing). The first rule of best-of-N.
   */
  nothingBroken: boolean;
}

/** The name of the whole suite in `suite` granularity. */
export const WHOLE_SUITE = 'the whole test suite (exit code)';

/**
 * Compare the base run with the head run.
 *
 * Per-test when both sides have per-test results; else by exit code: base failing → head passing
 * is one "fixed", the reverse one "broken", failing on both one "still failing".
 */
export function compareTestRuns(base: TestRunResult, head: TestRunResult): TestComparison {
  if (!base.tests || !head.tests) return compareSuites(base, head);
  const baseById = new Map(base.tests.map((t) => [t.id, t]));
  const headById = new Map(head.tests.map((t) => [t.id, t]));
  const out = emptyComparison('per-test', counts(base.tests), counts(head.tests));
  for (const h of head.tests) {
    const b = baseById.get(h.id);
    if (!b) {
      out.newTests.push({ id: h.id, status: h.status });
      continue;
    }
    if (b.status === 'failed' && h.status === 'passed') out.fixed.push(h.id);
    else if (b.status === 'passed' && h.status === 'failed') out.broken.push(h.id);
    else if (b.status === 'failed' && h.status === 'failed') out.stillFailing.push(h.id);
    else if (b.status === 'passed' && h.status === 'passed') out.passingOnBoth++;
  }
  for (const b of base.tests) if (!headById.has(b.id)) out.removedTests.push({ id: b.id, status: b.status });
  out.nothingBroken =
    head.completed && out.broken.length === 0 && !out.newTests.some((t) => t.status === 'failed');
  return out;
}

function compareSuites(base: TestRunResult, head: TestRunResult): TestComparison {
  const out = emptyComparison('suite', null, null);
  if (!base.passed && head.passed) out.fixed.push(WHOLE_SUITE);
  else if (base.passed && !head.passed) out.broken.push(WHOLE_SUITE);
  else if (!base.passed && !head.passed) out.stillFailing.push(WHOLE_SUITE);
  else out.passingOnBoth = 1;
  out.nothingBroken = head.completed && out.broken.length === 0;
  return out;
}

function counts(tests: readonly TestCaseResult[]): TestCounts {
  const c: TestCounts = { passed: 0, failed: 0, skipped: 0 };
  for (const t of tests) c[t.status]++;
  return c;
}

/** A comparison with nothing in it yet, filled in by its caller. */
function emptyComparison(
  granularity: TestComparison['granularity'],
  baseCounts: TestCounts | null,
  headCounts: TestCounts | null,
): TestComparison {
  return {
    granularity,
    fixed: [],
    broken: [],
    stillFailing: [],
    newTests: [],
    removedTests: [],
    passingOnBoth: 0,
    baseCounts,
    headCounts,
    nothingBroken: true,
  };
}
