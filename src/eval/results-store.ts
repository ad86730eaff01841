import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { instanceIdSchema, sweBenchPredictionSchema, type SweBenchPrediction } from './swe-bench-task.js';

/**
 * The results folder of an evaluation (`--out DIR`):
 *
 * - `results.jsonl`: one {@link TaskResult} per finished task, appended when the task ends, so a
 *   rerun with the same `--out` skips what is there ({@link finishedTasks});
 * - `trajectories/<instance_id>/candidate-<k>.json`: the trajectory of candidate k (1-based);
 * - `predictions.jsonl`: SWE-bench predictions, one per task (the best-of-N choice's patch),
 *   rewritten from `results.jsonl` ({@link writePredictions});
 * - `report.md`, `report.html`, `summary.json` (report.ts).
 */

export const RESULTS_FILE = 'results.jsonl';
export const PREDICTIONS_FILE = 'predictions.jsonl';

const candidateResultSchema = z.object({
  /** 1-based. */
  k: z.number().int().min(1),
  /** The agent loop's exit reason (`agent`, `max_steps`, `max_time`, `error`…). */
  exitReason: z.string(),
  steps: z.number().int().min(0),
  tokens: z.object({ prompt: z.number().min(0), completion: z.number().min(0) }),
  /** Wall-clock time of the candidate (agent loop and grading), milliseconds. */
  durationMs: z.number().min(0),
  resolved: z.boolean(),
  /** Why not resolved (grade-task.ts); `null` when resolved. */
  reason: z.string().nullable(),
});

/** One finished task of an evaluation. */
export const taskResultSchema = z.object({
  instance_id: instanceIdSchema,
  /** The model, as `model_name_or_path` of the prediction (e.g. `microsoft/FrogNano-4B-2609`). */
  model: z.string().min(1),
  candidates: z.array(candidateResultSchema),
  /** The k of the candidate the pipeline's best-of-N choice picked (choose-attempt.ts); `null` = none. */
  chosen: z.number().int().min(1).nullable(),
  /** The chosen candidate's patch (`''` when none): what `predictions.jsonl` holds. */
  modelPatch: z.string(),
  /** Wall-clock time of the whole task, milliseconds. */
  durationMs: z.number().min(0),
  /**
   * Wall-clock time of the task's test runs (the base and head runs of the verification, the
   * grading runs), milliseconds: the part of `durationMs` that is the tests' own.
   */
  testsMs: z.number().min(0).optional(),
  /** An error that ended the task before any candidate finished, e.g. the repository did not clone. */
  error: z.string().nullable().optional(),
});

export type CandidateResult = z.infer<typeof candidateResultSchema>;
export type TaskResult = z.infer<typeof taskResultSchema>;

/** Whether the best-of-N choice of a task resolved it. */
export function choiceResolved(result: TaskResult): boolean {
  return result.candidates.some((c) => c.k === result.chosen && c.resolved);
}

/** Where the trajectory of candidate `k` (1-based) of a task goes. */
export function trajectoryPath(outDir: string, instanceId: string, k: number): string {
  return join(outDir, 'trajectories', instanceId, `candidate-${k}.json`);
}

/** Write a candidate's trajectory (any JSON value) to {@link trajectoryPath}. */
export async function writeTrajectory(
  outDir: string,
  instanceId: string,
  k: number,
  trajectory: unknown,
): Promise<string> {
  const path = trajectoryPath(outDir, instanceId, k);
  await mkdir(join(outDir, 'trajectories', instanceId), { recursive: true });
  await writeFile(path, `${JSON.stringify(trajectory, null, 2)}\n`);
  return path;
}

/** Append a finished task to `results.jsonl` (one line, written with one call). */
export async function appendResult(outDir: string, result: TaskResult): Promise<void> {
  await mkdir(outDir, { recursive: true });
  await appendFile(join(outDir, RESULTS_FILE), `${JSON.stringify(taskResultSchema.parse(result))}\n`);
}

/**
 * The results of `results.jsonl`, last line per task winning. Lines that do not parse (a run killed
 * while writing) are skipped and named in `skipped` (`results.jsonl:<line>`): their tasks run again.
 */
export async function readResults(outDir: string): Promise<{ results: TaskResult[]; skipped: string[] }> {
  let text: string;
  try {
    text = await readFile(join(outDir, RESULTS_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { results: [], skipped: [] };
    throw err;
  }
  const byId = new Map<string, TaskResult>();
  const skipped: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let parsed;
    try {
      parsed = taskResultSchema.safeParse(JSON.parse(line));
    } catch {
      parsed = undefined;
    }
    if (parsed?.success) byId.set(parsed.data.instance_id, parsed.data);
    else skipped.push(`${RESULTS_FILE}:${i + 1}`);
  });
  return { results: [...byId.values()], skipped };
}

/** Instance ids already finished in `outDir` (a rerun with the same `--out` skips them). */
export async function finishedTasks(outDir: string): Promise<Set<string>> {
  return new Set((await readResults(outDir)).results.map((r) => r.instance_id));
}

/** The SWE-bench prediction of a finished task. */
export function predictionOf(result: TaskResult): SweBenchPrediction {
  return sweBenchPredictionSchema.parse({
    instance_id: result.instance_id,
    model_name_or_path: result.model,
    model_patch: result.modelPatch,
  });
}

/** Rewrite `predictions.jsonl` from the results (one line per task, in the order given). */
export async function writePredictions(outDir: string, results: readonly TaskResult[]): Promise<void> {
  const lines = results.map((r) => `${JSON.stringify(predictionOf(r))}\n`);
  await writeFile(join(outDir, PREDICTIONS_FILE), lines.join(''));
}
