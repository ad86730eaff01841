import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main as evalCommand } from '../../src/bin/commands/eval.js';
import { mineTasks, type MineReport } from '../../src/eval/mine-tasks.js';
import { parseTasksJsonl, formatTaskLine } from '../../src/eval/swe-bench-task.js';
import { createSilentLogger } from '../../src/observability/logger.js';
import { createProbedSandboxFactory } from '../../src/pipeline/probed-sandbox-factory.js';
import { createLocalSandboxFactory } from '../../src/sandbox/local/local-sandbox.js';
import type { SandboxFactory } from '../../src/sandbox/sandbox.js';
import { createHistoryRepo, type HistoryRepo } from '../helpers/eval-history-repo.js';

// `eval mine` on a real git repository with real pytest in the local bubblewrap sandbox.
describe('eval mine (five commits, pytest in the sandbox)', () => {
  let root: string;
  let repo: HistoryRepo;
  let canary: Server;
  let report: MineReport;
  const probed: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'eval-mine-'));
    repo = await createHistoryRepo(root);
    canary = createServer((s) => s.destroy());
    await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
    report = await mineTasks({
      repoDir: repo.dir,
      repoName: 'acme/calc',
      sandboxFactory: createProbedSandboxFactory(recordingFactory(probed), [
        { name: 'loopback canary', url },
      ]),
      testCommand: null,
      setupCommand: null,
      timeoutMs: 120_000,
      logger: createSilentLogger(),
      fetchIssue: async (n) =>
        n === 1 ? 'mean() of an empty list crashes\n\nmean([]) raises ZeroDivisionError.' : null,
    });
  }, 300_000);

  afterAll(async () => {
    await new Promise((r) => canary.close(r));
    await rm(root, { recursive: true, force: true });
  });

  it('finds exactly the two fixes with tests, newest first', () => {
    expect(report.tasks.map((t) => t.base_commit)).toEqual([repo.commits.refactor, repo.commits.initial]);
    expect(report.tasks.map((t) => t.instance_id)).toEqual([
      `acme__calc-${repo.commits.fixClamp.slice(0, 12)}`,
      `acme__calc-${repo.commits.fixMean.slice(0, 12)}`,
    ]);
  });

  it('records why every other commit was dropped', () => {
    expect(report.commits.map((c) => [c.sha, c.dropped])).toEqual([
      [repo.commits.fixClamp, null],
      [repo.commits.refactor, 'no fix keyword'],
      [repo.commits.fixTypo, 'no test change'],
      [repo.commits.fixMean, null],
      [repo.commits.initial, 'no fix keyword'],
    ]);
    expect(report.counts).toMatchObject({
      'no fix keyword': 2,
      'no test change': 1,
      'tests do not fail before the fix': 0,
    });
  });

  it('derives FAIL_TO_PASS and PASS_TO_PASS as pytest node ids from the runs before and after', () => {
    const [clamp, mean] = report.tasks;
    expect(clamp?.FAIL_TO_PASS).toEqual(['tests/test_calc.py::test_clamp_upper']);
    expect(clamp?.PASS_TO_PASS).toEqual([
      'tests/test_calc.py::test_add',
      'tests/test_calc.py::test_clamp_lower',
      'tests/test_calc.py::test_mean_empty',
    ]);
    expect(mean?.FAIL_TO_PASS).toEqual(['tests/test_calc.py::test_mean_empty']);
    expect(mean?.PASS_TO_PASS).toEqual([
      'tests/test_calc.py::test_add',
      'tests/test_calc.py::test_clamp_lower',
    ]);
    // Two fresh, probed sandboxes per task: before and after.
    expect(probed).toHaveLength(4);
  });

  it('splits the commit into the hidden test patch and the gold patch, and takes the issue text when it can', () => {
    const [clamp, mean] = report.tasks;
    expect(clamp?.test_patch).toContain('diff --git a/tests/test_calc.py b/tests/test_calc.py');
    expect(clamp?.test_patch).not.toContain('calc.py b/calc.py');
    expect(clamp?.patch).toContain('diff --git a/calc.py b/calc.py');
    expect(clamp?.patch).not.toContain('tests/');
    expect(clamp?.problem_statement).toBe('Bug: clamp ignored its upper bound');
    expect(mean?.problem_statement).toBe(
      'mean() of an empty list crashes\n\nmean([]) raises ZeroDivisionError.',
    );
  });

  it('writes tasks that read back as SWE-bench instances', () => {
    const text = report.tasks.map(formatTaskLine).join('');
    const parsed = parseTasksJsonl(text, 'tasks.jsonl');
    expect(parsed.problems).toEqual([]);
    expect(parsed.tasks).toEqual(report.tasks);
    expect(JSON.parse(text.split('\n')[0] ?? '{}')).toMatchObject({
      repo: 'acme/calc',
      FAIL_TO_PASS: expect.any(Array),
    });
  });

  it('leaves the mined repository as it was', async () => {
    expect(await readFile(join(repo.dir, 'calc.py'), 'utf8')).toContain('min(x, hi)');
  });
});

describe('frognano-bot eval mine (the command)', () => {
  it('writes tasks.jsonl, the mine report next to it, and prints the counts', async () => {
    const root = await mkdtemp(join(tmpdir(), 'eval-mine-cli-'));
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const repo = await createHistoryRepo(root);
      const out = join(root, 'tasks.jsonl');
      const code = await evalCommand([
        'mine',
        '--repo',
        repo.dir,
        '--limit',
        '1',
        '--out',
        out,
        '--repo-name',
        'acme/calc',
      ]);
      expect(code).toBe(0);
      const { tasks, problems } = parseTasksJsonl(await readFile(out, 'utf8'), out);
      expect(problems).toEqual([]);
      expect(tasks.map((t) => t.instance_id)).toEqual([`acme__calc-${repo.commits.fixClamp.slice(0, 12)}`]);
      const mineReport = JSON.parse(await readFile(join(root, 'tasks.mine-report.json'), 'utf8'));
      expect(mineReport.tasks).toEqual([tasks[0]?.instance_id]);
      expect(mineReport.commits).toEqual([
        { sha: repo.commits.fixClamp, subject: 'Bug: clamp ignored its upper bound', dropped: null },
      ]);
      const printed = stdout.mock.calls.map((c) => String(c[0])).join('');
      expect(printed).toContain(
        `1 task from 1 commit examined (first-parent history, newest first), written to ${out}`,
      );
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
      await rm(root, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses bad options with a usage error', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await evalCommand(['mine'])).toBe(2);
      expect(await evalCommand(['mine', '--repo', '.', '--limit', '0'])).toBe(2);
      expect(stderr.mock.calls.map((c) => String(c[0])).join('')).toContain(
        '--limit must be a whole number above 0 (got "0")',
      );
    } finally {
      stderr.mockRestore();
    }
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
