import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verify } from '@octokit/webhooks-methods';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { ApplicationFunction, Probot } from 'probot';
import { AppError } from '../app-error.js';
import type { Redis } from 'ioredis';
import type { AppEnv } from '../config/env.js';
import type { PolicyStore } from '../config/policy-store.js';
import type { Logger } from '../observability/logger.js';
import { createServeMetrics, type ServeMetrics } from '../observability/metrics.js';
import { createJobQueue, type FrognanoQueue, type JobQueue } from '../queue/job-queue.js';
import { closeRedis, createRedisConnection } from '../queue/redis-connection.js';
import { createFrognanoApp } from './app.js';
import { createProbotApp } from './github-client.js';
import { checkReadiness, resolveBotLogin } from './readiness.js';
import { parseWebhookBody } from './webhook-body.js';
import { createWebhookIntake, type WebhookIntake } from './webhook-intake.js';
import type { TriggerCheck } from './trigger-rules.js';

/** Options of {@link startServer}. */
export interface StartServerOptions {
  env: AppEnv;
  logger: Logger;
  /** Metrics on their own registry; default: new ones. */
  metrics?: ServeMetrics;
  /** The admin policy store: its last reload error shows in `/readyz`. */
  policyStore?: PolicyStore;
  /** Admin policy check of a trigger (allowed repositories and teams). */
  checkTriggerAllowed?: TriggerCheck;
  /** Trigger label per repository (`owner/name`); default: `env.triggerLabel` everywhere. */
  triggerLabel?: (repo: string) => string;
  /** BullMQ attempts per repository (admin policy); default: `env.jobAttempts`. */
  attemptsFor?: (repo: string) => number;
  /** Admin policy `maxFollowUps` per repository; default: the built-in 3. */
  maxFollowUpsFor?: (repo: string) => number;
  /** Builds the `/admin` router (express), given the queue and the app; absent: no `/admin`. */
  admin?: (deps: { queue: FrognanoQueue; probot: Probot }) => RequestHandler;
  /** More Probot handlers (pull request reviews → human review check run). */
  extraHandlers?: readonly ApplicationFunction[];
  /** Port to listen on, overriding `env.port` (0: any free port, for tests). */
  port?: number;
  /** Bind address overriding `env.host`. */
  host?: string;
  /** How long start-up waits for Redis before listening anyway (webhooks get 503 meanwhile), ms. Default 5000. */
  redisReadyTimeoutMs?: number;
}

/** A running `serve`. */
export interface RunningServer {
  /** `http://HOST:PORT` as bound (HOST `127.0.0.1` when bound to all interfaces). */
  url: string;
  port: number;
  /** URL of the webhook route. */
  webhookUrl: string;
  jobs: JobQueue;
  /** The webhook intake: deliveries recorded, their GitHub side queued and retried. */
  intake: WebhookIntake;
  metrics: ServeMetrics;
  probot: Probot;
  /** The producer Redis connection (owned by the server; closed by {@link close}). */
  redis: Redis;
  /**
   * Drain and stop: `/readyz` turns 503, no new connections are accepted, requests in flight
   * finish (bounded by SHUTDOWN_TIMEOUT_MS, then connections are cut), then the queue and Redis
   * connection close. Idempotent.
   */
  close(): Promise<void>;
}

/** Largest webhook body accepted (GitHub caps payloads at 25 MB). */
const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;

/**
 * Start `frognano-bot serve`: Probot (v14, `createNodeMiddleware`) on the webhook route behind a
 * Node HTTP server (express for routing), plus:
 *
 * - `GET /healthz` — 200 while the process runs (liveness).
 * - `GET /readyz` — 200 when Redis answers PING and the model server answers `GET /v1/models`;
 *   503 otherwise and while draining. JSON body with each check (and the policy file's last reload
 *   error, reported without failing readiness: the last good policy stays in force).
 * - `GET /metrics` — Prometheus text format from the metrics registry.
 * - `/admin/*` — the admin router, when given.
 * - `POST <WEBHOOK_PATH>` — the signature (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body) is
 *   checked before anything else: missing or wrong → 401 and nothing is read from the payload. The
 *   body (JSON or form-encoded) is checked (400/415 with the reason), recorded in Redis and answered
 *   200 at once; the webhook intake (webhook-intake.ts) then runs the Probot handlers, retrying
 *   while GitHub fails. Redis unreachable → 503.
 *
 * Listening does not wait for GitHub: the app's login is looked up in the background.
 *
 * @throws when the port cannot be bound.
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { env, logger } = options;
  const metrics = options.metrics ?? createServeMetrics();
  const redis = createRedisConnection(env.redisUrl, 'producer', { logger, name: 'frognano-serve' });
  await waitForReady(redis, options.redisReadyTimeoutMs ?? 5_000);
  if (redis.status !== 'ready') logger.warn('Redis is not reachable yet; webhooks get 503 until it is');

  const jobs = createJobQueue({
    redis,
    prefix: env.queuePrefix,
    queueName: env.queueName,
    attempts: env.jobAttempts,
    backoffMs: env.jobBackoffMs,
    logger,
  });
  metrics.setQueueDepthSource(() => jobs.counts());

  const probot = createProbotApp({
    appId: env.appId,
    privateKey: env.privateKey,
    webhookSecret: env.webhookSecret,
    webhookPath: env.webhookPath,
    githubApiUrl: env.githubApiUrl,
    logger,
    throttle: false,
  });
  // Listen first: the app lookup (`GET /app`) needs GitHub, which may be slow or down; the intake
  // step looks it up again before it acts.
  const botLogin = resolveBotLogin(probot, logger);
  void botLogin.refresh(5_000);

  const appFn = createFrognanoApp(
    {
      jobs,
      triggerLabel: options.triggerLabel ?? (() => env.triggerLabel),
      botLogin: () => botLogin.get(),
      checkTriggerAllowed: options.checkTriggerAllowed,
      attemptsFor: options.attemptsFor,
      maxFollowUpsFor: options.maxFollowUpsFor,
      metrics,
      logger,
    },
    options.extraHandlers,
  );
  await probot.load(appFn);
  const intake = createWebhookIntake({
    redis,
    prefix: env.queuePrefix,
    queueName: env.queueName,
    attempts: env.intakeAttempts,
    backoffMs: env.intakeBackoffMs,
    logger,
    process: async (delivery) => {
      if (botLogin.get() === undefined) await botLogin.refresh(5_000);
      if (botLogin.get() === undefined) {
        // Without it the app's own label events cannot be told apart: wait for GitHub.
        throw new AppError('GITHUB_API_ERROR', "the app's login could not be looked up (GET /app)", {
          retryable: true,
        });
      }
      await probot.receive({ id: delivery.id, name: delivery.name, payload: delivery.payload } as never);
    },
  });
  const intakeRedis = createRedisConnection(env.redisUrl, 'worker', {
    logger,
    name: 'frognano-serve-intake',
  });
  intake.start(intakeRedis);

  let draining = false;
  const app = express();
  app.disable('x-powered-by');
  app.use((_req, res, next) => {
    if (draining) res.setHeader('Connection', 'close');
    next();
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const report = await checkReadiness({
      redis,
      modelUrl: env.modelUrl,
      modelApiKey: env.modelApiKey,
      policyStore: options.policyStore,
      draining,
      modelRequired: false,
    });
    res.status(report.ready ? 200 : 503).json(report);
  });
  app.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
  if (options.admin) app.use('/admin', options.admin({ queue: jobs.queue, probot }));
  app.post(
    env.webhookPath,
    express.raw({ type: () => true, limit: MAX_WEBHOOK_BYTES }),
    verifySignature(env.webhookSecret, logger),
    recordDelivery(intake, logger),
  );
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: unknown }).status;
    const code = typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
    if (code >= 500) logger.error({ err }, 'request failed');
    res.status(code).json({ error: code === 413 ? 'payload too large' : 'request failed' });
  });

  const server: Server = createServer(app);
  const port = options.port ?? env.port;
  const host = options.host ?? env.host;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${bound}`;
  logger.info({ url, webhookPath: env.webhookPath, githubApiUrl: env.githubApiUrl }, 'serve listening');

  let closing: Promise<void> | null = null;
  return {
    url,
    port: bound,
    webhookUrl: `${url}${env.webhookPath}`,
    jobs,
    intake,
    metrics,
    probot,
    redis,
    close() {
      closing ??= (async () => {
        draining = true;
        logger.info('draining: no new connections; waiting for requests in flight');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            logger.warn('drain timeout: closing remaining connections');
            server.closeAllConnections();
          }, env.shutdownTimeoutMs);
          timer.unref();
          server.close(() => {
            clearTimeout(timer);
            resolve();
          });
          server.closeIdleConnections();
        });
        await intake.close();
        await jobs.close().catch((err: unknown) => logger.warn({ err }, 'queue close failed'));
        await closeRedis(intakeRedis);
        await closeRedis(redis);
        logger.info('serve stopped');
      })();
      return closing;
    },
  };
}

/**
 * Express middleware: 401 unless `X-Hub-Signature-256` is the HMAC-SHA256 of the raw body with the
 * webhook secret (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
 * On success the raw body is handed on as a string, which Probot's middleware verifies again and
 * parses.
 */
function verifySignature(secret: string, logger: Logger): RequestHandler {
  return (req, res, next) => {
    const body = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    const signature = req.headers['x-hub-signature-256'];
    const deliveryId = req.headers['x-github-delivery'];
    const reject = (why: string) => {
      logger.warn({ deliveryId, why }, 'webhook refused');
      res.status(401).json({ error: `signature check failed: ${why}` });
    };
    if (typeof signature !== 'string' || signature === '') return reject('no X-Hub-Signature-256 header');
    verify(secret, body, signature).then(
      (ok) => {
        if (!ok) return reject('X-Hub-Signature-256 does not match the body');
        req.body = body;
        next();
      },
      () => reject('malformed X-Hub-Signature-256 header'),
    );
  };
}

/**
 * Express handler: parse the verified body (JSON or form-encoded; 400/415 with the reason), record
 * the delivery in Redis (503 when Redis is unreachable: GitHub shows it failed and it can be
 * redelivered) and answer 200 at once. No GitHub call on this path.
 */
function recordDelivery(intake: WebhookIntake, logger: Logger): RequestHandler {
  return (req, res) => {
    const deliveryId = req.headers['x-github-delivery'];
    const event = req.headers['x-github-event'];
    if (typeof deliveryId !== 'string' || deliveryId === '' || typeof event !== 'string' || event === '') {
      res.status(400).json({ error: 'X-GitHub-Delivery and X-GitHub-Event headers are required' });
      return;
    }
    const parsed = parseWebhookBody(req.headers['content-type'], String(req.body), event);
    if (!parsed.ok) {
      logger.warn({ deliveryId, event, why: parsed.error }, 'webhook refused');
      res.status(parsed.status).json({ error: parsed.error });
      return;
    }
    intake.record({ id: deliveryId, name: event, payload: parsed.payload }).then(
      () => {
        res.status(200).json({ status: 'recorded', delivery: deliveryId });
      },
      (err: unknown) => {
        logger.error(
          { deliveryId, event, err: { message: (err as Error).message } },
          'could not record the delivery',
        );
        res
          .status(503)
          .json({ error: 'the delivery could not be recorded (Redis unavailable); redeliver it later' });
      },
    );
  };
}

/** Resolve when `redis` is ready or after `timeoutMs`, whichever comes first. Never throws. */
async function waitForReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    timer.unref();
    function done() {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
    redis.once('ready', done);
  });
}
