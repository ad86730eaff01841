import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AppEnv } from '../../../src/config/env.js';
import {
  createInstallationClients,
  type InstallationOctokit,
} from '../../../src/github-app/github-client.js';
import { NOTICE_MARKER } from '../../../src/github-app/issues-labeled.js';
import { startServer, type RunningServer } from '../../../src/github-app/server.js';
import {
  FOLLOW_UP_STATUS_MARKER,
  STATUS_MARKER,
  statusCommentReporter,
} from '../../../src/github-app/status-comment.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { FeedbackItem } from '../../../src/pipeline/feedback.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { appKeys, pullKey } from '../../../src/queue/queue-keys.js';
import { closeRedis, createRedisConnection } from '../../../src/queue/redis-connection.js';
import { createJobWorker, type FollowUpRunner, type JobWorker } from '../../../src/queue/worker.js';
import type { GheStandin } from '../../helpers/ghe-standin/index.js';
import { startWebhookFixture, type WebhookFixture } from '../../helpers/webhook-fixture.js';
import { deletePrefix, uniquePrefix, waitFor } from '../queue/redis-helper.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const logger = createSilentLogger();

let stack: WebhookFixture;
let ghe: GheStandin;
let prefix: string;
let env: AppEnv;
let server: RunningServer;
const workers: JobWorker[] = [];
const connections: Redis[] = [];

beforeAll(async () => {
  stack = await startWebhookFixture({ owner: OWNER, repo: REPO, roles: { alice: 'write', rita: 'read' } });
  ghe = stack.ghe;
});

afterAll(async () => {
  await stack?.close();
});

async function startServe(maxFollowUps?: number): Promise<void> {
  server = await startServer({
    env,
    logger,
    port: 0,
    host: '127.0.0.1',
    ...(maxFollowUps !== undefined ? { maxFollowUpsFor: () => maxFollowUps } : {}),
  });
}

beforeEach(async () => {
  prefix = uniquePrefix('feedback');
  env = stack.envFor(prefix, { JOB_BACKOFF_MS: '100' });
});

afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  for (const c of connections.splice(0)) await closeRedis(c);
  await server.close();
  await deletePrefix(stack.redis, prefix);
  expect(ghe.state.errors).toEqual([]);
  expect(ghe.state.unhandled).toEqual([]);
});

/** A worker on this test's queue whose follow-up runner is `runFollowUp` (issue jobs fail the test). */
async function startWorker(runFollowUp?: FollowUpRunner<InstallationOctokit>): Promise<void> {
  const redis = createRedisConnection(env.redisUrl, 'worker', { logger });
  const subscriber = createRedisConnection(env.redisUrl, 'subscriber', { logger });
  connections.push(redis, subscriber);
  const clients = createInstallationClients({ ...env, logger, throttle: false });
  workers.push(
    await createJobWorker({
      redis,
      subscriber,
      prefix,
      queueName: env.queueName,
      concurrency: 2,
      lockDurationMs: 5000,
      stalledIntervalMs: 5000,
      maxStalledCount: 1,
      cancelPollMs: 60_000,
      shutdownTimeoutMs: 5000,
      getClient: (id) => clients.get(id),
      run: () => Promise.reject(new Error('no issue job expected')),
      ...(runFollowUp ? { runFollowUp } : {}),
      reporterFor: statusCommentReporter(() => ghe.botLogin),
      progressIntervalMs: 0,
      logger,
    }),
  );
}

/** An issue and the app's draft pull request for it (head `frognano/issue-<n>`, opened by the bot). */
async function openBotPull(): Promise<{ issue: number; pull: number }> {
  const issue = ghe.createIssue(OWNER, REPO, { title: 'add() is wrong', user: 'alice' }).number;
  const head = `frognano/issue-${issue}`;
  await ghe.commitFiles(OWNER, REPO, { branch: head, files: { [`fix-${issue}.txt`]: 'fix\n' } });
  const octokit = await createInstallationClients({ ...env, logger, throttle: false }).get(
    ghe.installationId,
  );
  const res = await octokit.request('POST /repos/{owner}/{repo}/pulls', {
    owner: OWNER,
    repo: REPO,
    title: 'Fix add()',
    head,
    base: 'main',
    body: `Fixes #${issue}`,
    draft: true,
  });
  return { issue, pull: res.data.number };
}

const base = () => ({
  repository: { name: REPO, owner: { login: OWNER } },
  installation: { id: ghe.installationId },
});

/** A person's comment on the pull request, and its `issue_comment.created` delivery. */
async function comment(pull: number, user: string, body: string): Promise<number> {
  const c = ghe.addComment(OWNER, REPO, pull, { user, body });
  const payload = {
    ...base(),
    action: 'created',
    issue: { number: pull, pull_request: { url: `${ghe.apiUrl}/repos/${OWNER}/${REPO}/pulls/${pull}` } },
    comment: {
      id: c.id,
      body,
      created_at: c.created_at,
      html_url: c.html_url,
      user: { login: user, type: 'User' },
    },
    sender: { login: user, type: 'User' },
  };
  const res = await ghe.sendWebhook(server.webhookUrl, 'issue_comment', payload);
  expect(res.status).toBe(200);
  await server.intake.idle();
  return c.id;
}

function pullStatusBodies(pull: number): string[] {
  const ours = ghe.state.comments(OWNER, REPO, pull).filter((c) => c.body?.includes(FOLLOW_UP_STATUS_MARKER));
  expect(ours.length).toBeLessThanOrEqual(1);
  return ours[0] ? ghe.state.commentBodies(ours[0].id) : [];
}

function notices(pull: number): string[] {
  return ghe.state
    .comments(OWNER, REPO, pull)
    .flatMap((c) => (c.body?.includes(NOTICE_MARKER) ? [c.body] : []));
}

async function followUpJobs() {
  const jobs = await server.jobs.queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed']);
  return jobs.filter((j) => j.data.followUp !== undefined);
}

const done = (jobId: string): Outcome => ({
  kind: 'pr_opened',
  pullNumber: 1,
  pullUrl: `${ghe.url}/${OWNER}/${REPO}/pull/1`,
  updated: true,
  summary: {
    jobId,
    exitReason: 'agent',
    steps: 1,
    maxSteps: 3,
    promptTokens: 10,
    completionTokens: 5,
    elapsedMs: 100,
    finalMessage: 'done',
  },
});

/** A runner that records each round and waits for `release()` before it ends. */
function gatedRunner() {
  const rounds: Array<{ round: number; feedback: FeedbackItem[]; aborted: boolean }> = [];
  let open: (() => void) | null = null;
  const runner: FollowUpRunner<InstallationOctokit> = async (request, ctx) => {
    const entry = { round: request.followUp.round, feedback: request.followUp.feedback, aborted: false };
    rounds.push(entry);
    await ctx.progress({ stage: 'running', step: 1, maxSteps: 3 });
    await new Promise<void>((resolve) => {
      open = resolve;
      ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    if (ctx.signal.aborted) {
      // The fake "sandbox" is torn down on abort, as the pipeline's must be.
      entry.aborted = true;
      return { kind: 'cancelled', by: null, reason: String((ctx.signal.reason as Error).message) };
    }
    return done(ctx.jobId);
  };
  return {
    runner,
    rounds,
    release: () => {
      const o = open;
      open = null;
      o?.();
      return o !== null;
    },
  };
}

describe('reviewer feedback on the app’s pull request (issue 11)', () => {
  it('answers a /frognano comment from a read-only user with a short reply and queues nothing', async () => {
    await startServe();
    const { pull } = await openBotPull();
    await comment(pull, 'rita', '/frognano please rename the function');
    expect(notices(pull)).toHaveLength(1);
    expect(notices(pull)[0]).toContain('@rita needs write, maintain or admin access');
    expect(await followUpJobs()).toEqual([]);
    expect(
      await stack.redis.llen(
        appKeys(prefix).feedback(pullKey({ owner: OWNER, repo: REPO, pullNumber: pull })),
      ),
    ).toBe(0);
  });

  it('ignores comments that are not for the app and pull requests that are not the app’s', async () => {
    await startServe();
    const { pull } = await openBotPull();
    await comment(pull, 'alice', 'Looks fine to me, /frognano later maybe');
    const other = ghe.createIssue(OWNER, REPO, { title: 'a person’s issue', user: 'alice' }).number;
    await comment(other, 'alice', '/frognano do it');
    expect(await followUpJobs()).toEqual([]);
    expect(notices(pull)).toEqual([]);
  });

  it('runs one round per request; two requests while a round runs make one next round holding both', async () => {
    await startServe();
    const gate = gatedRunner();
    await startWorker(gate.runner);
    const { issue, pull } = await openBotPull();
    await comment(pull, 'alice', '/frognano use a loop instead');
    await waitFor(() => gate.rounds.length === 1, 'round 1 running');

    await comment(pull, 'alice', `@${ghe.appSlug} also add a test`);
    await comment(pull, 'alice', '/frognano   and a docstring');
    // Still one follow-up job: the two requests wait for the next round.
    expect((await followUpJobs()).length).toBe(1);

    expect(gate.release()).toBe(true);
    await waitFor(() => gate.rounds.length === 2, 'round 2 running');
    expect(gate.release()).toBe(true);
    const jobs = await waitFor(async () => {
      const all = await followUpJobs();
      return all.length === 2 && all.every((j) => j.finishedOn) ? all : null;
    }, 'both rounds finished');

    expect(gate.rounds.map((r) => r.round)).toEqual([1, 2]);
    expect(gate.rounds[0]!.feedback.map((f) => f.body)).toEqual(['use a loop instead']);
    expect(gate.rounds[1]!.feedback.map((f) => [f.kind, f.author, f.body])).toEqual([
      ['comment', 'alice', `@${ghe.appSlug} also add a test`],
      ['comment', 'alice', 'and a docstring'],
    ]);
    expect(jobs.every((j) => j.data.issueNumber === issue && j.data.followUp?.pullNumber === pull)).toBe(
      true,
    );
    expect(jobs.every((j) => !j.id!.includes(':'))).toBe(true);
    // One status comment on the pull request, edited in place; the issue's comment marker is not used.
    const bodies = pullStatusBodies(pull);
    expect(bodies[0]).toContain('queued (position 1)');
    expect(bodies.some((b) => b.includes('running (step 1 of 3)'))).toBe(true);
    expect(bodies.at(-1)).toContain('updated draft pull request #1');
    // Between the rounds the comment says the next round is queued, under the next round's job id.
    const firstEnd = bodies.findIndex((b) => b.includes('updated draft pull request #1'));
    const round2 = jobs.find((j) => j.data.followUp?.round === 2)!;
    expect(bodies[firstEnd + 1]).toContain('— queued');
    expect(bodies[firstEnd + 1]).toContain(round2.id);
    expect(ghe.state.comments(OWNER, REPO, pull).some((c) => c.body?.includes(STATUS_MARKER))).toBe(false);
    expect(gate.release()).toBe(false);
  });

  it('/frognano stop cancels the running round, drops pending feedback and says cancelled', async () => {
    await startServe();
    const gate = gatedRunner();
    await startWorker(gate.runner);
    const { pull } = await openBotPull();
    await comment(pull, 'alice', '/frognano fix the off-by-one');
    await waitFor(() => gate.rounds.length === 1, 'round 1 running');
    await comment(pull, 'alice', '/frognano and the other one');
    await comment(pull, 'alice', '/frognano stop');

    await waitFor(async () => (await followUpJobs())[0]?.finishedOn, 'round cancelled');
    expect(gate.rounds).toHaveLength(1);
    expect(gate.rounds[0]!.aborted).toBe(true);
    await waitFor(() => pullStatusBodies(pull).at(-1)?.includes('cancelled by @alice'), 'cancelled comment');
    expect(pullStatusBodies(pull).at(-1)).toContain(
      'Comment `/frognano` and what to change to start a new round.',
    );
    expect((await followUpJobs()).length).toBe(1);
    const p = { owner: OWNER, repo: REPO, pullNumber: pull };
    expect(await server.jobs.followUps.pendingCount(p)).toBe(0);
    expect(await server.jobs.followUps.holder(p)).toBeNull();
  });

  it('closing the pull request removes the waiting round and says cancelled', async () => {
    await startServe();
    const { pull } = await openBotPull();
    await comment(pull, 'alice', '/frognano rename x');
    expect(await (await followUpJobs())[0]!.getState()).toBe('waiting');
    const res = await ghe.sendWebhook(server.webhookUrl, 'pull_request', {
      ...base(),
      action: 'closed',
      pull_request: { number: pull },
      sender: { login: 'alice', type: 'User' },
    });
    expect(res.status).toBe(200);
    await server.intake.idle();
    expect(await followUpJobs()).toEqual([]);
    expect(pullStatusBodies(pull).at(-1)).toContain('cancelled by @alice');
    expect(pullStatusBodies(pull).at(-1)).toContain('the pull request was closed before the round started');
    expect(await server.jobs.followUps.pendingCount({ owner: OWNER, repo: REPO, pullNumber: pull })).toBe(0);
  });

  it('removing the label from the issue cancels the pull request’s waiting round', async () => {
    await startServe();
    const { issue, pull } = await openBotPull();
    await comment(pull, 'alice', '/frognano rename y');
    const res = await ghe.sendWebhook(
      server.webhookUrl,
      'issues',
      ghe.unlabelIssue({ owner: OWNER, repo: REPO, issueNumber: issue, sender: 'alice', label: 'frognano' }),
    );
    expect(res.status).toBe(200);
    await server.intake.idle();
    expect(await followUpJobs()).toEqual([]);
    expect(pullStatusBodies(pull).at(-1)).toContain(
      'the frognano label was removed before the round started',
    );
  });

  it('says so past the maxFollowUps cap and queues nothing', async () => {
    await startServe(1);
    const gate = gatedRunner();
    await startWorker(gate.runner);
    const { pull } = await openBotPull();
    await comment(pull, 'alice', '/frognano first');
    await waitFor(() => gate.rounds.length === 1, 'round 1 running');
    gate.release();
    await waitFor(async () => (await followUpJobs())[0]?.finishedOn, 'round 1 finished');
    await comment(pull, 'alice', '/frognano second');
    expect(notices(pull)).toHaveLength(1);
    expect(notices(pull)[0]).toContain(
      'has had 1 follow-up round, the most the admin policy allows (`maxFollowUps`: 1)',
    );
    expect((await followUpJobs()).length).toBe(1);
    expect(await server.jobs.followUps.pendingCount({ owner: OWNER, repo: REPO, pullNumber: pull })).toBe(0);
  });

  it('a changes_requested review brings its inline comments with file, lines and diff hunk', async () => {
    await startServe();
    const gate = gatedRunner();
    await startWorker(gate.runner);
    const { pull } = await openBotPull();
    const payload = ghe.submitReview({
      owner: OWNER,
      repo: REPO,
      pullNumber: pull,
      reviewer: 'alice',
      state: 'changes_requested',
      body: 'Two things.',
    });
    const reviewId = (payload.review as { id: number }).id;
    ghe.addReviewComment(OWNER, REPO, pull, {
      reviewId,
      user: 'alice',
      body: 'Off by one here.',
      path: 'calc.py',
      line: 12,
      startLine: 10,
      diffHunk: '@@ -8,3 +8,5 @@ def add(a, b):',
    });
    const res = await ghe.sendWebhook(server.webhookUrl, 'pull_request_review', payload);
    expect(res.status).toBe(200);
    await server.intake.idle();
    await waitFor(() => gate.rounds.length === 1, 'round 1 running');
    expect(gate.rounds[0]!.feedback).toMatchObject([
      { kind: 'review', author: 'alice', body: 'Two things.', reviewId },
      {
        kind: 'review-comment',
        author: 'alice',
        body: 'Off by one here.',
        reviewId,
        path: 'calc.py',
        startLine: 10,
        line: 12,
        diffHunk: '@@ -8,3 +8,5 @@ def add(a, b):',
      },
    ]);
    gate.release();
    await waitFor(async () => (await followUpJobs())[0]?.finishedOn, 'round finished');
  });

  it('without a follow-up runner a round fails before the agent and keeps its feedback for the next one', async () => {
    await startServe();
    await startWorker();
    const { pull } = await openBotPull();
    await comment(pull, 'alice', '/frognano rename z');
    await waitFor(async () => (await followUpJobs())[0]?.finishedOn, 'round finished');
    await waitFor(
      () => pullStatusBodies(pull).at(-1)?.includes('follow-up runs are not available yet'),
      'outcome',
    );
    expect(pullStatusBodies(pull).at(-1)).toContain('FOLLOW_UP_UNAVAILABLE');
    const p = { owner: OWNER, repo: REPO, pullNumber: pull };
    expect(await server.jobs.followUps.pendingCount(p)).toBe(1);
    expect(await server.jobs.followUps.holder(p)).toBeNull();
    // No automatic next round (it would fail the same way); the next request runs both.
    expect((await followUpJobs()).length).toBe(1);
  });
});
