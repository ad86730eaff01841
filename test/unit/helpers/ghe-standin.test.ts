import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Octokit } from '@octokit/rest';
import jwt from 'jsonwebtoken';
import { createNodeMiddleware, Probot, ProbotOctokit } from 'probot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { startGheStandin, STANDIN_GIT_IDENTITY, type GheStandin } from '../../helpers/ghe-standin/index.js';

const execFileAsync = promisify(execFile);
/** Octokit's request log, silenced (the failures below are on purpose). */
const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
const OWNER = 'octo-org';

/** git with no machine config, no prompts, bounded in time. */
async function git(args: string[], cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync('git', args, {
      cwd,
      timeout: 30_000,
      env: {
        PATH: process.env.PATH,
        HOME: cwd ?? tmpdir(),
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_TERMINAL_PROMPT: '0',
        GIT_AUTHOR_NAME: 'Worker',
        GIT_AUTHOR_EMAIL: 'worker@example.test',
        GIT_COMMITTER_NAME: 'Worker',
        GIT_COMMITTER_EMAIL: 'worker@example.test',
      },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** An Octokit like the worker's: installation auth through the app's JWT, no throttling waits. */
function installationOctokit(ghe: GheStandin): InstanceType<typeof ProbotOctokit> {
  return new ProbotOctokit({
    auth: { appId: ghe.appId, privateKey: ghe.privateKey, installationId: ghe.installationId },
    baseUrl: ghe.apiUrl,
    throttle: { enabled: false },
    retry: { enabled: false },
    log: quiet,
  });
}

function status(err: unknown): number | undefined {
  return (err as { status?: number }).status;
}

/** Every string anywhere in a JSON value. */
function allStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(allStrings);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(allStrings);
  return [];
}

describe('GHE stand-in', () => {
  let ghe: GheStandin;
  let work: string;
  let octokit: InstanceType<typeof ProbotOctokit>;
  /** Plain @octokit/rest with an installation token (no retries, no throttling). */
  let rest: Octokit;

  beforeAll(async () => {
    ghe = await startGheStandin({ appId: 4711, webhookSecret: 'whsec' });
    work = await mkdtemp(path.join(tmpdir(), 'ghe-standin-test-'));
    octokit = installationOctokit(ghe);
    rest = new Octokit({ auth: ghe.createInstallationToken().token, baseUrl: ghe.apiUrl, log: quiet });
  });

  afterAll(async () => {
    try {
      // Every Octokit call of this file hit a real route, and no handler crashed.
      expect(ghe.state.unhandled).toEqual([]);
      expect(ghe.state.errors).toEqual([]);
    } finally {
      await ghe.close();
      await rm(work, { recursive: true, force: true });
    }
  });

  describe('GitHub App authentication', () => {
    it('answers GET /app and mints installation tokens for a JWT signed with the app key', async () => {
      const app = new ProbotOctokit({
        auth: { appId: ghe.appId, privateKey: ghe.privateKey },
        baseUrl: ghe.apiUrl,
        throttle: { enabled: false },
        log: quiet,
      });
      const { data } = await app.request('GET /app');
      expect(data).toMatchObject({ id: 4711, slug: 'frognano' });
      await ghe.createRepo(OWNER, 'auth-check');
      const covering = await app.rest.apps.getRepoInstallation({ owner: OWNER, repo: 'auth-check' });
      expect(covering.data).toMatchObject({
        id: ghe.installationId,
        app_id: 4711,
        account: { login: OWNER },
      });
      const installations = await app.request('GET /app/installations');
      expect(installations.data.map((i) => i.id)).toEqual([ghe.installationId]);

      const token = await app.request('POST /app/installations/{installation_id}/access_tokens', {
        installation_id: ghe.installationId,
      });
      expect(token.status).toBe(201);
      expect(token.data.token).toMatch(/^ghs_[A-Za-z0-9]{36}$/);
      const ttlMs = Date.parse(token.data.expires_at) - Date.now();
      expect(ttlMs).toBeGreaterThan(59 * 60_000);
      expect(ttlMs).toBeLessThanOrEqual(60 * 60_000);
      expect(token.data.repository_selection).toBe('all');
      expect(token.data.permissions).toMatchObject({
        contents: 'write',
        issues: 'write',
        pull_requests: 'write',
      });
    });

    it('refuses missing, foreign-key, expired and wrong-issuer JWTs with 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      const valid = jwt.sign({ iat: now - 30, exp: now + 500, iss: ghe.appId }, ghe.privateKey, {
        algorithm: 'RS256',
      });
      // Flip the signature: what a JWT signed with another key looks like to the verifier.
      const [head = '', claims = '', signature = ''] = valid.split('.');
      const forged = `${head}.${claims}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
      const cases: Array<[string | undefined, RegExp]> = [
        [undefined, /could not be decoded/],
        [forged, /could not be decoded/],
        [
          jwt.sign({ iat: now - 700, exp: now - 100, iss: ghe.appId }, ghe.privateKey, {
            algorithm: 'RS256',
          }),
          /'Expiration time' claim \('exp'\) must be a numeric value/,
        ],
        [
          jwt.sign({ iat: now, exp: now + 3600, iss: String(ghe.appId) }, ghe.privateKey, {
            algorithm: 'RS256',
          }),
          /too far in the future/,
        ],
        [
          jwt.sign({ iat: now - 30, exp: now + 500, iss: 1 }, ghe.privateKey, { algorithm: 'RS256' }),
          /Integration not found/,
        ],
      ];
      for (const [token, message] of cases) {
        const res = await fetch(`${ghe.apiUrl}/app`, {
          headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
        });
        expect(res.status).toBe(401);
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        const body = (await res.json()) as { message: string; documentation_url: string };
        expect(body.message).toMatch(message);
        expect(body.documentation_url).toMatch(/^https:\/\/docs\.github\.com\/enterprise-server@3\.14/);
      }
      // A JWT with a string `iss` is fine (Octokit sends a number, others a string).
      const ok = jwt.sign({ iat: now - 30, exp: now + 500, iss: String(ghe.appId) }, ghe.privateKey, {
        algorithm: 'RS256',
      });
      expect((await fetch(`${ghe.apiUrl}/app`, { headers: { Authorization: `Bearer ${ok}` } })).status).toBe(
        200,
      );
    });

    it('requires a valid installation token on repository endpoints', async () => {
      expect((await fetch(`${ghe.apiUrl}/repos/${OWNER}/auth-check`)).status).toBe(401);
      const bad = await fetch(`${ghe.apiUrl}/repos/${OWNER}/auth-check`, {
        headers: { Authorization: 'token ghs_notatoken' },
      });
      expect(bad.status).toBe(401);
      expect(((await bad.json()) as { message: string }).message).toBe('Bad credentials');
      const { token } = ghe.createInstallationToken();
      for (const scheme of ['token', 'Bearer']) {
        const res = await fetch(`${ghe.apiUrl}/repos/${OWNER}/auth-check`, {
          headers: { Authorization: `${scheme} ${token}` },
        });
        expect(res.status).toBe(200);
      }
      // /meta answers without credentials and names the GHES version.
      const meta = (await (await fetch(`${ghe.apiUrl}/meta`)).json()) as { installed_version: string };
      expect(meta.installed_version).toBe('3.14.0');
    });

    it('revokes a token with DELETE /installation/token and expires tokens on demand', async () => {
      const { token } = ghe.createInstallationToken();
      const own = new Octokit({ auth: token, baseUrl: ghe.apiUrl, log: quiet });
      await own.request('DELETE /installation/token');
      await expect(own.rest.meta.get()).rejects.toSatisfy((e) => status(e) === 401);

      const other = ghe.createInstallationToken().token;
      ghe.expireInstallationTokens();
      const res = await fetch(`${ghe.apiUrl}/rate_limit`, { headers: { Authorization: `token ${other}` } });
      expect(res.status).toBe(401);
      // Fresh tokens for the rest of the file.
      rest = new Octokit({ auth: ghe.createInstallationToken().token, baseUrl: ghe.apiUrl, log: quiet });
      octokit = installationOctokit(ghe);
    });
  });

  describe('repositories and git smart HTTP', () => {
    it('serves a real bare repository: clone with a token, push a branch, record the push', async () => {
      const created = await ghe.createRepo(OWNER, 'calc', {
        files: {
          'calc.py': 'def add(a, b):\n    return a - b\n',
          '.github/frognano.yml': 'test_command: pytest\n',
        },
      });
      const repo = await rest.rest.repos.get({ owner: OWNER, repo: 'calc' });
      expect(repo.data).toMatchObject({
        name: 'calc',
        full_name: `${OWNER}/calc`,
        owner: { login: OWNER, type: 'Organization' },
        default_branch: 'main',
        private: true,
        clone_url: `${ghe.url}/${OWNER}/calc.git`,
        html_url: `${ghe.url}/${OWNER}/calc`,
        permissions: { push: true },
      });
      expect(await ghe.git(OWNER, 'calc', 'log', '-1', '--format=%an%n%ae', 'main')).toBe(
        `${STANDIN_GIT_IDENTITY.name}\n${STANDIN_GIT_IDENTITY.email}\n`,
      );

      const { token } = ghe.createInstallationToken();
      const dir = path.join(work, 'calc');
      const clone = await git(['clone', '--quiet', ghe.cloneUrl(OWNER, 'calc', token), dir]);
      expect(clone.stderr).toBe('');
      expect(clone.code).toBe(0);
      expect(await readFile(path.join(dir, 'calc.py'), 'utf8')).toContain('return a - b');
      expect((await git(['rev-parse', 'HEAD'], dir)).stdout.trim()).toBe(created.headSha);

      await writeFile(path.join(dir, 'calc.py'), 'def add(a, b):\n    return a + b\n');
      await git(['checkout', '--quiet', '-b', 'frognano/issue-1'], dir);
      await git(['commit', '--quiet', '-am', 'Fix add\n\nCloses #1'], dir);
      const head = (await git(['rev-parse', 'HEAD'], dir)).stdout.trim();
      const push = await git(['push', '--quiet', 'origin', 'frognano/issue-1'], dir);
      expect(push.code).toBe(0);

      expect(ghe.state.pushes).toContainEqual(
        expect.objectContaining({
          owner: OWNER,
          repo: 'calc',
          ref: 'refs/heads/frognano/issue-1',
          oldSha: '0'.repeat(40),
          newSha: head,
          user: 'x-access-token',
        }),
      );
      expect(await ghe.readBranch(OWNER, 'calc', 'frognano/issue-1')).toBe(head);
      expect(await ghe.listBranches(OWNER, 'calc')).toEqual(['frognano/issue-1', 'main']);
      expect(await ghe.readFile(OWNER, 'calc', 'frognano/issue-1', 'calc.py')).toContain('a + b');
      expect(await ghe.git(OWNER, 'calc', 'log', '-1', '--format=%an%n%ae%n%B', 'frognano/issue-1')).toBe(
        'Worker\nworker@example.test\nFix add\n\nCloses #1\n\n',
      );
    });

    it('refuses git without a valid token (401 + WWW-Authenticate) and pushes to protected branches', async () => {
      await ghe.createRepo(OWNER, 'locked');
      const anonymous = await git([
        'clone',
        '--quiet',
        `${ghe.url}/${OWNER}/locked.git`,
        path.join(work, 'anon'),
      ]);
      expect(anonymous.code).not.toBe(0);
      const refs = await fetch(`${ghe.url}/${OWNER}/locked.git/info/refs?service=git-upload-pack`);
      expect(refs.status).toBe(401);
      expect(refs.headers.get('www-authenticate')).toMatch(/^Basic/);
      const wrong = await git([
        'clone',
        '--quiet',
        ghe.cloneUrl(OWNER, 'locked', 'ghs_wrong'),
        path.join(work, 'x'),
      ]);
      expect(wrong.code).not.toBe(0);

      const { token } = ghe.createInstallationToken();
      const dir = path.join(work, 'locked');
      expect((await git(['clone', '--quiet', ghe.cloneUrl(OWNER, 'locked', token), dir])).code).toBe(0);
      await writeFile(path.join(dir, 'x.txt'), 'x\n');
      await git(['add', '.'], dir);
      await git(['commit', '--quiet', '-m', 'x'], dir);
      // Push with no credentials: refused, nothing recorded.
      const before = ghe.state.pushes.length;
      const unauth = await git(
        ['push', '--quiet', `${ghe.url}/${OWNER}/locked.git`, 'HEAD:refs/heads/side'],
        dir,
      );
      expect(unauth.code).not.toBe(0);
      expect(ghe.state.gitRequests.some((r) => r.repo === 'locked' && r.status === 401)).toBe(true);
      expect(await ghe.readBranch(OWNER, 'locked', 'side')).toBeNull();

      await ghe.protectBranch(OWNER, 'locked', 'main');
      const protectedPush = await git(['push', 'origin', 'HEAD:main'], dir);
      expect(protectedPush.code).not.toBe(0);
      expect(protectedPush.stderr).toContain('GH006');
      expect(ghe.state.pushes.length).toBe(before);
    });

    it('serves contents (base64, raw, Probot config), refs and branches from the bare repository', async () => {
      const file = await rest.rest.repos.getContent({
        owner: OWNER,
        repo: 'calc',
        path: '.github/frognano.yml',
      });
      const data = file.data as {
        type: string;
        encoding: string;
        content: string;
        path: string;
        sha: string;
      };
      expect(data).toMatchObject({ type: 'file', encoding: 'base64', path: '.github/frognano.yml' });
      expect(Buffer.from(data.content, 'base64').toString()).toBe('test_command: pytest\n');
      expect(data.sha).toBe((await ghe.git(OWNER, 'calc', 'rev-parse', 'main:.github/frognano.yml')).trim());

      const raw = await rest.request('GET /repos/{owner}/{repo}/contents/{path}', {
        owner: OWNER,
        repo: 'calc',
        path: 'calc.py',
        ref: 'frognano/issue-1',
        mediaType: { format: 'raw' },
      });
      expect(raw.data).toBe('def add(a, b):\n    return a + b\n');

      // Probot's context.config() path (@probot/octokit-plugin-config): YAML read through the raw media type.
      const config = await octokit.config.get({ owner: OWNER, repo: 'calc', path: '.github/frognano.yml' });
      expect(config.config).toEqual({ test_command: 'pytest' });

      await expect(
        rest.rest.repos.getContent({ owner: OWNER, repo: 'calc', path: '.github/missing.yml' }),
      ).rejects.toSatisfy((e) => status(e) === 404);
      const dir = await rest.rest.repos.getContent({ owner: OWNER, repo: 'calc', path: '.github' });
      expect(Array.isArray(dir.data) && dir.data.map((e) => e.name)).toEqual(['frognano.yml']);

      const ref = await rest.rest.git.getRef({ owner: OWNER, repo: 'calc', ref: 'heads/frognano/issue-1' });
      expect(ref.data.object.sha).toBe(await ghe.readBranch(OWNER, 'calc', 'frognano/issue-1'));
      await expect(rest.rest.git.getRef({ owner: OWNER, repo: 'calc', ref: 'heads/nope' })).rejects.toSatisfy(
        (e) => status(e) === 404,
      );
      const branch = await rest.rest.repos.getBranch({ owner: OWNER, repo: 'calc', branch: 'main' });
      expect(branch.data.commit.commit.author?.name).toBe(STANDIN_GIT_IDENTITY.name);
    });
  });

  describe('issues, comments, reactions, labels, permissions', () => {
    it('keeps the status comment history and reactions of the bot', async () => {
      await ghe.createRepo(OWNER, 'talk');
      const issue = ghe.createIssue(OWNER, 'talk', { title: 'Broken', body: 'Please fix', user: 'alice' });
      expect(issue.number).toBe(1);
      const got = await octokit.rest.issues.get({ owner: OWNER, repo: 'talk', issue_number: 1 });
      expect(got.data).toMatchObject({
        title: 'Broken',
        body: 'Please fix',
        user: { login: 'alice' },
        state: 'open',
      });

      const created = await octokit.rest.issues.createComment({
        owner: OWNER,
        repo: 'talk',
        issue_number: 1,
        body: 'queued',
      });
      expect(created.status).toBe(201);
      expect(created.headers.location).toBe(
        `${ghe.apiUrl}/repos/${OWNER}/talk/issues/comments/${created.data.id}`,
      );
      expect(created.data.user).toMatchObject({ login: 'frognano[bot]', type: 'Bot' });
      expect(created.data.html_url).toBe(`${ghe.url}/${OWNER}/talk/issues/1#issuecomment-${created.data.id}`);
      for (const body of ['running', 'pull request opened']) {
        await octokit.rest.issues.updateComment({
          owner: OWNER,
          repo: 'talk',
          comment_id: created.data.id,
          body,
        });
      }
      expect(ghe.state.commentBodies(created.data.id)).toEqual(['queued', 'running', 'pull request opened']);
      expect(
        ghe.state.commentHistory.filter((h) => h.commentId === created.data.id).map((h) => h.action),
      ).toEqual(['created', 'edited', 'edited']);
      const listed = await octokit.rest.issues.listComments({ owner: OWNER, repo: 'talk', issue_number: 1 });
      expect(listed.data.map((c) => c.body)).toEqual(['pull request opened']);
      expect(listed.headers.link).toBeUndefined();
      expect(ghe.state.comments(OWNER, 'talk', 1)[0]?.body).toBe('pull request opened');

      const eyes = await octokit.rest.reactions.createForIssue({
        owner: OWNER,
        repo: 'talk',
        issue_number: 1,
        content: 'eyes',
      });
      expect(eyes.status).toBe(201);
      const again = await octokit.rest.reactions.createForIssue({
        owner: OWNER,
        repo: 'talk',
        issue_number: 1,
        content: 'eyes',
      });
      expect(again.status).toBe(200);
      expect(again.data.id).toBe(eyes.data.id);
      await octokit.rest.reactions.createForIssueComment({
        owner: OWNER,
        repo: 'talk',
        comment_id: created.data.id,
        content: '+1',
      });
      expect(
        ghe.state.reactions.filter((r) => r.repo === 'talk').map((r) => [r.subject.kind, r.content]),
      ).toEqual([
        ['issue', 'eyes'],
        ['comment', '+1'],
      ]);
      await expect(
        octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
          owner: OWNER,
          repo: 'talk',
          issue_number: 1,
          content: 'thumbsup' as '+1', // an invalid content, on purpose
        }),
      ).rejects.toSatisfy((e) => status(e) === 422);
      await expect(
        octokit.rest.issues.createComment({ owner: OWNER, repo: 'talk', issue_number: 99, body: 'x' }),
      ).rejects.toSatisfy((e) => status(e) === 404);
      await expect(
        octokit.rest.issues.createComment({
          owner: OWNER,
          repo: 'talk',
          issue_number: 1,
          body: 'x'.repeat(65_537),
        }),
      ).rejects.toSatisfy((e) => status(e) === 422);
    });

    it('adds, lists and removes labels like GitHub', async () => {
      ghe.createIssue(OWNER, 'talk', { title: 'Second', labels: ['bug'] });
      const added = await octokit.rest.issues.addLabels({
        owner: OWNER,
        repo: 'talk',
        issue_number: 2,
        labels: ['frognano'],
      });
      expect(added.data.map((l) => l.name)).toEqual(['bug', 'frognano']);
      expect(ghe.state.labels(OWNER, 'talk', 2)).toEqual(['bug', 'frognano']);
      const removed = await octokit.rest.issues.removeLabel({
        owner: OWNER,
        repo: 'talk',
        issue_number: 2,
        name: 'bug',
      });
      expect(removed.data.map((l) => l.name)).toEqual(['frognano']);
      await expect(
        octokit.rest.issues.removeLabel({ owner: OWNER, repo: 'talk', issue_number: 2, name: 'bug' }),
      ).rejects.toSatisfy((e) => status(e) === 404);

      const label = await octokit.rest.issues.createLabel({
        owner: OWNER,
        repo: 'talk',
        name: 'frog nano: done',
        color: '00ff00',
      });
      expect(label.status).toBe(201);
      await expect(
        octokit.rest.issues.createLabel({
          owner: OWNER,
          repo: 'talk',
          name: 'FROG NANO: done',
          color: '00ff00',
        }),
      ).rejects.toSatisfy((e) => status(e) === 422);
      const fetched = await octokit.rest.issues.getLabel({
        owner: OWNER,
        repo: 'talk',
        name: 'frog nano: done',
      });
      expect(fetched.data.color).toBe('00ff00');
      await expect(
        octokit.rest.issues.getLabel({ owner: OWNER, repo: 'talk', name: 'absent' }),
      ).rejects.toSatisfy((e) => status(e) === 404);
    });

    it('answers permission levels and team memberships', async () => {
      ghe.setPermission(OWNER, 'talk', 'mia', 'maintain');
      ghe.setPermission(OWNER, 'talk', 'tri', 'triage');
      const perm = (username: string) =>
        octokit.rest.repos.getCollaboratorPermissionLevel({ owner: OWNER, repo: 'talk', username });
      expect((await perm('mia')).data).toMatchObject({
        permission: 'write',
        role_name: 'maintain',
        user: { login: 'mia' },
      });
      expect((await perm('tri')).data).toMatchObject({ permission: 'read', role_name: 'triage' });
      expect((await perm('stranger')).data.permission).toBe('none');

      ghe.setTeamMembers(OWNER, 'frog-admins', ['mia']);
      const member = await octokit.rest.teams.getMembershipForUserInOrg({
        org: OWNER,
        team_slug: 'frog-admins',
        username: 'mia',
      });
      expect(member.data).toMatchObject({ state: 'active', role: 'member' });
      await expect(
        octokit.rest.teams.getMembershipForUserInOrg({
          org: OWNER,
          team_slug: 'frog-admins',
          username: 'tri',
        }),
      ).rejects.toSatisfy((e) => status(e) === 404);
    });

    it('paginates with Link headers', async () => {
      ghe.createIssue(OWNER, 'talk', { title: 'Chatty' });
      for (let i = 0; i < 35; i += 1) ghe.addComment(OWNER, 'talk', 3, { user: 'bob', body: `c${i}` });
      const first = await octokit.rest.issues.listComments({ owner: OWNER, repo: 'talk', issue_number: 3 });
      expect(first.data).toHaveLength(30);
      expect(first.headers.link).toMatch(/page=2>; rel="next"/);
      const all = await octokit.paginate(octokit.rest.issues.listComments, {
        owner: OWNER,
        repo: 'talk',
        issue_number: 3,
      });
      expect(all.map((c) => c.body)).toEqual(Array.from({ length: 35 }, (_, i) => `c${i}`));
    });
  });

  describe('pull requests and check runs', () => {
    it('opens a draft pull request from a pushed branch and refuses duplicates', async () => {
      ghe.createIssue(OWNER, 'calc', { title: 'add() subtracts', user: 'alice' });
      const head = await ghe.readBranch(OWNER, 'calc', 'frognano/issue-1');
      const pr = await octokit.rest.pulls.create({
        owner: OWNER,
        repo: 'calc',
        title: 'Fix add()',
        head: 'frognano/issue-1',
        base: 'main',
        body: 'Closes #1',
        draft: true,
        maintainer_can_modify: false,
      });
      expect(pr.status).toBe(201);
      expect(pr.headers.location).toBe(`${ghe.apiUrl}/repos/${OWNER}/calc/pulls/2`);
      expect(pr.data).toMatchObject({
        number: 2, // issue #1 took number 1: one sequence, like GitHub
        draft: true,
        state: 'open',
        title: 'Fix add()',
        body: 'Closes #1',
        user: { login: 'frognano[bot]', type: 'Bot' },
        html_url: `${ghe.url}/${OWNER}/calc/pull/2`,
        head: { ref: 'frognano/issue-1', sha: head, repo: { full_name: `${OWNER}/calc` } },
        base: { ref: 'main', sha: await ghe.readBranch(OWNER, 'calc', 'main') },
        commits: 1,
        additions: 1,
        deletions: 1,
        changed_files: 1,
      });

      const duplicate = octokit.rest.pulls.create({
        owner: OWNER,
        repo: 'calc',
        title: 'again',
        head: `${OWNER}:frognano/issue-1`,
        base: 'main',
      });
      await expect(duplicate).rejects.toSatisfy(
        (e) =>
          status(e) === 422 &&
          JSON.stringify((e as { response: { data: unknown } }).response.data).includes(
            `A pull request already exists for ${OWNER}:frognano/issue-1.`,
          ),
      );
      await expect(
        octokit.rest.pulls.create({
          owner: OWNER,
          repo: 'calc',
          title: 'x',
          head: 'no-such-branch',
          base: 'main',
        }),
      ).rejects.toSatisfy((e) => status(e) === 422);

      const open = await octokit.rest.pulls.list({
        owner: OWNER,
        repo: 'calc',
        head: `${OWNER}:frognano/issue-1`,
        state: 'open',
      });
      expect(open.data.map((p) => p.number)).toEqual([2]);
      const none = await octokit.rest.pulls.list({
        owner: OWNER,
        repo: 'calc',
        head: `${OWNER}:other`,
        state: 'open',
      });
      expect(none.data).toEqual([]);

      await octokit.rest.pulls.requestReviewers({
        owner: OWNER,
        repo: 'calc',
        pull_number: 2,
        reviewers: ['alice'],
      });
      expect(ghe.state.reviewRequests).toContainEqual(
        expect.objectContaining({ repo: 'calc', pullNumber: 2, reviewers: ['alice'] }),
      );
      await octokit.rest.issues.addLabels({
        owner: OWNER,
        repo: 'calc',
        issue_number: 2,
        labels: ['frognano'],
      });
      const updated = await octokit.rest.pulls.update({
        owner: OWNER,
        repo: 'calc',
        pull_number: 2,
        body: 'Closes #1\n\nMore',
      });
      expect(updated.data.body).toBe('Closes #1\n\nMore');
      expect(ghe.state.pull(OWNER, 'calc', 2)?.labels.map((l) => l.name)).toEqual(['frognano']);
      expect(ghe.state.pull(OWNER, 'calc', 2)?.requested_reviewers?.map((u) => u.login)).toEqual(['alice']);
    });

    it('moves head.sha when the branch moves and records approving reviews', async () => {
      const sha = await ghe.commitFiles(OWNER, 'calc', {
        branch: 'frognano/issue-1',
        files: { 'NOTES.md': 'n\n' },
      });
      expect(ghe.state.pull(OWNER, 'calc', 2)?.head.sha).toBe(sha);

      const payload = ghe.submitReview({ owner: OWNER, repo: 'calc', pullNumber: 2, reviewer: 'alice' });
      expect(payload).toMatchObject({
        action: 'submitted',
        review: { state: 'approved', user: { login: 'alice' }, commit_id: sha },
        pull_request: { number: 2, draft: true },
        installation: { id: ghe.installationId },
      });
      const reviews = await octokit.rest.pulls.listReviews({ owner: OWNER, repo: 'calc', pull_number: 2 });
      expect(reviews.data.map((r) => [r.user?.login, r.state])).toEqual([['alice', 'APPROVED']]);
    });

    it('closes a pull request whose head branch is deleted', async () => {
      await ghe.commitFiles(OWNER, 'calc', { branch: 'frognano/tmp', files: { 'tmp.txt': 't\n' } });
      const pr = await octokit.rest.pulls.create({
        owner: OWNER,
        repo: 'calc',
        title: 'tmp',
        head: 'frognano/tmp',
        base: 'main',
      });
      expect(pr.data.number).toBe(3);
      await octokit.rest.git.deleteRef({ owner: OWNER, repo: 'calc', ref: 'heads/frognano/tmp' });
      expect(await ghe.readBranch(OWNER, 'calc', 'frognano/tmp')).toBeNull();
      expect(ghe.state.pull(OWNER, 'calc', 3)?.state).toBe('closed');
      const open = await octokit.rest.pulls.list({ owner: OWNER, repo: 'calc' });
      expect(open.data.map((p) => p.number)).toEqual([2]);
    });

    it('creates, completes and lists check runs', async () => {
      const sha = (await ghe.readBranch(OWNER, 'calc', 'frognano/issue-1')) ?? '';
      const run = await octokit.rest.checks.create({
        owner: OWNER,
        repo: 'calc',
        name: 'FrogNano / human review',
        head_sha: sha,
        status: 'in_progress',
        output: { title: 'Waiting for review', summary: 'A person must review this draft.' },
      });
      expect(run.status).toBe(201);
      expect(run.data).toMatchObject({ status: 'in_progress', conclusion: null, head_sha: sha });
      expect(run.data.pull_requests.map((p) => p.number)).toEqual([2]);
      const done = await octokit.rest.checks.update({
        owner: OWNER,
        repo: 'calc',
        check_run_id: run.data.id,
        conclusion: 'action_required',
      });
      expect(done.data).toMatchObject({ status: 'completed', conclusion: 'action_required' });
      expect(done.data.completed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

      const listed = await octokit.rest.checks.listForRef({
        owner: OWNER,
        repo: 'calc',
        ref: 'frognano/issue-1',
      });
      expect(listed.data.total_count).toBe(1);
      expect(listed.data.check_runs[0]?.name).toBe('FrogNano / human review');
      expect(ghe.state.checkRuns(OWNER, 'calc')).toHaveLength(1);
      await expect(
        octokit.rest.checks.create({ owner: OWNER, repo: 'calc', name: 'x', head_sha: 'f'.repeat(40) }),
      ).rejects.toSatisfy((e) => status(e) === 422);
      await expect(
        octokit.rest.checks.create({
          owner: OWNER,
          repo: 'calc',
          name: 'x',
          head_sha: sha,
          status: 'completed',
        }),
      ).rejects.toSatisfy((e) => status(e) === 422);
    });
  });

  it('renders REST objects that point only at the stand-in', async () => {
    const rendered = [
      (await octokit.rest.repos.get({ owner: OWNER, repo: 'calc' })).data,
      (await octokit.rest.pulls.get({ owner: OWNER, repo: 'calc', pull_number: 2 })).data,
      (await octokit.rest.issues.get({ owner: OWNER, repo: 'calc', issue_number: 2 })).data,
      ghe.state.checkRuns(OWNER, 'calc'),
      ghe.state.comments(OWNER, 'talk', 1),
      ghe.state.reviews(OWNER, 'calc', 2),
      (await octokit.rest.apps.getRepoInstallation({ owner: OWNER, repo: 'calc' })).data,
    ];
    const foreign = allStrings(rendered).filter(
      (s) => /^(https?|git):\/\//.test(s) && !s.startsWith(ghe.url),
    );
    expect(foreign.filter((s) => !s.startsWith(`git://${ghe.host}`))).toEqual([]);
    expect(
      allStrings(rendered).filter((s) => /octocoders|Codertocat|Hello-World|Octocoders/.test(s)),
    ).toEqual([]);
    // An issue that is a pull request says so, like GitHub's issues API.
    expect((rendered[2] as { pull_request?: { html_url: string } }).pull_request?.html_url).toBe(
      `${ghe.url}/${OWNER}/calc/pull/2`,
    );
  });

  describe('fault injection and unknown routes', () => {
    it('fails the next matching requests, then recovers', async () => {
      ghe.failNext('POST', /\/repos\/[^/]+\/talk\/issues\/\d+\/comments$/, 502, 2);
      for (let i = 0; i < 2; i += 1) {
        await expect(
          rest.rest.issues.createComment({ owner: OWNER, repo: 'talk', issue_number: 1, body: 'x' }),
        ).rejects.toSatisfy((e) => status(e) === 502);
      }
      const ok = await rest.rest.issues.createComment({
        owner: OWNER,
        repo: 'talk',
        issue_number: 1,
        body: 'x',
      });
      expect(ok.status).toBe(201);
      const seen = ghe.state.requestsTo('POST', /\/talk\/issues\/1\/comments$/).slice(-3);
      expect(seen.map((r) => [r.status, r.injected ?? false])).toEqual([
        [502, true],
        [502, true],
        [201, false],
      ]);
    });

    it('answers 404 to unknown routes and records them', async () => {
      await expect(
        rest.request('GET /repos/{owner}/{repo}/deployments', { owner: OWNER, repo: 'talk' }),
      ).rejects.toSatisfy((e) => status(e) === 404);
      expect(ghe.state.unhandled).toEqual([{ method: 'GET', path: `/repos/${OWNER}/talk/deployments` }]);
      ghe.state.unhandled.length = 0;
    });
  });

  describe('webhooks', () => {
    it('builds payloads from the GHES examples, pointing only at the stand-in', async () => {
      ghe.createIssue(OWNER, 'talk', { title: 'Hook me', user: 'alice', labels: ['bug'] });
      const labeled = ghe.makeIssuesLabeledPayload({
        owner: OWNER,
        repo: 'talk',
        issueNumber: 4,
        sender: 'alice',
        label: 'frognano',
      });
      expect(labeled).toMatchObject({
        action: 'labeled',
        issue: {
          number: 4,
          title: 'Hook me',
          user: { login: 'alice' },
          html_url: `${ghe.url}/${OWNER}/talk/issues/4`,
        },
        label: { name: 'frognano' },
        repository: {
          full_name: `${OWNER}/talk`,
          owner: { login: OWNER },
          clone_url: `${ghe.url}/${OWNER}/talk.git`,
        },
        sender: { login: 'alice', type: 'User' },
        installation: { id: ghe.installationId },
        organization: { login: OWNER },
      });
      expect((labeled.issue as { labels: Array<{ name: string }> }).labels.map((l) => l.name)).toEqual([
        'bug',
        'frognano',
      ]);
      // The builder describes; it does not change the issue.
      expect(ghe.state.labels(OWNER, 'talk', 4)).toEqual(['bug']);
      expect(labeled).toHaveProperty('enterprise');

      const unlabeled = ghe.makeIssuesUnlabeledPayload({
        owner: OWNER,
        repo: 'talk',
        issueNumber: 4,
        sender: 'alice',
        label: 'bug',
      });
      expect((unlabeled.issue as { labels: unknown[] }).labels).toEqual([]);
      const closed = ghe.makeIssuesClosedPayload({
        owner: OWNER,
        repo: 'talk',
        issueNumber: 4,
        sender: 'alice',
      });
      expect(closed).toMatchObject({
        action: 'closed',
        issue: { state: 'closed', state_reason: 'completed' },
      });
      expect(closed).not.toHaveProperty('label');
      const review = ghe.makePullRequestReviewSubmittedPayload({
        owner: OWNER,
        repo: 'calc',
        pullNumber: 2,
        reviewer: 'bob',
      });
      expect(review).toMatchObject({ review: { state: 'approved' }, pull_request: { number: 2 } });

      for (const payload of [labeled, unlabeled, closed, review]) {
        const leftovers = allStrings(payload).filter((s) =>
          /octocoders|Codertocat|Hello-World|ghe-test\.net/.test(s),
        );
        expect(leftovers).toEqual([]);
      }
    });

    it('delivers signed webhooks that Probot verifies and answers through the stand-in', async () => {
      let resolveComment: (id: number) => void = () => undefined;
      const commented = new Promise<number>((resolve) => {
        resolveComment = resolve;
      });
      const appFn = (app: Probot) => {
        app.on('issues.labeled', async (context) => {
          const body = `queued for ${context.payload.label?.name ?? '?'}`;
          const { data } = await context.octokit.rest.issues.createComment(context.issue({ body }));
          resolveComment(data.id);
        });
      };
      const probot = new Probot({
        appId: ghe.appId,
        privateKey: ghe.privateKey,
        secret: ghe.webhookSecret,
        baseUrl: ghe.apiUrl,
        log: createSilentLogger(),
        Octokit: ProbotOctokit.defaults({ throttle: { enabled: false } }),
      });
      const middleware = await createNodeMiddleware(appFn, { probot, webhooksPath: '/hooks' });
      const server = createServer((req, res) => void middleware(req, res, () => res.writeHead(404).end()));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
        const payload = ghe.labelIssue({
          owner: OWNER,
          repo: 'talk',
          issueNumber: 4,
          sender: 'alice',
          label: 'frognano',
        });
        expect(ghe.state.labels(OWNER, 'talk', 4)).toEqual(['bug', 'frognano']);

        const forged = await ghe.sendWebhook(target, 'issues', payload, { secret: 'not-the-secret' });
        expect(forged.status).toBeGreaterThanOrEqual(400);
        const delivered = await ghe.sendWebhook(target, 'issues', payload, { deliveryId: 'delivery-1' });
        expect(delivered.status).toBeLessThan(300);
        const commentId = await Promise.race([
          commented,
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error('Probot handler did not comment within 10 s')), 10_000).unref(),
          ),
        ]);
        expect(ghe.state.commentBodies(commentId)).toEqual(['queued for frognano']);
        expect(ghe.state.deliveries.map((d) => [d.event, d.action, d.status < 300])).toEqual([
          ['issues', 'labeled', false],
          ['issues', 'labeled', true],
        ]);
      } finally {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      }
    });
  });
});
