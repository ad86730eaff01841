import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHumanReviewCheck, HUMAN_REVIEW_CHECK_NAME } from '../../../src/github-app/check-run.js';
import {
  handleReviewSubmitted,
  type ReviewSubmittedPayload,
} from '../../../src/github-app/review-handler.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { installationOctokit, type InstallationOctokit } from '../../helpers/installation-octokit.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const logger = createSilentLogger();

let ghe: GheStandin;
let octokit: InstallationOctokit;

beforeAll(async () => {
  ghe = await startGheStandin();
  await ghe.createRepo(OWNER, REPO, { files: { 'calc.py': 'x = 1\n' } });
  ghe.setPermission(OWNER, REPO, 'maya', 'maintain');
  ghe.setPermission(OWNER, REPO, 'wendy', 'write');
  ghe.setPermission(OWNER, REPO, 'rita', 'read');
  octokit = installationOctokit(ghe);
});

afterAll(async () => {
  await ghe?.close();
});

/** A draft pull request of the bot with its human review check run on the head commit. */
async function botPullRequest(
  branch: string,
): Promise<{ number: number; headSha: string; checkRunId: number }> {
  const headSha = await ghe.commitFiles(OWNER, REPO, {
    branch,
    files: { 'calc.py': `x = ${branch.length}\n` },
  });
  const { data: pr } = await octokit.rest.pulls.create({
    owner: OWNER,
    repo: REPO,
    head: branch,
    base: 'main',
    title: 't',
    draft: true,
  });
  const checkRunId = await createHumanReviewCheck(octokit, {
    owner: OWNER,
    repo: REPO,
    headSha,
    pullNumber: pr.number,
    pullUrl: pr.html_url,
  });
  return { number: pr.number, headSha, checkRunId };
}

function conclusionOf(id: number): string | null | undefined {
  return ghe.state.checkRuns(OWNER, REPO).find((r) => r.id === id)?.conclusion;
}

function review(
  pullNumber: number,
  reviewer: string,
  state?: 'approved' | 'commented' | 'changes_requested',
) {
  return ghe.submitReview({
    owner: OWNER,
    repo: REPO,
    pullNumber,
    reviewer,
    state,
  }) as unknown as ReviewSubmittedPayload;
}

describe('handleReviewSubmitted', () => {
  it('starts action_required; only an approval by a writer turns it success', async () => {
    const pr = await botPullRequest('frognano/issue-1');
    const run = ghe.state.checkRuns(OWNER, REPO).find((r) => r.id === pr.checkRunId);
    expect(run).toMatchObject({
      name: HUMAN_REVIEW_CHECK_NAME,
      conclusion: 'action_required',
      head_sha: pr.headSha,
    });

    expect(await handleReviewSubmitted({ octokit, payload: review(pr.number, 'rita'), logger })).toEqual({
      action: 'ignored',
      reason: '@rita has read permission, not write',
    });
    expect(
      await handleReviewSubmitted({ octokit, payload: review(pr.number, 'wendy', 'commented'), logger }),
    ).toEqual({
      action: 'ignored',
      reason: 'the review does not approve',
    });
    expect(
      await handleReviewSubmitted({
        octokit,
        payload: review(pr.number, 'wendy', 'changes_requested'),
        logger,
      }),
    ).toMatchObject({ action: 'ignored' });
    expect(conclusionOf(pr.checkRunId)).toBe('action_required');

    const result = await handleReviewSubmitted({ octokit, payload: review(pr.number, 'wendy'), logger });
    expect(result).toEqual({ action: 'approved', checkRunId: pr.checkRunId, reviewer: 'wendy' });
    const after = ghe.state.checkRuns(OWNER, REPO).find((r) => r.id === pr.checkRunId);
    expect(after).toMatchObject({ status: 'completed', conclusion: 'success' });
    expect(after?.output.title).toBe('Approved by @wendy');
  });

  it('accepts a maintainer (REST permission "write", role "maintain")', async () => {
    const pr = await botPullRequest('frognano/issue-2');
    expect(
      await handleReviewSubmitted({ octokit, payload: review(pr.number, 'maya'), logger }),
    ).toMatchObject({
      action: 'approved',
    });
    expect(conclusionOf(pr.checkRunId)).toBe('success');
  });

  it('ignores an approval of an older commit and approvals by bots', async () => {
    const pr = await botPullRequest('frognano/issue-3');
    const stale = review(pr.number, 'wendy');
    const newHead = await ghe.commitFiles(OWNER, REPO, {
      branch: 'frognano/issue-3',
      files: { 'calc.py': 'x = 42\n' },
    });
    const newRun = await createHumanReviewCheck(octokit, {
      owner: OWNER,
      repo: REPO,
      headSha: newHead,
      pullNumber: pr.number,
      pullUrl: 'http://x',
    });
    stale.pull_request.head.sha = newHead;
    expect(await handleReviewSubmitted({ octokit, payload: stale, logger })).toMatchObject({
      action: 'ignored',
      reason: expect.stringContaining('not the head commit'),
    });
    expect(conclusionOf(newRun)).toBe('action_required');

    const bot = review(pr.number, 'wendy');
    bot.review.user = { login: 'ci[bot]', type: 'Bot' };
    expect(await handleReviewSubmitted({ octokit, payload: bot, logger })).toMatchObject({
      action: 'ignored',
    });
    expect(conclusionOf(newRun)).toBe('action_required');
  });

  it("leaves pull requests without the app's check run alone", async () => {
    await ghe.commitFiles(OWNER, REPO, { branch: 'feature', files: { 'calc.py': 'x = 7\n' } });
    const { data: pr } = await octokit.rest.pulls.create({
      owner: OWNER,
      repo: REPO,
      head: 'feature',
      base: 'main',
      title: 'human',
    });
    const before = ghe.state.checkRuns(OWNER, REPO).length;
    expect(await handleReviewSubmitted({ octokit, payload: review(pr.number, 'wendy'), logger })).toEqual({
      action: 'ignored',
      reason: 'no FrogNano human review check run on the head commit',
    });
    expect(ghe.state.checkRuns(OWNER, REPO)).toHaveLength(before);
    expect(ghe.state.unhandled).toEqual([]);
    expect(ghe.state.errors).toEqual([]);
  });
});
