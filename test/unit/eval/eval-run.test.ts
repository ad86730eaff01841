import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { BUILT_IN_EVAL_DEFAULTS } from '../../../src/config/policy.js';
import { parseEvalRunOptions, planEvalRun, runEvalTasks } from '../../../src/eval/eval-run.js';
import { createProgress } from '../../../src/eval/progress.js';
import { appendResult, readResults, type TaskResult } from '../../../src/eval/results-store.js';
import type { SweBenchTask } from '../../../src/eval/swe-bench-task.js';

const defaults = { ...BUILT_IN_EVAL_DEFAULTS, candidates: 2 };

describe('parseEvalRunOptions', () => {
  const base = [
    'tasks.jsonl',
    '--model-url',
    'http://127.0.0.1:30000/v1',
    '--out',
    'out',
    '--repos',
    'mirrors',
  ];
  it('takes the policy defaults, and --attempts as the alias of --candidates', () => {
    const o = parseEvalRunOptions(base, defaults);
    expect(o).toMatchObject({
      tasksFile: 'tasks.jsonl',
      outDir: 'out',
      candidates: 2,
      concurrency: 1,
      reposDir: 'mirrors',
    });
    expect(parseEvalRunOptions([...base, '--attempts', '3'], defaults)).toMatchObject({ candidates: 3 });
    expect(parseEvalRunOptions([...base, '--candidates', '4', '--concurrency', '8'], defaults)).toMatchObject(
      { candidates: 4, concurrency: 8 },
    );
  });
  it('says what is wrong', () => {
    expect(parseEvalRunOptions([...base, '--candidates', '2', '--attempts', '3'], defaults)).toBe(
      '--candidates 2 and --attempts 3 disagree (--attempts is the old name of --candidates)',
    );
    expect(parseEvalRunOptions([...base, '--attempts', '9'], defaults)).toBe(
      '--attempts must be a whole number from 1 to 5 (got "9")',
    );
    expect(parseEvalRunOptions([...base, '--concurrency', '0'], defaults)).toBe(
      '--concurrency must be a whole number from 1 to 32 (got "0")',
    );
    expect(parseEvalRunOptions(base.slice(1), defaults)).toBe(
      'give exactly one tasks file (JSON Lines of SWE-bench instances)',
    );
    expect(parseEvalRunOptions(base.slice(0, 5), defaults)).toMatch(/^give --repos DIR/);
    expect(parseEvalRunOptions(['t', '--out', 'o', '--repos', 'm'], defaults)).toBe(
      '--model-url is required',
    );
  });
});

const task = (id: string, repo = 'acme/calc'): SweBenchTask => ({
  instance_id: id,
  repo,
  base_commit: 'abcdef1',
  problem_statement: 'p',
  test_patch: '',
  FAIL_TO_PASS: ['t::a'],
  PASS_TO_PASS: [],
});
const result = (id: string, resolved: boolean): TaskResult => ({
  instance_id: id,
  model: 'frognano',
  candidates: [
    {
      k: 1,
      exitReason: 'agent',
      steps: 2,
      tokens: { prompt: 1, completion: 1 },
      durationMs: 1,
      resolved,
      reason: resolved ? null : 'no',
    },
  ],
  chosen: 1,
  modelPatch: 'diff',
  durationMs: 1,
});

describe('planEvalRun and runEvalTasks', () => {
  let dir: string;
  let tasksFile: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-run-'));
    execFileSync('git', ['init', '-q', join(dir, 'mirrors', 'acme', 'calc')]);
    tasksFile = join(dir, 'tasks.jsonl');
    await writeFile(tasksFile, ['a', 'b', 'c', 'd'].map((id) => JSON.stringify(task(id))).join('\n'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('skips tasks finished in the folder, runs the rest, records a task that threw, and writes the report', async () => {
    const out = join(dir, 'out');
    await appendResult(out, result('a', true));
    const plan = await planEvalRun({
      tasksFile,
      outDir: out,
      reposDir: join(dir, 'mirrors'),
      repoMap: undefined,
    });
    expect(plan.pending.map((p) => p.task.instance_id)).toEqual(['b', 'c', 'd']);
    expect(plan.pending[0]?.location).toEqual({ kind: 'path', path: join(dir, 'mirrors', 'acme', 'calc') });
    expect(plan.skipped).toEqual({ count: 1, resolved: 1 });
    const lines: string[] = [];
    const ran: string[] = [];
    const written = await runEvalTasks({
      plan,
      outDir: out,
      concurrency: 2,
      model: 'frognano',
      progress: createProgress({ write: (t: string) => lines.push(t) }, plan.total, () => 0),
      runTask: async (t) => {
        ran.push(t.instance_id);
        if (t.instance_id === 'c') throw new Error('the clone failed');
        return result(t.instance_id, t.instance_id === 'b');
      },
    });
    expect(ran.sort()).toEqual(['b', 'c', 'd']);
    const { results } = await readResults(out);
    expect(results.find((r) => r.instance_id === 'c')).toMatchObject({
      candidates: [],
      error: 'the clone failed',
    });
    expect(written.summary).toMatchObject({ tasks: 4, resolved: 2, errors: 1 });
    expect(lines[0]).toBe('[1/4] 1 task already finished in this folder, skipped\n');
    expect(lines.some((l) => l.includes('c: not resolved (the clone failed)'))).toBe(true);
    expect((await readFile(join(out, 'predictions.jsonl'), 'utf8')).trim().split('\n')).toHaveLength(4);
    // A second run with the same folder has nothing left to do.
    const again = await planEvalRun({
      tasksFile,
      outDir: out,
      reposDir: join(dir, 'mirrors'),
      repoMap: undefined,
    });
    expect(again.pending).toEqual([]);
    expect(again.skipped).toEqual({ count: 4, resolved: 2 });
  });

  it('refuses to start when a repository is missing, naming every such task', async () => {
    await writeFile(
      tasksFile,
      [task('a'), task('x', 'acme/gone'), task('y', 'other/gone')].map((t) => JSON.stringify(t)).join('\n'),
    );
    const err = await planEvalRun({
      tasksFile,
      outDir: join(dir, 'out'),
      reposDir: join(dir, 'mirrors'),
      repoMap: undefined,
    }).then(
      () => new Error('planned'),
      (e: Error) => e,
    );
    expect(err).toMatchObject({ code: 'REPO_NOT_FOUND' });
    expect(err.message).toContain('repositories not found for 2 task(s)');
    expect(err.message).toContain('x: no repository for "acme/gone"');
    expect(err.message).toContain('y: no repository for "other/gone"');
  });
});

describe('runEvalTasks: errors that end the evaluation', () => {
  it('stops at a sandbox that can reach the network, and does not record that task as finished', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'eval-run-fatal-'));
    try {
      const location = { kind: 'path' as const, path: dir };
      const plan = {
        pending: ['a', 'b', 'c'].map((id) => ({ task: task(id), location })),
        skipped: { count: 0, resolved: 0 },
        total: 3,
      };
      const ran: string[] = [];
      const run = runEvalTasks({
        plan,
        outDir: dir,
        concurrency: 1,
        model: 'frognano',
        progress: createProgress({ write: () => true }, 3),
        runTask: async (t) => {
          ran.push(t.instance_id);
          if (t.instance_id === 'b')
            throw new AppError('EGRESS_NOT_BLOCKED', 'the sandbox reached 127.0.0.1');
          return result(t.instance_id, true);
        },
      });
      await expect(run).rejects.toMatchObject({ code: 'EGRESS_NOT_BLOCKED' });
      expect(ran).toEqual(['a', 'b']);
      expect((await readResults(dir)).results.map((r) => r.instance_id)).toEqual(['a']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
