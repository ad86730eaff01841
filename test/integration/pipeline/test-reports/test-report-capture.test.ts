import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '../../../../src/observability/logger.js';
import {
  clearTestReports,
  collectTestReport,
  JUNIT_REPORT_PATH,
  planTestReport,
} from '../../../../src/pipeline/test-reports/test-report-capture.js';
import { parseJUnitXml } from '../../../../src/pipeline/test-reports/test-report-parsers.js';
import { createLocalSandboxFactory } from '../../../../src/sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../../../src/sandbox/sandbox.js';

/**
 * Per-test reports from real runners: pytest inside the local (bubblewrap) sandbox, read back from
 * the sandbox's /tmp; vitest's junit reporter with the flags the plan adds.
 */

const exec = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

let sandbox: Sandbox;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'frognano-report-'));
  await chmod(root, 0o711); // the sandbox's unprivileged uid traverses it
  sandbox = await createLocalSandboxFactory({ workRoot: root, logger: createSilentLogger() }).create({
    jobId: 'report-capture',
  });
  await sandbox.writeFile('calc.py', 'def add(a, b):\n    return a - b\n');
  await sandbox.writeFile(
    'tests/test_calc.py',
    'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n',
  );
  await sandbox.writeFile('conftest.py', '');
});

afterAll(async () => {
  await sandbox?.destroy();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('pytest in the local sandbox', () => {
  it('writes JUnit XML to the sandbox /tmp through PYTEST_ADDOPTS, read back per test, leaving no cache in the tree', async () => {
    const plan = planTestReport('python3 -m pytest -q');
    await clearTestReports(sandbox, plan);
    const r = await sandbox.exec(`exec 2>&1\n${plan.command}`, {
      env: { CI: 'true', ...plan.env },
      timeoutMs: 60_000,
    });
    expect(r.exitCode, r.stdout.toString()).toBe(1);
    const report = await collectTestReport(sandbox, plan, r.stdout.toString('utf8'));
    expect(report.format).toBe('junit-xml');
    expect(report.tests).toEqual([
      { id: 'tests.test_calc::test_add', status: 'failed', message: 'assert -1 == 5' },
      { id: 'tests.test_calc::test_zero', status: 'passed' },
    ]);
    const { files } = await sandbox.list();
    expect(files.some((f) => f.includes('.pytest_cache'))).toBe(false);
  });

  it('gives no per-test results when the runner wrote no report', async () => {
    const plan = planTestReport('true');
    await clearTestReports(sandbox, plan);
    const r = await sandbox.exec(plan.command, { env: plan.env, timeoutMs: 10_000 });
    expect(r.exitCode).toBe(0);
    expect(await collectTestReport(sandbox, plan, 'out')).toEqual({
      tests: null,
      format: null,
      output: 'out',
    });
  });
});

describe('vitest with the flags of the plan', () => {
  it('writes a JUnit report that parses per test', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'frognano-vitest-'));
    try {
      await writeFile(
        join(dir, 'math.test.mjs'),
        "describe('math', () => {\n  it('adds', () => { expect(1 + 1).toBe(2); });\n  it('subtracts', () => { expect(2 - 1).toBe(2); });\n});\n",
      );
      const plan = planTestReport('npx vitest run');
      const flags = plan.command.replace(/^npx vitest run /, '').split(' ');
      const out = join(dir, 'junit.xml');
      const args = [
        join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--root',
        dir,
        '--globals',
        ...flags.map((f) => f.replace(JUNIT_REPORT_PATH, out)),
      ];
      await exec(process.execPath, args, {
        cwd: dir,
        env: { ...process.env, CI: 'true' },
        timeout: 30_000,
      }).catch((err: { code?: number }) => expect(err.code).toBe(1));
      expect(parseJUnitXml(await readFile(out, 'utf8'))).toEqual([
        { id: 'math.test.mjs::math > adds', status: 'passed' },
        {
          id: 'math.test.mjs::math > subtracts',
          status: 'failed',
          message: expect.stringContaining('expected 1 to be 2'),
        },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
