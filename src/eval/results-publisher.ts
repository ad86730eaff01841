import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isAppError } from '../app-error.js';
import type { JobContext } from '../pipeline/job-context.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { FinishedJob, JobPublisher } from '../pipeline/publishers/job-publisher.js';
import { localOutcome } from '../pipeline/publishers/folder-publisher.js';
import type { CandidateState } from '../pipeline/steps/candidate-state.js';
import type { PreparedJob } from '../pipeline/sources/job-source.js';
import { gradeTask, type GradeResult } from './grade-task.js';
import { writeTrajectory, type CandidateResult, type TaskResult } from './results-store.js';
import type { SweBenchTask } from './swe-bench-task.js';
import type { TaskTarget } from './task-source.js';
import { cloneAtCommit } from './task-workspace.js';

/** What {@link createResultsPublisher} writes to and grades with. */
export interface ResultsPublisherOptions {
  /** The task, with its hidden `test_patch` (used here only, after every agent has finished). */
  task: SweBenchTask;
  /** The results folder (`--out`): trajectories go to `trajectories/<instance_id>/`. */
  outDir: string;
  /** `model_name_or_path` of the prediction. */
  model: string;
  /** Receives the task's result once graded (or the error that ended grading). */
  onResult: (result: TaskResult | { error: unknown }) => void;
}

/**
 * The publisher of `eval run`: it never writes to GitHub. `publish` ends the job as a local run
 * would (`patch_ready`, `tests_failing`), without touching anything; `finish` writes one trajectory
 * per candidate (`trajectories/<instance_id>/candidate-<k>.json`), then grades EVERY candidate's
 * patch (the chosen one is the prediction; all of them give pass@k), each in a fresh clone at
 * `base_commit` and a fresh probed sandbox (`gradeTask`: the model patch, then the hidden
 * `test_patch`), and hands the {@link TaskResult} to `onResult`. The job's verification (patch
 * checks, base/head tests, tampering) has run before, as for a labelled issue.
 *
 * Grading errors are handed to `onResult` too (the chain only logs what `finish` throws), so that
 * an `EGRESS_NOT_BLOCKED` or `CANCELLED` still stops the evaluation.
 */
export function createResultsPublisher(options: ResultsPublisherOptions): JobPublisher<TaskTarget> {
  return {
    async publish(_ctx, _job, chosen): Promise<Outcome> {
      return localOutcome(chosen, options.outDir);
    },
    async finish(ctx, finished) {
      try {
        options.onResult(await gradeFinished(ctx, finished, options));
      } catch (err) {
        options.onResult({ error: err });
      }
    },
  };
}

async function gradeFinished(
  ctx: JobContext,
  finished: FinishedJob<TaskTarget>,
  options: ResultsPublisherOptions,
): Promise<TaskResult> {
  const { task, outDir } = options;
  const chosen = finished.chosen?.state.names.candidate ?? null;
  const candidates: CandidateResult[] = [];
  let testsMs = 0;
  const base = finished.candidates.find((c) => c.verified && !c.verified.refused)?.verified;
  if (base && !base.refused) testsMs += base.baseTests?.durationMs ?? 0;
  for (const c of finished.candidates) {
    const k = c.names.candidate;
    if (c.trajectory) await writeTrajectory(outDir, task.instance_id, k, c.trajectory);
    const grade = finished.job ? await gradeCandidate(ctx, finished.job, c, options) : null;
    if (c.verified && !c.verified.refused) testsMs += c.verified.tests?.durationMs ?? 0;
    testsMs += grade?.tests?.durationMs ?? 0;
    candidates.push({
      k,
      exitReason: c.trajectory?.exitReason ?? 'error',
      steps: c.trajectory?.steps.length ?? 0,
      tokens: c.trajectory?.totalTokens ?? { prompt: 0, completion: 0 },
      durationMs: (c.trajectory?.elapsedMs ?? 0) + (grade?.tests?.durationMs ?? 0),
      resolved: grade?.resolved ?? false,
      reason: grade?.resolved ? null : candidateReason(c, grade),
    });
  }
  const error = candidates.length === 0 ? outcomeMessage(finished.outcome) : null;
  return {
    instance_id: task.instance_id,
    model: options.model,
    candidates,
    chosen,
    modelPatch: finished.chosen?.patch ?? '',
    durationMs: 0,
    testsMs,
    ...(error ? { error } : {}),
  };
}

/**
 * Grade one candidate in a fresh clone (inside the job's workspace, removed afterwards); `null` when
 * it has no patch to grade (the loop failed before reading one, or made no change).
 */
async function gradeCandidate(
  ctx: JobContext,
  job: PreparedJob<TaskTarget>,
  c: CandidateState,
  options: ResultsPublisherOptions,
): Promise<GradeResult | null> {
  const patch = c.trajectory?.patch ?? '';
  if (patch.trim() === '') return null;
  ctx.signal.throwIfAborted();
  const k = c.names.candidate;
  const { target, policy } = job;
  const workspaceDir = join(dirname(job.dir), `grade-${k}`);
  try {
    await cloneAtCommit(target.repoSource, target.baseCommit, workspaceDir, { signal: ctx.signal });
    return await gradeTask({
      task: options.task,
      modelPatch: patch,
      workspaceDir,
      sandboxId: `${ctx.jobId}-grade-${k}`,
      sandboxFactory: ctx.sandboxes.factory,
      testCommand: policy.testCommand,
      setupCommand: policy.setupCommand,
      timeoutMs: ctx.testTimeoutMs,
      logger: c.names.logger,
      signal: ctx.signal,
    });
  } catch (err) {
    if (isAppError(err, 'CANCELLED') || isAppError(err, 'EGRESS_NOT_BLOCKED')) throw err;
    return { ...notGraded(options.task), reason: `grading failed: ${(err as Error).message}` };
  } finally {
    await rm(workspaceDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

function notGraded(task: SweBenchTask): GradeResult {
  return {
    resolved: false,
    reason: null,
    failToPass: { passed: [], failed: [], missing: [...task.FAIL_TO_PASS] },
    passToPass: { passed: [], failed: [], missing: [...task.PASS_TO_PASS] },
    tests: null,
  };
}

/** Why a candidate did not resolve the task: the grade's reason, else how its loop ended. */
function candidateReason(c: CandidateState, grade: GradeResult | null): string {
  if (grade?.reason) return grade.reason;
  if (c.ended && c.ended.kind !== 'no_change')
    return `the candidate ended without a patch: ${c.note ?? c.ended.kind}`;
  return 'the candidate made no change';
}

function outcomeMessage(o: Outcome): string {
  if ('message' in o) return `${o.kind}: ${o.message}`;
  if ('reason' in o) return `${o.kind}: ${o.reason}`;
  return o.kind;
}
