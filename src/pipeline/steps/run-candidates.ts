import { isAppError } from '../../app-error.js';
import { archiveTrackedFiles } from '../../git/archive-tracked-files.js';
import { runAgentLoop } from '../../leaf/agent-loop.js';
import type { Trajectory } from '../../leaf/trajectory.js';
import { detectTestCommand } from '../detect-test-command.js';
import type { JobContext } from '../job-context.js';
import { DEFAULT_SETUP_TIMEOUT_MS, prepareSandbox } from '../prepare-sandbox.js';
import { sandboxSettingsOf } from '../sandbox-settings.js';
import type { PreparedJob } from '../sources/job-source.js';
import { candidateNames, type CandidateNames } from './candidate-names.js';
import { bestOfN, errorNote, finishedCandidate, type CandidateState } from './candidate-state.js';

/**
 * Step 2 of the chain: the agent, once per candidate (`bestOfN(policy)`), each in its own new
 * sandbox with the tracked files of the checkout copied in, at most `ctx.maxParallelCandidates` at
 * once. A candidate that cannot run becomes a failed candidate; a sandbox that can reach the
 * network ends the job.
 *
 * @returns one state per candidate, in candidate order.
 * @throws AppError `EGRESS_NOT_BLOCKED`; `CANCELLED` (the signal's reason) when the job was cancelled.
 */
export async function runCandidates(ctx: JobContext, job: PreparedJob): Promise<CandidateState[]> {
  const count = bestOfN(job.policy);
  const stepsDone = new Map<number, number>();
  let reportedStep = 0;
  const onStep = async (candidate: number, step: number): Promise<void> => {
    // With several candidates the comment shows the furthest one.
    stepsDone.set(candidate, step);
    const furthest = Math.max(...stepsDone.values());
    if (furthest <= reportedStep) return;
    reportedStep = furthest;
    await ctx.progress({ stage: 'running', step: furthest, maxSteps: job.policy.maxSteps });
  };
  await ctx.progress({ stage: 'running', step: 0, maxSteps: job.policy.maxSteps });
  const names = Array.from({ length: count }, (_, i) => candidateNames(ctx.jobId, i + 1, count, ctx.logger));
  const settled = await settleWithLimit(count, ctx.maxParallelCandidates, (i) =>
    runCandidate(ctx, job, names[i]!, (step) => onStep(i + 1, step)),
  );
  ctx.signal.throwIfAborted();
  return settled.map((result, i) => {
    const n = names[i]!;
    if (result.status === 'fulfilled')
      return finishedCandidate(n, result.value, ctx.jobId, job.policy, ctx.signal);
    if (isAppError(result.reason, 'EGRESS_NOT_BLOCKED')) throw result.reason;
    return { names: n, error: result.reason, note: errorNote(result.reason) };
  });
}

/** One candidate: its sandbox (probed by the factory), the instruction, the Leaf loop. */
async function runCandidate(
  ctx: JobContext,
  job: PreparedJob,
  names: CandidateNames,
  onStep: (step: number) => Promise<void>,
): Promise<Trajectory> {
  const { policy } = job;
  const model = ctx.createModel({
    attempt: names.candidate,
    ...(policy.maxTokensPerTurn !== undefined ? { maxCompletionTokens: policy.maxTokensPerTurn } : {}),
  });
  const { sandbox } = await prepareSandbox({
    sandboxFactory: ctx.sandboxes.factory,
    sandboxId: names.sandboxId,
    sandboxSettings: {
      ...sandboxSettingsOf(policy),
      // The sandbox lives through the setup command and the whole trajectory.
      timeLimitMs: policy.maxTimeSec * 1000 + DEFAULT_SETUP_TIMEOUT_MS,
    },
    tree: job.sandboxTree ?? (() => archiveTrackedFiles(job.dir, { signal: ctx.signal })),
    setupCommand: policy.setupCommand,
    signal: ctx.signal,
    logger: names.logger,
  });
  ctx.sandboxes.track(sandbox);
  try {
    const testHint =
      policy.testCommand ?? (await detectTestCommand(sandbox).catch(() => null))?.command ?? null;
    const instruction = job.instruction(testHint);
    ctx.onFacts({ instruction });
    return await runAgentLoop({
      model,
      sandbox,
      instruction,
      jobId: ctx.jobId,
      limits: {
        maxSteps: policy.maxSteps,
        maxTimeMs: policy.maxTimeSec * 1000,
        maxContextTokens: policy.maxContextTokens,
      },
      signal: ctx.signal,
      logger: names.logger,
      trajectoryPath: ctx.store.trajectoryPath(ctx.jobId, names.trajectoryName),
      onStep: async (step) => {
        ctx.onAgentStep?.(step, names.candidate);
        await onStep(step.index);
      },
    });
  } finally {
    await ctx.sandboxes.destroy(sandbox);
  }
}

/** Run `count` tasks with at most `limit` at once; results in task order, like `Promise.allSettled`. */
async function settleWithLimit<T>(
  count: number,
  limit: number,
  task: (index: number) => Promise<T>,
): Promise<PromiseSettledResult<T>[]> {
  const results: PromiseSettledResult<T>[] = new Array(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      try {
        results[i] = { status: 'fulfilled', value: await task(i) };
      } catch (reason) {
        results[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, count)) }, lane));
  return results;
}
