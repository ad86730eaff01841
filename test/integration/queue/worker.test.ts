import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AppEnv } from '../../../src/config/env.js';
import {
  createInstallationClients,
  type InstallationOctokit,
} from '../../../src/github-app/github-client.js';
import { startServer, type RunningServer } from '../../../src/github-app/server.js';
import { STATUS_MARKER, statusCommentReporter } from '../../../src/github-app/status-comment.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { createWorkerMetrics } from '../../../src/observability/metrics.js';
import type { Outcome, RunSummary } from '../../../src/pipeline/outcome.js';
import { createConcurrencyLimiter } from '../../../src/queue/concurrency-limiter.js';
import { JOB_NAME } from '../../../src/queue/job-queue.js';
import { closeRedis, createRedisConnection } from '../../../src/queue/redis-connection.js';
import {
  createJobWorker,
  type JobRunContext,
  type JobRunner,
  type JobWorker,
  type JobWorkerOptions,
} from '../../../src/queue/worker.js';
import type { JobData } from '../../../src/queue/job-data.js';
import type { GheStandin } from '../../helpers/ghe-standin/index.js';
import { startWebhookFixture, type WebhookFixture } from '../../helpers/webhook-fixture.js';
import { deletePrefix, uniquePrefix, waitFor } from './redis-helper.js';

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
const children: ChildProcess[] = [];

const summary = (jobId: string): RunSummary => ({
  jobId,
  exitReason: 'agent',
  steps: 3,
  maxSteps: 3,
  promptTokens: 1200,
  completionTokens: 300,
  elapsedMs: 4000,
  finalMessage: 'Fixed add().',
  tests: { command: 'pytest -q', exitCode: 0, passed: true, outputTail: '1 passed', timedOut: false },
});

beforeAll(async () => {
  stack = await startWebhookFixture({
    owner: OWNER,
    repo: REPO,
    roles: { alice: 'write', trish: 'triage' },
  });
  ghe = stack.ghe;
});

afterAll(async () => {
  await stack?.close();
});

beforeEach(async () => {
  prefix = uniquePrefix('worker');
  env = stack.envFor(prefix, { JOB_BACKOFF_MS: '100' });
  server = await startServer({ env, logger, port: 0, host: '127.0.0.1' });
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const w of workers.splice(0)) await w.close();
  for (const c of connections.splice(0)) await closeRedis(c);
  await server.close();
  await deletePrefix(stack.redis, prefix);
  expect(ghe.state.errors).toEqual([]);
  expect(ghe.state.unhandled).toEqual([]);
});

/** Start an in-process worker on this test's queue with `run` and test-sized timings. */
async function startTestWorker(
  run: JobRunner<InstallationOctokit>,
  overrides: Partial<JobWorkerOptions<InstallationOctokit>> = {},
): Promise<JobWorker> {
  const redis = createRedisConnection(env.redisUrl, 'worker', { logger });
  const subscriber = createRedisConnection(env.redisUrl, 'subscriber', { logger });
  connections.push(redis, subscriber);
  const clients = createInstallationClients({ ...env, logger, throttle: false });
  const w = await createJobWorker({
    redis,
    subscriber,
    prefix,
    queueName: env.queueName,
    concurrency: 2,
    lockDurationMs: 1000,
    stalledIntervalMs: 300,
    maxStalledCount: 1,
    cancelPollMs: 60_000,
    shutdownTimeoutMs: 5000,
    getClient: (id) => clients.get(id),
    run,
    reporterFor: statusCommentReporter(() => ghe.botLogin),
    progressIntervalMs: 0,
    logger,
    ...overrides,
  });
  workers.push(w);
  return w;
}

/** Label a new issue as alice and return its number once the job is queued. */
async function labelNewIssue(): Promise<number> {
  const n = ghe.createIssue(OWNER, REPO, {
    title: 'add() is wrong',
    body: 'add(2,2) == 5',
    user: 'alice',
  }).number;
  const res = await ghe.sendWebhook(server.webhookUrl, 'issues', stack.labeled(n, 'alice'));
  expect(res.status).toBe(200);
  // The delivery is recorded; its GitHub side (status comment, enqueue) runs in the intake step.
  await server.intake.idle();
  return n;
}

function statusComment(n: number) {
  const ours = ghe.state.comments(OWNER, REPO, n).filter((c) => c.body?.includes(STATUS_MARKER));
  expect(ours).toHaveLength(1);
  return ours[0]!;
}

async function jobOf(n: number) {
  const jobs = await server.jobs.queue.getJobs([
    'waiting',
    'active',
    'delayed',
    'completed',
    'failed',
    'prioritized',
  ]);
  return jobs.filter((j) => j.data.issueNumber === n);
}

describe('worker', () => {
  it('runs a job and edits one status comment in place: queued → preparing → running → outcome', async () => {
    const calls: Array<{ data: JobData; ctx: JobRunContext<InstallationOctokit> }> = [];
    const metrics = createWorkerMetrics({ defaultMetrics: false });
    await startTestWorker(
      async (data, ctx) => {
        calls.push({ data, ctx });
        await ctx.progress({ stage: 'running', step: 1, maxSteps: 3 });
        await ctx.progress({ stage: 'testing' });
        return {
          kind: 'pr_opened',
          pullNumber: 42,
          pullUrl: `${ghe.url}/${OWNER}/${REPO}/pull/42`,
          updated: false,
          summary: summary(ctx.jobId),
        };
      },
      { metrics },
    );
    const n = await labelNewIssue();
    await waitFor(async () => (await jobOf(n))[0]?.finishedOn, 'job finished');

    expect(calls).toHaveLength(1);
    expect(calls[0]!.data).toMatchObject({
      owner: OWNER,
      repo: REPO,
      issueNumber: n,
      triggeredBy: { login: 'alice' },
    });
    expect(calls[0]!.ctx.attempt).toBe(1);
    const { token } = (await calls[0]!.ctx.client.auth({ type: 'installation' })) as { token: string };
    expect(token).toMatch(/^ghs_/);

    const comment = statusComment(n);
    await waitFor(
      () => ghe.state.commentBodies(comment.id).some((b) => b.includes('opened draft pull request #42')),
      'final comment',
    );
    const bodies = ghe.state.commentBodies(comment.id);
    expect(bodies[0]).toContain('queued (position 1)');
    expect(bodies.some((b) => b.includes('preparing'))).toBe(true);
    expect(bodies.some((b) => b.includes('running (step 1 of 3)'))).toBe(true);
    expect(bodies.some((b) => b.includes('testing the change'))).toBe(true);
    const final = bodies.at(-1)!;
    expect(final).toContain('opened draft pull request #42');
    expect(final).toContain('Tests: `pytest -q` — passed.');
    expect(final).toContain('steps: 3 of 3');

    const job = (await jobOf(n))[0]!;
    expect(await job.getState()).toBe('completed');
    expect(job.returnvalue).toEqual({ outcome: 'pr_opened', pullUrl: `${ghe.url}/${OWNER}/${REPO}/pull/42` });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/frognano_jobs_total\{outcome="pr_opened"\} 1/);
    expect(text).toMatch(/frognano_tokens_total\{kind="prompt"\} 1200/);

    // The per-issue guard was released: labelling again starts a new job, in the same comment.
    await ghe.sendWebhook(server.webhookUrl, 'issues', stack.labeled(n, 'alice'));
    await waitFor(() => calls.length === 2, 'second run');
    expect(statusComment(n).id).toBe(comment.id);
  });

  it('stops an active job when the label is removed: AbortSignal fires, comment says who cancelled', async () => {
    let aborted: { at: number; reason: unknown } | null = null;
    let started = false;
    await startTestWorker(async (_data, ctx) => {
      started = true;
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      aborted = { at: Date.now(), reason: ctx.signal.reason };
      return { kind: 'cancelled', by: null, reason: (ctx.signal.reason as Error).message };
    });
    const n = await labelNewIssue();
    await waitFor(() => started, 'job started');
    const sentAt = Date.now();
    const res = await ghe.sendWebhook(
      server.webhookUrl,
      'issues',
      ghe.unlabelIssue({ owner: OWNER, repo: REPO, issueNumber: n, sender: 'trish', label: 'frognano' }),
    );
    expect(res.status).toBe(200);
    // Pub/sub delivers it (polling is set to 60 s here); bound the wait well under the 10 s budget.
    const a = await waitFor(() => aborted, 'abort signal', 3000);
    expect(a.at - sentAt).toBeLessThan(3000);
    expect((a.reason as Error).message).toBe('the frognano label was removed');
    await waitFor(() => statusComment(n).body?.includes('cancelled by @trish'), 'cancelled comment');
    expect(statusComment(n).body).toContain('@trish cancelled the job: the frognano label was removed');
    await waitFor(async () => (await (await jobOf(n))[0]!.getState()) === 'completed', 'job completed');
  });

  it('also finds a cancel request by polling its key (pub/sub message missed)', async () => {
    let started = false;
    await startTestWorker(
      async (_data, ctx) => {
        started = true;
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        return { kind: 'cancelled', by: null, reason: 'stopped' };
      },
      { cancelPollMs: 200 },
    );
    const n = await labelNewIssue();
    await waitFor(() => started, 'job started');
    const jobId = (await jobOf(n))[0]!.id!;
    // Write the request without publishing it.
    await stack.redis.set(
      server.jobs.keys.cancel(jobId),
      JSON.stringify({ by: 'alice', reason: 'the issue was closed', at: new Date().toISOString() }),
    );
    await waitFor(() => statusComment(n).body?.includes('cancelled by @alice'), 'cancelled comment', 5000);
  });

  it('does not start a job whose cancel request arrived before a worker took it', async () => {
    const n = await labelNewIssue();
    const jobId = (await jobOf(n))[0]!.id!;
    await server.jobs.cancelRequests.request(jobId, { by: 'alice', reason: 'the issue was closed' });
    let ran = false;
    await startTestWorker(async () => {
      ran = true;
      return { kind: 'no_change', summary: summary('x') };
    });
    await waitFor(() => statusComment(n).body?.includes('cancelled by @alice'), 'cancelled comment');
    expect(ran).toBe(false);
    expect(statusComment(n).body).toContain('the issue was closed before the job started');
  });

  it('retries a retryable outcome, saying so, then reports the final outcome', async () => {
    const attempts: number[] = [];
    await startTestWorker(async (_data, ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1)
        return { kind: 'github_error', message: 'HTTP 502: bad gateway', status: 502, retryable: true };
      return { kind: 'no_change', summary: summary(ctx.jobId) };
    });
    const n = await labelNewIssue();
    await waitFor(
      () => statusComment(n).body?.includes('finished without changing any file'),
      'final comment',
    );
    expect(attempts).toEqual([1, 2]);
    const bodies = ghe.state.commentBodies(statusComment(n).id);
    expect(bodies.some((b) => b.includes('will try again (retry 1 of 1)'))).toBe(true);
  });

  it('fails a job with invalid data without retrying it', async () => {
    await startTestWorker(async () => {
      throw new Error('must not run');
    });
    const job = await server.jobs.queue.add(JOB_NAME, { version: 99 } as unknown as JobData, {
      jobId: 'bad.job.1',
    });
    await waitFor(async () => (await job.getState()) === 'failed', 'failed state');
    const failed = await server.jobs.queue.getJob('bad.job.1');
    expect(failed?.failedReason).toMatch(/invalid job data/);
    expect(failed?.attemptsMade).toBe(1);
  });

  it('puts active jobs back in the queue when the worker shuts down (no outcome, no failure)', async () => {
    let started = false;
    const w = await startTestWorker(
      async (_data, ctx) => {
        started = true;
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        return { kind: 'cancelled', by: null, reason: (ctx.signal.reason as Error).message };
      },
      { shutdownTimeoutMs: 200 },
    );
    const n = await labelNewIssue();
    await waitFor(() => started, 'job started');
    await w.close();
    const job = (await jobOf(n))[0]!;
    expect(await job.getState()).toBe('waiting');
    expect(statusComment(n).body).not.toContain('cancelled');
    // The comment says the job waits again, not "running (step 0 of …)" (issue 12 item 8).
    expect(statusComment(n).body).toContain('queued again');
    expect(statusComment(n).body).toContain('The worker running this job was shut down');

    // Another worker finishes it.
    await startTestWorker(async (_d, ctx) => ({ kind: 'no_change', summary: summary(ctx.jobId) }));
    await waitFor(
      () => statusComment(n).body?.includes('finished without changing any file'),
      'final comment',
    );
  });

  it('delays, not fails, a job over the per-repository limit; it runs once the slot is free', async () => {
    const limiterRedis = createRedisConnection(env.redisUrl, 'worker', { logger });
    connections.push(limiterRedis);
    const limiter = createConcurrencyLimiter({
      redis: limiterRedis,
      keyPrefix: `${prefix}:{concurrency}`,
      globalLimit: 0,
      leaseMs: 10_000,
    });
    const started: number[] = [];
    let release: () => void = () => undefined;
    const firstMayEnd = new Promise<void>((resolve) => (release = resolve));
    await startTestWorker(
      async (data, ctx) => {
        started.push(data.issueNumber);
        if (started.length === 1) await firstMayEnd;
        return { kind: 'no_change', summary: summary(ctx.jobId) };
      },
      { concurrencyLimit: { limiter, perRepoLimit: () => 1, retryDelayMs: 100 } },
    );
    const first = await labelNewIssue();
    await waitFor(() => started.length === 1, 'first job started');
    const second = await labelNewIssue();
    // The second job is taken by the worker (concurrency 2), refused a slot and put back as delayed.
    await waitFor(
      async () => (await (await jobOf(second))[0]!.getState()) === 'delayed',
      'second job delayed by the limiter',
    );
    expect(started).toEqual([first]);
    expect(await limiter.holders(`${OWNER}/${REPO}`)).toHaveLength(1);

    release();
    await waitFor(
      () => statusComment(second).body?.includes('finished without changing any file'),
      'second job finished',
      10_000,
    );
    expect(started).toEqual([first, second]);
    const job = (await jobOf(second))[0]!;
    await waitFor(async () => (await job.getState()) === 'completed', 'second job completed');
    expect((await jobOf(second))[0]!.failedReason).toBeFalsy();
    await waitFor(async () => (await limiter.holders()).length === 0, 'slots released');
  });
});

describe('worker killed mid-job', () => {
  const fixture = fileURLToPath(new URL('./fixtures/hanging-worker.ts', import.meta.url));

  /** Start the hanging worker process and wait until it has taken a job. */
  async function startDoomedWorker(): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      env: {
        ...process.env,
        REDIS_URL: env.redisUrl,
        QUEUE_PREFIX: prefix,
        QUEUE_NAME: env.queueName,
        GHE_API_URL: env.githubApiUrl,
        APP_ID: String(env.appId),
        PRIVATE_KEY: env.privateKey,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    await waitFor(() => out.includes('ready') || child.exitCode !== null, 'worker process ready', 20_000);
    if (child.exitCode !== null) throw new Error(`worker process exited: ${err}`);
    return Object.assign(child, { output: () => out });
  }

  it('retries the job on another worker after the first one is SIGKILLed', async () => {
    const child = (await startDoomedWorker()) as ChildProcess & { output(): string };
    const n = await labelNewIssue();
    await waitFor(() => child.output().includes('started'), 'job started in the doomed worker', 10_000);
    child.kill('SIGKILL');
    await waitFor(() => child.exitCode !== null || child.signalCode !== null, 'worker process gone', 5000);

    const attempts: number[] = [];
    await startTestWorker(async (_d, ctx) => {
      attempts.push(ctx.attempt);
      return {
        kind: 'pr_opened',
        pullNumber: 7,
        pullUrl: `${ghe.url}/${OWNER}/${REPO}/pull/7`,
        updated: false,
        summary: summary(ctx.jobId),
      };
    });
    await waitFor(
      () => statusComment(n).body?.includes('opened draft pull request #7'),
      'final comment',
      15_000,
    );
    expect(attempts).toHaveLength(1);
    expect(ghe.state.comments(OWNER, REPO, n)).toHaveLength(1);
  });

  it('fails the job with a comment when its workers keep dying (stalled more than allowed)', async () => {
    const child = (await startDoomedWorker()) as ChildProcess & { output(): string };
    const n = await labelNewIssue();
    await waitFor(() => child.output().includes('started'), 'job started in the doomed worker', 10_000);
    child.kill('SIGKILL');

    let ran = false;
    await startTestWorker(
      async () => {
        ran = true;
        return { kind: 'no_change', summary: summary('x') };
      },
      { maxStalledCount: 0 },
    );
    await waitFor(() => statusComment(n).body?.includes('WORKER_LOST'), 'failure comment', 15_000);
    expect(ran).toBe(false);
    expect(statusComment(n).body).toContain('failed');
    await waitFor(async () => (await (await jobOf(n))[0]!.getState()) === 'failed', 'job failed');
    // The guard was released: a new labelling is accepted.
    const res = await ghe.sendWebhook(server.webhookUrl, 'issues', stack.labeled(n, 'alice'));
    expect(res.status).toBe(200);
    await waitFor(async () => (await jobOf(n)).length === 2, 'second job');
  });
});

export type { Outcome };
