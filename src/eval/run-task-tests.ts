import { archiveTrackedFiles } from '../git/archive-tracked-files.js';
import type { Logger } from '../observability/logger.js';
import { runTests, type TestRun } from '../pipeline/run-tests.js';
import type { TestStatus } from '../pipeline/test-reports/test-report-parsers.js';
import type { SandboxFactory, SandboxSettings } from '../sandbox/sandbox.js';
import { statusesByNodeId } from './test-node-id.js';
import { trackedFiles } from './task-workspace.js';

/** How the tests of a task run: the same fresh, egress-probed sandbox as the pipeline's test runs. */
export interface TaskTestSettings {
  /** Probed (`createProbedSandboxFactory`): every sandbox it returns has passed the egress probe. */
  sandboxFactory: SandboxFactory;
  /** Test command; `null` = detect it from the tree (detect-test-command.ts). */
  testCommand: string | null;
  /** Command before the tests (offline); `null` = none. */
  setupCommand: string | null;
  /** Wall-clock limit of setup and of the tests, each, in milliseconds. */
  timeoutMs?: number;
  sandboxSettings?: SandboxSettings;
  logger: Logger;
  signal?: AbortSignal;
}

/** A test run of a task's tree, with the per-test statuses keyed by node id (test-node-id.ts). */
export interface TaskTestRun {
  /** The run, or `null` when no test command is configured and none was detected. */
  run: TestRun | null;
  /** Status by node id, or `null` when the run gave no per-test report. */
  statuses: Map<string, TestStatus> | null;
}

/**
 * Run the tests of the tracked files of `dir` (its index: patches applied with `--index` count) in
 * a fresh sandbox, destroyed afterwards.
 *
 * @throws what `runTests` throws (`EGRESS_NOT_BLOCKED`, `CANCELLED`, sandbox errors).
 */
export async function runTaskTests(
  dir: string,
  sandboxId: string,
  settings: TaskTestSettings,
): Promise<TaskTestRun> {
  const run = await runTests({
    sandboxFactory: settings.sandboxFactory,
    sandboxId,
    sandboxSettings: settings.sandboxSettings,
    tree: () => archiveTrackedFiles(dir, { signal: settings.signal }),
    testCommand: settings.testCommand,
    setupCommand: settings.setupCommand,
    timeoutMs: settings.timeoutMs,
    signal: settings.signal,
    logger: settings.logger,
  });
  if (!run?.tests) return { run, statuses: null };
  return { run, statuses: statusesByNodeId(run.tests, await trackedFiles(dir)) };
}
