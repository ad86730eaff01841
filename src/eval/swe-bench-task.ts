import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AppError } from '../app-error.js';

/**
 * Evaluation tasks in SWE-bench's instance format, one JSON object per line (JSON Lines).
 *
 * Field names and meanings follow the SWE-bench dataset card
 * (https://huggingface.co/datasets/princeton-nlp/SWE-bench, "Dataset Structure"): `instance_id`
 * (`owner__name-PR`), `repo` (`owner/name`), `base_commit` (the commit the model starts from),
 * `problem_statement` (the issue text), `test_patch` (the test change, hidden from the model),
 * `FAIL_TO_PASS` / `PASS_TO_PASS` (tests the fix must make pass / must keep passing), `patch` (the
 * gold fix), and `hints_text`, `created_at`, `version`, `environment_setup_commit`, which are kept but
 * not used. In the published datasets the two test lists are strings holding a JSON list; both that
 * and a real list are accepted.
 */

/** A test list: a JSON list of strings, or a string holding one (as in the SWE-bench datasets). */
const testListSchema = z.union(
  [
    z.array(z.string().min(1)),
    z.string().transform((text, ctx) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const list = z.array(z.string().min(1)).safeParse(parsed);
      if (list.success) return list.data;
      ctx.addIssue({ code: 'custom', message: 'must be a list of test ids or a string holding a JSON list' });
      return z.NEVER;
    }),
  ],
  { error: 'must be a list of test ids or a string holding a JSON list' },
);

/**
 * An instance id: also the name of the task's trajectory folder, so no path separators and no
 * leading dot (SWE-bench ids look like `django__django-11099`).
 */
export const instanceIdSchema = z
  .string({ error: 'must be a string' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/, {
    error: 'must be 1 to 200 letters, digits, ".", "_", "+" or "-", starting with a letter or digit',
  });

/** One SWE-bench instance. Unknown fields are kept (other SWE-bench variants add their own). */
export const sweBenchTaskSchema = z.looseObject({
  instance_id: instanceIdSchema,
  repo: z
    .string({ error: 'must be a string' })
    .regex(/^[\w.-]+\/[\w.-]+$/, { error: 'must be "owner/name"' }),
  base_commit: z
    .string({ error: 'must be a string' })
    .regex(/^[0-9a-f]{7,64}$/, { error: 'must be a commit id (7 to 64 hex digits)' }),
  problem_statement: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }),
  test_patch: z.string({ error: 'must be a string' }),
  FAIL_TO_PASS: testListSchema,
  PASS_TO_PASS: testListSchema,
  patch: z.string({ error: 'must be a string' }).optional(),
  hints_text: z.string().optional(),
  created_at: z.string().optional(),
  version: z.union([z.string(), z.number()]).optional(),
  environment_setup_commit: z.string().optional(),
});

/** A parsed SWE-bench instance (test lists as arrays). */
export type SweBenchTask = z.infer<typeof sweBenchTaskSchema>;

/**
 * One prediction, as SWE-bench's evaluation harness reads it (JSON Lines, one per instance):
 * https://www.swebench.com/SWE-bench/guides/evaluation ("Prediction Format").
 */
export const sweBenchPredictionSchema = z.strictObject({
  instance_id: instanceIdSchema,
  model_name_or_path: z.string().min(1),
  /** A unified diff against `base_commit`; empty when the model produced none. */
  model_patch: z.string(),
});

/** A prediction line of `predictions.jsonl`. */
export type SweBenchPrediction = z.infer<typeof sweBenchPredictionSchema>;

/** What {@link parseTasksJsonl} read: the valid tasks, and one message per bad line. */
export interface ParsedTasks {
  tasks: SweBenchTask[];
  /** `<source>:<line>: <problem>` for every line that is not a valid task (blank lines are skipped). */
  problems: string[];
}

/**
 * Parse a JSON Lines file of SWE-bench instances. Every line is checked, so all bad lines are
 * listed at once; a duplicated `instance_id` is a problem on its second line.
 *
 * @param source how messages name the file (its path).
 */
export function parseTasksJsonl(text: string, source: string): ParsedTasks {
  const tasks: SweBenchTask[] = [];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    const at = `${source}:${index + 1}`;
    if (line === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      problems.push(`${at}: not JSON (${(err as Error).message})`);
      return;
    }
    const result = sweBenchTaskSchema.safeParse(value);
    if (!result.success) {
      const issues = result.error.issues.map((i) =>
        i.path.length > 0 ? `${i.path.join('.')} ${i.message}` : i.message,
      );
      problems.push(`${at}: ${issues.join('; ')}`);
      return;
    }
    const first = seen.get(result.data.instance_id);
    if (first !== undefined) {
      problems.push(`${at}: instance_id "${result.data.instance_id}" already used on line ${first}`);
      return;
    }
    seen.set(result.data.instance_id, index + 1);
    tasks.push(result.data);
  });
  return { tasks, problems };
}

/**
 * Read and validate a tasks file.
 *
 * @throws AppError `TASKS_INVALID` (not retryable) listing every bad line in the message and in
 *   `details.problems`, or when the file holds no task; `TASKS_UNREADABLE` when it cannot be read.
 */
export async function loadTasks(path: string): Promise<SweBenchTask[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new AppError('TASKS_UNREADABLE', `cannot read the tasks file ${path}: ${(err as Error).message}`);
  }
  const { tasks, problems } = parseTasksJsonl(text, path);
  if (problems.length > 0) {
    throw new AppError(
      'TASKS_INVALID',
      `${problems.length} bad line${problems.length === 1 ? '' : 's'} in ${path}:\n  ${problems.join('\n  ')}`,
      { details: { problems } },
    );
  }
  if (tasks.length === 0) throw new AppError('TASKS_INVALID', `${path} holds no task`);
  return tasks;
}

/** One line of JSON Lines: the task as SWE-bench writes it (test lists as real lists). */
export function formatTaskLine(task: SweBenchTask): string {
  return `${JSON.stringify(task)}\n`;
}
