import type { Response, Router } from 'express';
import { z } from 'zod';
import { isoNow } from './ghe-store.js';
import { param, parseBody, sendError, sendPage, type StandinContext } from './standin-context.js';

const accessTokenBody = z
  .object({
    repositories: z.array(z.string()).optional(),
    repository_ids: z.array(z.number()).optional(),
    permissions: z.record(z.string(), z.string()).optional(),
  })
  .optional();

/** GitHub App endpoints (JWT), installation-token endpoints about the installation, `/meta`, `/rate_limit`. */
export function registerAppRoutes(router: Router, ctx: StandinContext): void {
  router.get('/app', (_req, res) => {
    res.json(ctx.objects.app());
  });

  router.get('/app/installations', (req, res) => {
    sendPage(ctx, req, res, [ctx.objects.installation()]);
  });

  router.get('/app/installations/:id', (req, res) => {
    if (Number(param(req, 'id')) !== ctx.installationId) return sendError(ctx, res, 404, 'Not Found');
    res.json(ctx.objects.installation());
  });

  router.post('/app/installations/:id/access_tokens', (req, res) => {
    if (Number(param(req, 'id')) !== ctx.installationId) return sendError(ctx, res, 404, 'Not Found');
    const body = parseBody(ctx, accessTokenBody, req, res);
    if (res.headersSent) return;
    const record = ctx.auth.issueInstallationToken(ctx.installationId);
    // A narrower request gets what it asked for; GitHub refuses more than the installation has.
    const permissions = body?.permissions ?? ctx.permissions;
    for (const [name, level] of Object.entries(permissions)) {
      const granted = ctx.permissions[name];
      if (granted === undefined || (granted === 'read' && level !== 'read')) {
        ctx.auth.tokens.delete(record.token);
        return sendError(ctx, res, 422, `The permissions requested are not granted to this installation.`);
      }
    }
    const repos = [...ctx.store.repos.values()].filter(
      (r) =>
        (body?.repositories?.some((n) => n.toLowerCase() === r.name.toLowerCase()) ?? false) ||
        (body?.repository_ids?.includes(r.id) ?? false),
    );
    const narrowed = body?.repositories !== undefined || body?.repository_ids !== undefined;
    res.status(201).json({
      token: record.token,
      expires_at: isoNow(record.expiresAtMs),
      permissions,
      repository_selection: narrowed ? 'selected' : 'all',
      ...(narrowed ? { repositories: repos.map((r) => ctx.objects.repository(r)) } : {}),
    });
  });

  // GitHub answers these with the installation that covers the repository / account, or 404.
  const installationIf = (covered: boolean, res: Response) =>
    covered ? res.json(ctx.objects.installation()) : sendError(ctx, res, 404, 'Not Found');
  const isAccount = (login: string) => login.toLowerCase() === ctx.installationAccount.toLowerCase();
  router.get('/repos/:owner/:repo/installation', (req, res) =>
    installationIf(ctx.store.repo(param(req, 'owner'), param(req, 'repo')) !== undefined, res),
  );
  router.get('/orgs/:org/installation', (req, res) => installationIf(isAccount(param(req, 'org')), res));
  router.get('/users/:user/installation', (req, res) => installationIf(isAccount(param(req, 'user')), res));

  router.get('/installation/repositories', (req, res) => {
    const repos = [...ctx.store.repos.values()].map((r) => ctx.objects.repository(r));
    sendPage(ctx, req, res, repos, (page) => ({
      total_count: repos.length,
      repository_selection: 'all',
      repositories: page,
    }));
  });

  router.delete('/installation/token', (req, res) => {
    const token = res.locals.installationToken as string | undefined;
    const record = token === undefined ? undefined : ctx.auth.tokens.get(token);
    if (record) record.revoked = true;
    res.status(204).end();
  });

  router.get('/meta', (_req, res) => {
    res.json({ verifiable_password_authentication: false, installed_version: ctx.gheVersion });
  });

  router.get('/rate_limit', (_req, res) => {
    const reset = Math.floor(Date.now() / 1000) + 3600;
    const core = { limit: 5000, used: 0, remaining: 5000, reset };
    res.json({
      resources: { core, search: { ...core, limit: 30, remaining: 30 }, graphql: core },
      rate: core,
    });
  });
}
