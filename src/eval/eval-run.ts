import { parseArgs } from 'node:util';
import { AppError, isAppError } from '../app-error.js';
import { EVAL_LIMITS, type EvalPolicy } from '../config/policy.js';
import type { Progress } from './progress.js';
import { createRepoResolver, loadRepoMapping, type RepoLocation } from './resolve-repo.js';
import {
  appendResult,
  choiceResolved,
  finishedTasks,
  readResults,
  type TaskResult,
} from './results-store.js';
import { loadTasks, type SweBenchTask } from './swe-bench-task.js';
import { writeReport, type WrittenReport } from './write-report.js';

/**
 * `eval run` without the per-task pipeline call: its options, the plan (tasks loaded, repositories
 * resolved, tasks finished in `--out` skipped) and the loop that runs the pending tasks `concurrency`
 * at a time, appends each result and writes the report at the end. The per-task work (agent loop,
 * candidates, grading) is the `runTask` function the caller passes.
 */

/** The options of `eval run`, validated. Units in the names (seconds). */
export interface EvalRunOptions {
  tasksFile: string;
  modelUrl: string;
  model: string | undefined;
  outDir: string;
  candidates: number;
  concurrency: number;
  maxSteps: number;
  maxTimeSec: number;
  testTimeoutSec: number;
  reposDir: string | undefined;
  repoMap: string | undefined;
  testCommand: string | null;
  setupCommand: string | null;
}

/** The flags of `eval run` (node:util parseArgs), for the command's usage text to mirror. */
export const EVAL_RUN_FLAGS = {
  'model-url': { type: 'string' },
  model: { type: 'string' },
  out: { type: 'string' },
  candidates: { type: 'string' },
  attempts: { type: 'string' },
  concurrency: { type: 'string' },
  'max-steps': { type: 'string' },
  'max-time': { type: 'string' },
  'test-timeout': { type: 'string' },
  repos: { type: 'string' },
  'repo-map': { type: 'string' },
  'test-command': { type: 'string' },
  'setup-command': { type: 'string' },
} as const;

function bounded(
  value: string | undefined,
  flag: string,
  bounds: { min: number; max: number },
  fallback: number,
): number | string {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (Number.isInteger(n) && n >= bounds.min && n <= bounds.max) return n;
  return `${flag} must be a whole number from ${bounds.min} to ${bounds.max} (got "${value}")`;
}

/**
 * Parse `eval run tasks.jsonl --model-url URL --out DIR [...]`. `--attempts K` is the name
 * of `--candidates K` and is accepted as an alias; both with different values is an error.
 *
 * @param defaults the policy's `eval` section resolved (`resolveEvalDefaults`).
 * @returns the options, or the usage error message.
 */
export function parseEvalRunOptions(
  argv: readonly string[],
  defaults: Required<EvalPolicy>,
): EvalRunOptions | string {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: EVAL_RUN_FLAGS, allowPositionals: true, strict: true });
  } catch (err) {
    return (err as Error).message;
  }
  const { values: v, positionals } = parsed;
  if (positionals.length !== 1) return 'give exactly one tasks file (JSON Lines of SWE-bench instances)';
  if (!v['model-url']) return '--model-url is required';
  if (!v.out) return '--out is required (the results folder; a rerun with the same folder resumes)';
  if (v.candidates !== undefined && v.attempts !== undefined && v.candidates !== v.attempts) {
    return `--candidates ${v.candidates} and --attempts ${v.attempts} disagree (--attempts is the old name of --candidates)`;
  }
  const numbers = {
    candidates: bounded(
      v.candidates ?? v.attempts,
      v.candidates ? '--candidates' : '--attempts',
      EVAL_LIMITS.candidates,
      defaults.candidates,
    ),
    concurrency: bounded(v.concurrency, '--concurrency', EVAL_LIMITS.concurrency, defaults.concurrency),
    maxSteps: bounded(v['max-steps'], '--max-steps', EVAL_LIMITS.maxSteps, defaults.maxSteps),
    maxTimeSec: bounded(v['max-time'], '--max-time', EVAL_LIMITS.maxTimeSec, defaults.maxTimeSec),
    testTimeoutSec: bounded(
      v['test-timeout'],
      '--test-timeout',
      EVAL_LIMITS.testTimeoutSec,
      defaults.testTimeoutSec,
    ),
  };
  for (const value of Object.values(numbers)) if (typeof value === 'string') return value;
  if (!v.repos && !v['repo-map'])
    return 'give --repos DIR (a folder of mirrors) or --repo-map FILE (owner/name: path or URL)';
  return {
    tasksFile: positionals[0] ?? '',
    modelUrl: v['model-url'],
    model: v.model,
    outDir: v.out,
    ...(numbers as Record<keyof typeof numbers, number>),
    reposDir: v.repos,
    repoMap: v['repo-map'],
    testCommand: v['test-command'] ?? null,
    setupCommand: v['setup-command'] ?? null,
  };
}

/** Errors that end the whole evaluation instead of one task: an interrupt, a sandbox with network. */
export const FATAL_CODES = ['CANCELLED', 'EGRESS_NOT_BLOCKED'] as const;

/** What {@link planEvalRun} found. */
export interface EvalRunPlan {
  /** Tasks to run, with where their repository is. */
  pending: Array<{ task: SweBenchTask; location: RepoLocation }>;
  /** Tasks finished by an earlier run in the same `--out`, and how many of them were resolved. */
  skipped: { count: number; resolved: number };
  /** Total tasks of the file. */
  total: number;
}

/**
 * Load the tasks, skip those already in `outDir`'s results, and resolve the repository of every
 * other one, before anything runs (so a missing mirror fails in seconds, not after hours).
 *
 * @throws AppError `TASKS_INVALID` / `TASKS_UNREADABLE` (tasks file), `CONFIG_INVALID` (mapping),
 *   `REPO_NOT_FOUND` listing every task whose repository is not found.
 */
export async function planEvalRun(
  options: Pick<EvalRunOptions, 'tasksFile' | 'outDir' | 'reposDir' | 'repoMap'>,
): Promise<EvalRunPlan> {
  const tasks = await loadTasks(options.tasksFile);
  const done = await finishedTasks(options.outDir);
  const { results } = await readResults(options.outDir);
  const mapping = options.repoMap ? await loadRepoMapping(options.repoMap) : undefined;
  const resolve = createRepoResolver({ mapping, reposDir: options.reposDir });
  const pending: EvalRunPlan['pending'] = [];
  const missing: string[] = [];
  for (const task of tasks) {
    if (done.has(task.instance_id)) continue;
    try {
      pending.push({ task, location: resolve(task.repo) });
    } catch (err) {
      missing.push(`${task.instance_id}: ${(err as Error).message}`);
    }
  }
  if (missing.length > 0) {
    throw new AppError(
      'REPO_NOT_FOUND',
      `repositories not found for ${missing.length} task(s):\n  ${missing.join('\n  ')}`,
    );
  }
  const ids = new Set(tasks.map((t) => t.instance_id));
  const earlier = results.filter((r) => ids.has(r.instance_id));
  return {
    pending,
    skipped: { count: earlier.length, resolved: earlier.filter(choiceResolved).length },
    total: tasks.length,
  };
}

/**
 * Run the pending tasks of a plan, `concurrency` at a time, appending each result to
 * `results.jsonl` as it finishes, then write the report.
 *
 * @param runTask the per-task work; a task that throws is recorded as a result with `error` and no
 *   candidate (not resolved), so one broken task does not end the evaluation — except for
 *   {@link FATAL_CODES}, which stop the run (tasks in flight finish) and are rethrown.
 * @throws the first `CANCELLED` or `EGRESS_NOT_BLOCKED` error of a task (the report is not written).
 */
export async function runEvalTasks(input: {
  plan: EvalRunPlan;
  outDir: string;
  concurrency: number;
  model: string;
  progress: Progress;
  runTask: (task: SweBenchTask, location: RepoLocation) => Promise<TaskResult>;
  now?: () => number;
}): Promise<WrittenReport> {
  const now = input.now ?? Date.now;
  input.progress.skipped(input.plan.skipped.count, input.plan.skipped.resolved);
  const queue = [...input.plan.pending];
  let fatal: unknown;
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next && fatal === undefined; next = queue.shift()) {
      const started = now();
      let result: TaskResult;
      try {
        result = await input.runTask(next.task, next.location);
      } catch (err) {
        if (FATAL_CODES.some((code) => isAppError(err, code))) {
          // Not a result of the task: it must run again in the next run with this folder.
          fatal ??= err;
          queue.length = 0;
          return;
        }
        const error = err instanceof Error ? err.message : String(err);
        result = {
          instance_id: next.task.instance_id,
          model: input.model,
          candidates: [],
          chosen: null,
          modelPatch: '',
          durationMs: now() - started,
          error,
        };
      }
      await appendResult(input.outDir, result);
      const resolved = choiceResolved(result);
      // Without a chosen candidate (none made a change, every patch refused…), the first one says why.
      const shown = result.candidates.find((c) => c.k === result.chosen) ?? result.candidates[0];
      const note = result.error ?? shown?.reason ?? null;
      input.progress.finished({ instanceId: result.instance_id, resolved, note });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, input.concurrency) }, worker));
  if (fatal !== undefined) throw fatal;
  input.progress.done();
  return writeReport(input.outDir);
}
