import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import {
  isoNow,
  repoKey,
  type CommentRecord,
  type IssueRecord,
  type ReactionRecord,
  type RepoRecord,
} from './ghe-store.js';
import {
  findIssue,
  findInRepo,
  findRepo,
  param,
  parseBody,
  query,
  sendError,
  sendPage,
  type StandinContext,
} from './standin-context.js';

/** GitHub's limit on issue, pull request and comment bodies (characters). */
export const BODY_MAX_CHARS = 65_536;

export const REACTION_CONTENTS = [
  '+1',
  '-1',
  'laugh',
  'confused',
  'heart',
  'hooray',
  'rocket',
  'eyes',
] as const;

const commentBody = z.object({ body: z.string() });
const reactionBody = z.object({ content: z.enum(REACTION_CONTENTS) });
const labelNames = z.array(z.union([z.string(), z.object({ name: z.string() })]));
// Octokit sends `{labels: [...]}`; GitHub also takes a bare array.
const labelsBody = z.union([z.object({ labels: labelNames }), labelNames]);
const createLabelBody = z.object({
  name: z.string().min(1),
  color: z
    .string()
    .regex(/^#?[0-9a-fA-F]{6}$/)
    .optional(),
  description: z.string().max(100).optional(),
});
const updateIssueBody = z.object({
  title: z.string().min(1).optional(),
  body: z.string().nullable().optional(),
  state: z.enum(['open', 'closed']).optional(),
  state_reason: z.enum(['completed', 'not_planned', 'reopened']).nullable().optional(),
  labels: labelNames.optional(),
  assignees: z.array(z.string()).optional(),
});

function names(body: z.infer<typeof labelsBody>): string[] {
  const list = Array.isArray(body) ? body : body.labels;
  return list.map((l) => (typeof l === 'string' ? l : l.name));
}

/** 422 like GitHub when a body exceeds {@link BODY_MAX_CHARS}; returns true when it answered. */
export function refuseLongBody(
  ctx: StandinContext,
  res: Response,
  resource: string,
  body: string | null | undefined,
): boolean {
  if (body === null || body === undefined || body.length <= BODY_MAX_CHARS) return false;
  sendError(ctx, res, 422, 'Validation Failed', [
    {
      resource,
      code: 'custom',
      field: 'body',
      message: `body is too long (maximum is ${BODY_MAX_CHARS} characters)`,
    },
  ]);
  return true;
}

/** Record a new comment (by anyone) and its first history entry. */
export function addComment(
  ctx: StandinContext,
  repo: RepoRecord,
  issue: IssueRecord,
  user: string,
  body: string,
): CommentRecord {
  const now = isoNow();
  const comment: CommentRecord = {
    id: ctx.store.nextId(),
    repoKey: repoKey(repo.owner, repo.name),
    issueNumber: issue.number,
    body,
    user,
    createdAt: now,
    updatedAt: now,
  };
  ctx.store.comments.set(comment.id, comment);
  ctx.store.commentHistory.push({
    commentId: comment.id,
    owner: repo.owner,
    repo: repo.name,
    issueNumber: issue.number,
    action: 'created',
    body,
    user,
    at: now,
  });
  issue.updatedAt = now;
  return comment;
}

/** Put label names on an issue (creating repository labels as GitHub does); keeps order, no duplicates. */
export function addLabels(ctx: StandinContext, repo: RepoRecord, issue: IssueRecord, labels: string[]): void {
  for (const name of labels) {
    const label = ctx.objects.ensureLabel(repo, name);
    if (!issue.labels.some((l) => l.toLowerCase() === label.name.toLowerCase()))
      issue.labels.push(label.name);
  }
  issue.updatedAt = isoNow();
}

/** Issues, issue comments, labels and reactions. */
export function registerIssueRoutes(router: Router, ctx: StandinContext): void {
  const bot = ctx.objects.botLogin;
  const issueLabels = (repo: RepoRecord, issue: IssueRecord) =>
    issue.labels.map((n) => ctx.objects.label(repo, ctx.objects.ensureLabel(repo, n)));

  router.get('/repos/:owner/:repo/issues', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const state = query(req, 'state') ?? 'open';
    const wanted = (query(req, 'labels') ?? '')
      .split(',')
      .map((l) => l.trim().toLowerCase())
      .filter((l) => l !== '');
    const issues = [...ctx.store.issues.values()]
      .filter((i) => i.repoKey === repoKey(repo.owner, repo.name))
      .filter((i) => state === 'all' || i.state === state)
      .filter((i) => wanted.every((w) => i.labels.some((l) => l.toLowerCase() === w)))
      .sort((a, b) => (query(req, 'direction') === 'asc' ? a.number - b.number : b.number - a.number));
    sendPage(
      ctx,
      req,
      res,
      issues.map((i) => ctx.objects.issue(repo, i)),
    );
  });

  router.get('/repos/:owner/:repo/issues/:number', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (repo && issue) res.json(ctx.objects.issue(repo, issue));
  });

  router.patch('/repos/:owner/:repo/issues/:number', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    const body = parseBody(ctx, updateIssueBody, req, res);
    if (!body || refuseLongBody(ctx, res, 'Issue', body.body)) return;
    const now = isoNow();
    if (body.title !== undefined) issue.title = body.title;
    if (body.body !== undefined) issue.body = body.body;
    if (body.state !== undefined && body.state !== issue.state) {
      issue.state = body.state;
      issue.closedAt = body.state === 'closed' ? now : null;
      issue.stateReason = body.state === 'closed' ? (body.state_reason ?? 'completed') : 'reopened';
    }
    if (body.labels !== undefined) {
      issue.labels = [];
      addLabels(ctx, repo, issue, names(body.labels));
    }
    if (body.assignees !== undefined) issue.assignees = body.assignees;
    issue.updatedAt = now;
    res.json(ctx.objects.issue(repo, issue));
  });

  // --- comments ---------------------------------------------------------------------------------

  router.get('/repos/:owner/:repo/issues/:number/comments', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    const comments = [...ctx.store.comments.values()]
      .filter((c) => c.repoKey === issue.repoKey && c.issueNumber === issue.number)
      .sort((a, b) => a.id - b.id)
      .map((c) => ctx.objects.comment(repo, c));
    sendPage(ctx, req, res, comments);
  });

  router.post('/repos/:owner/:repo/issues/:number/comments', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    const body = parseBody(ctx, commentBody, req, res);
    if (!body || refuseLongBody(ctx, res, 'IssueComment', body.body)) return;
    const comment = addComment(ctx, repo, issue, bot, body.body);
    const rendered = ctx.objects.comment(repo, comment);
    res.status(201).setHeader('Location', String(rendered.url)).json(rendered);
  });

  const findComment = (req: Request, res: Response) => {
    const found = findInRepo(ctx, req, res, ctx.store.comments);
    return found && { repo: found.repo, comment: found.record };
  };

  router.get('/repos/:owner/:repo/issues/comments/:id', (req, res) => {
    const found = findComment(req, res);
    if (found) res.json(ctx.objects.comment(found.repo, found.comment));
  });

  router.patch('/repos/:owner/:repo/issues/comments/:id', (req, res) => {
    const found = findComment(req, res);
    if (!found) return;
    const body = parseBody(ctx, commentBody, req, res);
    if (!body || refuseLongBody(ctx, res, 'IssueComment', body.body)) return;
    const { repo, comment } = found;
    comment.body = body.body;
    comment.updatedAt = isoNow();
    ctx.store.commentHistory.push({
      commentId: comment.id,
      owner: repo.owner,
      repo: repo.name,
      issueNumber: comment.issueNumber,
      action: 'edited',
      body: body.body,
      user: bot,
      at: comment.updatedAt,
    });
    res.json(ctx.objects.comment(repo, comment));
  });

  router.delete('/repos/:owner/:repo/issues/comments/:id', (req, res) => {
    const found = findComment(req, res);
    if (!found) return;
    const { repo, comment } = found;
    ctx.store.comments.delete(comment.id);
    ctx.store.commentHistory.push({
      commentId: comment.id,
      owner: repo.owner,
      repo: repo.name,
      issueNumber: comment.issueNumber,
      action: 'deleted',
      body: comment.body,
      user: bot,
      at: isoNow(),
    });
    res.status(204).end();
  });

  // --- reactions --------------------------------------------------------------------------------

  const listReactions = (
    req: Request,
    res: Response,
    repo: RepoRecord,
    subject: ReactionRecord['subject'],
  ) => {
    const content = query(req, 'content');
    const found = ctx.store.reactions
      .filter((r) => sameSubject(repo, r, subject) && (content === undefined || r.content === content))
      .map((r) => ctx.objects.reaction(r));
    sendPage(ctx, req, res, found);
  };
  const sameSubject = (repo: RepoRecord, r: ReactionRecord, subject: ReactionRecord['subject']) =>
    repoKey(r.owner, r.repo) === repoKey(repo.owner, repo.name) &&
    JSON.stringify(r.subject) === JSON.stringify(subject);
  const react = (req: Request, res: Response, repo: RepoRecord, subject: ReactionRecord['subject']) => {
    const body = parseBody(ctx, reactionBody, req, res);
    if (!body) return;
    const existing = ctx.store.reactions.find(
      (r) => sameSubject(repo, r, subject) && r.content === body.content && r.user === bot,
    );
    // The same reaction twice answers 200 with the existing one, as on GitHub.
    if (existing) return res.status(200).json(ctx.objects.reaction(existing));
    const reaction: ReactionRecord = {
      id: ctx.store.nextId(),
      owner: repo.owner,
      repo: repo.name,
      subject,
      content: body.content,
      user: bot,
      createdAt: isoNow(),
    };
    ctx.store.reactions.push(reaction);
    res.status(201).json(ctx.objects.reaction(reaction));
  };
  const unreact = (req: Request, res: Response, repo: RepoRecord, subject: ReactionRecord['subject']) => {
    const index = ctx.store.reactions.findIndex(
      (r) => sameSubject(repo, r, subject) && r.id === Number(param(req, 'reactionId')),
    );
    if (index < 0) return sendError(ctx, res, 404, 'Not Found');
    ctx.store.reactions.splice(index, 1);
    res.status(204).end();
  };

  const issueSubject = (req: Request, res: Response) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    return repo && issue
      ? { repo, subject: { kind: 'issue' as const, issueNumber: issue.number } }
      : undefined;
  };
  const commentSubject = (req: Request, res: Response) => {
    const found = findComment(req, res);
    return found
      ? { repo: found.repo, subject: { kind: 'comment' as const, commentId: found.comment.id } }
      : undefined;
  };
  router.get('/repos/:owner/:repo/issues/:number/reactions', (req, res) => {
    const s = issueSubject(req, res);
    if (s) listReactions(req, res, s.repo, s.subject);
  });
  router.post('/repos/:owner/:repo/issues/:number/reactions', (req, res) => {
    const s = issueSubject(req, res);
    if (s) react(req, res, s.repo, s.subject);
  });
  router.delete('/repos/:owner/:repo/issues/:number/reactions/:reactionId', (req, res) => {
    const s = issueSubject(req, res);
    if (s) unreact(req, res, s.repo, s.subject);
  });
  router.get('/repos/:owner/:repo/issues/comments/:id/reactions', (req, res) => {
    const s = commentSubject(req, res);
    if (s) listReactions(req, res, s.repo, s.subject);
  });
  router.post('/repos/:owner/:repo/issues/comments/:id/reactions', (req, res) => {
    const s = commentSubject(req, res);
    if (s) react(req, res, s.repo, s.subject);
  });
  router.delete('/repos/:owner/:repo/issues/comments/:id/reactions/:reactionId', (req, res) => {
    const s = commentSubject(req, res);
    if (s) unreact(req, res, s.repo, s.subject);
  });

  // --- labels -----------------------------------------------------------------------------------

  router.get('/repos/:owner/:repo/issues/:number/labels', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (repo && issue) sendPage(ctx, req, res, issueLabels(repo, issue));
  });

  router.post('/repos/:owner/:repo/issues/:number/labels', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    const body = parseBody(ctx, labelsBody, req, res);
    if (!body) return;
    addLabels(ctx, repo, issue, names(body));
    res.status(200).json(issueLabels(repo, issue));
  });

  router.put('/repos/:owner/:repo/issues/:number/labels', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    const body = parseBody(ctx, labelsBody, req, res);
    if (!body) return;
    issue.labels = [];
    addLabels(ctx, repo, issue, names(body));
    res.status(200).json(issueLabels(repo, issue));
  });

  router.delete('/repos/:owner/:repo/issues/:number/labels', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    issue.labels = [];
    issue.updatedAt = isoNow();
    res.status(204).end();
  });

  router.delete('/repos/:owner/:repo/issues/:number/labels/:name', (req, res) => {
    const repo = findRepo(ctx, req, res);
    const issue = repo && findIssue(ctx, repo, req, res);
    if (!repo || !issue) return;
    const name = param(req, 'name').toLowerCase();
    if (!issue.labels.some((l) => l.toLowerCase() === name))
      return sendError(ctx, res, 404, 'Label does not exist');
    issue.labels = issue.labels.filter((l) => l.toLowerCase() !== name);
    issue.updatedAt = isoNow();
    res.status(200).json(issueLabels(repo, issue));
  });

  router.get('/repos/:owner/:repo/labels', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (repo)
      sendPage(
        ctx,
        req,
        res,
        repo.labels.map((l) => ctx.objects.label(repo, l)),
      );
  });

  router.post('/repos/:owner/:repo/labels', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const body = parseBody(ctx, createLabelBody, req, res);
    if (!body) return;
    if (repo.labels.some((l) => l.name.toLowerCase() === body.name.toLowerCase())) {
      return sendError(ctx, res, 422, 'Validation Failed', [
        { resource: 'Label', code: 'already_exists', field: 'name' },
      ]);
    }
    const label = {
      id: ctx.store.nextId(),
      name: body.name,
      color: (body.color ?? 'ededed').replace(/^#/, '').toLowerCase(),
      description: body.description ?? null,
      default: false,
    };
    repo.labels.push(label);
    const rendered = ctx.objects.label(repo, label);
    res.status(201).setHeader('Location', String(rendered.url)).json(rendered);
  });

  router.get('/repos/:owner/:repo/labels/:name', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const label = repo.labels.find((l) => l.name.toLowerCase() === param(req, 'name').toLowerCase());
    if (!label) return sendError(ctx, res, 404, 'Not Found');
    res.json(ctx.objects.label(repo, label));
  });

  router.delete('/repos/:owner/:repo/labels/:name', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const name = param(req, 'name').toLowerCase();
    if (!repo.labels.some((l) => l.name.toLowerCase() === name)) return sendError(ctx, res, 404, 'Not Found');
    repo.labels = repo.labels.filter((l) => l.name.toLowerCase() !== name);
    for (const issue of ctx.store.issues.values()) {
      if (issue.repoKey === repoKey(repo.owner, repo.name)) {
        issue.labels = issue.labels.filter((l) => l.toLowerCase() !== name);
      }
    }
    res.status(204).end();
  });
}
