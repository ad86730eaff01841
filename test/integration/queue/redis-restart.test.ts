import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadEnv, type AppEnv } from '../../../src/config/env.js';
import { createInstallationClients } from '../../../src/github-app/github-client.js';
import { startServer, type RunningServer } from '../../../src/github-app/server.js';
import { STATUS_MARKER, statusCommentReporter } from '../../../src/github-app/status-comment.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { closeRedis, createRedisConnection } from '../../../src/queue/redis-connection.js';
import { createJobWorker, type JobWorker } from '../../../src/queue/worker.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../helpers/scripted-model-server.js';
import { closedPort, waitFor } from './redis-helper.js';

/**
 * Jobs survive a restart of Redis (with its append-only file on, as in production), and `serve` and
 * the worker reconnect by themselves. Runs its own redis-server on a free port, so the shared test
 * Redis is never restarted.
 */
const OWNER = 'octo-org';
const REPO = 'calc';
const logger = createSilentLogger();

let dir: string;
let port: number;
let redisProcess: ChildProcess | null = null;
let ghe: GheStandin;
let model: ScriptedModelServer;
let env: AppEnv;
let server: RunningServer | null = null;
let worker: JobWorker | null = null;
const connections: Redis[] = [];

async function startRedis(): Promise<void> {
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
  child.on('error', () => undefined);
  redisProcess = child;
  const probe = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  probe.on('error', () => undefined);
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null)
          throw new Error('redis-server exited; is it installed? (apt-get install redis-server)');
        try {
          if (probe.status !== 'ready') await probe.connect();
          return (await probe.ping()) === 'PONG';
        } catch {
          probe.disconnect();
          return false;
        }
      },
      'private redis-server',
      10_000,
    );
  } finally {
    probe.disconnect();
  }
}

async function stopRedis(): Promise<void> {
  const child = redisProcess;
  if (!child || child.exitCode !== null) return;
  // SIGTERM: Redis flushes the append-only file and exits.
  child.kill('SIGTERM');
  await waitFor(() => child.exitCode !== null || child.signalCode !== null, 'redis-server exit', 10_000);
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'frognano-redis-'));
  port = await closedPort();
  await startRedis();
  ghe = await startGheStandin();
  model = await startScriptedModelServer({ script: [] });
  await ghe.createRepo(OWNER, REPO);
  ghe.setPermission(OWNER, REPO, 'alice', 'write');
  env = loadEnv({
    APP_ID: String(ghe.appId),
    PRIVATE_KEY: ghe.privateKey,
    WEBHOOK_SECRET: ghe.webhookSecret,
    GHE_HOST: ghe.host,
    GHE_PROTOCOL: 'http',
    REDIS_URL: `redis://127.0.0.1:${port}`,
    MODEL_URL: model.url,
    LOG_LEVEL: 'silent',
  });
});

afterAll(async () => {
  await worker?.close();
  for (const c of connections) await closeRedis(c);
  await server?.close();
  await stopRedis();
  await ghe?.close();
  await model?.close();
  await rm(dir, { recursive: true, force: true });
});

async function label(): Promise<{ n: number; status: number }> {
  const n = ghe.createIssue(OWNER, REPO, { title: 'fix it', user: 'alice' }).number;
  const res = await ghe.sendWebhook(
    server!.webhookUrl,
    'issues',
    ghe.labelIssue({ owner: OWNER, repo: REPO, issueNumber: n, sender: 'alice', label: 'frognano' }),
  );
  // A recorded delivery's GitHub side (status comment, enqueue) runs in the intake step.
  if (res.status === 200) await server!.intake.idle();
  return { n, status: res.status };
}

function finalText(n: number): string {
  return ghe.state.comments(OWNER, REPO, n).find((c) => c.body?.includes(STATUS_MARKER))?.body ?? '';
}

async function restartRedis(): Promise<void> {
  await stopRedis();
  await startRedis();
  await waitFor(
    async () => (await fetch(`${server!.url}/readyz`)).status === 200,
    'serve ready again',
    15_000,
  );
}

it('keeps queued jobs across Redis restarts; serve and worker reconnect', async () => {
  server = await startServer({ env, logger, port: 0, host: '127.0.0.1' });
  const a = await label();
  expect(a.status).toBe(200);

  await restartRedis();
  const b = await label();
  expect(b.status).toBe(200);
  expect(await server.jobs.queue.getJobCounts('waiting')).toEqual({ waiting: 2 });

  const redis = createRedisConnection(env.redisUrl, 'worker', { logger });
  const subscriber = createRedisConnection(env.redisUrl, 'subscriber', { logger });
  connections.push(redis, subscriber);
  const clients = createInstallationClients({ ...env, logger, throttle: false });
  const ran: number[] = [];
  worker = await createJobWorker({
    redis,
    subscriber,
    prefix: env.queuePrefix,
    queueName: env.queueName,
    concurrency: 2,
    lockDurationMs: 5000,
    stalledIntervalMs: 1000,
    maxStalledCount: 1,
    cancelPollMs: 500,
    shutdownTimeoutMs: 2000,
    getClient: (id) => clients.get(id),
    reporterFor: statusCommentReporter(),
    run: async (data, ctx) => {
      ran.push(data.issueNumber);
      return {
        kind: 'no_change',
        summary: {
          jobId: ctx.jobId,
          exitReason: 'agent',
          steps: 1,
          maxSteps: 10,
          promptTokens: 1,
          completionTokens: 1,
          elapsedMs: 1,
          finalMessage: null,
        },
      };
    },
    logger,
  });
  await waitFor(
    () => finalText(a.n).includes('finished without') && finalText(b.n).includes('finished without'),
    'both jobs done',
    15_000,
  );

  // Restart Redis under a running (idle) worker: it reconnects and takes the next job.
  await restartRedis();
  const c = await label();
  expect(c.status).toBe(200);
  await waitFor(() => finalText(c.n).includes('finished without'), 'job after restart done', 20_000);
  expect(ran.sort((x, y) => x - y)).toEqual([a.n, b.n, c.n].sort((x, y) => x - y));
});
