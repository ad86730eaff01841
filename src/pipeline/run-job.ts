import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError, isAppError } from '../app-error.js';
import type { EffectivePolicy } from '../config/policy.js';
import { applyPatch, resetToHead } from '../git/apply-patch.js';
import { archiveTrackedFiles } from '../git/archive-tracked-files.js';
import { cloneRepository } from '../git/clone-repository.js';
import type { GitIdentity } from '../git/commit-changes.js';
import { repositoryUrl } from '../git/git-auth.js';
import { runAgentLoop } from '../leaf/agent-loop.js';
import type { Trajectory } from '../leaf/trajectory.js';
import type { ChatModel } from '../llm/chat-model.js';
import type { Logger } from '../observability/logger.js';
import { createTrajectoryStore, type TrajectoryStore } from '../observability/trajectory-store.js';
import type { JobRequest } from './job-request.js';
import { assertEgressBlocked, type EgressTarget } from '../sandbox/egress-probe.js';
import { cloneFolderPrefix, jobFolders, writeOwner } from '../sandbox/local/leftover-folders.js';
import type { Sandbox, SandboxFactory, SandboxSettings } from '../sandbox/sandbox.js';
import { chooseAttempt, type AttemptChoice, type AttemptResult } from './verification/choose-attempt.js';
import { buildEvidence, testVerdict } from './verification/evidence-markdown.js';
import type { PatchLimits } from './verification/patch-limits.js';
import { detectTestCommand } from './detect-test-command.js';
import type { GitHubClient } from './github-client.js';
import { buildInstruction } from './instruction.js';
import { classifyError, type Outcome, type RunSummary } from './outcome.js';
import { DEFAULT_SETUP_TIMEOUT_MS, prepareSandbox } from './prepare-sandbox.js';
import { publishChange, type PublishPullRequest } from './publish-change.js';
import type { RunFacts } from './run-recorder.js';
import { verifyPatch, type BaseTestsMemo, type RefusedPatch, type VerifiedPatch } from './verify-patch.js';

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
      'maxContextTokens' | 'maxTokensPerTurn' | 'attempts' | 'sources' | 'clamps' | 'sandbox'
    >
  >;

/** Progress of a job, reported to the status comment and the queue. */
export interface JobProgress {
  stage: 'preparing' | 'running' | 'testing' | 'publishing';
  /** While `running`: the step just finished (0 before the first). */
  step?: number;
  maxSteps?: number;
}

/** What a model client of one attempt is made for. */
export interface ModelContext {
  /** 1-based attempt number. */
  attempt: number;
  /** The policy's `maxTokensPerTurn`: the request's `max_completion_tokens`; absent = the Leaf default. */
  maxCompletionTokens?: number;
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
  /**
   * A model client for one attempt (called once per attempt, in attempt order; `attempt` is
   * 1-based). Attempts are independent: nothing is shared between their conversations.
   */
  createModel: (context: ModelContext) => ChatModel;
  /**
   * Attempts of a best-of-N job run at once, each in its own sandbox (default
   * {@link DEFAULT_PARALLEL_ATTEMPTS}); more wait for a free lane.
   */
  maxParallelAttempts?: number;
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

/**
 * Run one job (DESIGN.md "The way a job flows"): prepare → sandbox → agent → verify → publish, then
 * clean up. Never throws: every error becomes an {@link Outcome} through `classifyError`.
 *
 * 1. prepare — read the issue and repository through the API, resolve the policy, clone the default
 *    branch over HTTPS (shallow; the installation token only in git's environment).
 * 2. sandbox + agent, once per attempt ({@link bestOfN}; attempts run in parallel, each in its own
 *    new sandbox, proven offline, with the tracked files copied in without `.git`, committed as
 *    "base"): the Leaf loop with the instruction built from the issue (quoted as data).
 * 3. verify, attempt by attempt in the clone — the patch applied (refused when it does not apply),
 *    the checks that refuse a patch (protected paths, patch limits, secrets), the tests on the base
 *    tree (once) and on the patched tree, each in a fresh sandbox, the base → head comparison and
 *    the test-tampering check. Then the best attempt is chosen (`chooseAttempt`).
 * 4. publish — the chosen patch as one commit by the app (co-authored by who labelled), pushed to
 *    `<branchPrefix>issue-<n>`, draft pull request with the evidence (table, tampering warning and
 *    label, attempts), review request, human review check run.
 *
 * A change whose tests count as failing ({@link testsFail}: something broke, or the suite still
 * fails and nothing was fixed) ends as `tests_failing` without a pull request unless the policy
 * allows drafts; a change that fixes a test while an unrelated one still fails is published, with
 * the table saying which is which. A refused change ends as `refused` (stage `patch`), naming the
 * path or the problem.
 *
 * Finally: sandboxes destroyed, the temporary clone removed; the trajectories (`trajectory.json`,
 * or `attempt-<n>.json` per attempt plus `attempts.json` and the chosen one as `trajectory.json`)
 * and the test logs are in the store.
 */
export async function runJob(data: JobRequest, deps: RunJobDeps, ctx: RunJobContext): Promise<Outcome> {
  const { signal, logger } = ctx;
  const jobId = ctx.jobId ?? defaultJobId(data);
  const now = deps.now ?? (() => new Date());
  const store = createTrajectoryStore({ dir: deps.trajectoryDir, logger });
  const getToken = deps.getInstallationToken ?? (() => tokenFromOctokit(deps.octokit));
  const report = async (p: JobProgress): Promise<void> => {
    try {
      await ctx.progress(p);
    } catch (err) {
      logger.warn({ err }, 'progress report failed');
    }
  };
  let summary: RunSummary | undefined;
  let workspace: string | undefined;
  const sandboxes = new Set<Sandbox>();
  const destroySandbox = async (sandbox: Sandbox): Promise<void> => {
    sandboxes.delete(sandbox);
    await sandbox.destroy();
  };

  try {
    throwIfCancelled(signal);
    await removeLeftovers(jobId, deps, logger);
    await report({ stage: 'preparing' });
    const { owner, repo, issueNumber } = data;
    const { data: issue } = await deps.octokit.rest.issues.get({ owner, repo, issue_number: issueNumber });
    if (issue.pull_request)
      throw new AppError('POLICY_REFUSED', `#${issueNumber} is a pull request, not an issue`);
    if (issue.state !== 'open') throw new AppError('POLICY_REFUSED', `issue #${issueNumber} is closed`);
    const { data: repository } = await deps.octokit.rest.repos.get({ owner, repo });
    if (repository.archived) {
      throw new AppError(
        'POLICY_REFUSED',
        `${owner}/${repo} is archived (read-only): nothing can be pushed to it. Unarchive it in the ` +
          'repository settings, then label the issue again.',
      );
    }
    const defaultBranch = repository.default_branch;
    const policy = await deps.resolvePolicy(data, { defaultBranch });
    throwIfCancelled(signal);

    await mkdir(deps.workDir, { recursive: true });
    workspace = await mkdtemp(join(deps.workDir, cloneFolderPrefix(jobId)));
    await writeOwner(workspace);
    const dir = join(workspace, 'repo');
    const { headSha: baseSha } = await cloneRepository({
      url: repositoryUrl(deps.gitBaseUrl, owner, repo),
      dir,
      branch: defaultBranch,
      auth: { token: await getToken(), baseUrl: deps.gitBaseUrl },
      signal,
    }).catch(async (err: unknown) => {
      throw (await emptyRepositoryError(deps.octokit, owner, repo, err)) ?? err;
    });
    logger.info({ defaultBranch, baseSha }, 'repository cloned');
    deps.onFacts?.({ policy, baseSha, dir });

    const probeTargets = deps.egressProbeTargets ?? [
      { name: 'github', url: deps.gitBaseUrl },
      { name: 'model-server', url: deps.modelUrl },
    ];
    const assertOffline = (s: Sandbox): Promise<void> => assertEgressBlocked(s, probeTargets);

    // 2. The agent, once per attempt, in parallel sandboxes.
    const count = bestOfN(policy);
    const sandboxSettings = sandboxSettingsOf(policy);
    const stepsDone = new Map<number, number>();
    let reportedStep = 0;
    const runAttempt = async (attempt: number): Promise<Trajectory> => {
      const model = deps.createModel({
        attempt,
        ...(policy.maxTokensPerTurn !== undefined ? { maxCompletionTokens: policy.maxTokensPerTurn } : {}),
      });
      const attemptLogger = count === 1 ? logger : logger.child({ attempt });
      const prepared = await prepareSandbox({
        sandboxFactory: deps.sandboxFactory,
        sandboxId: count === 1 ? jobId : `${jobId}-a${attempt}`,
        sandboxSettings: {
          ...sandboxSettings,
          // The sandbox lives through the setup command and the whole trajectory.
          timeLimitMs: policy.maxTimeSec * 1000 + DEFAULT_SETUP_TIMEOUT_MS,
        },
        tree: () => archiveTrackedFiles(dir, { signal }),
        assertOffline,
        setupCommand: policy.setupCommand,
        signal,
        logger: attemptLogger,
      });
      const sandbox = prepared.sandbox;
      sandboxes.add(sandbox);
      try {
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
        deps.onFacts?.({ instruction });
        return await runAgentLoop({
          model,
          sandbox,
          instruction,
          jobId,
          limits: {
            maxSteps: policy.maxSteps,
            maxTimeMs: policy.maxTimeSec * 1000,
            maxContextTokens: policy.maxContextTokens,
          },
          signal,
          logger: attemptLogger,
          trajectoryPath: store.trajectoryPath(jobId, count === 1 ? 'trajectory' : `attempt-${attempt}`),
          onStep: async (step) => {
            // With several attempts the comment shows the furthest one.
            stepsDone.set(attempt, step.index);
            const furthest = Math.max(...stepsDone.values());
            if (count > 1 && furthest <= reportedStep) return;
            reportedStep = furthest;
            await report({ stage: 'running', step: furthest, maxSteps: policy.maxSteps });
          },
        });
      } finally {
        await destroySandbox(sandbox);
      }
    };

    await report({ stage: 'running', step: 0, maxSteps: policy.maxSteps });
    const settled = await settleWithLimit(count, deps.maxParallelAttempts ?? DEFAULT_PARALLEL_ATTEMPTS, (i) =>
      runAttempt(i + 1),
    );
    throwIfCancelled(signal);

    const attempts: AttemptState[] = [];
    for (const [i, result] of settled.entries()) {
      const attempt = i + 1;
      if (result.status === 'rejected') {
        // An attempt that could not run at all: with one attempt (or an unsafe sandbox) that is the job's end.
        if (count === 1 || isAppError(result.reason, 'EGRESS_NOT_BLOCKED')) throw result.reason;
        attempts.push({ attempt, error: result.reason, note: errorNote(result.reason) });
        continue;
      }
      const trajectory = result.value;
      const attemptSummary = summarize(jobId, trajectory, policy);
      if (count > 1) attemptSummary.attempt = { number: attempt, of: count };
      const ended = loopOutcome(trajectory, attemptSummary, signal, policy.maxTimeSec);
      if (ended && count === 1) return ended;
      attempts.push({
        attempt,
        trajectory,
        summary: attemptSummary,
        ended: ended ?? undefined,
        note: ended ? outcomeNote(ended) : undefined,
      });
    }
    summary = attempts.find((a) => a.summary)?.summary;

    // 3. Verify the patches, one after the other, in the clone.
    const base: BaseTestsMemo = {};
    const candidates = attempts.filter((a) => a.trajectory && !a.ended);
    if (candidates.length > 0) await report({ stage: 'testing' });
    for (const a of candidates) {
      throwIfCancelled(signal);
      try {
        a.verified = await verifyPatch({
          dir,
          patch: a.trajectory?.patch ?? '',
          jobId,
          sandboxFactory: deps.sandboxFactory,
          assertOffline,
          sandboxSettings,
          testCommand: policy.testCommand,
          setupCommand: policy.setupCommand,
          testTimeoutMs: deps.testTimeoutMs,
          protectedPaths: policy.protectedPaths,
          limits: deps.patchLimits,
          base,
          headName: count === 1 ? 'tests-head' : `tests-head-attempt-${a.attempt}`,
          store,
          signal,
          logger: count === 1 ? logger : logger.child({ attempt: a.attempt }),
        });
      } catch (err) {
        if (count === 1 || signal.aborted || isAppError(err, 'CANCELLED')) throw err;
        a.error = err;
        a.note = errorNote(err);
      } finally {
        await resetToHead(dir).catch((err: unknown) => logger.warn({ err }, 'could not reset the clone'));
      }
    }

    const choice = chooseAttempt(attempts.map(toAttemptResult));
    if (count > 1) {
      await saveAttempts(store, jobId, attempts, choice, logger);
    }
    const winner = attempts.find((a) => a.attempt === choice.winner?.attempt);
    if (!winner?.verified || winner.verified.refused || !winner.trajectory || !winner.summary) {
      return noWinner(attempts, count, choice);
    }

    // 4. Publish the chosen attempt.
    const verified = winner.verified;
    const patch = winner.trajectory.patch ?? '';
    deps.onFacts?.({ verified, patch });
    summary = winner.summary;
    summary.diffstat = verified.diffstat;
    const tests = verified.tests;
    if (tests) {
      summary.tests = {
        command: tests.command,
        exitCode: tests.exitCode,
        passed: tests.passed,
        outputTail: tests.outputTail,
        timedOut: tests.timedOut,
        ...(verified.comparison ? { verdict: testVerdict(verified.comparison) } : {}),
      };
    }
    const testsFailing = testsFail(verified);
    if (testsFailing && !policy.allowDraftOnFailingTests) return { kind: 'tests_failing', patch, summary };
    throwIfCancelled(signal);

    await report({ stage: 'publishing' });
    await applyPatch(dir, patch, { signal });
    const evidence = buildEvidence({
      comparison: verified.comparison,
      base: verified.baseTests,
      head: tests,
      tampering: verified.tampering,
      choice: count > 1 ? choice : null,
    });
    const warnings = [...evidence.warnings];
    if (testsFailing && tests) {
      warnings.push(
        `The tests FAIL with this change (\`${tests.command}\`: ${tests.timedOut ? 'timed out' : `exit ${tests.exitCode}`}). ` +
          'It is published as a draft only because the repository allows drafts with failing tests.',
      );
    }
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
        extraLabels: evidence.labels,
        trajectory: winner.trajectory,
        body: {
          issueNumber,
          fixesKeyword: policy.fixesKeyword,
          closesIssue: !verified.comparison || verified.comparison.fixed.length > 0,
          summary,
          tests,
          requester: data.triggeredBy.login,
          warnings,
          sections: evidence.sections,
        },
      },
    });
    const warned = pr.warnings?.length ? { warnings: pr.warnings } : {};
    if (testsFailing)
      return { kind: 'tests_failing', patch, pullNumber: pr.number, pullUrl: pr.url, summary, ...warned };
    return {
      kind: 'pr_opened',
      pullNumber: pr.number,
      pullUrl: pr.url,
      updated: pr.updated,
      summary,
      ...warned,
    };
  } catch (err) {
    // A job aborted mid-call may fail with whatever the interrupted call threw: it was cancelled.
    const cause =
      signal.aborted && !(err instanceof AppError && err.code === 'CANCELLED') ? cancelError(signal) : err;
    if (!(cause instanceof AppError && cause.code === 'CANCELLED')) logger.warn({ err }, 'job failed');
    return classifyError(cause, { summary, cancelledBy: cancelledBy(signal) });
  } finally {
    for (const sandbox of [...sandboxes]) {
      try {
        await destroySandbox(sandbox);
      } catch (err) {
        logger.error({ err }, 'could not destroy the sandbox');
      }
    }
    if (workspace) await rm(workspace, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Attempts run at once when {@link RunJobDeps.maxParallelAttempts} is not given. */
export const DEFAULT_PARALLEL_ATTEMPTS = 3;

/**
 * How many independent attempts a job runs (best-of-N): the policy's `attempts` (built-in default 1;
 * best-of-N costs N model runs, so an admin or the repository asks for it, within the admin cap that
 * `resolveEffectivePolicy` clamps to).
 */
export function bestOfN(policy: Pick<Partial<EffectivePolicy>, 'attempts'>): number {
  return Math.max(1, Math.floor(policy.attempts ?? 1));
}

/** What became of one attempt while the job ran. */
interface AttemptState {
  attempt: number;
  trajectory?: Trajectory;
  summary?: RunSummary;
  /** Set when the loop ended without a patch to verify (no change, model or sandbox failure…). */
  ended?: Outcome;
  verified?: RefusedPatch | VerifiedPatch;
  /** An error that ended the attempt (its sandbox failed, its patch did not apply…). */
  error?: unknown;
  /** One sentence about how it ended, for the attempts table. */
  note?: string;
}

function toAttemptResult(a: AttemptState): AttemptResult {
  const base = {
    attempt: a.attempt,
    exitReason: a.trajectory?.exitReason,
    steps: a.trajectory?.steps.length,
  };
  if (a.verified?.refused) {
    const detail = a.verified.details[0];
    return {
      ...base,
      status: 'refused',
      note: detail ? `${a.verified.reason} ${detail}` : a.verified.reason,
    };
  }
  if (a.verified) {
    return {
      ...base,
      status: 'verified',
      comparison: a.verified.comparison,
      linesChanged: a.verified.linesChanged,
      filesChanged: a.verified.files.length,
      tampered: a.verified.tampering.flagged,
    };
  }
  if (a.ended?.kind === 'no_change') return { ...base, status: 'no_change' };
  return { ...base, status: 'failed', note: a.note };
}

/**
 * The outcome of a job none of whose attempts can be published: a refusal first (people need to
 * know a check stopped the change), then "no change", then the first failure.
 */
function noWinner(attempts: AttemptState[], count: number, choice: AttemptChoice): Outcome {
  const refused = attempts.filter((a) => a.verified?.refused);
  const first = refused[0];
  if (first?.verified?.refused) {
    const details =
      count === 1 ? first.verified.details : [...choice.rows.map((r) => `Attempt ${r.attempt}: ${r.result}`)];
    return {
      kind: 'refused',
      stage: 'patch',
      reason:
        count === 1
          ? first.verified.reason
          : `None of the ${count} attempts can be published. Attempt ${first.attempt}: ${first.verified.reason}`,
      details,
      summary: first.summary,
    };
  }
  const unchanged = attempts.find((a) => a.ended?.kind === 'no_change');
  if (unchanged?.ended) return unchanged.ended;
  const failed = attempts.find((a) => a.ended || a.error !== undefined);
  if (failed?.ended) return failed.ended;
  throw failed?.error ?? new AppError('INTERNAL', 'no attempt ended with a result');
}

/**
 * Whether the tests count as failing with the change (outcome `tests_failing`: no pull request unless
 * the policy allows drafts). With per-test results: when anything broke (see
 * `TestComparison.nothingBroken`), or when the suite still fails and the change made no failing test
 * pass — unless it changed the tests in a flagged way: such a change is always shown to a person,
 * with the tampering warning, rather than only described in the status comment. With exit codes
 * only: when the suite fails on the patched tree.
 */
function testsFail(v: VerifiedPatch): boolean {
  if (!v.tests) return false;
  const c = v.comparison;
  if (c?.granularity === 'per-test') {
    if (!c.nothingBroken) return true;
    return !v.tests.passed && c.fixed.length === 0 && !v.tampering.flagged;
  }
  return !v.tests.passed;
}

/** `attempts.json` (the choice, for `frognano-bot trajectory`) and the chosen trajectory as `trajectory.json`. */
async function saveAttempts(
  store: TrajectoryStore,
  jobId: string,
  attempts: AttemptState[],
  choice: AttemptChoice,
  logger: Logger,
): Promise<void> {
  try {
    await store.saveJson(jobId, 'attempts', {
      chosen: choice.winner?.attempt ?? null,
      reason: choice.reason,
      rows: choice.rows,
    });
    const chosen = attempts.find((a) => a.attempt === choice.winner?.attempt)?.trajectory;
    if (chosen) await store.saveJson(jobId, 'trajectory', chosen);
  } catch (err) {
    logger.warn({ err }, 'could not store the attempts summary');
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

function errorNote(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

function outcomeNote(outcome: Outcome): string {
  switch (outcome.kind) {
    case 'no_change':
      return 'no change';
    case 'llm_unreachable':
    case 'sandbox_failed':
    case 'timed_out':
    case 'github_error':
    case 'failed':
      return errorNote(outcome.message);
    case 'cancelled':
      return 'cancelled';
    default:
      return outcome.kind;
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

/** The run's facts, with the caps it ran under and the clamps, so the comment can name a cap that stopped it. */
function summarize(jobId: string, t: Trajectory, policy: JobPolicy): RunSummary {
  const source = (key: 'maxSteps' | 'maxTimeSec'): string => policy.sources?.[key] ?? 'default';
  return {
    jobId,
    exitReason: t.exitReason,
    steps: t.steps.length,
    maxSteps: policy.maxSteps,
    promptTokens: t.totalTokens.prompt,
    completionTokens: t.totalTokens.completion,
    elapsedMs: t.elapsedMs,
    finalMessage: t.finalMessage,
    caps: {
      maxSteps: { value: policy.maxSteps, source: source('maxSteps') },
      maxTimeSec: { value: policy.maxTimeSec, source: source('maxTimeSec') },
    },
    ...(policy.clamps?.length ? { clamps: policy.clamps } : {}),
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
function defaultJobId(data: JobRequest): string {
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

/**
 * The sandbox settings an admin set in the policy (image, resources, runtime class). Values still
 * at their built-in default (`sources[key] === 'default'`) are left out, so that the sandbox
 * driver's own defaults (the worker's environment: SANDBOX_IMAGE, SANDBOX_RUNTIME_CLASS, driver
 * sizes) apply to them. Without `sources`, every value given applies.
 */
export function sandboxSettingsOf(policy: JobPolicy): SandboxSettings {
  const sb = policy.sandbox;
  if (!sb) return {};
  const set = (key: string): boolean => (policy.sources?.[key] ?? 'policy') !== 'default';
  const pick = (kind: 'requests' | 'limits'): Record<string, string> =>
    Object.fromEntries(
      Object.entries(sb.resources[kind]).filter(
        (e): e is [string, string] => e[1] !== undefined && set(`sandbox.resources.${kind}.${e[0]}`),
      ),
    );
  const requests = pick('requests');
  const limits = pick('limits');
  const resources = {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
  return {
    ...(sb.image && set('sandbox.image') ? { image: sb.image } : {}),
    ...(sb.runtimeClassName && set('sandbox.runtimeClassName')
      ? { runtimeClassName: sb.runtimeClassName }
      : {}),
    ...(Object.keys(resources).length > 0 ? { resources } : {}),
  };
}

/**
 * Remove what earlier runs of this job left when their worker was killed: clones in WORK_DIR
 * (`<jobId>-XXXXXX`) and the sandbox driver's folders. A job id runs once at a time (the BullMQ
 * lock), so whatever carries it now is a leftover. Never throws.
 */
async function removeLeftovers(jobId: string, deps: RunJobDeps, logger: Logger): Promise<void> {
  const removed: string[] = [];
  for (const f of await jobFolders(deps.workDir, 'clone', jobId)) {
    await rm(f.path, { recursive: true, force: true }).then(
      () => removed.push(f.path),
      (err: unknown) =>
        logger.warn(
          { err: { message: (err as Error).message }, dir: f.path },
          'cannot remove a leftover clone',
        ),
    );
  }
  removed.push(...((await deps.sandboxFactory.removeLeftovers?.(jobId).catch(() => [])) ?? []));
  if (removed.length > 0)
    logger.info({ removed }, 'removed the folders of an earlier, killed run of this job');
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

/**
 * When the clone found no default branch: is the repository empty (no branch at all)? Then the
 * error says so instead of pointing at permissions; otherwise `null` (the clone's error stands).
 */
async function emptyRepositoryError(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  err: unknown,
): Promise<AppError | null> {
  if (!isAppError(err, 'GITHUB_API_ERROR') || err.retryable) return null;
  const branches = await octokit.rest.repos.listBranches({ owner, repo, per_page: 1 }).catch(() => null);
  if (!branches || branches.data.length > 0) return null;
  return new AppError(
    'POLICY_REFUSED',
    `the repository has no commits yet: ${owner}/${repo} has no branch to work on. Push a first commit ` +
      '(with the code the issue is about), then label the issue again.',
  );
}
