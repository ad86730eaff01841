import type { Readable } from 'node:stream';
import { throwIfAborted } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import type { Sandbox, SandboxFactory, SandboxSettings } from '../sandbox/sandbox.js';
import { clearTestReports, collectTestReport, planTestReport } from './test-reports/test-report-capture.js';
import type { TestCaseResult, TestReportFormat } from './test-reports/test-report-parsers.js';
import { detectTestCommand } from './detect-test-command.js';
import { copyTreeIn } from './prepare-sandbox.js';

/** Lines of test output kept as the tail shown in the pull request and the status comment. */
export const TEST_TAIL_LINES = 60;
/** Characters of test output kept as the tail (the last ones). */
export const TEST_TAIL_CHARS = 6_000;
/** Bytes of each output stream kept from a test command (the full log is stored with the trajectory). */
export const TEST_OUTPUT_BYTES = 4 * 1024 * 1024;
/** Default wall-clock limit of the test command, in milliseconds (30 min). */
export const DEFAULT_TEST_TIMEOUT_MS = 30 * 60_000;

/** The result of running a repository's tests once. */
export interface TestRun {
  /** The command run (by `bash -c` in the sandbox's workdir). */
  command: string;
  /** Why this command: `configured` or the detection's reason (e.g. "pytest: found tests/test_x.py"). */
  source: string;
  /** The setup command and its result, when one ran first. A failed setup means the tests did not run. */
  setup?: { command: string; exitCode: number | null; timedOut: boolean };
  /** Exit status of the test command (or of the failed setup); `null` when killed by a signal. */
  exitCode: number | null;
  /** Exit status 0, not timed out, setup (if any) succeeded. */
  passed: boolean;
  timedOut: boolean;
  /** The last {@link TEST_TAIL_LINES} lines / {@link TEST_TAIL_CHARS} characters of the output. */
  outputTail: string;
  /** The whole kept output (stdout and stderr interleaved), for the job's log store. */
  output: string;
  /** Wall-clock time of setup and tests, in milliseconds. */
  durationMs: number;
  /**
   * Per-test results, when the runner gave a report (pytest JUnit XML, `go test -json`, vitest's
   * junit reporter, jest's JSON; see test-reports/test-report-capture.ts); `null` or absent otherwise —
   * then only the exit code speaks.
   */
  tests?: TestCaseResult[] | null;
  /** The report the per-test results came from. */
  reportFormat?: TestReportFormat | null;
}

/** Options of {@link runTests}. */
export interface RunTestsOptions {
  sandboxFactory: SandboxFactory;
  /** Id for the sandbox (e.g. `<job id>-tests-head`). */
  sandboxId: string;
  /** The policy's sandbox settings (image, resources, runtime class); its time limit is set here. */
  sandboxSettings?: SandboxSettings;
  /** Makes the tar stream of the tree to test (called once). */
  tree: () => Readable;
  /** Test command from the configuration; `null` = detect it from the tree's files. */
  testCommand: string | null;
  /** Command run before the tests (e.g. an install from a vendored cache); `null` = none. */
  setupCommand: string | null;
  /** Wall-clock limit of setup and of the tests, each, in milliseconds. */
  timeoutMs?: number;
  signal?: AbortSignal;
  logger: Logger;
}

/**
 * Run the tests of a tree in a FRESH sandbox (nothing the agent's processes left behind runs
 * alongside them), then destroy that sandbox. The same function runs the tests on the patched tree
 * and — for the base/head comparison of issue 6 — on the base tree.
 *
 * Output of stdout and stderr is interleaved (`exec 2>&1`) and `CI=true` is set, so runners that
 * default to a watch mode (jest) run once. The runners are asked for a per-test report through
 * documented flags and environment variables (`planTestReport`), read back from the sandbox before
 * it is destroyed; the command shown to people stays the configured or detected one.
 *
 * @returns the result, or `null` when no test command is configured and none could be detected.
 * @throws AppError the signal's reason (`abortReason`: `CANCELLED`…) when `signal` aborted; `EGRESS_NOT_BLOCKED` from a probed factory;
 *   sandbox errors (`SANDBOX_UNAVAILABLE`, `SANDBOX_COPY_FAILED`, …) as thrown by the driver.
 */
export async function runTests(options: RunTestsOptions): Promise<TestRun | null> {
  const { signal, logger } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS;
  const started = Date.now();
  const sandbox = await options.sandboxFactory.create({
    jobId: options.sandboxId,
    // The sandbox lives through the setup command and the tests, each bounded by `timeoutMs`.
    settings: { ...options.sandboxSettings, timeLimitMs: 2 * timeoutMs },
  });
  try {
    await copyTreeIn(sandbox, options.tree, signal);
    const detected = options.testCommand
      ? { command: options.testCommand, reason: 'configured' }
      : await detectTestCommand(sandbox);
    if (!detected) {
      logger.info('no test command configured or detected');
      return null;
    }
    const { command, reason } = detected;
    let output = '';
    let setup: TestRun['setup'];
    const finish = (result: { exitCode: number | null; timedOut: boolean; passed: boolean }): TestRun => ({
      command,
      source: reason,
      ...(setup ? { setup } : {}),
      ...result,
      outputTail: tail(output),
      output,
      durationMs: Date.now() - started,
    });
    if (options.setupCommand) {
      const r = await runMerged(sandbox, options.setupCommand, timeoutMs, signal);
      throwIfAborted(signal);
      output += `$ ${options.setupCommand}\n${r.text}\n`;
      setup = { command: options.setupCommand, exitCode: r.exitCode, timedOut: r.timedOut };
      if (r.exitCode !== 0 || r.timedOut) {
        output += `[setup failed (${describeExit(r.exitCode, r.timedOut)}); the tests did not run]\n`;
        return finish({ exitCode: r.exitCode, timedOut: r.timedOut, passed: false });
      }
    }
    const plan = planTestReport(command, {
      npmTestScript: /^npm\s/.test(command.trim()) ? await npmTestScript(sandbox) : null,
    });
    await clearTestReports(sandbox, plan, signal);
    const r = await runMerged(sandbox, plan.command, timeoutMs, signal, plan.env);
    throwIfAborted(signal);
    const report = r.timedOut
      ? { tests: null, format: null, output: r.text }
      : await collectTestReport(sandbox, plan, r.text, { signal });
    output += report.output;
    if (r.truncated) output += `\n[output cut at ${TEST_OUTPUT_BYTES} bytes]\n`;
    logger.info(
      { command, exitCode: r.exitCode, timedOut: r.timedOut, tests: report.tests?.length ?? null },
      'tests ran',
    );
    return {
      ...finish({ exitCode: r.exitCode, timedOut: r.timedOut, passed: r.exitCode === 0 && !r.timedOut }),
      tests: report.tests,
      reportFormat: report.format,
    };
  } finally {
    await sandbox.destroy();
  }
}

/** `scripts.test` of the tree's package.json, read through the sandbox; `null` when there is none. */
async function npmTestScript(sandbox: Sandbox): Promise<string | null> {
  try {
    const pkg = JSON.parse(
      (await sandbox.readFile('package.json', { maxBytes: 1024 * 1024 })).toString('utf8'),
    ) as {
      scripts?: Record<string, unknown>;
    };
    return typeof pkg.scripts?.test === 'string' ? pkg.scripts.test : null;
  } catch {
    return null;
  }
}

async function runMerged(
  sandbox: Sandbox,
  command: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  env: Record<string, string> = {},
): Promise<{ text: string; exitCode: number | null; timedOut: boolean; truncated: boolean }> {
  const r = await sandbox.exec(`exec 2>&1\n${command}`, {
    timeoutMs,
    signal,
    env: { CI: 'true', ...env },
    maxOutputBytes: TEST_OUTPUT_BYTES,
  });
  return {
    text: r.stdout.toString('utf8') + r.stderr.toString('utf8'),
    exitCode: r.exitCode,
    timedOut: r.timedOut,
    truncated: r.outputTruncated,
  };
}

/** "exit 1", "timed out", "killed by a signal". */
export function describeExit(exitCode: number | null, timedOut: boolean): string {
  if (timedOut) return 'timed out';
  return exitCode === null ? 'killed by a signal' : `exit ${exitCode}`;
}

/** The end of a test log: the last {@link TEST_TAIL_LINES} lines, at most {@link TEST_TAIL_CHARS} characters. */
export function tail(text: string): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  let out = lines.slice(-TEST_TAIL_LINES).join('\n');
  if (out.length > TEST_TAIL_CHARS) out = out.slice(-TEST_TAIL_CHARS);
  return out;
}
