import { rm } from 'node:fs/promises';
import type { GitIdentity } from '../git/commit-changes.js';
import type { ChatModel } from '../llm/chat-model.js';
import type { Logger } from '../observability/logger.js';
import type { EgressTarget } from '../sandbox/egress-probe.js';
import { cloneFolderPrefix, jobFolders } from '../sandbox/local/leftover-folders.js';
import type { SandboxFactory } from '../sandbox/sandbox.js';
import type { GitHubClient } from './github-client.js';
import {
  createJobContext,
  type JobContext,
  type JobPolicy,
  type JobProgress,
  type ModelContext,
} from './job-context.js';
import type { JobRequest } from './job-request.js';
import type { Outcome } from './outcome.js';
import { createProbedSandboxFactory } from './probed-sandbox-factory.js';
import type { PublishPullRequest } from './publish-change.js';
import { createPullRequestPublisher } from './publishers/pull-request-publisher.js';
import { runPipeline } from './run-pipeline.js';
import type { RunFacts } from './run-recorder.js';
import { createGitHubIssueSource, tokenFromOctokit } from './sources/github-issue-source.js';
import type { PatchLimits } from './verification/patch-limits.js';

export type { JobPolicy, JobProgress, ModelContext } from './job-context.js';
export { DEFAULT_PARALLEL_CANDIDATES } from './job-context.js';
export { bestOfN } from './steps/candidate-state.js';
export { sandboxSettingsOf } from './sandbox-settings.js';

/** What {@link runJob} needs from the process (built per job: the client is per installation). */
export interface RunJobDeps {
  /** Installation-authenticated client (Probot's `app.auth(installationId)` or `@octokit/rest`). */
  octokit: GitHubClient;
  /**
   * A valid installation token, kept in worker memory only: it goes to git through its environment
   * (never a URL on disk, argv, the sandbox or a log). Called at clone and again at push time.
   * Default: `octokit.auth({ type: 'installation' })`, which Probot and `@octokit/auth-app` cache
   * and renew.
   */
  getInstallationToken?: () => Promise<string>;
  /** `${protocol}://${host}` of GitHub (Enterprise Server): clone URLs and the egress probe. */
  gitBaseUrl: string;
  sandboxFactory: SandboxFactory;
  /**
   * A model client for one candidate (called once per candidate, in candidate order; `candidate` is
   * 1-based). Candidates are independent: nothing is shared between their conversations.
   */
  createModel: (context: ModelContext) => ChatModel;
  /**
   * Candidates of a best-of-N job run at once, each in its own sandbox (default
   * {@link DEFAULT_PARALLEL_CANDIDATES}); more wait for a free lane.
   */
  maxParallelCandidates?: number;
  /** Limits of a patch (files, lines, file size, binary files); default `DEFAULT_PATCH_LIMITS`. */
  patchLimits?: Partial<PatchLimits>;
  /** Base URL of the model server, probed from inside the sandbox (it must NOT be reachable there). */
  modelUrl: string;
  /**
   * What the egress probe of every sandbox that runs model or repository code (the agent's, and
   * each test run's) must not reach; one that answers stops the job (`EGRESS_NOT_BLOCKED`).
   * Default: the GitHub host (`gitBaseUrl`) and the model server (`modelUrl`); the worker passes
   * SANDBOX_EGRESS_PROBE_TARGETS (which adds Redis and the Kubernetes API server).
   */
  egressProbeTargets?: readonly EgressTarget[];
  /** Where temporary clones are made (one folder per job, removed at the end). */
  workDir: string;
  /** Trajectory store folder: `<dir>/<jobId>/trajectory.json` and test logs. */
  trajectoryDir: string;
  /**
   * The repository's effective policy. Throw AppError `POLICY_REFUSED` / `CONFIG_INVALID` (with
   * `details.messages`) to refuse the job.
   */
  resolvePolicy: (data: JobRequest, context: { defaultBranch: string }) => Promise<JobPolicy>;
  /** Author of the bot's commits: `<slug>[bot]`, `<id>+<slug>[bot]@users.noreply.<host>`. */
  appIdentity: GitIdentity;
  /** `publishPullRequest` from `src/github-app/pull-request.ts`. */
  publishPullRequest: PublishPullRequest;
  /** Wall-clock limit of the test command, in milliseconds (default 30 min). */
  testTimeoutMs?: number;
  /** Receives facts for the run record (policy, base commit, instruction, chosen patch); errors are not caught. */
  onFacts?: (facts: Partial<RunFacts>) => void;
  now?: () => Date;
}

/** Per-run context of {@link runJob}. */
export interface RunJobContext {
  /**
   * Aborting cancels the job (label removed, issue closed, shutdown). The reason may name who
   * cancelled: an AppError `CANCELLED` with `details.by`, or `{ by: string | null, reason }`.
   */
  signal: AbortSignal;
  logger: Logger;
  /** Called at each stage and after every agent step. Errors it throws are logged, not fatal. */
  progress: (p: JobProgress) => Promise<void>;
  /** The BullMQ job id (letters, digits, `.`, `_`, `-`); default derived from the job data. */
  jobId?: string;
}

/** Per-run context of {@link runJob}. */
export interface RunJobContext {
  /**
   * Aborting cancels the job (label removed, issue closed, shutdown); `signal.reason` is an
   * AppError `CANCELLED` whose `details.by` names who cancelled.
   */
  signal: AbortSignal;
  logger: Logger;
  /** Called at each stage and after every agent step. Errors it throws are logged, not fatal. */
  progress: (p: JobProgress) => Promise<void>;
  /** The BullMQ job id (letters, digits, `.`, `_`, `-`); default derived from the job data. */
  jobId?: string;
}

/**
 * Run one labelled issue (DESIGN.md "The way a job flows"): the chain of `runPipeline` with the
 * GitHub issue source (issue, repository, policy, shallow clone) and the pull request publisher
 * (commit, push, draft pull request with the evidence), every sandbox from the probed factory
 * (GitHub and the model server, or `egressProbeTargets`, must not answer from inside). Never
 * throws: every error becomes an {@link Outcome}.
 *
 * Finally: sandboxes destroyed, the temporary clone removed; the trajectories (`trajectory.json`,
 * or `candidate-<n>.json` per candidate plus `candidates.json` and the chosen one as
 * `trajectory.json`) and the test logs are in the store.
 */
export async function runJob(data: JobRequest, deps: RunJobDeps, ctx: RunJobContext): Promise<Outcome> {
  const getInstallationToken = deps.getInstallationToken ?? (() => tokenFromOctokit(deps.octokit));
  const jobContext = createRunContext(deps, ctx, ctx.jobId ?? defaultJobId(data));
  const source = createGitHubIssueSource({ ...deps, request: data, getInstallationToken });
  const publisher = createPullRequestPublisher({ ...deps, request: data, getInstallationToken });
  return runPipeline(jobContext, source, publisher);
}

/**
 * The job context of a GitHub run (first or follow-up): every sandbox from the probed factory
 * (GitHub and the model server, or `egressProbeTargets`, must not answer from inside).
 */
export function createRunContext(
  deps: Omit<RunJobDeps, 'publishPullRequest'>,
  ctx: RunJobContext,
  jobId: string,
): JobContext {
  const targets = deps.egressProbeTargets ?? [
    { name: 'github', url: deps.gitBaseUrl },
    { name: 'model-server', url: deps.modelUrl },
  ];
  const jobContext = createJobContext({
    jobId,
    logger: ctx.logger,
    signal: ctx.signal,
    workDir: deps.workDir,
    trajectoryDir: deps.trajectoryDir,
    sandboxFactory: createProbedSandboxFactory(deps.sandboxFactory, targets, ctx.logger),
    progress: ctx.progress,
    createModel: deps.createModel,
    maxParallelCandidates: deps.maxParallelCandidates,
    patchLimits: deps.patchLimits,
    testTimeoutMs: deps.testTimeoutMs,
    onFacts: deps.onFacts,
    now: deps.now,
  });
  return jobContext;
}

/** `owner.repo.n.delivery`, like the queue's job ids, when the caller gives none. */
function defaultJobId(data: JobRequest): string {
  const clean = (s: string): string => s.replace(/[^A-Za-z0-9._-]/g, '_');
  return `${clean(data.owner.toLowerCase())}.${clean(data.repo.toLowerCase())}.${data.issueNumber}.${clean(data.deliveryId)}`;
}

/**
 * At worker start: remove the clones in `workDir` and the sandbox driver's folders of jobs that
 * are not active (`activeJobIds`, the queue's active jobs). Never throws.
 *
 * @returns the removed paths.
 */
export async function sweepLeftoverFolders(options: {
  workDir: string;
  sandboxFactory: SandboxFactory;
  activeJobIds: readonly string[];
}): Promise<string[]> {
  const removed: string[] = [];
  const clones = (await jobFolders(options.workDir, 'clone')).filter(
    (f) => !options.activeJobIds.some((id) => f.name.startsWith(cloneFolderPrefix(id))),
  );
  for (const f of clones) {
    await rm(f.path, { recursive: true, force: true }).then(
      () => removed.push(f.path),
      () => undefined,
    );
  }
  removed.push(
    ...((await options.sandboxFactory.sweepLeftovers?.(options.activeJobIds).catch(() => [])) ?? []),
  );
  return removed;
}
