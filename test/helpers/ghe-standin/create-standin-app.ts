import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { parseTokenHeader } from './app-auth.js';
import { GIT_PATH, serveGitHttp } from './git-http-backend.js';
import type { RecordedRequest } from './ghe-store.js';
import { registerAppRoutes } from './routes-app.js';
import { registerIssueRoutes } from './routes-issues.js';
import { registerPullRoutes } from './routes-pulls.js';
import { registerRepoRoutes } from './routes-repos.js';
import { sendError, type FaultRule, type StandinContext } from './standin-context.js';

/** Routes that take the app's JWT (as listed by `@octokit/auth-app` and GitHub's docs). */
const APP_JWT_ROUTES = [
  /^\/app(\/|$)/,
  /^\/repos\/[^/]+\/[^/]+\/installation$/,
  /^\/(orgs|users)\/[^/]+\/installation$/,
];
/** Routes GitHub answers without authentication. */
const ANONYMOUS_ROUTES = [/^\/meta$/, /^\/rate_limit$/];

/** Largest request body accepted (bytes); git pushes are streamed, not buffered. */
const MAX_JSON_BODY_BYTES = 25 * 1024 * 1024;

/** Take one use of the first `failNext` rule matching the request, if any. */
function takeFault(ctx: StandinContext, method: string, fullPath: string): FaultRule | undefined {
  const rule = ctx.faults.find(
    (f) =>
      f.remaining > 0 && (f.method === '*' || f.method === method.toUpperCase()) && f.pattern.test(fullPath),
  );
  if (!rule) return undefined;
  rule.remaining -= 1;
  if (rule.remaining === 0) ctx.faults.splice(ctx.faults.indexOf(rule), 1);
  return rule;
}

/**
 * The Express application of the stand-in: REST under `/api/v3`, git smart HTTP under
 * `/{owner}/{repo}.git/`, and a recorded 404 for everything else.
 */
export function createStandinApp(ctx: StandinContext): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const api = express.Router();
  api.use(express.raw({ type: () => true, limit: MAX_JSON_BODY_BYTES }));

  // Parse, record, inject faults, stamp GitHub's headers.
  api.use((req: Request, res: Response, next: NextFunction) => {
    const raw: unknown = req.body;
    let body: unknown;
    let parseFailed = false;
    if (Buffer.isBuffer(raw) && raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        parseFailed = true;
      }
    }
    req.body = body;
    const record: RecordedRequest = {
      method: req.method,
      path: req.path,
      query: Object.fromEntries(Object.entries(req.query).map(([k, v]) => [k, String(v)])),
      body,
      auth: 'none',
    };
    ctx.store.requests.push(record);
    res.locals.record = record;
    res.on('finish', () => {
      record.status = res.statusCode;
    });
    const reset = Math.floor(Date.now() / 1000) + 3600;
    res.set({
      'X-GitHub-Enterprise-Version': ctx.gheVersion,
      'X-GitHub-Media-Type': 'github.v3; format=json',
      'X-GitHub-Request-Id': randomUUID().toUpperCase(),
      'X-RateLimit-Limit': '5000',
      'X-RateLimit-Remaining': '4999',
      'X-RateLimit-Reset': String(reset),
      'X-RateLimit-Used': '1',
      'X-RateLimit-Resource': 'core',
    });
    const fault = takeFault(ctx, req.method, `${req.baseUrl}${req.path}`);
    if (fault) {
      record.injected = true;
      res.status(fault.status).set(fault.headers ?? {});
      if (fault.body !== undefined) res.json(fault.body);
      else sendError(ctx, res, fault.status, `Injected failure (HTTP ${fault.status})`);
      return;
    }
    if (parseFailed) return sendError(ctx, res, 400, 'Problems parsing JSON');
    next();
  });

  // Authentication: app JWT for the app routes, an installation token for the rest.
  api.use((req: Request, res: Response, next: NextFunction) => {
    const record = res.locals.record as RecordedRequest;
    const token = parseTokenHeader(req.headers.authorization);
    if (APP_JWT_ROUTES.some((r) => r.test(req.path))) {
      const verdict =
        token === null
          ? { ok: false as const, message: 'A JSON web token could not be decoded' }
          : ctx.auth.verifyJwt(token);
      if (!verdict.ok) {
        record.auth = token === null ? 'none' : 'invalid';
        return sendError(ctx, res, 401, verdict.message);
      }
      record.auth = 'app';
      return next();
    }
    if (token === null) {
      if (ANONYMOUS_ROUTES.some((r) => r.test(req.path))) return next();
      return sendError(ctx, res, 401, 'Requires authentication');
    }
    if (ctx.auth.checkInstallationToken(token).ok) {
      record.auth = 'installation';
      res.locals.installationToken = token;
      return next();
    }
    if (ANONYMOUS_ROUTES.some((r) => r.test(req.path)) && ctx.auth.verifyJwt(token).ok) {
      record.auth = 'app';
      return next();
    }
    record.auth = 'invalid';
    sendError(ctx, res, 401, 'Bad credentials');
  });

  registerAppRoutes(api, ctx);
  registerRepoRoutes(api, ctx);
  registerIssueRoutes(api, ctx);
  registerPullRoutes(api, ctx);

  api.use((req: Request, res: Response) => {
    ctx.store.unhandled.push({ method: req.method, path: req.path });
    sendError(ctx, res, 404, 'Not Found');
  });
  app.use('/api/v3', api);

  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!GIT_PATH.test(req.path)) return next();
    const fault = takeFault(ctx, req.method, req.path);
    if (fault) {
      req.resume();
      res
        .status(fault.status)
        .set(fault.headers ?? {})
        .type('text/plain')
        .send(`Injected failure (HTTP ${fault.status})\n`);
      return;
    }
    serveGitHttp(req, res, {
      store: ctx.store,
      auth: ctx.auth,
      tmpDir: ctx.tmpDir,
      onPush: (repo, pushes) => ctx.refsUpdated(repo, pushes),
    }).catch(next);
  });

  app.use((req: Request, res: Response) => {
    ctx.store.unhandled.push({ method: req.method, path: req.path });
    sendError(ctx, res, 404, 'Not Found');
  });

  // Express 5 forwards rejected handler promises here; tests read `state.errors`.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const message = err instanceof Error ? err.message : String(err);
    ctx.store.errors.push({ method: req.method, path: req.path, message });
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(ctx, res, 500, `Stand-in error: ${message}`);
  });

  return app;
}
