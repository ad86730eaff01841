import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradeTask } from '../../src/eval/grade-task.js';
import type { SweBenchTask } from '../../src/eval/swe-bench-task.js';
import { cloneAtCommit, diffOfPaths } from '../../src/eval/task-workspace.js';
import { createSilentLogger } from '../../src/observability/logger.js';
import { createProbedSandboxFactory } from '../../src/pipeline/probed-sandbox-factory.js';
import { createLocalSandboxFactory } from '../../src/sandbox/local/local-sandbox.js';
import type { SandboxFactory } from '../../src/sandbox/sandbox.js';
import { createHistoryRepo, type HistoryRepo } from '../helpers/eval-history-repo.js';
import { createFixtureGit } from '../helpers/fixture-git.js';

const git = createFixtureGit({ identity: { name: 'Dev', email: 'dev@example.com' } });

// Grading on a real repository: the candidate patch, then the hidden test patch, real pytest in a
// fresh bubblewrap sandbox.
describe('gradeTask (pytest in a fresh sandbox)', () => {
  let root: string;
  let repo: HistoryRepo;
  let task: SweBenchTask;
  let n = 0;
  const sandboxes: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'eval-grade-'));
    repo = await createHistoryRepo(root);
    const { refactor, fixClamp } = repo.commits;
    task = {
      instance_id: 'acme__calc-clamp',
      repo: 'acme/calc',
      base_commit: refactor,
      problem_statement: 'clamp ignores its upper bound',
      test_patch: await diffOfPaths(repo.dir, refactor, fixClamp, ['tests/test_calc.py']),
      patch: await diffOfPaths(repo.dir, refactor, fixClamp, ['calc.py']),
      FAIL_TO_PASS: ['tests/test_calc.py::test_clamp_upper'],
      PASS_TO_PASS: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_clamp_lower'],
    };
  }, 60_000);

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function grade(modelPatch: string) {
    const workspaceDir = join(root, `ws-${++n}`);
    await cloneAtCommit(repo.dir, task.base_commit, workspaceDir);
    return gradeTask({
      task,
      modelPatch,
      workspaceDir,
      sandboxId: `grade-${n}`,
      sandboxFactory: createProbedSandboxFactory(recordingFactory(sandboxes), []),
      testCommand: null,
      setupCommand: null,
      timeoutMs: 120_000,
      logger: createSilentLogger(),
    });
  }

  it('resolves the task with the correct patch', async () => {
    const r = await grade(task.patch ?? '');
    expect(r.reason).toBeNull();
    expect(r.resolved).toBe(true);
    expect(r.failToPass).toEqual({ passed: task.FAIL_TO_PASS, failed: [], missing: [] });
    expect(r.passToPass.passed).toEqual(task.PASS_TO_PASS);
    expect(r.tests?.command).toBe('python3 -m pytest -q');
  }, 120_000);

  it('does not resolve it with a wrong patch, and names the test that broke', async () => {
    const wrong = (task.patch ?? '').replace('+    return max(lo, min(x, hi))', '+    return min(x, hi)');
    expect(wrong).not.toBe(task.patch);
    const r = await grade(wrong);
    expect(r.resolved).toBe(false);
    expect(r.failToPass.passed).toEqual(['tests/test_calc.py::test_clamp_upper']);
    expect(r.passToPass.failed).toEqual(['tests/test_calc.py::test_clamp_lower']);
    expect(r.reason).toContain('1 PASS_TO_PASS test(s) fail: tests/test_calc.py::test_clamp_lower');
  }, 120_000);

  it('applies the hidden tests over a candidate that edited the test file', async () => {
    // The correct fix plus a candidate edit that deletes the failing test: the test patch still applies
    // (the test file goes back to base_commit first) and the deleted test runs again.
    const scratch = join(root, 'scratch');
    await cloneAtCommit(repo.dir, task.base_commit, scratch);
    await writeFile(
      join(scratch, 'calc.py'),
      await git(repo.dir, 'show', `${repo.commits.fixClamp}:calc.py`),
    );
    await writeFile(join(scratch, 'tests/test_calc.py'), 'def test_nothing():\n    pass\n');
    const tampered = await git(scratch, 'diff');
    expect(tampered).toContain('-def test_clamp_lower():');
    const r = await grade(tampered);
    expect(r.reason).toBeNull();
    expect(r.resolved).toBe(true);
    expect(r.passToPass.passed).toEqual(task.PASS_TO_PASS);
  }, 120_000);

  it('does not resolve a patch that does not apply, without running any test', async () => {
    const before = sandboxes.length;
    const r = await grade(
      'diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n',
    );
    expect(r.resolved).toBe(false);
    expect(r.reason).toMatch(/^the model patch does not apply: /);
    expect(r.failToPass.missing).toEqual(task.FAIL_TO_PASS);
    expect(sandboxes.length).toBe(before);
  }, 120_000);

  it('ran every grading in its own fresh, probed sandbox', () => {
    expect(sandboxes.length).toBe(3);
  });
});

/** The local driver, noting the folder of every sandbox it makes (each then passes the probe). */
function recordingFactory(made: string[]): SandboxFactory {
  const local = createLocalSandboxFactory();
  return {
    driver: local.driver,
    async create(options) {
      const sandbox = await local.create(options);
      made.push(sandbox.workdir);
      return sandbox;
    },
  };
}
