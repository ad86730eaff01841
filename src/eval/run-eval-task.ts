import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError, isAppError } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import { createJobContext, type JobContextInput } from '../pipeline/job-context.js';
import { runPipeline } from '../pipeline/run-pipeline.js';
import type { SandboxFactory } from '../sandbox/sandbox.js';
import type { EvalRunOptions } from './eval-run.js';
import { createResultsPublisher } from './results-publisher.js';
import type { TaskResult } from './results-store.js';
import type { RepoLocation } from './resolve-repo.js';
import type { SweBenchTask } from './swe-bench-task.js';
import { createTaskSource, evalJobPolicy } from './task-source.js';

/** What {@link createEvalTaskRunner} runs every task with. */
export interface EvalTaskRunnerInput {
  options: Pick<
    EvalRunOptions,
    'outDir' | 'candidates' | 'maxSteps' | 'maxTimeSec' | 'testTimeoutSec' | 'testCommand' | 'setupCommand'
  >;
  /** `model_name_or_path` of the predictions. */
  model: string;
  /** Already probed (`createProbedSandboxFactory`): the agent's, the tests' and the grading's sandboxes. */
  sandboxFactory: SandboxFactory;
  /** A model client per candidate (as for a labelled issue: nothing shared between candidates). */
  createModel: JobContextInput['createModel'];
  logger: Logger;
  /** Aborting stops the evaluation (the task in flight ends `CANCELLED`). */
  signal: AbortSignal;
  /** Parent of the jobs' workspaces and of the trajectory store (a temporary folder). */
  workDir: string;
  now?: () => number;
}

/**
 * The per-task work of `eval run` (`runEvalTasks`'s `runTask`): one `runPipeline` per task, with the
 * task source (the repository at `base_commit`, the problem statement) and the results publisher
 * (trajectories, grading with the hidden tests, no GitHub) — the same chain, sandbox probe, Leaf
 * loop, limits and verification as a labelled issue.
 *
 * @throws AppError `EGRESS_NOT_BLOCKED` when a sandbox reached a probe target, `CANCELLED` when the
 *   signal aborted: both stop the evaluation (`FATAL_CODES`). Other failures of a task become its
 *   result (`error`, no candidate), not an exception.
 */
export function createEvalTaskRunner(
  input: EvalTaskRunnerInput,
): (task: SweBenchTask, location: RepoLocation) => Promise<TaskResult> {
  const now = input.now ?? Date.now;
  const policy = evalJobPolicy(input.options);
  return async (task, location) => {
    const started = now();
    let egress: unknown;
    const factory = watchEgress(input.sandboxFactory, (err) => (egress ??= err));
    let graded: TaskResult | { error: unknown } | undefined;
    const store = await mkdtemp(join(input.workDir, 'store-'));
    try {
      const jobId = `eval-${task.instance_id.replace(/[^A-Za-z0-9._-]/g, '-')}`.slice(0, 120);
      const ctx = createJobContext({
        jobId,
        logger: input.logger.child({ instanceId: task.instance_id }),
        signal: input.signal,
        workDir: input.workDir,
        trajectoryDir: store,
        sandboxFactory: factory,
        createModel: input.createModel,
        testTimeoutMs: input.options.testTimeoutSec * 1000,
      });
      const outcome = await runPipeline(
        ctx,
        createTaskSource({ task, location, policy }),
        createResultsPublisher({
          task,
          outDir: input.options.outDir,
          model: input.model,
          onResult: (r) => (graded = r),
        }),
      );
      if (egress !== undefined) throw egress;
      if (input.signal.aborted || outcome.kind === 'cancelled')
        throw isAppError(input.signal.reason, 'CANCELLED')
          ? input.signal.reason
          : new AppError('CANCELLED', 'the evaluation was interrupted');
      if (!graded) throw new AppError('INTERNAL', 'the results publisher gave no result');
      if ('error' in graded && !('instance_id' in graded)) throw graded.error;
      return { ...graded, durationMs: now() - started };
    } finally {
      await rm(store, { recursive: true, force: true }).catch(() => undefined);
    }
  };
}

/**
 * The factory, noting an `EGRESS_NOT_BLOCKED` from its `create`: the chain turns it into a
 * `sandbox_failed` outcome, but for an evaluation a sandbox with network ends the whole run.
 */
function watchEgress(factory: SandboxFactory, onEgress: (err: unknown) => void): SandboxFactory {
  return {
    ...factory,
    async create(options) {
      try {
        return await factory.create(options);
      } catch (err) {
        if (isAppError(err, 'EGRESS_NOT_BLOCKED')) onEgress(err);
        throw err;
      }
    },
  };
}
