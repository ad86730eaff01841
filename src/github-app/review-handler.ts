import type { ApplicationFunction, Probot } from 'probot';
import { z } from 'zod';
import { resolveEffectivePolicy, type AdminPolicy } from '../config/policy.js';
import { loadRepoConfigs } from '../config/repo-config.js';
import type { ApprovalEvent } from '../observability/approval-entry.js';
import type { Logger } from '../observability/logger.js';
import type { GitHubClient } from '../pipeline/github-client.js';
import {
  createHumanReviewCheck,
  findHumanReviewCheck,
  updateHumanReviewCheck,
  type HumanReviewCheck,
} from './check-run.js';
import { canTrigger, getSenderPermission, type SenderPermission } from './trigger-rules.js';
import { evaluateReviewGate, renderGateOutput, reviewListSchema, reviewersToCheck } from './review-gate.js';

/** The review policy of one repository (`review.*` of the effective policy). */
export interface ReviewPolicy {
  /** A requester's approval alone does not count. Default true. */
  requireSecondPerson: boolean;
}

/** Options of the gate handlers. */
export interface ReviewHandlerOptions {
  /** This GitHub App's id: only its own check runs are considered. Without it, the check's name decides. */
  appId?: number;
  /** The app's bot login (`<slug>[bot]`): a bot pull request without check run history is recognised by it. */
  botLogin?: string | (() => Promise<string | undefined> | string | undefined);
  /** Branch prefix of the bot's pull requests (default `frognano/`), for the same recognition. */
  branchPrefix?: string;
  /** The effective review policy of a repository; absent: `requireSecondPerson: true`. */
  reviewPolicy?: (where: { owner: string; repo: string; octokit: GitHubClient }) => Promise<ReviewPolicy>;
  /**
   * Called when the check turns `success`: appends the approval to the run record chain
   * (`writeApproval`). Its errors are logged; the check run is already green.
   */
  recordApproval?: (approval: ApprovalEvent) => Promise<unknown>;
}

/** What a gate handler did, for logs and tests. */
export type ReviewHandlerResult =
  | { action: 'success' | 'action_required'; checkRunId: number; changed: boolean; reviewer: string | null }
  | { action: 'ignored'; reason: string };

/** One delivery as the handlers see it (Probot's context reduced, so tests can call them directly). */
export interface GateContext {
  octokit: GitHubClient;
  payload: unknown;
  logger: Logger;
  deliveryId?: string;
}

const repositorySchema = z.object({ name: z.string(), owner: z.object({ login: z.string() }) });
const pullRequestEventSchema = z.object({
  action: z.string(),
  pull_request: z.object({ number: z.number().int().positive() }),
  repository: repositorySchema,
  sender: z.object({ login: z.string(), type: z.string().optional() }),
});
const reviewEventSchema = z.object({
  action: z.string(),
  review: z.object({ id: z.number().optional() }),
  pull_request: z.object({ number: z.number().int().positive() }),
  repository: repositorySchema,
});
const pullSchema = z.object({
  number: z.number(),
  state: z.string(),
  html_url: z.string(),
  head: z.object({ sha: z.string(), ref: z.string() }),
  user: z.object({ login: z.string(), type: z.string().optional() }).nullable(),
});
const commitListSchema = z.array(z.object({ sha: z.string() }));

/** Commits of the pull request looked at, newest first, when the head has no check run yet. */
const MAX_HISTORY_COMMITS = 20;

/**
 * `pull_request` opened, synchronize, reopened: make sure the head commit of a bot pull request
 * has this app's check run, then evaluate it. A commit pushed by a person gets a new
 * `action_required` check run carrying the previous one's job, requesters and transcript forward.
 * The bot's own pushes (sender = the pull request's bot author) are left to the publisher, which
 * creates the check run with the new round right after pushing.
 *
 * @throws Octokit's RequestError when GitHub fails (the delivery is retried by the webhook intake).
 */
export async function handlePullRequestEvent(
  context: GateContext,
  options: ReviewHandlerOptions = {},
): Promise<ReviewHandlerResult> {
  const parsed = pullRequestEventSchema.safeParse(context.payload);
  if (!parsed.success) return { action: 'ignored', reason: 'payload not understood' };
  const p = parsed.data;
  if (!['opened', 'synchronize', 'reopened'].includes(p.action)) {
    return { action: 'ignored', reason: `pull_request.${p.action}` };
  }
  const where = {
    owner: p.repository.owner.login,
    repo: p.repository.name,
    pullNumber: p.pull_request.number,
  };
  const botPush = p.sender.type === 'Bot' && p.sender.login === (await resolveBotLogin(options));
  return syncHumanReviewGate(context, where, { ...options, createMissing: !botPush });
}

/**
 * `pull_request_review` submitted, dismissed: evaluate the gate of the pull request's head commit
 * from the list of its reviews (so a redelivered or late event cannot apply a stale review).
 *
 * @throws Octokit's RequestError when GitHub fails.
 */
export async function handleReviewEvent(
  context: GateContext,
  options: ReviewHandlerOptions = {},
): Promise<ReviewHandlerResult> {
  const parsed = reviewEventSchema.safeParse(context.payload);
  if (!parsed.success) return { action: 'ignored', reason: 'payload not understood' };
  const p = parsed.data;
  const where = {
    owner: p.repository.owner.login,
    repo: p.repository.name,
    pullNumber: p.pull_request.number,
  };
  return syncHumanReviewGate(context, where, { ...options, createMissing: true });
}

/**
 * Bring the human review check run of a pull request's head commit in line with its reviews: find
 * (or, with `createMissing`, create) this app's check run on the head, evaluate the reviews
 * ({@link evaluateReviewGate}) and update the check when its conclusion or summary changed. Pull
 * requests that are not the bot's are left alone.
 *
 * @throws Octokit's RequestError when GitHub fails.
 */
export async function syncHumanReviewGate(
  context: GateContext,
  where: { owner: string; repo: string; pullNumber: number },
  options: ReviewHandlerOptions & { createMissing: boolean },
): Promise<ReviewHandlerResult> {
  const { octokit } = context;
  const { owner, repo, pullNumber } = where;
  const log = context.logger.child({ owner, repo, pullNumber, deliveryId: context.deliveryId });
  const ignore = (reason: string): ReviewHandlerResult => {
    log.info({ reason }, 'human review gate: nothing to do');
    return { action: 'ignored', reason };
  };
  const pull = pullSchema.parse(
    (await octokit.rest.pulls.get({ owner, repo, pull_number: pullNumber })).data,
  );
  if (pull.state !== 'open') return ignore('the pull request is not open');
  const headSha = pull.head.sha;
  let check = await findHumanReviewCheck(octokit, { owner, repo, sha: headSha, appId: options.appId });
  if (!check) {
    // The bot opens its pull requests itself: anyone else's is not looked into further.
    const bot = await resolveBotLogin(options);
    if (bot !== undefined && pull.user?.login !== bot) return ignore('not a pull request of this app');
    const previous = await findPreviousCheck(octokit, where, headSha, options.appId);
    if (!previous && !(await isBotPullRequest(pull, options)))
      return ignore('not a pull request of this app');
    if (!options.createMissing)
      return ignore('the bot pushed this commit: its publisher creates the check run');
    const id = await createHumanReviewCheck(octokit, {
      owner,
      repo,
      headSha,
      pullNumber,
      pullUrl: pull.html_url,
      ...(previous?.jobId ? { jobId: previous.jobId } : {}),
      requestedBy: previous?.requestedBy ?? [],
      transcript: previous?.output.text ?? null,
    });
    log.info(
      { checkRunId: id, headSha, from: previous?.id ?? null },
      'human review check run created on a new head',
    );
    check = await findHumanReviewCheck(octokit, { owner, repo, sha: headSha, appId: options.appId });
    if (!check) return ignore('the new check run could not be read back');
  }
  return evaluateAndUpdate(context, log, { owner, repo, pullNumber, headSha, check }, options);
}

/** Evaluate the reviews against `check` and update it when its verdict changed. */
async function evaluateAndUpdate(
  context: GateContext,
  log: Logger,
  at: { owner: string; repo: string; pullNumber: number; headSha: string; check: HumanReviewCheck },
  options: ReviewHandlerOptions,
): Promise<ReviewHandlerResult> {
  const { octokit } = context;
  const { owner, repo, pullNumber, headSha, check } = at;
  const reviews = reviewListSchema.parse(
    await octokit.paginate(octokit.rest.pulls.listReviews, {
      owner,
      repo,
      pull_number: pullNumber,
      per_page: 100,
    }),
  );
  const permissions = new Map<string, SenderPermission>();
  for (const login of reviewersToCheck(reviews, headSha)) {
    permissions.set(login.toLowerCase(), await getSenderPermission(octokit, { owner, repo }, login));
  }
  const policy = (await options.reviewPolicy?.({ owner, repo, octokit })) ?? { requireSecondPerson: true };
  const gate = evaluateReviewGate(reviews, {
    headSha,
    requesters: check.requestedBy,
    requireSecondPerson: policy.requireSecondPerson,
    canWrite: (login) => {
      const p = permissions.get(login.toLowerCase());
      return p ? canTrigger(p) : undefined;
    },
  });
  const output = renderGateOutput(gate, { headSha, pullNumber, jobId: check.jobId });
  const changed =
    check.conclusion !== gate.conclusion ||
    check.output.title !== output.title ||
    check.output.summary !== output.summary;
  if (changed) {
    await updateHumanReviewCheck(
      octokit,
      { owner, repo, checkRunId: check.id },
      { conclusion: gate.conclusion, ...output, text: check.output.text },
    );
  }
  log.info(
    {
      checkRunId: check.id,
      conclusion: gate.conclusion,
      changed,
      waitingFor: gate.waitingFor,
      notCounted: gate.notCounted,
    },
    'human review gate evaluated',
  );
  const approval = gate.approval;
  if (
    changed &&
    gate.conclusion === 'success' &&
    approval &&
    check.conclusion !== 'success' &&
    options.recordApproval
  ) {
    const perm = permissions.get(approval.login.toLowerCase());
    await options
      .recordApproval({
        owner,
        repo,
        jobId: check.jobId,
        reviewer: approval.login,
        permission: perm?.permission ?? 'write',
        roleName: perm?.roleName ?? null,
        commit: headSha,
        pullNumber,
        reviewUrl: approval.htmlUrl,
        checkRunId: check.id,
        reviewId: approval.reviewId,
        submittedAt: approval.submittedAt,
        deliveryId: context.deliveryId ?? null,
      })
      .catch((err: unknown) => log.error({ err }, 'could not record the approval in the run record'));
  }
  return { action: gate.conclusion, checkRunId: check.id, changed, reviewer: approval?.login ?? null };
}

/**
 * This app's human review check run on the newest earlier commit of the pull request that has one
 * (the pull request's commits, newest first, at most {@link MAX_HISTORY_COMMITS} looked at).
 */
async function findPreviousCheck(
  octokit: GitHubClient,
  where: { owner: string; repo: string; pullNumber: number },
  headSha: string,
  appId: number | undefined,
): Promise<HumanReviewCheck | null> {
  const { data } = await octokit.rest.pulls.listCommits({
    owner: where.owner,
    repo: where.repo,
    pull_number: where.pullNumber,
    per_page: 100,
  });
  const earlier = commitListSchema
    .parse(data)
    .map((c) => c.sha)
    .filter((sha) => sha !== headSha)
    .reverse()
    .slice(0, MAX_HISTORY_COMMITS);
  for (const sha of earlier) {
    const found = await findHumanReviewCheck(octokit, { owner: where.owner, repo: where.repo, sha, appId });
    if (found) return found;
  }
  return null;
}

/** A bot pull request without check run history: the bot's branch prefix and the bot as author. */
async function isBotPullRequest(
  pull: z.infer<typeof pullSchema>,
  options: ReviewHandlerOptions,
): Promise<boolean> {
  const bot = await resolveBotLogin(options);
  return (
    bot !== undefined &&
    pull.user?.login === bot &&
    pull.head.ref.startsWith(options.branchPrefix ?? 'frognano/')
  );
}

async function resolveBotLogin(options: ReviewHandlerOptions): Promise<string | undefined> {
  return typeof options.botLogin === 'function' ? await options.botLogin() : options.botLogin;
}

/**
 * {@link ReviewHandlerOptions.reviewPolicy} from the admin policy and the repository's files: the
 * admin layers decide unless they turn `requireSecondPerson` off, in which case the org and repo
 * `.github/frognano.yml` (default branch) are read, since they may turn it back on. A file that does
 * not validate counts as asking for it (the stricter reading).
 *
 * @throws AppError `GITHUB_API_ERROR` when the files cannot be read.
 */
export function createReviewPolicyLookup(
  adminPolicy: () => AdminPolicy,
): NonNullable<ReviewHandlerOptions['reviewPolicy']> {
  return async ({ owner, repo, octokit }) => {
    const fullName = `${owner}/${repo}`;
    const admin = resolveEffectivePolicy({ policy: adminPolicy(), repo: fullName });
    if (admin.review.requireSecondPerson) return { requireSecondPerson: true };
    const { data } = await octokit.rest.repos.get({ owner, repo });
    const configs = await loadRepoConfigs(octokit, owner, repo, data.default_branch);
    if (configs.errors.length > 0) return { requireSecondPerson: true };
    return resolveEffectivePolicy({ policy: adminPolicy(), repo: fullName, ...configs }).review;
  };
}

/**
 * Register the gate on a Probot app: `pull_request` opened/synchronize/reopened
 * ({@link handlePullRequestEvent}) and `pull_request_review` submitted/dismissed
 * ({@link handleReviewEvent}). Without `options.botLogin`, the app's login is looked up once
 * (`GET /app`). Call once from the server's wiring.
 */
export function registerReviewHandler(app: Probot, options: ReviewHandlerOptions = {}): void {
  let slug: Promise<string | undefined> | undefined;
  const botLogin =
    options.botLogin ??
    (() =>
      (slug ??= app
        .auth()
        .then(async (o) => {
          const found = (await o.rest.apps.getAuthenticated()).data?.slug;
          if (!found) throw new Error('GET /app answered without a slug');
          return `${found}[bot]`;
        })
        .catch(() => {
          // Looked up again on the next event; meanwhile no push counts as the bot's own.
          slug = undefined;
          return undefined;
        })));
  const withLogin = { ...options, botLogin };
  const run =
    (handler: typeof handleReviewEvent) =>
    async (context: { octokit: GitHubClient; payload: unknown; log: Logger; id: string }) => {
      await handler(
        { octokit: context.octokit, payload: context.payload, logger: context.log, deliveryId: context.id },
        withLogin,
      );
    };
  app.on(
    ['pull_request.opened', 'pull_request.synchronize', 'pull_request.reopened'],
    run(handlePullRequestEvent),
  );
  app.on(['pull_request_review.submitted', 'pull_request_review.dismissed'], run(handleReviewEvent));
}

/**
 * {@link registerReviewHandler} as a Probot application function, for `startServer`'s extra
 * handlers (`createFrognanoApp(deps, [createReviewHandlerApp()])`).
 */
export function createReviewHandlerApp(options: ReviewHandlerOptions = {}): ApplicationFunction {
  return (app) => registerReviewHandler(app, options);
}
