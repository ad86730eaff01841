import { z } from 'zod';
import type { FeedbackItem } from '../pipeline/feedback.js';
import type { JobData } from '../queue/job-data.js';
import type { IssueRef, PullRef } from '../queue/queue-keys.js';
import { githubError, type GitHubRequester } from './github-client.js';
import { HUMAN_REVIEW_CHECK_NAME } from './check-run.js';
import { postNotice } from './issues-labeled.js';
import { createStatusComment } from './status-comment.js';
import { canTrigger, getSenderPermission } from './trigger-rules.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/**
 * Reviewer feedback on a draft pull request the app opened starts a follow-up round (issue 11):
 * a review submitted with `changes_requested`, a pull request comment or review comment that
 * starts with `/frognano` (the text after it is the request) or that mentions the app
 * (`@<app-slug>[bot]` or `@<app-slug>`). `/frognano stop` cancels the waiting or running round.
 *
 * Same trigger rules as the label: never a bot (the app's own comments included), only `created`
 * comments (edits never trigger), the sender's permission looked up through the API (write,
 * maintain or admin) and the admin policy's teams. Everything that is not the app's pull request
 * is ignored silently (debug log). The admin cap `maxFollowUps` counts rounds per pull request.
 */

const userSchema = z.object({
  login: z.string(),
  type: z.string().optional(),
  id: z.number().int().optional(),
});
const base = {
  repository: z.object({ name: z.string(), owner: z.object({ login: z.string() }) }),
  sender: userSchema,
  installation: z.object({ id: z.number().int().positive() }).nullish(),
};

const commentFields = {
  id: z.number().int().positive(),
  body: z.string().nullish(),
  created_at: z.string(),
  html_url: z.string().optional(),
  user: userSchema.nullish(),
};

/** An inline (review) comment: where it sits on the diff. */
const inlineFields = {
  ...commentFields,
  path: z.string().nullish(),
  line: z.number().int().nullish(),
  start_line: z.number().int().nullish(),
  diff_hunk: z.string().nullish(),
};

/** `issue_comment` (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issue_comment). */
const issueCommentSchema = z.object({
  ...base,
  action: z.string(),
  issue: z.object({ number: z.number().int().positive(), pull_request: z.unknown().optional() }),
  comment: z.object(commentFields),
});

/** `pull_request_review_comment` (same page, `#pull_request_review_comment`). */
const reviewCommentSchema = z.object({
  ...base,
  action: z.string(),
  pull_request: z.object({ number: z.number().int().positive() }),
  comment: z.object({ ...inlineFields, pull_request_review_id: z.number().int().nullish() }),
});

/** `pull_request_review` (same page, `#pull_request_review`). */
const reviewSchema = z.object({
  ...base,
  action: z.string(),
  pull_request: z.object({ number: z.number().int().positive() }),
  review: z.object({
    id: z.number().int().positive(),
    state: z.string(),
    body: z.string().nullish(),
    submitted_at: z.string().nullish(),
    html_url: z.string().optional(),
    user: userSchema.nullish(),
  }),
});

/** What a feedback event asks for, before any API call. */
export type FeedbackDecision =
  | { action: 'ignore'; reason: string }
  | { action: 'stop'; pullNumber: number }
  | {
      action: 'request';
      pullNumber: number;
      item: FeedbackItem;
      /** A `changes_requested` review: its inline comments are fetched too. */
      reviewId?: number;
    };

/**
 * The request text of a comment: after `/frognano` (first thing in the comment, any case) or the
 * whole comment when it mentions the app; null when the comment is not for the app.
 *
 * @param slug the app's slug (`botLogin` without `[bot]`).
 */
export function requestText(body: string, slug: string | undefined): { text: string; stop: boolean } | null {
  const trimmed = body.trim();
  const command = /^\/frognano(?![\w-])(.*)$/is.exec(trimmed);
  if (command) {
    const text = (command[1] ?? '').trim();
    return { text, stop: /^stop\b/i.test(text) && text.split(/\s+/).length === 1 };
  }
  if (slug) {
    const escaped = slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (new RegExp(`(^|[^\\w-])@${escaped}(\\[bot\\])?(?![\\w-])`, 'i').test(trimmed)) {
      return { text: trimmed, stop: false };
    }
  }
  return null;
}

/** True for a bot or app account (the app itself included). */
function isBot(
  user: { login: string; type?: string | undefined } | null | undefined,
  botLogin?: string,
): boolean {
  return !user || user.type === 'Bot' || user.login.endsWith('[bot]') || user.login === botLogin;
}

/**
 * Read a feedback event (`issue_comment`, `pull_request_review_comment`, `pull_request_review`)
 * into what it asks for. Pure.
 */
export function evaluateFeedback(event: string, payload: unknown, botLogin?: string): FeedbackDecision {
  const slug = botLogin?.replace(/\[bot\]$/, '');
  const ignore = (reason: string): FeedbackDecision => ({ action: 'ignore', reason });
  if (event === 'pull_request_review') {
    const p = reviewSchema.safeParse(payload);
    if (!p.success) return ignore('review payload not understood');
    const { review } = p.data;
    if (p.data.action !== 'submitted') return ignore(`review ${p.data.action}`);
    if (review.state.toLowerCase() !== 'changes_requested') return ignore(`review state ${review.state}`);
    if (isBot(review.user, botLogin) || isBot(p.data.sender, botLogin)) return ignore('review by a bot');
    return {
      action: 'request',
      pullNumber: p.data.pull_request.number,
      reviewId: review.id,
      item: {
        kind: 'review',
        author: review.user!.login,
        body: review.body ?? '',
        createdAt: review.submitted_at ?? new Date().toISOString(),
        reviewId: review.id,
        ...(review.html_url ? { url: review.html_url } : {}),
      },
    };
  }
  const isReviewComment = event === 'pull_request_review_comment';
  const p = isReviewComment ? reviewCommentSchema.safeParse(payload) : issueCommentSchema.safeParse(payload);
  if (!p.success) return ignore(`${event} payload not understood`);
  if (p.data.action !== 'created') return ignore(`comment ${p.data.action}`);
  const { comment } = p.data;
  if (isBot(comment.user, botLogin) || isBot(p.data.sender, botLogin)) return ignore('comment by a bot');
  const pullNumber = 'pull_request' in p.data ? p.data.pull_request.number : p.data.issue.number;
  if ('issue' in p.data && (p.data.issue.pull_request === undefined || p.data.issue.pull_request === null)) {
    return ignore('comment on an issue, not a pull request');
  }
  const asked = requestText(comment.body ?? '', slug);
  if (!asked) return ignore('comment not addressed to the app');
  if (asked.stop) return { action: 'stop', pullNumber };
  const c = comment as z.infer<typeof reviewCommentSchema>['comment'];
  return {
    action: 'request',
    pullNumber,
    item: {
      kind: isReviewComment ? 'review-comment' : 'comment',
      author: comment.user!.login,
      body: asked.text,
      createdAt: comment.created_at,
      commentId: comment.id,
      ...(comment.html_url ? { url: comment.html_url } : {}),
      ...(isReviewComment ? inlinePlace(c) : {}),
    },
  };
}

/** Where an inline comment sits: file, line range, diff hunk. */
function inlinePlace(c: {
  pull_request_review_id?: number | null;
  path?: string | null;
  line?: number | null;
  start_line?: number | null;
  diff_hunk?: string | null;
}): Partial<FeedbackItem> {
  return {
    ...(c.pull_request_review_id ? { reviewId: c.pull_request_review_id } : {}),
    ...(c.path ? { path: c.path } : {}),
    ...(c.start_line && c.start_line > 0 ? { startLine: c.start_line } : {}),
    ...(c.line && c.line > 0 ? { line: c.line } : {}),
    ...(c.diff_hunk ? { diffHunk: c.diff_hunk } : {}),
  };
}

const pullSchema = z.object({
  number: z.number().int().positive(),
  state: z.string(),
  body: z.string().nullish(),
  user: userSchema.nullish(),
  head: z.object({ ref: z.string(), sha: z.string() }),
});
type Pull = z.infer<typeof pullSchema>;

/** The head branch the app pushes (`frognano/issue-<n>`). */
const BOT_BRANCH = /^frognano\/issue-(\d+)$/;

/**
 * The original issue of the app's pull request: from the head branch `frognano/issue-<n>`, else
 * the body's `Fixes #n` / `Closes #n` (any GitHub closing keyword); null when neither is there.
 */
export function originalIssueOf(pull: { head: { ref: string }; body?: string | null }): number | null {
  const fromBranch = BOT_BRANCH.exec(pull.head.ref)?.[1];
  const fromBody = /\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)\b/i.exec(pull.body ?? '')?.[1];
  const n = Number(fromBranch ?? fromBody);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/**
 * Whether `pull` is the app's: its head branch starts with `frognano/` AND it was opened by the
 * app's bot user, or the app has a "FrogNano human review" check run on its head commit.
 */
async function isAppPull(
  octokit: GitHubRequester,
  repo: RepoName,
  pull: Pull,
  botLogin?: string,
): Promise<boolean> {
  if (!pull.head.ref.startsWith('frognano/')) return false;
  if (botLogin && pull.user?.login === botLogin && pull.user.type === 'Bot') return true;
  const slug = botLogin?.replace(/\[bot\]$/, '');
  if (!slug) return false;
  try {
    const res = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      ...repo,
      ref: pull.head.sha,
      check_name: HUMAN_REVIEW_CHECK_NAME,
      per_page: 100,
    });
    const runs = z
      .object({
        check_runs: z.array(z.object({ name: z.string(), app: z.object({ slug: z.string() }).nullish() })),
      })
      .parse(res.data).check_runs;
    return runs.some((r) => r.name === HUMAN_REVIEW_CHECK_NAME && r.app?.slug === slug);
  } catch (err) {
    throw githubError(err, 'list the check runs of the pull request');
  }
}

type RepoName = { owner: string; repo: string };

async function getPull(octokit: GitHubRequester, repo: RepoName, pullNumber: number): Promise<Pull> {
  try {
    const res = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
      ...repo,
      pull_number: pullNumber,
    });
    return pullSchema.parse(res.data);
  } catch (err) {
    throw githubError(err, `read pull request #${pullNumber}`);
  }
}

const reviewCommentListSchema = z.array(z.object(inlineFields));

/**
 * The inline comments of a review, as `review-comment` items, with
 * `GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments`
 * (https://docs.github.com/en/enterprise-server@3.14/rest/pulls/reviews#list-comments-for-a-pull-request-review).
 * Bounded: 10 pages of 100.
 */
async function reviewComments(
  octokit: GitHubRequester,
  repo: RepoName,
  pullNumber: number,
  reviewId: number,
  author: string,
): Promise<FeedbackItem[]> {
  const items: FeedbackItem[] = [];
  try {
    for (let page = 1; page <= 10; page++) {
      const res = await octokit.request(
        'GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments',
        {
          ...repo,
          pull_number: pullNumber,
          review_id: reviewId,
          per_page: 100,
          page,
        },
      );
      const comments = reviewCommentListSchema.parse(res.data);
      for (const c of comments) {
        items.push({
          kind: 'review-comment',
          author: c.user?.login ?? author,
          body: c.body ?? '',
          createdAt: c.created_at,
          commentId: c.id,
          ...(c.html_url ? { url: c.html_url } : {}),
          ...inlinePlace({ ...c, pull_request_review_id: reviewId }),
        });
      }
      if (comments.length < 100) break;
    }
  } catch (err) {
    throw githubError(err, 'read the comments of the review');
  }
  return items;
}

/**
 * `issue_comment.created`, `pull_request_review_comment.created`, `pull_request_review.submitted`:
 * queue a follow-up round (or add to the next one), or stop it (`/frognano stop`).
 *
 * Order as in issues-labeled.ts: the Redis side first (feedback appended, then the pull request
 * reserved), the status comment before the job is added, and an enqueue failure undoes the
 * reservation and the appended feedback and answers 5xx so the delivery is retried.
 *
 * @throws on Redis or GitHub failures (the webhook answers 5xx).
 */
export async function handlePullFeedback(input: WebhookInput, deps: WebhookDeps): Promise<WebhookResult> {
  const botLogin = deps.botLogin();
  const decision = evaluateFeedback(input.event, input.payload, botLogin);
  const log0 = input.logger.child({ event: input.event, deliveryId: input.deliveryId });
  if (decision.action === 'ignore') {
    log0.debug({ reason: decision.reason }, 'feedback event ignored');
    return 'ignored';
  }
  const p = z.object(base).parse(input.payload);
  const repo: RepoName = { owner: p.repository.owner.login, repo: p.repository.name };
  const pullRef: PullRef = { ...repo, pullNumber: decision.pullNumber };
  const notice: IssueRef = { ...repo, issueNumber: decision.pullNumber };
  const log = log0.child({ repo: `${repo.owner}/${repo.repo}`, pull: decision.pullNumber });
  const installationId = p.installation?.id;
  if (!installationId) return 'ignored';

  const pull = await getPull(input.octokit, repo, decision.pullNumber);
  const issueNumber = originalIssueOf(pull);
  if (!(await isAppPull(input.octokit, repo, pull, botLogin)) || issueNumber === null) {
    log.debug({ head: pull.head.ref }, 'not a pull request of the app; ignored');
    return 'ignored';
  }
  const sender = p.sender.login;
  const permission = await getSenderPermission(input.octokit, repo, sender);
  if (!canTrigger(permission)) {
    await postNotice(
      input.octokit,
      notice,
      `FrogNano did not act: @${sender} needs write, maintain or admin access to this repository to ask for ` +
        `changes or stop a round (current access: ${permission.roleName ?? permission.permission}).`,
    );
    log.info({ sender, permission }, 'feedback from a user without write access; refused');
    return 'refused';
  }
  if (deps.checkTriggerAllowed) {
    const allowed = await deps.checkTriggerAllowed({
      ...repo,
      issueNumber,
      sender,
      octokit: input.octokit,
      logger: log,
    });
    if (!allowed.allowed) {
      await postNotice(input.octokit, notice, `FrogNano did not act: ${allowed.reason}`);
      return 'refused';
    }
  }
  if (decision.action === 'stop') {
    return cancelFollowUpRound(
      input,
      deps,
      pullRef,
      { by: sender, reason: 'a `/frognano stop` comment' },
      log,
    );
  }
  if (pull.state !== 'open') {
    await postNotice(input.octokit, notice, 'FrogNano did not act: the pull request is closed.');
    return 'refused';
  }
  return queueFeedback(input, deps, {
    pull: pullRef,
    headRef: pull.head.ref,
    issue: { ...repo, issueNumber },
    decision,
    installationId,
    sender: p.sender,
    log,
  });
}

/** The request part of {@link handlePullFeedback}: cap, Redis, status comment, job. */
async function queueFeedback(
  input: WebhookInput,
  deps: WebhookDeps,
  r: {
    pull: PullRef;
    headRef: string;
    issue: IssueRef;
    decision: Extract<FeedbackDecision, { action: 'request' }>;
    installationId: number;
    sender: z.infer<typeof userSchema>;
    log: WebhookInput['logger'];
  },
): Promise<WebhookResult> {
  const { pull, log } = r;
  const notice: IssueRef = { owner: pull.owner, repo: pull.repo, issueNumber: pull.pullNumber };
  const fullName = `${pull.owner}/${pull.repo}`;
  const max = deps.maxFollowUpsFor?.(fullName) ?? DEFAULT_MAX_FOLLOW_UPS;
  const current = await deps.jobs.followUpJob(pull);
  // A round still waiting takes this request when it starts; otherwise it needs a new round.
  const needsRound =
    current === null || !['waiting', 'delayed', 'prioritized', 'queuing'].includes(current.state);
  const done = await deps.jobs.followUps.rounds(pull);
  if (needsRound && done >= max) {
    await postNotice(
      input.octokit,
      notice,
      `FrogNano did not start another round: this pull request has had ${done} follow-up ` +
        `round${done === 1 ? '' : 's'}, the most the admin policy allows (\`maxFollowUps\`: ${max}). ` +
        'Continue by hand, or ask an administrator.',
    );
    log.info({ rounds: done, max }, 'follow-up cap reached; refused');
    return 'refused';
  }
  const items = [r.decision.item];
  if (r.decision.reviewId !== undefined) {
    items.push(
      ...(await reviewComments(input.octokit, pull, pull.pullNumber, r.decision.reviewId, r.sender.login)),
    );
  }
  const added = await deps.jobs.requestFollowUp(pull, r.issue, items, input.deliveryId);
  if (added.status === 'duplicate_delivery') return 'duplicate';
  if (added.status === 'joined') {
    log.info({ jobId: added.jobId, state: added.state }, 'feedback added to the next round');
    await react(input.octokit, pull, r.decision.item, log);
    return 'feedback_added';
  }
  const { jobId, round, position } = added;
  const status = createStatusComment(
    input.octokit,
    { owner: pull.owner, repo: pull.repo, issue: pull.pullNumber },
    { botLogin: deps.botLogin(), jobId, subject: 'pull', logger: log },
  );
  try {
    const statusCommentId = await status.update({ phase: 'queued', position, triggeredBy: r.sender.login });
    const data: JobData = {
      version: 1,
      deliveryId: input.deliveryId,
      installationId: r.installationId,
      owner: pull.owner,
      repo: pull.repo,
      issueNumber: r.issue.issueNumber,
      label: deps.triggerLabel(fullName),
      triggeredBy: { login: r.sender.login, ...(r.sender.id !== undefined ? { id: r.sender.id } : {}) },
      enqueuedAt: (deps.now?.() ?? new Date()).toISOString(),
      statusCommentId,
      followUp: { pullNumber: pull.pullNumber, headRef: r.headRef, round },
    };
    await deps.jobs.enqueue(jobId, data, { attempts: deps.attemptsFor?.(fullName) });
  } catch (err) {
    await deps.jobs.followUps
      .abandon(pull, jobId, input.deliveryId, items)
      .catch((e: unknown) => log.warn({ err: e }, 'could not undo the follow-up reservation'));
    if (status.commentId !== null) {
      await status
        .update({ phase: 'not_queued', reason: 'the job queue is unavailable right now' })
        .catch((e: unknown) => log.warn({ err: e }, 'could not correct the status comment'));
    }
    log.error(
      { err, jobId },
      'could not enqueue the follow-up; answering 5xx so the delivery can be retried',
    );
    throw err;
  }
  await react(input.octokit, pull, r.decision.item, log);
  log.info({ jobId, round, position }, 'follow-up round queued');
  return 'queued';
}

/** Built-in `maxFollowUps` when the deps give none (the policy's built-in default is the same). */
const DEFAULT_MAX_FOLLOW_UPS = 3;

/** 👀 on the comment that asked (a courtesy: its failure changes nothing). Reviews take no reaction. */
async function react(
  octokit: GitHubRequester,
  pull: PullRef,
  item: FeedbackItem,
  log: WebhookInput['logger'],
) {
  if (item.commentId === undefined) return;
  const route =
    item.kind === 'review-comment'
      ? 'POST /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions'
      : 'POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions';
  await octokit
    .request(route, { owner: pull.owner, repo: pull.repo, comment_id: item.commentId, content: 'eyes' })
    .catch((e: unknown) => log.warn({ err: e }, 'could not add the 👀 reaction'));
}

/**
 * Cancel the pull request's follow-up round and drop its pending feedback (`/frognano stop`, the
 * pull request closed, the issue's label removed). A waiting round is removed and its status
 * comment says cancelled here; a running one is stopped by its worker (sandbox destroyed), which
 * writes the comment.
 */
export async function cancelFollowUpRound(
  input: WebhookInput,
  deps: WebhookDeps,
  pull: PullRef,
  request: { by: string | null; reason: string },
  log: WebhookInput['logger'],
): Promise<WebhookResult> {
  const result = await deps.jobs.cancelFollowUp(pull, request);
  switch (result.status) {
    case 'none':
      log.debug('no follow-up round to cancel');
      return 'nothing_to_cancel';
    case 'signalled':
      log.info({ jobId: result.jobId, by: request.by }, 'asked the worker to cancel the follow-up round');
      return 'cancel_requested';
    case 'removed': {
      const status = createStatusComment(
        input.octokit,
        { owner: pull.owner, repo: pull.repo, issue: pull.pullNumber },
        {
          commentId: result.data?.statusCommentId,
          botLogin: deps.botLogin(),
          jobId: result.jobId,
          subject: 'pull',
          logger: log,
        },
      );
      await status.update({
        phase: 'finished',
        outcome: { kind: 'cancelled', by: request.by, reason: `${request.reason} before the round started` },
      });
      log.info({ jobId: result.jobId }, 'removed the waiting follow-up round');
      return 'cancelled';
    }
  }
}

const closedSchema = z.object({
  ...base,
  action: z.string(),
  pull_request: z.object({ number: z.number().int().positive() }),
});

/** `pull_request.closed`: closing the pull request cancels its follow-up round. */
export async function handlePullClosed(input: WebhookInput, deps: WebhookDeps): Promise<WebhookResult> {
  const p = closedSchema.safeParse(input.payload);
  if (!p.success) return 'ignored';
  const by = p.data.sender.login;
  if (by === deps.botLogin()) return 'ignored';
  const pull: PullRef = {
    owner: p.data.repository.owner.login,
    repo: p.data.repository.name,
    pullNumber: p.data.pull_request.number,
  };
  const log = input.logger.child({ repo: `${pull.owner}/${pull.repo}`, pull: pull.pullNumber });
  return cancelFollowUpRound(input, deps, pull, { by, reason: 'the pull request was closed' }, log);
}
