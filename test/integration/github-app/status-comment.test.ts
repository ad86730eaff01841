import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  createInstallationClients,
  type InstallationOctokit,
} from '../../../src/github-app/github-client.js';
import { createStatusComment, STATUS_MARKER } from '../../../src/github-app/status-comment.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';

const OWNER = 'octo-org';
const REPO = 'calc';
let ghe: GheStandin;
let octokit: InstallationOctokit;

beforeAll(async () => {
  ghe = await startGheStandin();
  await ghe.createRepo(OWNER, REPO);
  const clients = createInstallationClients({
    appId: ghe.appId,
    privateKey: ghe.privateKey,
    githubApiUrl: ghe.apiUrl,
    logger: createSilentLogger(),
    throttle: false,
  });
  octokit = await clients.get(ghe.installationId);
});

afterAll(async () => {
  expect(ghe.state.errors).toEqual([]);
  expect(ghe.state.unhandled).toEqual([]);
  await ghe.close();
});

it('finds its own comment by the marker, never a person\u2019s, and edits it in place', async () => {
  const n = ghe.createIssue(OWNER, REPO, { title: 't', user: 'alice' }).number;
  ghe.addComment(OWNER, REPO, n, { user: 'mallory', body: `${STATUS_MARKER}\nlooks like a status comment` });
  const target = { owner: OWNER, repo: REPO, issue: n };

  const first = createStatusComment(octokit, target);
  const id = await first.update({ phase: 'queued', position: 1 });
  // A new handle (a retry, another process) finds the same comment instead of adding one.
  const second = createStatusComment(octokit, target, { botLogin: ghe.botLogin });
  expect(await second.update({ phase: 'running', step: 2, maxSteps: 10 })).toBe(id);

  const comments = ghe.state.comments(OWNER, REPO, n);
  expect(comments).toHaveLength(2);
  expect(comments.find((c) => c.user?.login === 'mallory')?.body).toContain('looks like a status comment');
  expect(ghe.state.commentBodies(id).map((b) => b.split('\n')[1])).toEqual([
    '**🐸 FrogNano** — queued (position 1)',
    '**🐸 FrogNano** — running (step 2 of 10)',
  ]);
});

it('writes updates in call order, and writes a new comment when ours was deleted', async () => {
  const n = ghe.createIssue(OWNER, REPO, { title: 't', user: 'alice' }).number;
  const status = createStatusComment(octokit, { owner: OWNER, repo: REPO, issue: n });
  const ids = await Promise.all([
    status.update({ phase: 'preparing' }),
    status.update({ phase: 'running', step: 1, maxSteps: 5 }),
    status.update({ phase: 'testing', command: 'pytest' }),
  ]);
  expect(new Set(ids).size).toBe(1);
  expect(ghe.state.comments(OWNER, REPO, n)).toHaveLength(1);
  expect(ghe.state.comments(OWNER, REPO, n)[0]!.body).toContain('testing the change');

  await octokit.request('DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}', {
    owner: OWNER,
    repo: REPO,
    comment_id: ids[0]!,
  });
  const newId = await status.update({ phase: 'publishing' });
  expect(newId).not.toBe(ids[0]);
  expect(ghe.state.comments(OWNER, REPO, n)).toHaveLength(1);
});

it('reports GitHub failures as GITHUB_API_ERROR with the status', async () => {
  const n = ghe.createIssue(OWNER, REPO, { title: 't', user: 'alice' }).number;
  // 403 is not retried by Octokit (5xx are, with back-off, before the error reaches us).
  ghe.failNext('POST', new RegExp(`/issues/${n}/comments$`), 403);
  const status = createStatusComment(octokit, { owner: OWNER, repo: REPO, issue: n });
  await expect(status.update({ phase: 'preparing' })).rejects.toMatchObject({
    code: 'GITHUB_API_ERROR',
    retryable: false,
    details: { status: 403 },
  });
  // The next update works again.
  expect(await status.update({ phase: 'preparing' })).toBeGreaterThan(0);
});
