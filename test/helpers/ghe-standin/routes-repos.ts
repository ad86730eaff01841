import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { branchSha, resolveCommit, runGit, ZERO_SHA } from './bare-repos.js';
import { nodeId } from './github-objects.js';
import { isoNow, repoKey, type CheckRunRecord, type RepoRecord, type RepoRole } from './ghe-store.js';
import {
  findInRepo,
  findRepo,
  param,
  parseBody,
  query,
  sendError,
  sendPage,
  type StandinContext,
} from './standin-context.js';

/** GitHub's coarse `permission` for a `role_name` (maintain → write, triage → read). */
export function permissionOfRole(role: RepoRole): 'admin' | 'write' | 'read' | 'none' {
  if (role === 'admin') return 'admin';
  if (role === 'maintain' || role === 'write') return 'write';
  if (role === 'triage' || role === 'read') return 'read';
  return 'none';
}

/** Check run text limits of GitHub (characters). */
const OUTPUT_MAX_CHARS = 65_535;

const outputSchema = z.object({
  title: z.string(),
  summary: z.string().max(OUTPUT_MAX_CHARS),
  text: z.string().max(OUTPUT_MAX_CHARS).optional(),
  annotations: z.array(z.unknown()).optional(),
  images: z.array(z.unknown()).optional(),
});
const statusSchema = z.enum(['queued', 'in_progress', 'completed', 'waiting', 'requested', 'pending']);
const conclusionSchema = z.enum([
  'action_required',
  'cancelled',
  'failure',
  'neutral',
  'success',
  'skipped',
  'stale',
  'timed_out',
]);
const checkRunFields = {
  details_url: z.string().optional(),
  external_id: z.string().optional(),
  status: statusSchema.optional(),
  started_at: z.string().optional(),
  conclusion: conclusionSchema.optional(),
  completed_at: z.string().optional(),
  output: outputSchema.optional(),
  actions: z.array(z.unknown()).max(3).optional(),
};
const createCheckRunBody = z.object({
  name: z.string().min(1),
  head_sha: z.string().min(1),
  ...checkRunFields,
});
const updateCheckRunBody = z.object({ name: z.string().min(1).optional(), ...checkRunFields });

/** `git log -1` facts of a commit, shaped like the `commit` object of the branches API. */
async function commitObject(
  ctx: StandinContext,
  repo: RepoRecord,
  sha: string,
): Promise<Record<string, unknown>> {
  const fmt = ['%H', '%T', '%P', '%an', '%ae', '%aI', '%cn', '%ce', '%cI', '%B'].join('%x00');
  const out = (await runGit(['--git-dir', repo.dir, 'log', '-1', `--format=${fmt}`, sha])).stdout;
  const [h = sha, tree = '', parents = '', an, ae, ad, cn, ce, cd, message = ''] = out.split('\0');
  const api = `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}`;
  const html = `${ctx.url}/${repo.owner}/${repo.name}`;
  const toUtc = (d: string | undefined) => isoNow(Date.parse(d ?? ''));
  return {
    sha: h,
    node_id: nodeId('Commit', repo.id),
    commit: {
      author: { name: an, email: ae, date: toUtc(ad) },
      committer: { name: cn, email: ce, date: toUtc(cd) },
      message: message.replace(/\n+$/, ''),
      tree: { sha: tree, url: `${api}/git/trees/${tree}` },
      url: `${api}/git/commits/${h}`,
      comment_count: 0,
      verification: { verified: false, reason: 'unsigned', signature: null, payload: null },
    },
    url: `${api}/commits/${h}`,
    html_url: `${html}/commit/${h}`,
    comments_url: `${api}/commits/${h}/comments`,
    author: null,
    committer: null,
    parents: parents
      .split(' ')
      .filter((p) => p !== '')
      .map((p) => ({ sha: p, url: `${api}/commits/${p}`, html_url: `${html}/commit/${p}` })),
  };
}

/** Repository, permission, team, contents, git ref, branch and check run endpoints. */
export function registerRepoRoutes(router: Router, ctx: StandinContext): void {
  router.get('/repos/:owner/:repo', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (repo) res.json(ctx.objects.repository(repo, { withPermissions: true }));
  });

  router.get('/repos/:owner/:repo/collaborators/:username/permission', (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const login = param(req, 'username');
    const role: RepoRole = repo.roles.get(login.toLowerCase()) ?? 'none';
    const permission = permissionOfRole(role);
    const at = (levels: RepoRole[]) => levels.includes(role);
    res.json({
      permission,
      role_name: role,
      user: {
        ...ctx.objects.user(login),
        permissions: {
          admin: at(['admin']),
          maintain: at(['admin', 'maintain']),
          push: at(['admin', 'maintain', 'write']),
          triage: at(['admin', 'maintain', 'write', 'triage']),
          pull: role !== 'none',
        },
        role_name: role,
      },
    });
  });

  router.get('/orgs/:org/teams/:team/memberships/:username', (req, res) => {
    const members = ctx.store.teams.get(`${param(req, 'org')}/${param(req, 'team')}`.toLowerCase());
    const login = param(req, 'username');
    if (!members?.has(login.toLowerCase())) return sendError(ctx, res, 404, 'Not Found');
    res.json({
      url: `${ctx.apiUrl}/organizations/${param(req, 'org')}/team/${param(req, 'team')}/memberships/${login}`,
      role: 'member',
      state: 'active',
    });
  });

  router.get('/repos/:owner/:repo/contents{/*path}', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const filePath = param(req, 'path').replace(/^\/+|\/+$/g, '');
    const ref = query(req, 'ref') ?? repo.defaultBranch;
    const sha = await resolveCommit(repo.dir, ref);
    if (!sha) return sendError(ctx, res, 404, `No commit found for the ref ${ref}`);
    const api = `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}`;
    const html = `${ctx.url}/${repo.owner}/${repo.name}`;
    const objectName = filePath === '' ? `${sha}^{tree}` : `${sha}:${filePath}`;
    const type = (await runGit(['--git-dir', repo.dir, 'cat-file', '-t', objectName])).stdout.trim();
    const wantsRaw = /\braw\b/.test(req.headers.accept ?? '');
    const entry = (p: string, kind: string, objectSha: string, size: number) => {
      const links = {
        self: `${api}/contents/${p}?ref=${encodeURIComponent(ref)}`,
        git: `${api}/git/${kind === 'dir' ? 'trees' : 'blobs'}/${objectSha}`,
        html: `${html}/${kind === 'dir' ? 'tree' : 'blob'}/${ref}/${p}`,
      };
      return {
        type: kind,
        size,
        name: p.split('/').pop() ?? p,
        path: p,
        sha: objectSha,
        url: links.self,
        git_url: links.git,
        html_url: links.html,
        download_url: kind === 'file' ? `${html}/raw/${ref}/${p}` : null,
        _links: links,
      };
    };
    if (type === 'blob') {
      const blob = (await runGit(['--git-dir', repo.dir, 'cat-file', 'blob', objectName])).stdoutBuffer;
      const blobSha = (await runGit(['--git-dir', repo.dir, 'rev-parse', objectName])).stdout.trim();
      if (wantsRaw) {
        res.status(200).type('application/vnd.github.raw; charset=utf-8').send(blob);
        return;
      }
      // GitHub wraps the base64 content at 60 characters.
      const content = (blob.toString('base64').match(/.{1,60}/g) ?? []).join('\n');
      res.json({
        ...entry(filePath, 'file', blobSha, blob.length),
        content: `${content}\n`,
        encoding: 'base64',
      });
      return;
    }
    if (type === 'tree') {
      const listing = (await runGit(['--git-dir', repo.dir, 'ls-tree', '-l', objectName])).stdout;
      const entries = listing
        .split('\n')
        .filter((l) => l !== '')
        .map((line) => {
          const [meta = '', name = ''] = line.split('\t');
          const [mode = '', kind = '', objectSha = '', size = '-'] = meta.split(/\s+/);
          const p = filePath === '' ? name : `${filePath}/${name}`;
          const t =
            kind === 'tree'
              ? 'dir'
              : kind === 'commit'
                ? 'submodule'
                : mode === '120000'
                  ? 'symlink'
                  : 'file';
          return entry(p, t, objectSha, Number.parseInt(size, 10) || 0);
        });
      res.json(entries);
      return;
    }
    sendError(ctx, res, 404, 'Not Found');
  });

  const sendRef = async (req: Request, res: Response, ref: string) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const r = await runGit(['--git-dir', repo.dir, 'show-ref', '--verify', '--hash', `refs/${ref}`]);
    if (r.code !== 0) return sendError(ctx, res, 404, 'Not Found');
    const sha = r.stdout.trim();
    const api = `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}`;
    res.json({
      ref: `refs/${ref}`,
      node_id: nodeId('Ref', repo.id),
      url: `${api}/git/refs/${ref}`,
      object: { sha, type: 'commit', url: `${api}/git/commits/${sha}` },
    });
  };
  router.get('/repos/:owner/:repo/git/ref/*ref', (req, res) => sendRef(req, res, param(req, 'ref')));
  // The older plural form still answers single refs.
  router.get('/repos/:owner/:repo/git/refs/*ref', (req, res) => sendRef(req, res, param(req, 'ref')));

  router.delete('/repos/:owner/:repo/git/refs/*ref', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const ref = `refs/${param(req, 'ref')}`;
    const r = await runGit(['--git-dir', repo.dir, 'update-ref', '-d', ref]);
    if (r.code !== 0) return sendError(ctx, res, 422, 'Reference does not exist');
    await ctx.refsUpdated(repo, [{ ref, newSha: ZERO_SHA }]);
    res.status(204).end();
  });

  const branchObject = async (repo: RepoRecord, name: string, sha: string) => {
    const api = `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}`;
    const protectedBranch = repo.protectedBranches.has(name);
    return {
      name,
      commit: await commitObject(ctx, repo, sha),
      _links: { self: `${api}/branches/${name}`, html: `${ctx.url}/${repo.owner}/${repo.name}/tree/${name}` },
      protected: protectedBranch,
      protection: {
        enabled: protectedBranch,
        required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] },
      },
      protection_url: `${api}/branches/${name}/protection`,
    };
  };

  router.get('/repos/:owner/:repo/branches', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const out = (
      await runGit([
        '--git-dir',
        repo.dir,
        'for-each-ref',
        '--format=%(refname:lstrip=2) %(objectname)',
        'refs/heads/',
      ])
    ).stdout;
    const items = out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const [name = '', sha = ''] = l.split(' ');
        const api = `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}`;
        return {
          name,
          commit: { sha, url: `${api}/commits/${sha}` },
          protected: repo.protectedBranches.has(name),
        };
      });
    sendPage(ctx, req, res, items);
  });

  router.get('/repos/:owner/:repo/branches/*branch', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const name = param(req, 'branch');
    const sha = await branchSha(repo.dir, name);
    if (!sha) return sendError(ctx, res, 404, 'Branch not found');
    res.json(await branchObject(repo, name, sha));
  });

  // --- check runs -------------------------------------------------------------------------------

  const applyCheckRunFields = (
    run: CheckRunRecord,
    body: z.infer<typeof updateCheckRunBody>,
  ): string | null => {
    if (body.name !== undefined) run.name = body.name;
    if (body.details_url !== undefined) run.detailsUrl = body.details_url;
    if (body.external_id !== undefined) run.externalId = body.external_id;
    if (body.started_at !== undefined) run.startedAt = body.started_at;
    if (body.output !== undefined) {
      run.output = { title: body.output.title, summary: body.output.summary, text: body.output.text ?? null };
    }
    if (body.status !== undefined) run.status = body.status;
    if (body.conclusion !== undefined) {
      // Giving a conclusion completes the run, as on GitHub.
      run.conclusion = body.conclusion;
      run.status = 'completed';
      run.completedAt = body.completed_at ?? isoNow();
    } else if (body.status === 'completed' && run.conclusion === null) {
      return 'Conclusion required if status is completed';
    }
    if (body.status !== undefined && body.status !== 'completed') {
      run.conclusion = null;
      run.completedAt = null;
    }
    return null;
  };

  router.post('/repos/:owner/:repo/check-runs', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const body = parseBody(ctx, createCheckRunBody, req, res);
    if (!body) return;
    const sha = /^[0-9a-f]{40}$/.test(body.head_sha) ? await resolveCommit(repo.dir, body.head_sha) : null;
    if (!sha) {
      return sendError(ctx, res, 422, 'Validation Failed', [
        {
          resource: 'CheckRun',
          code: 'invalid',
          field: 'head_sha',
          message: `No commit found for SHA: ${body.head_sha}`,
        },
      ]);
    }
    const suiteKey = `${repoKey(repo.owner, repo.name)}@${sha}`;
    const suite = ctx.store.checkSuites.get(suiteKey) ?? ctx.store.nextId();
    ctx.store.checkSuites.set(suiteKey, suite);
    const run: CheckRunRecord = {
      id: ctx.store.nextId(),
      repoKey: repoKey(repo.owner, repo.name),
      name: body.name,
      headSha: sha,
      status: 'queued',
      conclusion: null,
      startedAt: isoNow(),
      completedAt: null,
      output: { title: null, summary: null, text: null },
      detailsUrl: null,
      externalId: '',
      checkSuiteId: suite,
    };
    const problem = applyCheckRunFields(run, body);
    if (problem) return sendError(ctx, res, 422, problem);
    ctx.store.checkRuns.set(run.id, run);
    res
      .status(201)
      .setHeader('Location', `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}/check-runs/${run.id}`)
      .json(ctx.objects.checkRun(repo, run));
  });

  const findRun = (req: Request, res: Response) => {
    const found = findInRepo(ctx, req, res, ctx.store.checkRuns);
    return found && { repo: found.repo, run: found.record };
  };

  router.get('/repos/:owner/:repo/check-runs/:id', (req, res) => {
    const found = findRun(req, res);
    if (found) res.json(ctx.objects.checkRun(found.repo, found.run));
  });

  router.patch('/repos/:owner/:repo/check-runs/:id', (req, res) => {
    const found = findRun(req, res);
    if (!found) return;
    const body = parseBody(ctx, updateCheckRunBody, req, res);
    if (!body) return;
    const copy = structuredClone(found.run);
    const problem = applyCheckRunFields(copy, body);
    if (problem) return sendError(ctx, res, 422, problem);
    Object.assign(found.run, copy);
    res.json(ctx.objects.checkRun(found.repo, found.run));
  });

  router.get('/repos/:owner/:repo/commits/*ref/check-runs', async (req, res) => {
    const repo = findRepo(ctx, req, res);
    if (!repo) return;
    const ref = param(req, 'ref');
    const sha = await resolveCommit(repo.dir, ref);
    if (!sha) return sendError(ctx, res, 422, `No commit found for SHA: ${ref}`);
    const name = query(req, 'check_name');
    const status = query(req, 'status');
    let runs = [...ctx.store.checkRuns.values()].filter(
      (r) =>
        r.repoKey === repoKey(repo.owner, repo.name) &&
        r.headSha === sha &&
        (name === undefined || r.name === name) &&
        (status === undefined || r.status === status),
    );
    if ((query(req, 'filter') ?? 'latest') === 'latest') {
      // Only the newest run of each name, like GitHub's default filter.
      const newest = new Map<string, CheckRunRecord>();
      for (const r of runs) newest.set(r.name, r);
      runs = [...newest.values()];
    }
    const rendered = runs.sort((a, b) => b.id - a.id).map((r) => ctx.objects.checkRun(repo, r));
    sendPage(ctx, req, res, rendered, (page) => ({ total_count: rendered.length, check_runs: page }));
  });
}
