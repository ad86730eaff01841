import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcomeDetails, outcomeHeadline } from '../../../src/github-app/status-comment.js';
import { fixingScript, OWNER, REPO, startPipelineFixture, type PipelineFixture } from './pipeline-fixture.js';

// Issue 12 item 8: each failure gets its true name.

let fx: PipelineFixture;

beforeAll(async () => {
  fx = await startPipelineFixture();
});

afterAll(async () => {
  await fx?.close();
});

const repoPath = new RegExp(`^/api/v3/repos/${OWNER}/${REPO}$`);

describe('true names of what happened', () => {
  it('refuses an archived repository up front, before any clone', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    const gitBefore = fx.ghe.state.gitRequests.length;
    fx.ghe.failNext('GET', repoPath, 200, 1, {
      body: { name: REPO, full_name: `${OWNER}/${REPO}`, default_branch: 'main', archived: true },
    });
    const { outcome, model } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('refused');
    if (outcome.kind !== 'refused') return;
    expect(outcome.reason).toContain('is archived (read-only)');
    expect(fx.ghe.state.gitRequests.length).toBe(gitBefore);
    expect(model.requests).toHaveLength(0);
  });

  it('says "the repository has no commits yet" for an empty repository', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    // As GitHub answers for a repository without commits: a default branch name, no branches.
    fx.ghe.failNext('GET', repoPath, 200, 1, {
      body: { name: REPO, full_name: `${OWNER}/${REPO}`, default_branch: 'trunk', archived: false },
    });
    fx.ghe.failNext('GET', /\/branches$/, 200, 1, { body: [] });
    const { outcome } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('refused');
    if (outcome.kind !== 'refused') return;
    expect(outcome.reason).toContain('the repository has no commits yet');
  });

  it('a push the server refuses is not retryable', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    await fx.ghe.protectBranch(OWNER, REPO, `frognano/issue-${data.issueNumber}`);
    const { outcome } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('github_error');
    if (outcome.kind !== 'github_error') return;
    expect(outcome.retryable, outcome.message).toBe(false);
    expect(outcomeDetails(outcome).join('\n')).not.toContain('usually temporary');
  });

  it('finish_reason length before any change names the per-turn token cap', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    const { outcome } = await fx.run(data, [{ kind: 'length', content: 'I will now think about' }]);
    expect(outcome.kind).toBe('no_change');
    expect(outcomeHeadline(outcome)).toBe('stopped: a model turn hit the per-turn token cap');
    expect(outcomeDetails(outcome).join('\n')).toContain('per-turn token cap (`maxTokensPerTurn`');
  });

  it('a model server answering 500 is the model server’s outcome, with the status', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    const { outcome } = await fx.run(data, [{ kind: 'http_error', status: 500 }]);
    expect(outcome.kind).toBe('llm_unreachable');
    if (outcome.kind !== 'llm_unreachable') return;
    expect(outcome.status).toBe(500);
    expect(outcomeHeadline(outcome)).toBe('stopped: the model server failed (HTTP 500)');
    expect(outcomeDetails(outcome)[0]).toContain('answered HTTP 500 on every try');
  });
});
