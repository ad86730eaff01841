/**
 * GitHub App figures of `npm run bench`, against DESIGN.md's budgets "Webhook answered (delivery
 * recorded in Redis) p99 < 20 ms, without a GitHub call on that path; job pickup < 100 ms after enqueue with an idle worker" and "Worker memory < 150 MB RSS with 4
 * concurrent jobs".
 *
 * Everything runs on this machine: the real `serve` (`startServe`) and the real worker wiring
 * (`startWorker` → `createJobWorker`) in this process, the GitHub Enterprise stand-in of
 * test/helpers (also in this process, so its own handling time is inside the figures where a real
 * GHES would add network round trips instead), and Redis at TEST_REDIS_URL (default
 * redis://127.0.0.1:6379) under fresh `bench-gh-*` key prefixes that are deleted afterwards.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { availableParallelism, loadavg } from 'node:os';
import type { Redis } from 'ioredis';
import { startServe } from '../src/bin/commands/serve.js';
import { startWorker } from '../src/bin/commands/worker.js';
import { loadEnv } from '../src/config/env.js';
import { createInstallationClients } from '../src/github-app/github-client.js';
import { createStatusComment } from '../src/github-app/status-comment.js';
import type { Outcome } from '../src/pipeline/outcome.js';
import type { JobData } from '../src/queue/job-data.js';
import { createJobQueue } from '../src/queue/job-queue.js';
import { makeJobId } from '../src/queue/queue-keys.js';
import { closeRedis, createRedisConnection } from '../src/queue/redis-connection.js';
import type { JobRunner } from '../src/queue/worker.js';
import { meterFetch } from './fetch-meter.js';
import { BENCH_OWNER, BENCH_SENDER, startRig, type BenchRig } from './github-app-rig.js';
import { latencyStats, printLatencyRow } from './latency-stats.js';
import { measureWorkerMemory } from './worker-memory.js';

/** Options of {@link benchGithubApp}; every count is bounded so a run stays well under a minute or two. */
export interface BenchGithubAppOptions {
  /** Signed `issues.labeled` webhooks measured one at a time, after 10 warm-up ones. Default 200. */
  webhooks?: number;
  /** Webhooks sent with {@link burstConcurrency} in flight (0: skip). Default 60. */
  burstWebhooks?: number;
  /** Requests in flight during the burst. Default 8. */
  burstConcurrency?: number;
  /** Jobs taken one at a time by an idle worker, after 5 warm-up ones. Default 100. */
  pickups?: number;
  /**
   * Measure the RSS of a `node dist/bin/cli.js worker` child running 4 jobs at once (needs
   * `npm run build`, bubblewrap, git, python3 with pytest). Default true.
   */
  workerMemory?: boolean;
}

const BUDGET_ANSWER = 'budget p99 < 20 ms, no GitHub call';
const BUDGET_PICKUP = 'budget < 100 ms';

/**
 * Print the GitHub App figures: webhook → job in queue and → HTTP response (median/p95/p99), job
 * pick-up latency with an idle worker, and worker RSS with 4 concurrent jobs.
 *
 * Never throws: a part that cannot run (Redis down, build missing, a failure) prints
 * "not measured: <reason>" and the others still run. Every Redis key, server, child process and
 * temp folder it created is removed before it returns; a cleanup problem is printed.
 */
export async function benchGithubApp(options: BenchGithubAppOptions = {}): Promise<void> {
  const load = `load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} CPUs`;
  console.log(`\nGitHub App: serve and worker in-process, GitHub Enterprise stand-in, real Redis (${load}):`);
  let handle: Awaited<ReturnType<typeof startRig>>;
  try {
    handle = await startRig();
  } catch (err) {
    console.log(`GitHub App figures not measured: ${(err as Error).message}`);
    return;
  }
  const { rig } = handle;
  const parts: Array<[string, () => Promise<void>]> = [
    ['webhook handling', () => benchWebhooks(rig, options)],
    ['job pick-up', () => benchPickup(rig, options.pickups ?? 100)],
  ];
  if (options.workerMemory !== false) parts.push(['worker memory', () => measureWorkerMemory(rig)]);
  try {
    for (const [name, run] of parts) {
      try {
        await run();
      } catch (err) {
        console.log(`${name}: not measured: ${(err as Error).message}`);
      }
    }
    const { errors, unhandled } = rig.ghe.state;
    if (errors.length > 0 || unhandled.length > 0) {
      console.log(
        `note: the GitHub stand-in saw ${errors.length} handler errors and ${unhandled.length} unknown routes ` +
          `(${[...errors.map((e) => `${e.method} ${e.path}`), ...unhandled.map((u) => `${u.method} ${u.path}`)].slice(0, 3).join(', ')})`,
      );
    }
  } finally {
    const problems = await handle.close();
    for (const p of problems) console.log(`cleanup problem: ${p}`);
  }
}

/**
 * Webhook handling: the real `serve` receives signed `issues.labeled` deliveries for distinct issues
 * (sender with write access), records each in Redis and answers 200; the intake step then runs the
 * GitHub side — permission check against the stand-in, per-issue reservation in Redis, status
 * comment, BullMQ add, 👀 reaction. Each delivery is sent after the previous one's intake finished.
 *
 * "job in queue" is the moment the BullMQ add of the job resolved: `serve.jobs.enqueue` is wrapped to
 * note it. "GitHub calls while answering" counts the stand-in requests made between sending and the
 * answer. Clocks start before the request is signed and sent.
 */
async function benchWebhooks(rig: BenchRig, options: BenchGithubAppOptions): Promise<void> {
  const n = options.webhooks ?? 200;
  const burst = options.burstWebhooks ?? 60;
  const inFlight = Math.max(1, options.burstConcurrency ?? 8);
  const repo = 'bench-webhooks';
  const { ghe } = rig;
  await ghe.createRepo(BENCH_OWNER, repo);
  ghe.setPermission(BENCH_OWNER, repo, BENCH_SENDER, 'write');
  const prefix = rig.newPrefix('webhooks');
  const env = loadEnv(rig.envVars(prefix));
  const serve = await startServe({ env, logger: rig.logger, port: 0, host: '127.0.0.1' });
  rig.defer('stop serve', () => serve.close());

  const queuedAt = new Map<string, number>();
  const enqueue = serve.jobs.enqueue.bind(serve.jobs);
  serve.jobs.enqueue = async (jobId, data, opts) => {
    await enqueue(jobId, data, opts);
    queuedAt.set(data.deliveryId, performance.now());
  };

  const github = meterFetch(ghe.apiUrl);
  rig.defer('restore fetch', () => github.restore());

  const sendOne = async (): Promise<{ queuedMs: number; responseMs: number; githubCalls: number }> => {
    const issue = ghe.createIssue(BENCH_OWNER, repo, { title: 'bench issue', body: 'x', user: BENCH_SENDER });
    const payload = ghe.labelIssue({
      owner: BENCH_OWNER,
      repo,
      issueNumber: issue.number,
      sender: BENCH_SENDER,
      label: env.triggerLabel,
    });
    const deliveryId = randomUUID();
    github.take();
    const t0 = performance.now();
    const res = await ghe.sendWebhook(serve.webhookUrl, 'issues', payload, { deliveryId });
    const responseMs = performance.now() - t0;
    const githubCalls = github.take().calls;
    if (res.status !== 200) throw new Error(`a webhook got HTTP ${res.status}: ${res.body.slice(0, 300)}`);
    await serve.intake.idle();
    const at = queuedAt.get(deliveryId);
    if (at === undefined) throw new Error(`a webhook got 200 but queued no job: ${res.body.slice(0, 300)}`);
    return { queuedMs: at - t0, responseMs, githubCalls };
  };

  for (let i = 0; i < 10; i++) await sendOne(); // installation token, JIT, connection pools
  const restBefore = ghe.state.requests.length;
  const sequential: Array<{ queuedMs: number; responseMs: number; githubCalls: number }> = [];
  for (let i = 0; i < n; i++) sequential.push(await sendOne());
  const restPerWebhook = (ghe.state.requests.length - restBefore) / Math.max(1, n);

  const concurrent: number[] = [];
  let next = 0;
  let failed = false; // one failure stops the other senders too
  await Promise.all(
    Array.from({ length: Math.min(inFlight, burst) }, async () => {
      while (next < burst && !failed) {
        next++;
        try {
          concurrent.push((await sendOne()).responseMs);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    }),
  );

  const expected = 10 + n + burst;
  const counts = await serve.jobs.queue.getJobCounts('waiting', 'prioritized');
  const queued = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
  console.log(
    `${n} webhooks one at a time (+${burst} with ${inFlight} in flight), each ${restPerWebhook.toFixed(0)} REST calls ` +
      `to the stand-in; ${queued} of ${expected} jobs waiting in the queue afterwards:`,
  );
  printLatencyRow(
    'webhook → HTTP 200 (recorded)',
    latencyStats(sequential.map((s) => s.responseMs)),
    BUDGET_ANSWER,
  );
  const callsWhileAnswering = sequential.reduce((a, s) => a + s.githubCalls, 0);
  console.log(`  GitHub calls while answering: ${callsWhileAnswering} in ${n} webhooks`);
  printLatencyRow(
    'webhook → job in queue (intake step)',
    latencyStats(sequential.map((s) => s.queuedMs)),
    '',
  );
  if (burst > 0) printLatencyRow(`webhook → HTTP 200, ${inFlight} in flight`, latencyStats(concurrent), '');
  if (queued !== expected) console.log(`WARNING: expected ${expected} waiting jobs, found ${queued}`);
}

/**
 * Job pick-up: the worker process's wiring (`startWorker` → `createJobWorker`: BullMQ Worker,
 * cancel watcher, per-repository concurrency slot, installation client) with an instant job runner
 * in place of the pipeline. Jobs are added one at a time through the producer (`createJobQueue`),
 * each after the previous one finished and a pause of 25–75 ms, so the worker waits idle in its
 * blocking fetch when each job arrives.
 *
 * Two figures: BullMQ's own `processedOn − timestamp` (what the `job_pickup_latency_seconds`
 * metric records; 1 ms resolution), and enqueue → the runner being called, which adds the worker's
 * per-job preamble (validation, cancel check, concurrency slot, "preparing" status comment written
 * to the stand-in).
 */
async function benchPickup(rig: BenchRig, n: number): Promise<void> {
  const repo = 'bench-pickup';
  const { ghe } = rig;
  await ghe.createRepo(BENCH_OWNER, repo);
  ghe.setPermission(BENCH_OWNER, repo, BENCH_SENDER, 'write');
  const prefix = rig.newPrefix('pickup');
  const env = loadEnv(rig.envVars(prefix));

  const github = meterFetch(ghe.apiUrl);
  rig.defer('restore fetch', () => github.restore());
  const runnerAt = new Map<string, { at: number; githubMs: number; githubCalls: number }>();
  const run: JobRunner = async (_data, ctx) => {
    const at = performance.now();
    const { ms, calls } = github.take();
    runnerAt.set(ctx.jobId, { at, githubMs: ms, githubCalls: calls });
    return instantOutcome(ctx.jobId);
  };
  const worker = await startWorker({
    env,
    logger: rig.logger,
    run,
    throttle: false,
    port: null,
    progressIntervalMs: 0,
  });
  rig.defer('stop the pick-up worker', () => worker.close());
  const producer = createRedisConnection(env.redisUrl, 'producer', {
    logger: rig.logger,
    name: 'frognano-bench',
  });
  rig.defer('close the producer connection', () => closeRedis(producer));
  await waitReady(producer, 5_000);
  const jobs = createJobQueue({
    redis: producer,
    prefix,
    queueName: env.queueName,
    attempts: 1,
    logger: rig.logger,
  });
  rig.defer('close the producer queue', () => jobs.close());
  const octokit = await createInstallationClients({ ...env, logger: rig.logger, throttle: false }).get(
    ghe.installationId,
  );

  const ended = new Map<string, (err?: Error) => void>();
  worker.jobWorker.worker.on('completed', (job) => ended.get(job.id ?? '')?.());
  worker.jobWorker.worker.on('failed', (job, err) => ended.get(job?.id ?? '')?.(err));

  type Sample = { bullMs: number; runnerMs: number; githubMs: number; githubCalls: number };
  const one = async (): Promise<Sample> => {
    const issue = ghe.createIssue(BENCH_OWNER, repo, { title: 'bench issue', body: 'x', user: BENCH_SENDER });
    const deliveryId = randomUUID();
    const ref = { owner: BENCH_OWNER, repo, issueNumber: issue.number };
    const jobId = makeJobId(ref, deliveryId);
    // As `serve` does before it enqueues: the "queued" status comment, whose id the job carries.
    const statusCommentId = await createStatusComment(
      octokit,
      { owner: BENCH_OWNER, repo, issue: issue.number },
      { botLogin: ghe.botLogin, jobId, logger: rig.logger },
    ).update({ phase: 'queued', position: 1, triggeredBy: BENCH_SENDER });
    const data: JobData = {
      version: 1,
      deliveryId,
      installationId: ghe.installationId,
      ...ref,
      label: env.triggerLabel,
      triggeredBy: { login: BENCH_SENDER },
      enqueuedAt: new Date().toISOString(),
      statusCommentId,
    };
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`job ${jobId} did not finish within 10 s`)), 10_000);
      ended.set(jobId, (err) => {
        clearTimeout(timer);
        ended.delete(jobId);
        if (err) reject(new Error(`job ${jobId} failed: ${err.message}`));
        else resolve();
      });
    });
    done.catch(() => undefined); // awaited below; no unhandled rejection if the enqueue throws first
    github.take();
    const t0 = performance.now();
    await jobs.enqueue(jobId, data);
    await done;
    const started = runnerAt.get(jobId);
    const job = await jobs.queue.getJob(jobId);
    if (started === undefined || !job?.processedOn) throw new Error(`job ${jobId} finished without running`);
    await sleep(25 + Math.random() * 50);
    return {
      bullMs: job.processedOn - job.timestamp,
      runnerMs: started.at - t0,
      githubMs: started.githubMs,
      githubCalls: started.githubCalls,
    };
  };

  for (let i = 0; i < 5; i++) await one();
  const samples: Sample[] = [];
  for (let i = 0; i < n; i++) samples.push(await one());
  const calls = samples.reduce((a, s) => a + s.githubCalls, 0) / Math.max(1, n);
  console.log(
    `\n${n} jobs added one at a time to an idle worker (WORKER_CONCURRENCY ${env.workerConcurrency}), ` +
      `instant job runner; ${calls.toFixed(0)} REST calls to the stand-in before the runner starts:`,
  );
  printLatencyRow(
    'enqueue → worker takes the job',
    latencyStats(samples.map((s) => s.bullMs)),
    BUDGET_PICKUP,
  );
  printLatencyRow('enqueue → job runner starts', latencyStats(samples.map((s) => s.runnerMs)), BUDGET_PICKUP);
  printLatencyRow('  of which waiting on GitHub', latencyStats(samples.map((s) => s.githubMs)), '');
}

/** What the instant runner reports: nothing changed, no steps. */
function instantOutcome(jobId: string): Outcome {
  return {
    kind: 'no_change',
    summary: {
      jobId,
      exitReason: null,
      steps: 0,
      maxSteps: 0,
      promptTokens: 0,
      completionTokens: 0,
      elapsedMs: 0,
      finalMessage: null,
    },
  };
}

/** Resolve when `redis` is ready; reject after `ms`. */
async function waitReady(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  try {
    await once(redis, 'ready', { signal: ac.signal });
  } catch {
    throw new Error(`Redis connection not ready within ${ms} ms`);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
