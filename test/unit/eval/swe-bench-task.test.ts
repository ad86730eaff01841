import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { loadTasks, parseTasksJsonl, sweBenchPredictionSchema } from '../../../src/eval/swe-bench-task.js';

// A line shaped like the published SWE-bench datasets: the test lists are strings holding JSON lists.
const DATASET_LINE = {
  repo: 'astropy/astropy',
  instance_id: 'astropy__astropy-12907',
  base_commit: 'd16bfe05a744909de4b27f5875fe0d4ed41ce607',
  patch: 'diff --git a/x b/x\n',
  test_patch: 'diff --git a/t b/t\n',
  problem_statement: 'Modeling separability is wrong for nested CompoundModels',
  hints_text: '',
  created_at: '2022-03-03T15:14:54Z',
  version: '4.3',
  FAIL_TO_PASS: '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
  PASS_TO_PASS: '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
  environment_setup_commit: '298ccb478e6bf092953bca67a3d29dc6c35f6752',
};

describe('parseTasksJsonl', () => {
  it('reads a SWE-bench dataset line, turning the JSON-encoded test lists into lists', () => {
    const { tasks, problems } = parseTasksJsonl(`${JSON.stringify(DATASET_LINE)}\n`, 'tasks.jsonl');
    expect(problems).toEqual([]);
    expect(tasks[0]?.FAIL_TO_PASS).toEqual([
      'astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]',
    ]);
    expect(tasks[0]?.PASS_TO_PASS).toEqual(['astropy/modeling/tests/test_separable.py::test_coord_matrix']);
    expect(tasks[0]?.environment_setup_commit).toBe(DATASET_LINE.environment_setup_commit);
  });

  it('accepts real lists and keeps fields of other SWE-bench variants', () => {
    const line = { ...DATASET_LINE, FAIL_TO_PASS: ['a::b'], PASS_TO_PASS: [], difficulty: '15 min - 1 hour' };
    const { tasks } = parseTasksJsonl(JSON.stringify(line), 't');
    expect(tasks[0]).toMatchObject({
      FAIL_TO_PASS: ['a::b'],
      PASS_TO_PASS: [],
      difficulty: '15 min - 1 hour',
    });
  });

  it('lists every bad line with its number, and skips blank lines', () => {
    const lines = [
      JSON.stringify(DATASET_LINE),
      '',
      '{not json',
      JSON.stringify({ ...DATASET_LINE, instance_id: 'b', FAIL_TO_PASS: 'not a list' }),
      JSON.stringify({ ...DATASET_LINE, instance_id: '../escape', base_commit: 'main' }),
      JSON.stringify(DATASET_LINE),
    ];
    const { tasks, problems } = parseTasksJsonl(lines.join('\n'), 'tasks.jsonl');
    expect(tasks).toHaveLength(1);
    expect(problems).toHaveLength(4);
    expect(problems[0]).toMatch(/^tasks\.jsonl:3: not JSON/);
    expect(problems[1]).toBe(
      'tasks.jsonl:4: FAIL_TO_PASS must be a list of test ids or a string holding a JSON list',
    );
    expect(problems[2]).toMatch(/^tasks\.jsonl:5: instance_id must be .*; base_commit must be a commit id/);
    expect(problems[3]).toBe('tasks.jsonl:6: instance_id "astropy__astropy-12907" already used on line 1');
  });

  it('names missing required fields', () => {
    const { problems } = parseTasksJsonl(JSON.stringify({ instance_id: 'x' }), 'f');
    for (const field of [
      'repo',
      'base_commit',
      'problem_statement',
      'test_patch',
      'FAIL_TO_PASS',
      'PASS_TO_PASS',
    ]) {
      expect(problems[0]).toContain(field);
    }
  });
});

describe('loadTasks', () => {
  it('throws TASKS_INVALID listing all bad lines, and for a file without tasks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tasks-'));
    try {
      const file = join(dir, 'tasks.jsonl');
      await writeFile(file, `[]\n${JSON.stringify(DATASET_LINE)}\n42\n`);
      const err = await loadTasks(file).catch((e: unknown) => e);
      expect(isAppError(err, 'TASKS_INVALID')).toBe(true);
      expect((err as Error).message).toContain('2 bad lines');
      expect((err as Error).message).toContain(`${file}:1:`);
      expect((err as Error).message).toContain(`${file}:3:`);
      await writeFile(file, '\n');
      await expect(loadTasks(file)).rejects.toThrow('holds no task');
      await expect(loadTasks(join(dir, 'absent.jsonl'))).rejects.toMatchObject({ code: 'TASKS_UNREADABLE' });
      await writeFile(file, JSON.stringify(DATASET_LINE));
      expect((await loadTasks(file)).map((t) => t.instance_id)).toEqual(['astropy__astropy-12907']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sweBenchPredictionSchema', () => {
  it('holds exactly the fields of SWE-bench predictions', () => {
    const ok = { instance_id: 'a__b-1', model_name_or_path: 'm', model_patch: '' };
    expect(sweBenchPredictionSchema.parse(ok)).toEqual(ok);
    expect(sweBenchPredictionSchema.safeParse({ ...ok, extra: 1 }).success).toBe(false);
    expect(sweBenchPredictionSchema.safeParse({ instance_id: 'a', model_patch: '' }).success).toBe(false);
  });
});
