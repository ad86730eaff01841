import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createHumanReviewCheck,
  HUMAN_REVIEW_CHECK_NAME,
  parseCheckExternalId,
} from '../../../src/github-app/check-run.js';
import { parseAdminPolicy } from '../../../src/config/policy.js';
import {
  createReviewPolicyLookup,
  handlePullRequestEvent,
  handleReviewEvent,
  type ReviewHandlerOptions,
} from '../../../src/github-app/review-handler.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { ApprovalEvent } from '../../../src/observability/approval-entry.js';
import { startGheStandin, type CheckRun, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { installationOctokit, type InstallationOctokit } from '../../helpers/installation-octokit.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const logger = createSilentLogger();
const TRANSCRIPT = '### Round 1 — job `job-1`\n\n| Step | Tool |\n|---:|---|\n| 1 | `Read` |';

let ghe: GheStandin;
let octokit: InstallationOctokit;
let options: ReviewHandlerOptions;

beforeAll(async () => {
  ghe = await startGheStandin();
  await ghe.createRepo(OWNER, REPO, { files: { 'calc.py': 'x = 1\n' } });
  ghe.setPermission(OWNER, REPO, 'alice', 'write');
  ghe.setPermission(OWNER, REPO, 'maya', 'maintain');
  ghe.setPermission(OWNER, REPO, 'wendy', 'write');
  ghe.setPermission(OWNER, REPO, 'rita', 'read');
  octokit = installationOctokit(ghe);
  options = { appId: ghe.appId, botLogin: ghe.botLogin };
});

afterAll(async () => {
  await ghe?.close();
});

/** A draft pull request of the bot, labelled by alice, with its human review check run on the head commit. */
async function botPullRequest(
  branch: string,
): Promise<{ number: number; headSha: string; checkRunId: number }> {
  const headSha = await ghe.commitFiles(OWNER, REPO, { branch, files: { 'calc.py': `x = "${branch}"\n` } });
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
    jobId: `job-${branch}`,
    requestedBy: ['alice'],
    transcript: TRANSCRIPT,
  });
  return { number: pr.number, headSha, checkRunId };
}

/** The latest human review check run on `sha`. */
function checkOn(sha: string): CheckRun | undefined {
  return ghe.state
    .checkRuns(OWNER, REPO)
    .filter((r) => r.head_sha === sha && r.name === HUMAN_REVIEW_CHECK_NAME)
    .sort((a, b) => b.id - a.id)[0];
}

async function review(
  pullNumber: number,
  reviewer: string,
  state: 'approved' | 'commented' | 'changes_requested' = 'approved',
  extra: ReviewHandlerOptions = {},
) {
  const payload = ghe.submitReview({ owner: OWNER, repo: REPO, pullNumber, reviewer, state });
  return handleReviewEvent({ octokit, payload, logger }, { ...options, ...extra });
}

const lastReviewId = (pullNumber: number, login: string): number =>
  ghe.state
    .reviews(OWNER, REPO, pullNumber)
    .filter((r) => r.user?.login === login)
    .at(-1)!.id;

describe('the human review gate', () => {
  it('starts action_required saying what it waits for, with the transcript as its text', async () => {
    const pr = await botPullRequest('frognano/issue-1');
    const run = checkOn(pr.headSha);
    expect(run).toMatchObject({ id: pr.checkRunId, conclusion: 'action_required', status: 'completed' });
    expect(run?.output.title).toBe('Waiting for a human review');
    expect(run?.output.summary).toContain(
      `an approving review of commit \`${pr.headSha.slice(0, 12)}\` (the head of #${pr.number}) by a person with write access, other than @alice (who asked for the run)`,
    );
    expect(run?.output.text).toBe(TRANSCRIPT);
    expect(parseCheckExternalId(run?.external_id)).toEqual({
      jobId: 'job-frognano/issue-1',
      requestedBy: ['alice'],
    });
  });

  it("leaves it action_required on the requester's approval alone; a second writer's approval turns it success", async () => {
    const pr = await botPullRequest('frognano/issue-2');
    const recorded: ApprovalEvent[] = [];
    const record = { recordApproval: async (a: ApprovalEvent) => recorded.push(a) };

    expect(await review(pr.number, 'alice', 'approved', record)).toMatchObject({ action: 'action_required' });
    expect(checkOn(pr.headSha)?.conclusion).toBe('action_required');
    expect(checkOn(pr.headSha)?.output.summary).toContain(
      '@alice asked for the run, so a second person must approve',
    );

    expect(await review(pr.number, 'rita', 'approved', record)).toMatchObject({ action: 'action_required' });
    expect(checkOn(pr.headSha)?.output.summary).toContain('@rita has no write access');
    expect(await review(pr.number, 'wendy', 'commented', record)).toMatchObject({
      action: 'action_required',
    });
    expect(recorded).toEqual([]);

    expect(await review(pr.number, 'wendy', 'approved', record)).toMatchObject({
      action: 'success',
      checkRunId: pr.checkRunId,
      reviewer: 'wendy',
      changed: true,
    });
    const after = checkOn(pr.headSha);
    expect(after).toMatchObject({ id: pr.checkRunId, conclusion: 'success' });
    expect(after?.output.title).toBe('Approved by @wendy');
    expect(after?.output.text).toBe(TRANSCRIPT);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      reviewer: 'wendy',
      commit: pr.headSha,
      jobId: 'job-frognano/issue-2',
    });
  });

  it("counts the requester's approval when the policy turns review.requireSecondPerson off", async () => {
    const pr = await botPullRequest('frognano/issue-3');
    const policy = { reviewPolicy: async () => ({ requireSecondPerson: false }) };
    expect(await review(pr.number, 'alice', 'approved', policy)).toMatchObject({
      action: 'success',
      reviewer: 'alice',
    });
    expect(checkOn(pr.headSha)?.conclusion).toBe('success');
  });

  it('gives a commit pushed by a person a new action_required check run; the approval of the older commit does not count', async () => {
    const pr = await botPullRequest('frognano/issue-4');
    await review(pr.number, 'wendy');
    expect(checkOn(pr.headSha)?.conclusion).toBe('success');

    const push = await ghe.pushToPullRequest({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      sender: 'maya',
      files: { 'calc.py': 'x = 2\n' },
    });
    const newHead = String((push as { after: string }).after);
    expect(newHead).not.toBe(pr.headSha);
    expect(await handlePullRequestEvent({ octokit, payload: push, logger }, options)).toMatchObject({
      action: 'action_required',
    });
    const run = checkOn(newHead);
    expect(run?.id).not.toBe(pr.checkRunId);
    expect(run?.conclusion).toBe('action_required');
    expect(run?.output.text).toBe(TRANSCRIPT);
    expect(run?.output.summary).toContain(`@wendy approved an older commit (\`${pr.headSha.slice(0, 12)}\`)`);
    expect(parseCheckExternalId(run?.external_id).requestedBy).toEqual(['alice']);
    // The old commit keeps its own (green) check run.
    expect(checkOn(pr.headSha)?.conclusion).toBe('success');

    // The requester carried forward still cannot approve alone; a second writer on the new head can.
    expect(await review(pr.number, 'alice')).toMatchObject({ action: 'action_required' });
    expect(await review(pr.number, 'maya')).toMatchObject({ action: 'success', reviewer: 'maya' });
    expect(checkOn(newHead)?.conclusion).toBe('success');
  });

  it("leaves the bot's own pushes to the publisher, which creates the check run with the new round", async () => {
    const pr = await botPullRequest('frognano/issue-5');
    const push = await ghe.pushToPullRequest({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      sender: ghe.botLogin,
      files: { 'calc.py': 'x = 3\n' },
    });
    expect(await handlePullRequestEvent({ octokit, payload: push, logger }, options)).toEqual({
      action: 'ignored',
      reason: 'the bot pushed this commit: its publisher creates the check run',
    });
    expect(checkOn(String((push as { after: string }).after))).toBeUndefined();
    // A review event later finds the head without a check run and creates it from the history.
    expect(await review(pr.number, 'alice', 'commented')).toMatchObject({ action: 'action_required' });
    expect(checkOn(String((push as { after: string }).after))?.conclusion).toBe('action_required');
  });

  it('turns back to action_required when the approval is dismissed', async () => {
    const pr = await botPullRequest('frognano/issue-6');
    expect(await review(pr.number, 'wendy')).toMatchObject({ action: 'success' });
    const dismissed = ghe.dismissReview({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      reviewId: lastReviewId(pr.number, 'wendy'),
      sender: 'maya',
    });
    expect((dismissed as { review: { state: string } }).review.state).toBe('dismissed');
    expect(await handleReviewEvent({ octokit, payload: dismissed, logger }, options)).toMatchObject({
      action: 'action_required',
      changed: true,
    });
    expect(checkOn(pr.headSha)?.conclusion).toBe('action_required');
    expect(checkOn(pr.headSha)?.output.summary).toContain('@wendy had the review dismissed');
  });

  it('turns back to action_required on changes requested after the approval', async () => {
    const pr = await botPullRequest('frognano/issue-7');
    expect(await review(pr.number, 'wendy')).toMatchObject({ action: 'success' });
    expect(await review(pr.number, 'maya', 'changes_requested')).toMatchObject({ action: 'action_required' });
    expect(checkOn(pr.headSha)?.output.title).toBe('Changes requested by @maya');
    // The same person changing their mind also counts.
    expect(await review(pr.number, 'maya')).toMatchObject({ action: 'success' });
    expect(await review(pr.number, 'maya', 'changes_requested')).toMatchObject({ action: 'action_required' });
    expect(await review(pr.number, 'maya')).toMatchObject({ action: 'success' });
    expect(await review(pr.number, 'wendy', 'changes_requested')).toMatchObject({
      action: 'action_required',
    });
    expect(checkOn(pr.headSha)?.conclusion).toBe('action_required');
  });

  it('ignores approvals by bots', async () => {
    const pr = await botPullRequest('frognano/issue-8');
    ghe.setPermission(OWNER, REPO, 'ci[bot]', 'admin');
    expect(await review(pr.number, 'ci[bot]')).toMatchObject({ action: 'action_required' });
    expect(checkOn(pr.headSha)?.output.summary).toContain('@ci[bot] is a bot');
  });

  it('creates the check run on reopening when the head has none', async () => {
    const pr = await botPullRequest('frognano/issue-9');
    await ghe.commitFiles(OWNER, REPO, { branch: 'frognano/issue-9', files: { 'calc.py': 'x = 9\n' } });
    const head = ghe.state.pull(OWNER, REPO, pr.number)!.head.sha;
    const payload = ghe.makePullRequestPayload({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      action: 'reopened',
      sender: 'wendy',
    });
    expect(await handlePullRequestEvent({ octokit, payload, logger }, options)).toMatchObject({
      action: 'action_required',
    });
    expect(parseCheckExternalId(checkOn(head)?.external_id)).toEqual({
      jobId: 'job-frognano/issue-9',
      requestedBy: ['alice'],
    });
  });

  it("leaves pull requests that are not the app's alone", async () => {
    await ghe.commitFiles(OWNER, REPO, { branch: 'feature', files: { 'calc.py': 'x = 7\n' } });
    const { data: pr } = await octokit.rest.pulls.create({
      owner: OWNER,
      repo: REPO,
      head: 'feature',
      base: 'main',
      title: 'human',
    });
    const before = ghe.state.checkRuns(OWNER, REPO).length;
    expect(await review(pr.number, 'wendy')).toEqual({
      action: 'ignored',
      reason: 'not a pull request of this app',
    });
    const push = await ghe.pushToPullRequest({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      sender: 'wendy',
      files: { 'calc.py': 'x = 8\n' },
    });
    expect(await handlePullRequestEvent({ octokit, payload: push, logger }, options)).toMatchObject({
      action: 'ignored',
    });
    expect(ghe.state.checkRuns(OWNER, REPO)).toHaveLength(before);
    expect(ghe.state.unhandled).toEqual([]);
    expect(ghe.state.errors).toEqual([]);
  });

  it('reads review.requireSecondPerson: the admin policy turns it off, a repository file back on, a broken file counts as on', async () => {
    const policy = parseAdminPolicy('defaults:\n  review:\n    requireSecondPerson: false\n', 'policy.yaml');
    const lookup = createReviewPolicyLookup(() => policy);
    expect(await lookup({ owner: OWNER, repo: REPO, octokit })).toEqual({ requireSecondPerson: false });
    await ghe.createRepo(OWNER, 'strict', {
      files: { '.github/frognano.yml': 'review:\n  requireSecondPerson: true\n' },
    });
    expect(await lookup({ owner: OWNER, repo: 'strict', octokit })).toEqual({ requireSecondPerson: true });
    await ghe.createRepo(OWNER, 'broken', { files: { '.github/frognano.yml': 'review: 3\n' } });
    expect(await lookup({ owner: OWNER, repo: 'broken', octokit })).toEqual({ requireSecondPerson: true });
    expect(
      await createReviewPolicyLookup(() => parseAdminPolicy('', 'p'))({ owner: OWNER, repo: REPO, octokit }),
    ).toEqual({
      requireSecondPerson: true,
    });
  });
});
