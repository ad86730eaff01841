import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { branchSha, diffStats, gitOrThrow } from './bare-repos.js';
import { addIssueRecord, isoNow, repoKey, type IssueRecord, type RepoRecord } from './ghe-store.js';
import { refuseLongBody } from './routes-issues.js';
import {
  findIssue,
  findRepo,
  parseBody,
  query,
  sendError,
  sendPage,
  type StandinContext,
} from './standin-context.js';

const createPullBody = z.object({
  title: z.string().min(1),
  head: z.string().min(1),
  head_repo: z.string().optional(),
  base: z.string().min(1),
  body: z.string().optional(),
  draft: z.boolean().optional(),
  maintainer_can_modify: z.boolean().optional(),
});
const updatePullBody = z.object({
  title: z.string().min(1).optional(),
  body: z.string().optional(),
  state: z.enum(['open', 'closed']).optional(),
  base: z.string().min(1).optional(),
  maintainer_can_modify: z.boolean().optional(),
});
const replyBody = z.object({ body: z.string().min(1) });
const dismissalBody = z.object({ message: z.string().min(1), event: z.literal('DISMISS').optional() });
const reviewersBody = z.object({
  reviewers: z.array(z.string()).optional(),
  team_reviewers: z.array(z.string()).optional(),
});

/** Refresh a pull request's commit / line counts from the bare repository (`base...head`). */
export async function refreshPullStats(repo: RepoRecord, issue: IssueRecord): Promise<void> {
  if (!issue.pull) return;
  Object.assign(issue.pull, await diffStats(repo.dir, issue.pull.baseSha, issue.pull.headSha));
}

/** `owner:branch` or `branch` → branch, when the owner (if any) is the repository's owner. */
function headBranch(repo: RepoRecord, head: string): string | null {
  const colon = head.indexOf(':');
  if (colon < 0) return head;
  // Pull requests from forks are out of the stand-in's scope.
  return head.slice(0, colon).toLowerCase() === repo.owner.toLowerCase() ? head.slice(colon + 1) : null;
}

/** Pull requests, review requests and reviews. */
export function registerPullRoutes(router: Router, ctx: StandinContext): void {
  const pullsOf = (repo: RepoRecord) =>
    [...ctx.store.issues.values()].filter((i) => i.repoKey === repoKey(repo.owner, repo.name) && i.pull);

  const findPull = (req: Request, res: Response) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return undefined;
    if (!issue.pull) {
      sendError(ctx, res, 404, 'Not Found');
      return undefined;
    }
    return { repo, issue };
  };

  const invalid = (res: Response, field: string) =>
    sendError(ctx, res, 422, 'Validation Failed', [{ resource: 'PullRequest', field, code: 'invalid' }]);
  const custom = (res: Response, message: string) =>
    sendError(ctx, res, 422, 'Validation Failed', [{ resource: 'PullRequest', code: 'custom', message }]);

  router.post('/repos/:owner/:repo/pulls', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const body = parseBody(ctx, createPullBody, req, res);
    if (!body || refuseLongBody(ctx, res, 'PullRequest', body.body)) return;
    const head = headBranch(repo, body.head);
    if (head === null) return invalid(res, 'head');
    const baseSha = await branchSha(repo.dir, body.base);
    if (!baseSha) return invalid(res, 'base');
    const headSha = await branchSha(repo.dir, head);
    if (!headSha) return invalid(res, 'head');
    const existing = pullsOf(repo).find(
      (i) => i.state === 'open' && i.pull?.headRef === head && i.pull.baseRef === body.base,
    );
    if (existing) return custom(res, `A pull request already exists for ${repo.owner}:${head}.`);
    const stats = await diffStats(repo.dir, baseSha, headSha);
    if (stats.commits === 0) return custom(res, `No commits between ${body.base} and ${head}`);
    const issue = addIssueRecord(ctx.store, repo, {
      title: body.title,
      body: body.body ?? null,
      user: ctx.objects.botLogin,
    });
    issue.pull = {
      pullId: ctx.store.nextId(),
      headRef: head,
      headSha,
      baseRef: body.base,
      baseSha,
      draft: body.draft ?? false,
      maintainerCanModify: body.maintainer_can_modify ?? false,
      requestedReviewers: [],
      requestedTeams: [],
      ...stats,
    };
    const rendered = ctx.objects.pullRequest(repo, issue);
    res.status(201).setHeader('Location', String(rendered.url)).json(rendered);
  });

  router.get('/repos/:owner/:repo/pulls', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const state = query(req, 'state') ?? 'open';
    const headFilter = query(req, 'head');
    const head = headFilter === undefined ? undefined : headBranch(repo, headFilter);
    const base = query(req, 'base');
    const pulls = pullsOf(repo)
      .filter((i) => state === 'all' || i.state === state)
      .filter((i) => headFilter === undefined || (head !== null && i.pull?.headRef === head))
      .filter((i) => base === undefined || i.pull?.baseRef === base)
      .sort((a, b) => (query(req, 'direction') === 'asc' ? a.number - b.number : b.number - a.number));
    sendPage(
      ctx,
      req,
      res,
      pulls.map((i) => ctx.objects.pullRequest(repo, i)),
    );
  });

  router.get('/repos/:owner/:repo/pulls/:number', (req, res) => {
    const found = findPull(req, res);
    if (found) res.json(ctx.objects.pullRequest(found.repo, found.issue));
  });

  router.patch('/repos/:owner/:repo/pulls/:number', async (req, res) => {
    const found = findPull(req, res);
    if (!found) return;
    const { repo, issue } = found;
    const pull = issue.pull;
    const body = parseBody(ctx, updatePullBody, req, res);
    if (!body || !pull || refuseLongBody(ctx, res, 'PullRequest', body.body)) return;
    const now = isoNow();
    if (body.base !== undefined) {
      const sha = await branchSha(repo.dir, body.base);
      if (!sha) return invalid(res, 'base');
      pull.baseRef = body.base;
      pull.baseSha = sha;
      await refreshPullStats(repo, issue);
    }
    if (body.title !== undefined) issue.title = body.title;
    if (body.body !== undefined) issue.body = body.body;
    if (body.maintainer_can_modify !== undefined) pull.maintainerCanModify = body.maintainer_can_modify;
    if (body.state !== undefined && body.state !== issue.state) {
      issue.state = body.state;
      issue.closedAt = body.state === 'closed' ? now : null;
    }
    issue.updatedAt = now;
    res.json(ctx.objects.pullRequest(repo, issue));
  });

  router.get('/repos/:owner/:repo/pulls/:number/requested_reviewers', (req, res) => {
    const found = findPull(req, res);
    if (!found?.issue.pull) return;
    const rendered = ctx.objects.pullRequest(found.repo, found.issue);
    res.json({ users: rendered.requested_reviewers, teams: rendered.requested_teams });
  });

  router.post('/repos/:owner/:repo/pulls/:number/requested_reviewers', (req, res) => {
    const found = findPull(req, res);
    if (!found?.issue.pull) return;
    const { repo, issue } = found;
    const pull = found.issue.pull;
    const body = parseBody(ctx, reviewersBody, req, res);
    if (!body) return;
    const reviewers = body.reviewers ?? [];
    const teams = body.team_reviewers ?? [];
    if (reviewers.some((r) => r.toLowerCase() === issue.user.toLowerCase())) {
      return sendError(ctx, res, 422, 'Review cannot be requested from pull request author.');
    }
    for (const r of reviewers) if (!pull.requestedReviewers.includes(r)) pull.requestedReviewers.push(r);
    for (const t of teams) if (!pull.requestedTeams.includes(t)) pull.requestedTeams.push(t);
    ctx.store.reviewRequests.push({
      owner: repo.owner,
      repo: repo.name,
      pullNumber: issue.number,
      reviewers,
      teamReviewers: teams,
      at: isoNow(),
    });
    res.status(201).json(ctx.objects.pullRequest(repo, issue));
  });

  router.delete('/repos/:owner/:repo/pulls/:number/requested_reviewers', (req, res) => {
    const found = findPull(req, res);
    if (!found?.issue.pull) return;
    const body = parseBody(ctx, reviewersBody, req, res);
    if (!body) return;
    const pull = found.issue.pull;
    pull.requestedReviewers = pull.requestedReviewers.filter((r) => !(body.reviewers ?? []).includes(r));
    pull.requestedTeams = pull.requestedTeams.filter((t) => !(body.team_reviewers ?? []).includes(t));
    res.json(ctx.objects.pullRequest(found.repo, found.issue));
  });

  router.get('/repos/:owner/:repo/pulls/:number/reviews', (req, res) => {
    const found = findPull(req, res);
    if (!found) return;
    const reviews = ctx.store.reviews
      .filter((r) => r.repoKey === found.issue.repoKey && r.pullNumber === found.issue.number)
      .map((r) => ctx.objects.review(found.repo, r, 'rest'));
    sendPage(ctx, req, res, reviews);
  });

  // https://docs.github.com/en/rest/pulls/reviews#dismiss-a-review-for-a-pull-request
  router.put('/repos/:owner/:repo/pulls/:number/reviews/:id/dismissals', (req, res) => {
    const found = findPull(req, res);
    if (!found) return;
    const review = ctx.store.reviews.find(
      (r) =>
        r.repoKey === found.issue.repoKey &&
        r.pullNumber === found.issue.number &&
        String(r.id) === req.params.id,
    );
    if (!review) return sendError(ctx, res, 404, 'Not Found');
    const body = parseBody(ctx, dismissalBody, req, res);
    if (!body) return;
    if (review.state !== 'APPROVED' && review.state !== 'CHANGES_REQUESTED') {
      return sendError(ctx, res, 422, 'Can not dismiss a commented pull request review');
    }
    review.state = 'DISMISSED';
    res.json(ctx.objects.review(found.repo, review, 'rest'));
  });

  // https://docs.github.com/en/rest/pulls/pulls#list-commits-on-a-pull-request (oldest first)
  router.get('/repos/:owner/:repo/pulls/:number/commits', async (req, res) => {
    const found = findPull(req, res);
    if (!found?.issue.pull) return;
    const { baseSha, headSha } = found.issue.pull;
    const out = await gitOrThrow([
      '--git-dir',
      found.repo.dir,
      'rev-list',
      '--reverse',
      `${baseSha}..${headSha}`,
    ]);
    const shas = out.split('\n').filter(Boolean).slice(0, 250);
    sendPage(
      ctx,
      req,
      res,
      shas.map((sha) => ({
        sha,
        url: `${ctx.apiUrl}/repos/${found.repo.owner}/${found.repo.name}/commits/${sha}`,
      })),
    );
  });

  // https://docs.github.com/en/rest/pulls/comments#create-a-reply-for-a-review-comment
  router.post('/repos/:owner/:repo/pulls/:number/comments/:commentId/replies', (req, res) => {
    const found = findPull(req, res);
    if (!found) return;
    const parent = ctx.store.reviewComments.find(
      (c) =>
        c.repoKey === found.issue.repoKey &&
        c.pullNumber === found.issue.number &&
        String(c.id) === req.params.commentId,
    );
    if (!parent) return sendError(ctx, res, 404, 'Not Found');
    const body = parseBody(ctx, replyBody, req, res);
    if (!body) return;
    const reply = {
      ...parent,
      id: ctx.store.nextId(),
      user: ctx.objects.botLogin,
      body: body.body,
      createdAt: isoNow(),
      inReplyTo: parent.inReplyTo ?? parent.id,
    };
    ctx.store.reviewComments.push(reply);
    res.status(201).json({
      id: reply.id,
      in_reply_to_id: reply.inReplyTo,
      pull_request_review_id: reply.reviewId,
      user: ctx.objects.user(reply.user),
      body: reply.body,
      path: reply.path,
      line: reply.line,
      created_at: reply.createdAt,
      html_url: `${ctx.url}/${found.repo.owner}/${found.repo.name}/pull/${reply.pullNumber}#discussion_r${reply.id}`,
    });
  });

  router.get('/repos/:owner/:repo/pulls/:number/reviews/:reviewId/comments', (req, res) => {
    const found = findPull(req, res);
    if (!found) return;
    const reviewId = Number(req.params.reviewId);
    if (!ctx.store.reviews.some((r) => r.id === reviewId && r.repoKey === found.issue.repoKey)) {
      sendError(ctx, res, 404, 'Not Found');
      return;
    }
    const comments = ctx.store.reviewComments
      .filter((c) => c.reviewId === reviewId && c.pullNumber === found.issue.number)
      .map((c) => ({
        id: c.id,
        pull_request_review_id: c.reviewId,
        user: ctx.objects.user(c.user),
        body: c.body,
        path: c.path,
        line: c.line,
        start_line: c.startLine,
        side: 'RIGHT',
        diff_hunk: c.diffHunk,
        created_at: c.createdAt,
        updated_at: c.createdAt,
        html_url: `${ctx.url}/${found.repo.owner}/${found.repo.name}/pull/${c.pullNumber}#discussion_r${c.id}`,
      }));
    sendPage(ctx, req, res, comments);
  });
}
