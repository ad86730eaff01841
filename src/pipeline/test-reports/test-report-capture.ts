import type { Sandbox } from '../../sandbox/sandbox.js';
import {
  MAX_REPORT_BYTES,
  parseGoTestJson,
  parseJestJson,
  parseJUnitXml,
  type TestCaseResult,
  type TestReportFormat,
} from './test-report-parsers.js';

/**
 * How the test runners are asked for per-test reports, and how the reports are read back from the
 * sandbox. The test command stays what the repository configured (or what was detected); only
 * flags or environment variables that the runners document are added:
 *
 * - pytest: `PYTEST_ADDOPTS` (read by every pytest invocation, also under `make test` or a script)
 *   with `--junitxml=<file>` and `-p no:cacheprovider` (no `.pytest_cache` left in the tree);
 * - `go test …` as the whole command: `-json` (cmd/test2json events on stdout);
 * - vitest (`vitest …`, `npx vitest …`, or `npm test` whose script is a vitest call): the
 *   `default` and `junit` reporters with `--outputFile.junit=<file>`;
 * - jest (same forms): `--json --outputFile=<file>` (jest's own JSON report; `jest-junit` is rarely
 *   installed and the sandbox is offline).
 *
 * Report files are written to the sandbox's `/tmp` — outside the workspace, so they can never end up
 * in a patch or be mistaken for repository files — and read back with `cat` through
 * {@link Sandbox.exec} (the file operations of the Sandbox interface are confined to the workspace).
 */

/** Where pytest and vitest write their JUnit XML inside the sandbox. */
export const JUNIT_REPORT_PATH = '/tmp/frognano-junit.xml';
/** Where jest writes its JSON report inside the sandbox. */
export const JEST_REPORT_PATH = '/tmp/frognano-jest.json';

/** The command to run and where its per-test report will be. */
export interface TestReportPlan {
  /** The command to run (`bash -c`): the original, or the original with report flags added. */
  command: string;
  /** Environment variables to add for the test command. */
  env: Record<string, string>;
  /** Report files the run may write, in the order they are tried. */
  files: Array<{ path: string; format: 'junit-xml' | 'jest-json' }>;
  /** `go-test-json` when the command's output is `go test -json` events; else `null`. */
  stdoutFormat: 'go-test-json' | null;
}

/** Characters that make a command more than one plain program call (then it is not rewritten). */
const SHELL_SYNTAX = /[;&|<>()$`\\\n"'*?[\]{}~#]/;
const NPM_TEST = /^npm\s+(?:test|t|tst|run\s+test|run-script\s+test)(?:\s+--)?\s*$/;

/**
 * Plan the per-test report of a test command.
 *
 * @param command the test command (configured or detected).
 * @param context.npmTestScript the `scripts.test` of the repository's package.json, when the command
 *   is `npm test` (read from the tree under test); lets `npm test` running vitest or jest be
 *   instrumented through `npm test -- <flags>`.
 */
export function planTestReport(
  command: string,
  context: { npmTestScript?: string | null } = {},
): TestReportPlan {
  const plan: TestReportPlan = {
    command,
    env: { PYTEST_ADDOPTS: `--junitxml=${JUNIT_REPORT_PATH} -p no:cacheprovider` },
    files: [{ path: JUNIT_REPORT_PATH, format: 'junit-xml' }],
    stdoutFormat: null,
  };
  const trimmed = command.trim();
  if (SHELL_SYNTAX.test(trimmed)) return plan;

  if (/^go\s+test(\s|$)/.test(trimmed)) {
    if (!/(^|\s)-json(\s|=|$)/.test(trimmed)) plan.command = trimmed.replace(/^go\s+test/, 'go test -json');
    plan.stdoutFormat = 'go-test-json';
    return plan;
  }
  const direct = runnerOf(trimmed);
  if (direct) {
    plan.command = `${trimmed} ${runnerFlags(direct)}`;
    if (direct === 'jest') plan.files.unshift({ path: JEST_REPORT_PATH, format: 'jest-json' });
    return plan;
  }
  const script = context.npmTestScript?.trim();
  if (NPM_TEST.test(trimmed) && script && !SHELL_SYNTAX.test(script)) {
    const viaNpm = runnerOf(script);
    if (viaNpm) {
      plan.command = `${trimmed.replace(/\s+--$/, '')} -- ${runnerFlags(viaNpm)}`;
      if (viaNpm === 'jest') plan.files.unshift({ path: JEST_REPORT_PATH, format: 'jest-json' });
    }
  }
  return plan;
}

function runnerOf(command: string): 'vitest' | 'jest' | null {
  const m = /^(?:npx\s+(?:--no-install\s+|--offline\s+)?)?(vitest|jest)(\s|$)/.exec(command);
  if (!m) return null;
  // `vitest watch`/`--watch` and `jest --watch` never end; leave them alone (CI=true makes them run once).
  if (/(^|\s)(watch|--watch|--watchAll)(\s|=|$)/.test(command)) return null;
  return m[1] === 'vitest' ? 'vitest' : 'jest';
}

function runnerFlags(runner: 'vitest' | 'jest'): string {
  return runner === 'vitest'
    ? `--reporter=default --reporter=junit --outputFile.junit=${JUNIT_REPORT_PATH}`
    : `--json --outputFile=${JEST_REPORT_PATH}`;
}

/** Remove report files a previous command (e.g. the setup command) may have left. */
export async function clearTestReports(
  sandbox: Sandbox,
  plan: TestReportPlan,
  signal?: AbortSignal,
): Promise<void> {
  if (plan.files.length === 0) return;
  await sandbox.exec(['rm', '-f', '--', ...plan.files.map((f) => f.path)], { timeoutMs: 30_000, signal });
}

/** What {@link collectTestReport} found. */
export interface CollectedTestReport {
  /** Per-test results, or `null` when the run left no report that parses. */
  tests: TestCaseResult[] | null;
  format: TestReportFormat | null;
  /**
   * The output for people: the command's output, except for `go test -json`, whose events are
   * turned back into go test's usual text.
   */
  output: string;
}

/**
 * Read the per-test report of a finished run.
 *
 * @param output the run's combined output (stdout and stderr).
 * @param rootDir the repository's path inside the sandbox ({@link Sandbox.workdir}), for jest's
 *   absolute file names.
 * @throws sandbox errors (`SANDBOX_GONE`, …) from reading the report.
 */
export async function collectTestReport(
  sandbox: Sandbox,
  plan: TestReportPlan,
  output: string,
  options: { signal?: AbortSignal } = {},
): Promise<CollectedTestReport> {
  if (plan.stdoutFormat === 'go-test-json') {
    const go = parseGoTestJson(output);
    if (go) return { tests: go.tests, format: 'go-test-json', output: go.output };
  }
  for (const file of plan.files) {
    const r = await sandbox.exec(['cat', '--', file.path], {
      timeoutMs: 60_000,
      maxOutputBytes: MAX_REPORT_BYTES + 1,
      signal: options.signal,
    });
    if (r.exitCode !== 0 || r.outputTruncated) continue;
    const text = r.stdout.toString('utf8');
    const tests = file.format === 'junit-xml' ? parseJUnitXml(text) : parseJestJson(text, sandbox.workdir);
    if (tests) return { tests, format: file.format, output };
  }
  return { tests: null, format: null, output };
}
