import type { EffectivePolicy } from '../config/policy.js';
import type { TrajectoryStep } from '../leaf/trajectory.js';
import type { ChatModel } from '../llm/chat-model.js';
import type { Logger } from '../observability/logger.js';
import { createTrajectoryStore, type TrajectoryStore } from '../observability/trajectory-store.js';
import type { Sandbox, SandboxFactory } from '../sandbox/sandbox.js';
import type { PatchLimits } from './verification/patch-limits.js';
import type { RunFacts } from './run-recorder.js';

/**
 * The policy values one job needs, resolved for its repository (admin policy → org → repo config;
 * see `config/policy.ts`). An `EffectivePolicy` fits as it is. Units: steps, seconds, tokens.
 */
export type JobPolicy = Pick<
  EffectivePolicy,
  | 'testCommand'
  | 'setupCommand'
  | 'branchPrefix'
  | 'label'
  | 'fixesKeyword'
  | 'maxSteps'
  | 'maxTimeSec'
  | 'allowDraftOnFailingTests'
  | 'protectedPaths'
  | 'instructions'
> &
  Partial<
    Pick<
      EffectivePolicy,
      'maxContextTokens' | 'maxTokensPerTurn' | 'candidates' | 'sources' | 'clamps' | 'sandbox'
    >
  >;

/** Progress of a job, reported to the status comment and the queue (or `run`'s progress lines). */
export interface JobProgress {
  stage: 'preparing' | 'running' | 'testing' | 'publishing';
  /** While `running`: the step just finished (0 before the first). */
  step?: number;
  maxSteps?: number;
}

/** What a model client of one candidate is made for. */
export interface ModelContext {
  /** 1-based candidate number. */
  candidate: number;
  /** The policy's `maxTokensPerTurn`: the request's `max_completion_tokens`; absent = the Leaf default. */
  maxCompletionTokens?: number;
}

/**
 * The sandboxes of one job: every one comes from the probed factory (see
 * `createProbedSandboxFactory`), and the ones alive are destroyed by the cleanup step.
 */
export interface JobSandboxes {
  /** The probed factory: every sandbox it returns has passed the egress probe. */
  readonly factory: SandboxFactory;
  /** Note a sandbox so that cleanup destroys it if its step does not. */
  track(sandbox: Sandbox): void;
  /** Destroy a tracked sandbox now (its step is done with it). */
  destroy(sandbox: Sandbox): Promise<void>;
  /** Destroy whatever is still tracked; errors are logged. */
  destroyAll(): Promise<void>;
}

/**
 * Everything one job run needs from its caller, in one object: made once per job by its entry
 * point (`runJob` for the worker, `frognano-bot run`) and handed to the source, the steps and the
 * publisher. What the source finds out (policy, checkout) is in {@link PreparedJob} instead.
 */
export interface JobContext {
  /** Letters, digits, `.`, `_`, `-`: names the store folder, the sandboxes, log lines. */
  jobId: string;
  logger: Logger;
  /**
   * Aborting cancels the job; `signal.reason` says why and by whom (an AppError `CANCELLED` with
   * `details.by`). Steps call `signal.throwIfAborted()`.
   */
  signal: AbortSignal;
  /** The job's own folder (made and removed by the chain); the source puts its checkout in it. */
  workDir: string;
  /** Trajectories and test logs: `<dir>/<jobId>/…`. */
  store: TrajectoryStore;
  sandboxes: JobSandboxes;
  /** Reports a stage or a step; never throws (errors of the reporter are logged). */
  progress: (p: JobProgress) => Promise<void>;
  /** A model client for one candidate (called once per candidate, in order; nothing is shared). */
  createModel: (context: ModelContext) => ChatModel;
  /** Candidates run at once, each in its own sandbox; more wait for a free lane. */
  maxParallelCandidates: number;
  /** Limits of a patch (files, lines, file size, binary files); absent fields use the defaults. */
  patchLimits?: Partial<PatchLimits>;
  /** Wall-clock limit of the test command, in milliseconds (default 30 min). */
  testTimeoutMs?: number;
  /** Receives facts for the run record (policy, base commit, instruction, chosen patch). */
  onFacts: (facts: Partial<RunFacts>) => void;
  now: () => Date;
  /** Keep the job's workspace (with the chosen patch staged) instead of removing it; `run --keep`. */
  keepWorkspace?: boolean;
  /** Run no tests (`run --test-command none`). */
  skipTests?: boolean;
  /** Called after every agent step of every candidate (`run`'s progress lines); errors are not caught. */
  onAgentStep?: (step: TrajectoryStep, candidate: number) => void;
}

/** What a caller gives {@link createJobContext}; the rest is derived. */
export interface JobContextInput {
  jobId: string;
  logger: Logger;
  signal: AbortSignal;
  workDir: string;
  trajectoryDir: string;
  /** Already probed (see `createProbedSandboxFactory`). */
  sandboxFactory: SandboxFactory;
  progress?: (p: JobProgress) => Promise<void> | void;
  createModel: (context: ModelContext) => ChatModel;
  maxParallelCandidates?: number;
  patchLimits?: Partial<PatchLimits>;
  testTimeoutMs?: number;
  onFacts?: (facts: Partial<RunFacts>) => void;
  now?: () => Date;
  keepWorkspace?: boolean;
  skipTests?: boolean;
  onAgentStep?: (step: TrajectoryStep, candidate: number) => void;
}

/** Candidates run at once when {@link JobContextInput.maxParallelCandidates} is not given. */
export const DEFAULT_PARALLEL_CANDIDATES = 3;

/** Build the {@link JobContext} of one job. */
export function createJobContext(input: JobContextInput): JobContext {
  const { logger } = input;
  const report = input.progress;
  return {
    jobId: input.jobId,
    logger,
    signal: input.signal,
    workDir: input.workDir,
    store: createTrajectoryStore({ dir: input.trajectoryDir, logger }),
    sandboxes: createJobSandboxes(input.sandboxFactory, logger),
    progress: async (p) => {
      try {
        await report?.(p);
      } catch (err) {
        logger.warn({ err }, 'progress report failed');
      }
    },
    createModel: input.createModel,
    maxParallelCandidates: input.maxParallelCandidates ?? DEFAULT_PARALLEL_CANDIDATES,
    ...(input.patchLimits ? { patchLimits: input.patchLimits } : {}),
    ...(input.testTimeoutMs !== undefined ? { testTimeoutMs: input.testTimeoutMs } : {}),
    onFacts: input.onFacts ?? (() => undefined),
    now: input.now ?? (() => new Date()),
    ...(input.keepWorkspace ? { keepWorkspace: true } : {}),
    ...(input.skipTests ? { skipTests: true } : {}),
    ...(input.onAgentStep ? { onAgentStep: input.onAgentStep } : {}),
  };
}

function createJobSandboxes(factory: SandboxFactory, logger: Logger): JobSandboxes {
  const alive = new Set<Sandbox>();
  const destroy = async (sandbox: Sandbox): Promise<void> => {
    alive.delete(sandbox);
    await sandbox.destroy();
  };
  return {
    factory,
    track: (sandbox) => void alive.add(sandbox),
    destroy,
    async destroyAll() {
      for (const sandbox of [...alive]) {
        await destroy(sandbox).catch((err: unknown) =>
          logger.error({ err }, 'could not destroy the sandbox'),
        );
      }
    },
  };
}
