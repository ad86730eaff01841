/**
 * The follow-up publisher against the GitHub Enterprise stand-in with real git over smart HTTP: one
 * fast-forward commit per round on the pull request's branch, the Rounds table, the reply on the
 * inline thread, the check run carried forward; and the branch that moved during a round (nothing
 * pushed, the round says so).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { createHumanReviewCheck, findHumanReviewCheck } from '../../../src/github-app/check-run.js';
import { createFollowUpPullRequest } from '../../../src/github-app/follow-up-pull-request.js';
import { renderStatus } from '../../../src/github-app/status-comment.js';
import { runGit } from '../../../src/git/run-git.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { JobContext } from '../../../src/pipeline/job-context.js';
import { classifyError } from '../../../src/pipeline/outcome.js';
import { createFollowUpPublisher } from '../../../src/pipeline/publishers/follow-up-publisher.js';
import type { PreparedJob } from '../../../src/pipeline/sources/job-source.js';
import type { FollowUpTarget } from '../../../src/pipeline/sources/pull-request-source.js';
import type { ChosenCandidate } from '../../../src/pipeline/steps/choose-candidate.js';
import type { CandidateChoice } from '../../../src/pipeline/verification/choose-candidate.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { installationOctokit, type InstallationOctokit } from '../../helpers/installation-octokit.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const BRANCH = 'frognano/issue-1';
const BASE_FILE = 'def add(a, b):\n    return a - b\n';
const HEAD_FILE = 'def add(a, b):\n    return a + b\n';
const ROUND_FILE = 'def add(a, b):\n    """The sum of a and b."""\n    return a + b\n';

let ghe: GheStandin;
let octokit: InstallationOctokit;
let dir: string;
let headSha: string;
let pull: { number: number; html_url: string };

beforeEach(async () => {
  ghe = await startGheStandin();
  await ghe.createRepo(OWNER, REPO, { files: { 'calc.py': BASE_FILE } });
  headSha = await ghe.commitFiles(OWNER, REPO, { branch: BRANCH, files: { 'calc.py': HEAD_FILE } });
  octokit = installationOctokit(ghe);
  ({ data: pull } = await octokit.rest.pulls.create({
    owner: OWNER,
    repo: REPO,
    title: 'add() subtracts',
    head: BRANCH,
    base: 'main',
    draft: true,
  }));
  await createHumanReviewCheck(octokit, {
    owner: OWNER,
    repo: REPO,
    headSha,
    pullNumber: pull.number,
    pullUrl: pull.html_url,
    jobId: 'job-1',
    requestedBy: ['alice'],
    transcript: '### Round 1 — job `job-1`\n\nThe first round.',
  });
  // The worker's clone: at the base commit, as the follow-up source leaves it.
  dir = await mkdtemp(join(tmpdir(), 'follow-up-publisher-'));
  await runGit(['clone', '--quiet', ghe.cloneUrl(OWNER, REPO, ghe.createInstallationToken().token), dir]);
});

afterEach(async () => {
  await ghe.close();
  await rm(dir, { recursive: true, force: true });
});

/** The whole change since the base (base → head + this round's change), as `git diff --binary`. */
async function wholeChange(): Promise<string> {
  await writeFile(join(dir, 'calc.py'), ROUND_FILE);
  const diff = (await runGit(['diff', '--binary', '--full-index'], { cwd: dir })).stdout.toString('utf8');
  await runGit(['checkout', '--', 'calc.py'], { cwd: dir });
  return diff;
}

function target(commentId: number): FollowUpTarget {
  return {
    owner: OWNER,
    repo: REPO,
    pullNumber: pull.number,
    pullUrl: pull.html_url,
    issueNumber: 1,
    issueTitle: 'add() subtracts',
    headRef: BRANCH,
    headSha,
    baseRef: 'main',
    baseSha: '',
    round: 2,
    feedback: [
      {
        kind: 'review-comment',
        author: 'bob',
        body: 'Add a docstring | with *details*\nsecond line',
        createdAt: new Date().toISOString(),
        commentId,
        path: 'calc.py',
        line: 2,
      },
    ],
    requestedBy: ['bob'],
    labelledBy: { login: 'alice' },
  };
}

async function prepare(): Promise<{
  job: PreparedJob<FollowUpTarget>;
  chosen: ChosenCandidate;
  ctx: JobContext;
}> {
  const review = ghe.submitReview({
    owner: OWNER,
    repo: REPO,
    pullNumber: pull.number,
    reviewer: 'bob',
    state: 'changes_requested',
  });
  const reviewId = (review.review as { id: number }).id;
  const commentId = ghe.addReviewComment(OWNER, REPO, pull.number, {
    reviewId,
    user: 'bob',
    body: 'Add a docstring',
    path: 'calc.py',
    line: 2,
    diffHunk: '@@ -1,2 +1,2 @@',
  });
  const patch = await wholeChange();
  const summary = {
    jobId: 'job-2',
    exitReason: 'agent' as const,
    steps: 2,
    maxSteps: 150,
    promptTokens: 10,
    completionTokens: 5,
    elapsedMs: 1000,
    finalMessage: 'Added the docstring.',
  };
  const chosen = {
    state: {
      names: { candidate: 1 },
      trajectory: {
        jobId: 'job-2',
        steps: [],
        finalMessage: 'Added the docstring.',
        exitReason: 'agent',
        error: null,
        totalTokens: { prompt: 10, completion: 5 },
        elapsedMs: 1000,
      },
    },
    patch,
    summary,
    testsFailing: false,
    verified: {
      refused: false,
      tests: null,
      baseTests: null,
      comparison: {
        granularity: 'per-test',
        fixed: ['test_add'],
        broken: [],
        stillFailing: [],
        newTests: [],
        removedTests: [],
        passingOnBoth: 0,
        baseCounts: null,
        headCounts: null,
        nothingBroken: true,
      },
      tampering: { flagged: false, changedTestFiles: [] },
    },
  } as unknown as ChosenCandidate;
  const job = {
    policy: { allowDraftOnFailingTests: false, fixesKeyword: 'Fixes' },
    dir,
    baseSha: '',
    target: target(commentId),
  } as unknown as PreparedJob<FollowUpTarget>;
  const ctx = {
    jobId: 'job-2',
    logger: createSilentLogger(),
    signal: new AbortController().signal,
    progress: async () => undefined,
    now: () => new Date(),
  } as unknown as JobContext;
  return { job, chosen, ctx };
}

const CHOICE = { rows: [], reason: 'one candidate', winner: null } as unknown as CandidateChoice;

function publisher(branchHead?: () => Promise<string | null>) {
  const followUpPullRequest = createFollowUpPullRequest({ appId: ghe.appId });
  return createFollowUpPublisher({
    octokit,
    followUpPullRequest: branchHead ? { ...followUpPullRequest, branchHead } : followUpPullRequest,
    getInstallationToken: async () => ghe.createInstallationToken().token,
    gitBaseUrl: ghe.url,
    appIdentity: { name: ghe.botLogin, email: `${ghe.botLogin}@users.noreply.127.0.0.1` },
  });
}

describe('follow-up publisher', () => {
  it('pushes one commit on the head, rewrites the body with the Rounds table, replies on the thread and carries the check forward', async () => {
    const { job, chosen, ctx } = await prepare();
    const outcome = await publisher().publish(ctx, job, chosen, CHOICE);
    expect(outcome).toMatchObject({ kind: 'pr_opened', updated: true, pullNumber: pull.number });

    const newHead = (await ghe.readBranch(OWNER, REPO, BRANCH))!;
    expect(newHead).not.toBe(headSha);
    const [parent, author, ...message] = (
      await ghe.git(OWNER, REPO, 'log', '-1', '--format=%P%n%an%n%B', newHead)
    ).split('\n');
    expect(parent).toBe(headSha);
    expect(author).toBe(ghe.botLogin);
    expect(message.join('\n')).toContain('Co-authored-by: bob <bob@users.noreply.127.0.0.1>');
    expect(message.join('\n')).toContain(`round 2 on pull request #${pull.number}`);
    expect(await ghe.readFile(OWNER, REPO, newHead, 'calc.py')).toBe(ROUND_FILE);

    const body = ghe.state.pull(OWNER, REPO, pull.number)?.body ?? '';
    expect(body).toMatch(/\n<!-- frognano:rounds \[.*\] -->$/);
    expect(body).toContain('### Rounds');
    expect(body).toContain('| 1 | @alice | add() subtracts | — | — | opened the draft pull request |');
    expect(body).toContain(
      `| 2 | @bob | Add a docstring \\| with \\*details\\* | [\`${newHead.slice(0, 7)}\`](${pull.html_url}/commits/${newHead}) | 1 / 0 | pushed |`,
    );

    const replies = ghe.state.requestsTo('POST', /\/pulls\/\d+\/comments\/\d+\/replies$/);
    expect(replies).toHaveLength(1);
    expect(JSON.stringify(replies[0]?.body)).toContain(`Round 2: [\`${newHead.slice(0, 7)}\`]`);

    const check = await findHumanReviewCheck(octokit, {
      owner: OWNER,
      repo: REPO,
      sha: newHead,
      appId: ghe.appId,
    });
    expect(check).toMatchObject({
      conclusion: 'action_required',
      jobId: 'job-2',
      requestedBy: ['alice', 'bob'],
    });
    expect(check?.output.text).toMatch(/^### Round 1 — job `job-1`[\s\S]*### Round 2 — job `job-2`/);
  });

  it('a corrupt rounds marker starts the table fresh with the new round', async () => {
    const { job, chosen, ctx } = await prepare();
    await publisher().publish(ctx, job, chosen, CHOICE);
    const body = ghe.state.pull(OWNER, REPO, pull.number)?.body ?? '';
    await octokit.rest.pulls.update({
      owner: OWNER,
      repo: REPO,
      pull_number: pull.number,
      body: body.replace('<!-- frognano:rounds [', '<!-- frognano:rounds [{"round": "x"},'),
    });
    headSha = (await ghe.readBranch(OWNER, REPO, BRANCH))!;
    const next = { ...job, target: { ...job.target, headSha, round: 3 } };
    await runGit(['reset', '--quiet', '--hard', 'origin/main'], { cwd: dir });
    const third = {
      ...chosen,
      patch: await wholeChangeWith('def add(a, b):\n    """Sum."""\n    return a + b\n'),
    };
    await publisher().publish(ctx, next, third, CHOICE);
    const rewritten = ghe.state.pull(OWNER, REPO, pull.number)?.body ?? '';
    expect(rewritten).not.toContain('| 1 | @alice |');
    expect(rewritten).toContain('| 3 | @bob |');
  });

  it('pushes nothing when the branch moved during the round, and says so', async () => {
    const { job, chosen, ctx } = await prepare();
    const pushed = await ghe.commitFiles(OWNER, REPO, {
      branch: BRANCH,
      files: { 'notes.txt': 'by a person\n' },
    });
    const err = await publisher()
      .publish(ctx, job, chosen, CHOICE)
      .catch((e: unknown) => e);
    expect(isAppError(err, 'BRANCH_MOVED')).toBe(true);
    expect(await ghe.readBranch(OWNER, REPO, BRANCH)).toBe(pushed);
    const outcome = classifyError(err);
    expect(outcome).toMatchObject({
      kind: 'refused',
      reason: 'the branch changed while I was working; ask again',
    });
    expect(renderStatus({ phase: 'finished', outcome }, { subject: 'pull' })).toContain(
      'Nothing was pushed: the branch changed while I was working; ask again.',
    );
    expect(ghe.state.requestsTo('POST', /\/replies$/)).toHaveLength(0);
  });

  it('a push refused as not a fast-forward counts the same (the branch moved after the API check)', async () => {
    const { job, chosen, ctx } = await prepare();
    let moved: string | null = null;
    const err = await publisher(async () => {
      // The API still answered the old head; a person pushes right after.
      moved = await ghe.commitFiles(OWNER, REPO, { branch: BRANCH, files: { 'notes.txt': 'late\n' } });
      return headSha;
    })
      .publish(ctx, job, chosen, CHOICE)
      .catch((e: unknown) => e);
    expect(isAppError(err, 'BRANCH_MOVED')).toBe(true);
    expect(moved).not.toBeNull();
    expect(await ghe.readBranch(OWNER, REPO, BRANCH)).toBe(moved);
  });
});

async function wholeChangeWith(content: string): Promise<string> {
  await writeFile(join(dir, 'calc.py'), content);
  const diff = (await runGit(['diff', '--binary', '--full-index'], { cwd: dir })).stdout.toString('utf8');
  await runGit(['checkout', '--', 'calc.py'], { cwd: dir });
  return diff;
}
