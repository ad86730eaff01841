import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '../app-error.js';
import type { EffectivePolicy } from '../config/policy.js';
import { archiveTrackedFiles } from '../git/archive-tracked-files.js';
import { cloneRepository } from '../git/clone-repository.js';
import type { GitIdentity } from '../git/commit-changes.js';
import { repositoryUrl } from '../git/git-auth.js';
import { runAgentLoop } from '../leaf/agent-loop.js';
import type { Trajectory } from '../leaf/trajectory.js';
import type { ChatModel } from '../llm/chat-model.js';
import type { Logger } from '../observability/logger.js';
import { createTrajectoryStore } from '../observability/trajectory-store.js';
import type { JobData } from '../queue/job-data.js';
import { assertEgressBlocked } from '../sandbox/egress-probe.js';
import type { Sandbox, SandboxFactory } from '../sandbox/sandbox.js';
import { detectTestCommand } from './detect-test-command.js';
import type { GitHubClient } from './github-client.js';
import { buildInstruction } from './instruction.js';
import { classifyError, type Outcome, type RunSummary } from './outcome.js';
import { prepareSandbox } from './prepare-sandbox.js';
import { publishChange, type PublishPullRequest } from './publish-change.js';
import { verifyPatch } from './verify-patch.js';

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
  Partial<Pick<EffectivePolicy, 'maxContextTokens'>>;

/** Progress of a job, reported to the status comment and the queue. */
export interface JobProgress {
  stage: 'preparing' | 'running' | 'testing' | 'publishing';
  /** While `running`: the step just finished (0 before the first). */
  step?: number;
  maxSteps?: number;
}

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
  createModel: () => ChatModel;
  /** Base URL of the model server, probed from inside the sandbox (it must NOT be reachable there). */
  modelUrl: string;
  /** Where temporary clones are made (one folder per job, removed at the end). */
  workDir: string;
  /** Trajectory store folder: `<dir>/<jobId>/trajectory.json` and test logs. */
  trajectoryDir: string;
  /**
   * The repository's effective policy. Throw AppError `POLICY_REFUSED` / `CONFIG_INVALID` (with
   * `details.messages`) to refuse the job.
   */
  resolvePolicy: (data: JobData, context: { defaultBranch: string }) => Promise<JobPolicy>;
  /** Author of the bot's commits: `<slug>[bot]`, `<id>+<slug>[bot]@users.noreply.<host>`. */
  appIdentity: GitIdentity;
  /** `publishPullRequest` from `src/github-app/pull-request.ts`. */
  publishPullRequest: PublishPullRequest;
  /** Wall-clock limit of the test command, in milliseconds (default 30 min). */
  testTimeoutMs?: number;
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

/**
 * Run one job (DESIGN.md "The way a job flows"): prepare → sandbox → agent → verify → publish, then
 * clean up. Never throws: every error becomes an {@link Outcome} through `classifyError`.
 *
 * 1. prepare — read the issue and repository through the API, resolve the policy, clone the default
 *    branch over HTTPS (shallow; the installation token only in git's environment).
 * 2. sandbox — a new sandbox, proven offline (egress probe against the GitHub host and the model
 *    server), the tracked files copied in without `.git`, committed as "base".
 * 3. agent — the Leaf loop with the instruction built from the issue (quoted as data).
 * 4. verify — the patch applied to the clone (refused when it does not apply), tests in a fresh
 *    sandbox on the patched tree.
 * 5. publish — one commit by the app (co-authored by who labelled), pushed to
 *    `<branchPrefix>issue-<n>`, draft pull request, label, review request, human review check run.
 *
 * Finally: sandboxes destroyed, the temporary clone removed; the trajectory is in the store
 * (written after every step by the loop).
 */
export async function runJob(data: JobData, deps: RunJobDeps, ctx: RunJobContext): Promise<Outcome> {
  const { signal, logger } = ctx;
  const jobId = ctx.jobId ?? defaultJobId(data);
  const now = deps.now ?? (() => new Date());
  const store = createTrajectoryStore({ dir: deps.trajectoryDir, logger });
  const getToken = deps.getInstallationToken ?? (() => tokenFromOctokit(deps.octokit));
  const report = async (p: JobProgress): Promise<void> => {
    try {
      await ctx.progress(p);
    } catch (err) {
      logger.warn({ err: { message: (err as Error).message } }, 'progress report failed');
    }
  };
  let summary: RunSummary | undefined;
  let workspace: string | undefined;
  let sandbox: Sandbox | undefined;
  const destroySandbox = async (): Promise<void> => {
    const s = sandbox;
    sandbox = undefined;
    await s?.destroy();
  };

  try {
    throwIfCancelled(signal);
    await report({ stage: 'preparing' });
    const { owner, repo, issueNumber } = data;
    const { data: issue } = await deps.octokit.rest.issues.get({ owner, repo, issue_number: issueNumber });
    if (issue.pull_request)
      throw new AppError('POLICY_REFUSED', `#${issueNumber} is a pull request, not an issue`);
    if (issue.state !== 'open') throw new AppError('POLICY_REFUSED', `issue #${issueNumber} is closed`);
    const { data: repository } = await deps.octokit.rest.repos.get({ owner, repo });
    const defaultBranch = repository.default_branch;
    const policy = await deps.resolvePolicy(data, { defaultBranch });
    throwIfCancelled(signal);

    await mkdir(deps.workDir, { recursive: true });
    workspace = await mkdtemp(join(deps.workDir, `${jobId.slice(0, 80)}-`));
    const dir = join(workspace, 'repo');
    const { headSha: baseSha } = await cloneRepository({
      url: repositoryUrl(deps.gitBaseUrl, owner, repo),
      dir,
      branch: defaultBranch,
      auth: { token: await getToken(), baseUrl: deps.gitBaseUrl },
      signal,
    });
    logger.info({ defaultBranch, baseSha }, 'repository cloned');

    const prepared = await prepareSandbox({
      sandboxFactory: deps.sandboxFactory,
      sandboxId: jobId,
      tree: () => archiveTrackedFiles(dir, { signal }),
      assertOffline: (s) =>
        assertEgressBlocked(s, [
          { name: 'github', url: deps.gitBaseUrl },
          { name: 'model-server', url: deps.modelUrl },
        ]),
      setupCommand: policy.setupCommand,
      signal,
      logger,
    });
    sandbox = prepared.sandbox;
    const testHint =
      policy.testCommand ?? (await detectTestCommand(sandbox).catch(() => null))?.command ?? null;
    const instruction = buildInstruction({
      repository: `${owner}/${repo}`,
      issueNumber,
      title: issue.title,
      body: issue.body ?? null,
      instructions: policy.instructions,
      testCommand: testHint,
    });

    await report({ stage: 'running', step: 0, maxSteps: policy.maxSteps });
    const trajectory = await runAgentLoop({
      model: deps.createModel(),
      sandbox,
      instruction,
      jobId,
      limits: {
        maxSteps: policy.maxSteps,
        maxTimeMs: policy.maxTimeSec * 1000,
        maxContextTokens: policy.maxContextTokens,
      },
      signal,
      logger,
      trajectoryPath: store.trajectoryPath(jobId),
      onStep: (step) => report({ stage: 'running', step: step.index, maxSteps: policy.maxSteps }),
    });
    await destroySandbox();
    summary = summarize(jobId, trajectory, policy.maxSteps);
    const ended = loopOutcome(trajectory, summary, signal, policy.maxTimeSec);
    if (ended) return ended;
    const patch = trajectory.patch ?? '';

    await report({ stage: 'testing' });
    const verified = await verifyPatch({
      dir,
      patch,
      jobId,
      sandboxFactory: deps.sandboxFactory,
      testCommand: policy.testCommand,
      setupCommand: policy.setupCommand,
      testTimeoutMs: deps.testTimeoutMs,
      store,
      signal,
      logger,
    });
    summary.diffstat = verified.diffstat;
    const tests = verified.tests;
    if (tests) {
      summary.tests = {
        command: tests.command,
        exitCode: tests.exitCode,
        passed: tests.passed,
        outputTail: tests.outputTail,
        timedOut: tests.timedOut,
      };
    }
    const testsFailing = tests !== null && !tests.passed;
    if (testsFailing && !policy.allowDraftOnFailingTests) return { kind: 'tests_failing', patch, summary };
    throwIfCancelled(signal);

    await report({ stage: 'publishing' });
    const warnings = testsFailing
      ? [
          `The tests FAIL with this change (\`${tests.command}\`: ${tests.timedOut ? 'timed out' : `exit ${tests.exitCode}`}). ` +
            'It is published as a draft only because the repository allows drafts with failing tests.',
        ]
      : [];
    const pr = await publishChange({
      dir,
      octokit: deps.octokit,
      publishPullRequest: deps.publishPullRequest,
      getInstallationToken: getToken,
      gitBaseUrl: deps.gitBaseUrl,
      appIdentity: deps.appIdentity,
      coAuthor: data.triggeredBy,
      branch: `${policy.branchPrefix}issue-${issueNumber}`,
      jobId,
      now,
      signal,
      logger,
      request: {
        owner,
        repo,
        issueNumber,
        issueTitle: issue.title,
        base: defaultBranch,
        reviewer: data.triggeredBy.login,
        extraLabels: [],
        body: {
          issueNumber,
          fixesKeyword: policy.fixesKeyword,
          summary,
          tests,
          requester: data.triggeredBy.login,
          warnings,
          sections: [],
        },
      },
    });
    if (testsFailing)
      return { kind: 'tests_failing', patch, pullNumber: pr.number, pullUrl: pr.url, summary };
    return { kind: 'pr_opened', pullNumber: pr.number, pullUrl: pr.url, updated: pr.updated, summary };
  } catch (err) {
    // A job aborted mid-call may fail with whatever the interrupted call threw: it was cancelled.
    const cause =
      signal.aborted && !(err instanceof AppError && err.code === 'CANCELLED') ? cancelError(signal) : err;
    if (!(cause instanceof AppError && cause.code === 'CANCELLED')) logger.warn({ err }, 'job failed');
    return classifyError(cause, { summary, cancelledBy: cancelledBy(signal) });
  } finally {
    try {
      await destroySandbox();
    } catch (err) {
      logger.error({ err }, 'could not destroy the sandbox');
    }
    if (workspace) await rm(workspace, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * The outcome of a loop that cannot go on to verify, or `null` when its patch should be verified:
 * cancelled; model server or sandbox failure (by the loop's error code); out of time; no change.
 * A loop that hit the step, context or per-turn token cap with a patch goes on: the tests decide,
 * and the pull request names the exit reason.
 */
function loopOutcome(
  trajectory: Trajectory,
  summary: RunSummary,
  signal: AbortSignal,
  maxTimeSec: number,
): Outcome | null {
  const context = { summary, cancelledBy: cancelledBy(signal) };
  switch (trajectory.exitReason) {
    case 'cancelled':
      return classifyError(cancelError(signal), context);
    case 'llm_query_error':
    case 'tool_error':
      return classifyError(
        new AppError(
          // Without a code: a failed model request, or (tool_error) a sandbox that stopped answering.
          trajectory.errorCode ??
            (trajectory.exitReason === 'tool_error' ? 'SANDBOX_GONE' : 'LLM_QUERY_ERROR'),
          trajectory.error ?? 'the agent loop failed',
        ),
        context,
      );
    case 'max_time':
      return classifyError(
        new AppError('TIMED_OUT', `the model did not finish within the time limit of ${maxTimeSec} s`),
        context,
      );
    default:
      break;
  }
  if (trajectory.patch === null) {
    return classifyError(
      new AppError('PATCH_FAILED', trajectory.error ?? 'the change could not be read from the sandbox'),
      context,
    );
  }
  if (trajectory.patch === '') return { kind: 'no_change', summary };
  return null;
}

function summarize(jobId: string, t: Trajectory, maxSteps: number): RunSummary {
  return {
    jobId,
    exitReason: t.exitReason,
    steps: t.steps.length,
    maxSteps,
    promptTokens: t.totalTokens.prompt,
    completionTokens: t.totalTokens.completion,
    elapsedMs: t.elapsedMs,
    finalMessage: t.finalMessage,
  };
}

function throwIfCancelled(signal: AbortSignal): void {
  if (signal.aborted) throw cancelError(signal);
}

/** An AppError `CANCELLED` for an aborted signal, with the reason's message when it has one. */
function cancelError(signal: AbortSignal): AppError {
  const reason: unknown = signal.reason;
  if (reason instanceof AppError && reason.code === 'CANCELLED') return reason;
  const text =
    reason instanceof Error
      ? reason.message
      : typeof (reason as { reason?: unknown } | null)?.reason === 'string'
        ? (reason as { reason: string }).reason
        : 'the job was cancelled';
  return new AppError('CANCELLED', text);
}

/** Who cancelled, from the abort reason: AppError `details.by`, or `{ by }`. */
function cancelledBy(signal: AbortSignal): string | null {
  if (!signal.aborted) return null;
  const reason: unknown = signal.reason;
  const by = reason instanceof AppError ? reason.details?.by : (reason as { by?: unknown } | null)?.by;
  return typeof by === 'string' ? by : null;
}

/** `owner.repo.n.delivery`, like the queue's job ids, when the caller gives none. */
function defaultJobId(data: JobData): string {
  const clean = (s: string): string => s.replace(/[^A-Za-z0-9._-]/g, '_');
  return `${clean(data.owner.toLowerCase())}.${clean(data.repo.toLowerCase())}.${data.issueNumber}.${clean(data.deliveryId)}`;
}

/** The installation token from an Octokit with an app-installation auth strategy (Probot's or auth-app's). */
async function tokenFromOctokit(octokit: GitHubClient): Promise<string> {
  const client = octokit as { auth?: (o: { type: string }) => Promise<unknown> };
  if (typeof client.auth !== 'function') {
    throw new AppError(
      'GITHUB_API_ERROR',
      'the GitHub client cannot give an installation token (no auth hook)',
    );
  }
  const result = (await client.auth({ type: 'installation' })) as { token?: unknown } | undefined;
  if (typeof result?.token !== 'string' || result.token === '') {
    throw new AppError('GITHUB_API_ERROR', 'the GitHub client returned no installation token', {
      retryable: true,
    });
  }
  return result.token;
}
