import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUMAN_REVIEW_CHECK_NAME } from '../../../src/github-app/check-run.js';
import { outcomeDetails, outcomeHeadline } from '../../../src/github-app/status-comment.js';
import { fixingScript, OWNER, REPO, startPipelineFixture, type PipelineFixture } from './pipeline-fixture.js';

// Issue 12 item 5: a failure after the pull request exists. The check run comes right after the
// pull request; label and reviewer failures are warnings; an outcome after the PR links it.

let fx: PipelineFixture;

beforeAll(async () => {
  fx = await startPipelineFixture();
});

afterAll(async () => {
  await fx?.close();
});

describe('after the pull request exists', () => {
  it('a label that cannot be added (404) is a warning: pr_opened, the check run exists, the comment says so', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    fx.ghe.failNext('POST', /\/issues\/\d+\/labels$/, 404);
    fx.ghe.failNext('POST', /\/requested_reviewers$/, 422);
    const { outcome } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('pr_opened');
    if (outcome.kind !== 'pr_opened') return;
    expect(outcome.warnings).toHaveLength(2);
    expect(outcome.warnings?.[0]).toMatch(/could not be added \(HTTP 404/);
    expect(outcome.warnings?.[1]).toMatch(/review could not be requested from @alice \(HTTP 422/);
    const pr = fx.ghe.state.pull(OWNER, REPO, outcome.pullNumber)!;
    const runs = fx.ghe.state.checkRuns(OWNER, REPO).filter((r) => r.head_sha === pr.head.sha);
    expect(runs.map((r) => r.name)).toEqual([HUMAN_REVIEW_CHECK_NAME]);
    const text = outcomeDetails(outcome).join('\n');
    expect(text).toContain(`[#${outcome.pullNumber}](${outcome.pullUrl})`);
    expect(text).toContain('Warnings:');
    expect(text).toContain('could not be added (HTTP 404');
  });

  it('a check run that cannot be created ends as a GitHub error that links the opened pull request', async () => {
    const data = fx.openIssue('add() still subtracts', 'add(2, 3) gives -1');
    fx.ghe.failNext('POST', /\/check-runs$/, 500);
    const { outcome } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('github_error');
    if (outcome.kind !== 'github_error') return;
    const pr = fx.ghe.state
      .pulls(OWNER, REPO)
      .find((p) => p.head.ref === `frognano/issue-${data.issueNumber}`)!;
    expect(outcome.pullRequest).toEqual({ number: pr.number, url: pr.html_url });
    expect(outcomeHeadline(outcome)).toBe(
      `opened draft pull request #${pr.number}, then a GitHub API call failed`,
    );
    expect(outcomeDetails(outcome).join('\n')).toContain(`[#${pr.number}](${pr.html_url}) was opened`);
  });
});
