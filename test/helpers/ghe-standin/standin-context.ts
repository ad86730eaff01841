import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { AppAuth } from './app-auth.js';
import type { GithubObjects, ObjectContext } from './github-objects.js';
import { repoKey, type IssueRecord, type RepoRecord } from './ghe-store.js';

/** A `failNext` rule: answer the next `remaining` matching requests with `status`. */
export interface FaultRule {
  /** Upper-case HTTP method, or `*` for any. */
  method: string;
  /** Tested against the full request path (`/api/v3/...` or `/{owner}/{repo}.git/...`), no query. */
  pattern: RegExp;
  status: number;
  remaining: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Everything the route handlers share. */
export interface StandinContext extends ObjectContext {
  objects: GithubObjects;
  auth: AppAuth;
  faults: FaultRule[];
  gheVersion: string;
  /** Directory for transient files (push logs). */
  tmpDir: string;
  /**
   * Bring pull requests in line after refs changed (push, ref deletion, `commitFiles`): head/base
   * SHAs and diff stats follow their branches; a deleted head branch closes its pull request.
   */
  refsUpdated(repo: RepoRecord, updates: Array<{ ref: string; newSha: string }>): Promise<void>;
}

/** Where GitHub's error bodies point (`documentation_url`). */
export function docsUrl(ctx: StandinContext): string {
  const [major = '3', minor = '0'] = ctx.gheVersion.split('.');
  return `https://docs.github.com/enterprise-server@${major}.${minor}/rest`;
}

/** Send a GitHub-style error body `{message, documentation_url, [errors]}`. */
export function sendError(
  ctx: StandinContext,
  res: Response,
  status: number,
  message: string,
  errors?: unknown[],
): void {
  res.status(status).json({ message, ...(errors ? { errors } : {}), documentation_url: docsUrl(ctx) });
}

/**
 * Validate a JSON body; on failure answer 422 like GitHub's schema check ("Invalid request.")
 * and return `undefined`.
 */
export function parseBody<T extends z.ZodType>(
  ctx: StandinContext,
  schema: T,
  req: Request,
  res: Response,
): z.infer<T> | undefined {
  const parsed = schema.safeParse(req.body ?? {});
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues
    .map((i) => `${i.path.length > 0 ? `"${i.path.join('.')}"` : 'body'}: ${i.message}`)
    .join('\n');
  sendError(ctx, res, 422, `Invalid request.\n\n${details}`);
  return undefined;
}

/** A route parameter as one string (Express 5 gives wildcard parameters as segment arrays). */
export function param(req: Request, name: string): string {
  const value: unknown = (req.params as Record<string, unknown>)[name];
  if (Array.isArray(value)) return value.map(String).join('/');
  return typeof value === 'string' ? value : '';
}

/** Query parameter as a string, or undefined. */
export function query(req: Request, name: string): string | undefined {
  const value: unknown = (req.query as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** The repository of `/repos/:owner/:repo/...`, or answer 404 and return `undefined`. */
export function findRepo(ctx: StandinContext, req: Request, res: Response): RepoRecord | undefined {
  const repo = ctx.store.repo(param(req, 'owner'), param(req, 'repo'));
  if (!repo) sendError(ctx, res, 404, 'Not Found');
  return repo;
}

/** The issue or pull request `:number` of the repository, or answer 404 and return `undefined`. */
export function findIssue(
  ctx: StandinContext,
  repo: RepoRecord,
  req: Request,
  res: Response,
  name = 'number',
): IssueRecord | undefined {
  const n = Number(param(req, name));
  const issue = Number.isInteger(n) ? ctx.store.issue(repo, n) : undefined;
  if (!issue) sendError(ctx, res, 404, 'Not Found');
  return issue;
}

/**
 * The record `:id` of `records` (comments, check runs) if it belongs to the repository of
 * `/repos/:owner/:repo/...`; otherwise answer 404 and return `undefined`.
 */
export function findInRepo<T extends { repoKey: string }>(
  ctx: StandinContext,
  req: Request,
  res: Response,
  records: Map<number, T>,
): { repo: RepoRecord; record: T } | undefined {
  const repo = findRepo(ctx, req, res);
  if (!repo) return undefined;
  const record = records.get(Number(param(req, 'id')));
  if (!record || record.repoKey !== repoKey(repo.owner, repo.name)) {
    sendError(ctx, res, 404, 'Not Found');
    return undefined;
  }
  return { repo, record };
}

/**
 * Answer with one page of `items` (`per_page` default 30, max 100; `page` from 1) and GitHub's
 * `Link` header (`next`, `last`, `first`, `prev`) when there is more than one page.
 * `wrap` turns the page into the body (e.g. `{total_count, check_runs}`).
 */
export function sendPage<T>(
  ctx: StandinContext,
  req: Request,
  res: Response,
  items: T[],
  wrap: (page: T[]) => unknown = (page) => page,
): void {
  const perPage = Math.min(Math.max(Number.parseInt(query(req, 'per_page') ?? '30', 10) || 30, 1), 100);
  const page = Math.max(Number.parseInt(query(req, 'page') ?? '1', 10) || 1, 1);
  const last = Math.max(Math.ceil(items.length / perPage), 1);
  const links: string[] = [];
  const link = (p: number, rel: string) => {
    const params = new URLSearchParams(req.query as Record<string, string>);
    params.set('page', String(p));
    links.push(`<${ctx.url}${req.baseUrl}${req.path}?${params.toString()}>; rel="${rel}"`);
  };
  if (page < last) {
    link(page + 1, 'next');
    link(last, 'last');
  }
  if (page > 1) {
    link(page - 1, 'prev');
    link(1, 'first');
  }
  if (links.length > 0) res.setHeader('Link', links.join(', '));
  res.status(200).json(wrap(items.slice((page - 1) * perPage, page * perPage)));
}
