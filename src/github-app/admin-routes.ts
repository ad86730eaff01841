import type { RecordStore } from '../observability/record-store.js';
import { createRecordRoutes } from './admin-record-routes.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { isAppError } from '../app-error.js';
import { resolveEffectivePolicy } from '../config/policy.js';
import type { PolicyStore } from '../config/policy-store.js';
import type { LoadedRepoConfigs } from '../config/repo-config.js';
import type { Logger } from '../observability/logger.js';

/** Options of {@link createAdminRouter}. */
export interface AdminRouterOptions {
  /** BullMQ queues shown in Bull Board. */
  queues: readonly Queue[];
  policyStore: PolicyStore;
  /** Admin credentials (env `ADMIN_USER`, `ADMIN_PASSWORD`). Either missing = admin views disabled. */
  adminUser?: string | undefined;
  adminPassword?: string | undefined;
  /**
   * Reads the org and repo `.github/frognano.yml` of `owner/name` with that repository's
   * installation (see `loadRepoConfigs` in config/repo-config.ts). Without it, `/admin/policy` shows
   * the admin layers only and says so.
   */
  loadRepoConfigs?: (owner: string, name: string) => Promise<LoadedRepoConfigs>;
  /** Public path the router is mounted at (default `/admin`); Bull Board builds its asset URLs from it. */
  basePath?: string;
  /**
   * Bull Board read-only (default true): no retry, promote, clean, remove, pause or add, neither as
   * buttons nor through its API. `ADMIN_ACTIONS=true` turns the actions on.
   */
  readOnly?: boolean;
  logger?: Logger;
  /** The run record store: `/admin/records…` (see admin-record-routes.ts). Without it those views are absent. */
  records?: RecordStore;
}

/** `owner/name` as GitHub allows them. */
const repoParam = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/);

/**
 * Content-Security-Policy of the admin pages: everything from this server only. Bull Board's page
 * uses inline `style` attributes and one inline `<style>` (hence `'unsafe-inline'` for styles
 * only); its scripts are files under `static/`.
 */
const ADMIN_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

/**
 * @bull-board/ui's page (`dist/index.ejs`) links the IBM Plex fonts from fonts.googleapis.com. On a
 * closed network that request hangs in the admin's browser and leaks the visit; the page's CSS
 * falls back to the system's sans-serif and monospace fonts without it.
 */
const EXTERNAL_FONT_LINK = /<link\b[^>]*\bhref="https:\/\/fonts\.(?:googleapis|gstatic)\.com[^"]*"[^>]*>\s*/g;

/** Remove the external font links from Bull Board's HTML page as it is sent. */
function stripExternalFonts(_req: Request, res: Response, next: NextFunction): void {
  const send = res.send.bind(res);
  res.send = (body?: unknown) =>
    send(typeof body === 'string' && body.includes('<html') ? body.replace(EXTERNAL_FONT_LINK, '') : body);
  next();
}

/** SHA-256 both sides, then compare in constant time (timingSafeEqual needs equal lengths). */
function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** User and password of an HTTP Basic `Authorization` header (RFC 7617), or undefined. */
function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The admin views, as an express Router to mount at `basePath` (default `/admin`):
 *
 * - `GET /admin/queues` — Bull Board (the BullMQ dashboard) for `queues`, read-only unless
 *   `readOnly: false`, every asset served from here (no external fonts; a `'self'`-only CSP).
 * - `GET /admin/policy?repo=owner/name` — JSON: the effective policy of that repository, where each
 *   value came from (`sources`), clamps, the repository configuration errors and deprecation
 *   warnings, the policy file's deprecation warnings (`policyWarnings`) and its reload error if any.
 *
 * Everything is behind HTTP Basic auth with the admin credentials (compared in constant time). A
 * request without valid credentials gets 401 with `WWW-Authenticate`. When the credentials are not
 * configured, every route answers 403 saying how to enable them: the views are never open.
 */
export function createAdminRouter(options: AdminRouterOptions): Router {
  const basePath = (options.basePath ?? '/admin').replace(/\/+$/, '');
  const router = Router();
  const { adminUser, adminPassword, policyStore } = options;
  const configured = Boolean(adminUser) && Boolean(adminPassword);

  router.use((req: Request, res: Response, next: NextFunction) => {
    if (!configured) {
      res
        .status(403)
        .type('text/plain')
        .send('The admin views are disabled: set ADMIN_USER and ADMIN_PASSWORD to enable them.\n');
      return;
    }
    const creds = parseBasic(req.headers.authorization);
    // Both comparisons always run, so the time taken does not tell which one failed.
    const userOk = safeEqual(creds?.user ?? '', adminUser ?? '');
    const passwordOk = safeEqual(creds?.password ?? '', adminPassword ?? '');
    if (!creds || !userOk || !passwordOk) {
      if (creds) options.logger?.warn({ path: req.path }, 'admin view: wrong credentials');
      res
        .status(401)
        .set('WWW-Authenticate', 'Basic realm="frognano-bot admin", charset="UTF-8"')
        .type('text/plain')
        .send('Admin credentials required.\n');
      return;
    }
    next();
  });

  router.use((_req: Request, res: Response, next: NextFunction) => {
    res.set('Content-Security-Policy', ADMIN_CSP);
    next();
  });

  const readOnly = options.readOnly ?? true;
  if (readOnly) {
    // Bull Board's read-only mode hides the buttons and its handlers refuse; this also closes the
    // routes that do not look at it (e.g. metrics history purge) whatever the version does.
    router.use('/queues', (req: Request, res: Response, next: NextFunction) => {
      if (req.method === 'GET' || req.method === 'HEAD') return next();
      res
        .status(405)
        .type('text/plain')
        .send('Bull Board is read-only: set ADMIN_ACTIONS=true to allow job actions.\n');
    });
  }
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(`${basePath}/queues`);
  createBullBoard({
    queues: options.queues.map((q) => new BullMQAdapter(q, { readOnlyMode: readOnly })),
    // @bull-board/express pins its own copy of @bull-board/api (see the report): the classes are the
    // same at run time, only their private fields make the two declarations incompatible for tsc.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
  });
  router.use('/queues', stripExternalFonts, serverAdapter.getRouter() as Router);
  if (options.records) router.use('/records', createRecordRoutes(options.records));

  router.get('/policy', async (req: Request, res: Response) => {
    const repo = repoParam.safeParse(req.query.repo);
    if (!repo.success) {
      res.status(400).json({ error: 'add ?repo=owner/name (a repository full name)' });
      return;
    }
    const [owner = '', name = ''] = repo.data.split('/');
    let loaded: LoadedRepoConfigs | undefined;
    if (options.loadRepoConfigs) {
      try {
        loaded = await options.loadRepoConfigs(owner, name);
      } catch (err) {
        options.logger?.warn({ err, repo: repo.data }, 'admin view: cannot read repository configuration');
        res.status(502).json({
          error: `cannot read the repository configuration of ${repo.data}: ${(err as Error).message}`,
          code: isAppError(err) ? err.code : 'INTERNAL',
        });
        return;
      }
    }
    const { clamps, sources, ...effective } = resolveEffectivePolicy({
      policy: policyStore.current(),
      repo: repo.data,
      ...(loaded?.orgConfig ? { orgConfig: loaded.orgConfig } : {}),
      ...(loaded?.repoConfig ? { repoConfig: loaded.repoConfig } : {}),
    });
    res.json({
      repo: repo.data,
      policyFile: policyStore.path,
      policyReloadError: policyStore.lastError(),
      policyWarnings: policyStore.current().warnings ?? [],
      repositoryConfig: loaded
        ? {
            read: true,
            org: loaded.orgConfig?.source ?? null,
            repo: loaded.repoConfig?.source ?? null,
            errors: loaded.errors,
            warnings: [...(loaded.orgConfig?.warnings ?? []), ...(loaded.repoConfig?.warnings ?? [])],
          }
        : { read: false, note: 'repository configuration not read: admin layers only' },
      effective,
      sources,
      clamps,
    });
  });

  return router;
}
