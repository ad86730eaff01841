import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { AppError } from '../../app-error.js';
import type { AppEnv } from '../../config/env.js';
import { resolveEffectivePolicy } from '../../config/policy.js';
import { createPolicyStore, createStaticPolicyStore, type PolicyStore } from '../../config/policy-store.js';
import {
  createInstallationClients,
  createProbotApp,
  type InstallationOctokit,
} from '../../github-app/github-client.js';
import { checkModel, checkReadiness, resolveBotLogin } from '../../github-app/readiness.js';
import { statusCommentReporter } from '../../github-app/status-comment.js';
import type { ChatModel } from '../../llm/chat-model.js';
import type { Logger } from '../../observability/logger.js';
import { createTrajectoryStore } from '../../observability/trajectory-store.js';
import { createWorkerMetrics, type WorkerMetrics } from '../../observability/metrics.js';
import { createRecordServices, type RecordServices } from '../../observability/record-services.js';
import { sweepRecords } from '../../observability/record-retention.js';
import { createRunRecorder, type RunCollector } from '../../pipeline/run-recorder.js';
import type { JobRequest } from '../../pipeline/job-request.js';
import type { ModelContext, RunJobDeps } from '../../pipeline/run-job.js';
import { createConcurrencyLimiter } from '../../queue/concurrency-limiter.js';
import { closeRedis, createRedisConnection } from '../../queue/redis-connection.js';
import {
  createJobWorker,
  type FollowUpRunner,
  type JobRunContext,
  type JobRunner,
  type JobWorker,
} from '../../queue/worker.js';
import type { SandboxFactory } from '../../sandbox/sandbox.js';
import { runService } from './run-service.js';

const USAGE = `usage: frognano-bot worker

Start a queue worker: takes jobs from Redis (REDIS_URL), runs the pipeline (clone, sandbox, agent,
tests, draft pull request) with WORKER_CONCURRENCY jobs at once, and serves /healthz, /readyz and
/metrics on WORKER_HOST:WORKER_PORT (default 127.0.0.1:3001). Configuration comes from environment
variables (see the README).
SIGTERM or SIGINT stops taking jobs, waits up to SHUTDOWN_TIMEOUT_MS for running ones, then hands
the rest back to the queue, and exits 0.
`;

/** Time between two sweeps of stale Kubernetes sandbox pods and NetworkPolicies, in milliseconds. */
const SANDBOX_JANITOR_INTERVAL_MS = 5 * 60 * 1000;

/** Time between two sweeps of the trajectory store, in milliseconds (6 h). */
const TRAJECTORY_SWEEP_INTERVAL_MS = 6 * 3600 * 1000;

/** Time between two retention sweeps of the run record store, in milliseconds (24 h). */
const RECORD_SWEEP_INTERVAL_MS = 24 * 3600 * 1000;

/** Options of {@link startWorker}. Everything but `env` and `logger` has a production default. */
export interface StartWorkerOptions {
  env: AppEnv;
  logger: Logger;
  /** Replace the whole pipeline (queue tests). Default: `runJob` with dependencies from `env`. */
  run?: JobRunner<InstallationOctokit>;
  /**
   * Runs follow-up rounds (reviewer feedback on the app's pull requests, issue 11). Default: the
   * queue's refusal ("follow-up runs are not available yet") until the pipeline has a follow-up run.
   */
  runFollowUp?: FollowUpRunner<InstallationOctokit>;
  /** Sandbox driver; default from SANDBOX_DRIVER (local: bubblewrap; kubernetes: pods). */
  sandboxFactory?: SandboxFactory;
  /** Model client; default the SGLang client for MODEL_URL / MODEL_NAME. */
  createModel?: (context: ModelContext) => ChatModel;
  /** Admin policy store; default: from POLICY_FILE (watched), else built-in defaults. */
  policyStore?: PolicyStore;
  /**
   * Octokit request throttling (writes ≥ 1 s apart, content creation ≥ 3 s apart, against GitHub's
   * secondary rate limits). Default true; tests turn it off for speed.
   */
  throttle?: boolean;
  /** Port of `/healthz`, `/readyz` and `/metrics` overriding WORKER_PORT (0: any free port; null: none). */
  port?: number | null;
  /** Bind address of that server overriding WORKER_HOST. */
  host?: string;
  /** The worker's own metrics registry; default {@link createWorkerMetrics}. */
  metrics?: WorkerMetrics;
  /** Minimum time between "running (step n)" edits of the status comment, ms. Default 10 000. */
  progressIntervalMs?: number;
}

/** A running worker process. */
export interface RunningWorker {
  jobWorker: JobWorker;
  metrics: WorkerMetrics;
  /** `http://HOST:PORT` of the health and metrics server as bound (`127.0.0.1` for all interfaces), or null. */
  url: string | null;
  /**
   * Graceful stop: no new jobs; running ones get SHUTDOWN_TIMEOUT_MS to finish, then are cancelled
   * and go back to the queue; then connections and the HTTP server close. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * `frognano-bot worker` as a function (the e2e test calls it in-process).
 *
 * Per job the pipeline gets: an installation-authenticated client (token in this process only),
 * the repository's effective policy (admin policy → org and repo `.github/frognano.yml`, clamped;
 * invalid config → refused with the messages; a disabled repository → refused), the sandbox
 * factory, the model client, and the app's commit identity `<slug>[bot]`.
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const { env, logger } = options;
  const metrics = options.metrics ?? createWorkerMetrics({ sandboxDriver: env.sandboxDriver });
  const policyStore =
    options.policyStore ??
    (env.policyFile ? createPolicyStore({ path: env.policyFile, logger }) : createStaticPolicyStore());
  // What start-up waits for right now (`/readyz` says it); null once started.
  let startingStep: string | null = 'start-up';
  let jobWorker: JobWorker | undefined;
  let closing = false;
  const port = options.port === undefined ? env.workerPort : options.port;
  const host = options.host ?? env.workerHost;
  let http: Server | null = null;
  let url: string | null = null;
  if (port !== null && !(options.port === undefined && env.workerPort === 0)) {
    // Opened first, before Redis or GitHub answer (issue 12 item 7).
    http = createServer((req, res) => {
      void (async () => {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method === 'GET' && path === '/healthz') {
          res.writeHead(closing ? 503 : 200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              status: closing ? 'stopping' : 'ok',
              ...(startingStep ? { starting: `waiting for ${startingStep}` } : {}),
              activeJobs: jobWorker?.activeJobIds().length ?? 0,
            }),
          );
        } else if (req.method === 'GET' && path === '/readyz' && startingStep) {
          // Not ready yet, and saying for what: a liveness probe on /healthz keeps the process alive.
          res
            .writeHead(503, { 'content-type': 'application/json' })
            .end(JSON.stringify({ ready: false, starting: true, waitingFor: startingStep }));
        } else if (req.method === 'GET' && path === '/readyz') {
          const report = await checkReadiness({
            redis,
            modelUrl: env.modelUrl,
            modelApiKey: env.modelApiKey,
            policyStore,
            draining: closing,
          });
          res
            .writeHead(report.ready ? 200 : 503, { 'content-type': 'application/json' })
            .end(JSON.stringify(report));
        } else if (req.method === 'GET' && path === '/metrics') {
          const text = await metrics.registry.metrics();
          res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
        } else {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
        }
      })().catch((err: unknown) => {
        logger.error({ err }, 'worker HTTP request failed');
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    const server = http;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    url = httpUrl(host, (server.address() as AddressInfo).port);
  }
  const closeHttp = async (): Promise<void> => {
    if (!http) return;
    const server = http;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  const redis = createRedisConnection(env.redisUrl, 'worker', { logger, name: 'frognano-worker' });
  const subscriber = createRedisConnection(env.redisUrl, 'subscriber', {
    logger,
    name: 'frognano-worker-cancel',
  });
  const connections: Redis[] = [redis, subscriber];
  // Run records: written at the end of every job, pending ones retried while the worker lives.
  const records = createRecordServices(env, redis, logger);
  const clients = createInstallationClients({ ...env, logger, throttle: options.throttle });
  const probot = createProbotApp({ ...env, logger, throttle: false });
  const botLogin = resolveBotLogin(probot, logger);
  startingStep = "the app's login from GitHub (GET /app)";
  await botLogin.refresh(5_000);
  startingStep = 'Redis (the job queue)';

  const effective = (repo: string) => resolveEffectivePolicy({ policy: policyStore.current(), repo });
  const limiter = createConcurrencyLimiter({
    redis,
    keyPrefix: `${env.queuePrefix}:{concurrency}`,
    globalLimit: env.maxConcurrentJobs,
    leaseMs: 60_000,
  });

  // Things started alongside the sandbox driver (the Kubernetes janitor) that close() must stop.
  const stoppers: Array<() => Promise<void>> = [];
  let sandboxFactory: SandboxFactory | undefined;
  try {
    sandboxFactory = options.sandboxFactory ?? (await createSandboxFactory(env, logger, redis, stoppers));
    const pipeline = createPipelineRunner({
      env,
      logger,
      options,
      policyStore,
      botLogin: () => botLogin.get(),
      records,
      sandboxFactory,
    });
    const run = options.run ?? pipeline.run;
    jobWorker = await createJobWorker({
      redis,
      subscriber,
      prefix: env.queuePrefix,
      queueName: env.queueName,
      concurrency: env.workerConcurrency,
      lockDurationMs: env.jobLockDurationMs,
      stalledIntervalMs: env.stalledIntervalMs,
      maxStalledCount: env.maxStalledCount,
      cancelPollMs: env.cancelPollMs,
      shutdownTimeoutMs: env.shutdownTimeoutMs,
      getClient: (id) => clients.get(id),
      run,
      runFollowUp: options.runFollowUp ?? pipeline.runFollowUp,
      reporterFor: statusCommentReporter(() => botLogin.get()),
      concurrencyLimit: { limiter, perRepoLimit: (repo) => effective(repo).concurrencyPerRepo },
      progressIntervalMs: options.progressIntervalMs,
      logger,
      metrics,
    });
  } catch (err) {
    for (const stop of stoppers) await stop();
    await records.close();
    for (const c of connections) await closeRedis(c);
    policyStore.close();
    await closeHttp();
    throw err;
  }
  const started = jobWorker;
  void removeKilledJobsFolders(env, redis, sandboxFactory, logger);
  // Queue depth is reported by `serve`; the worker reports its jobs, sandboxes and the model server.
  metrics.setScrapeSources({
    activeJobs: () => started.activeJobIds().length,
    modelServerUp: async () => (await checkModel(env.modelUrl, env.modelApiKey)).ok,
  });

  // Trajectories and test logs older than the retention are removed now and every few hours.
  const trajectories = createTrajectoryStore({
    dir: env.trajectoryDir,
    retentionDays: env.trajectoryRetentionDays,
    logger,
  });
  const sweepTrajectories = (): void => {
    trajectories
      .sweep()
      .then((removed) => {
        if (removed > 0) logger.info({ removed }, 'removed job folders older than the trajectory retention');
      })
      .catch((err: unknown) => logger.warn({ err }, 'trajectory sweep failed'));
  };
  sweepTrajectories();
  const sweepRunRecords = (): void => {
    void sweepRecords({
      store: records.store,
      lock: records.lock,
      retentionDays: env.record.retentionDays,
      logger,
    });
  };
  sweepRunRecords();
  const recordSweepTimer = setInterval(sweepRunRecords, RECORD_SWEEP_INTERVAL_MS);
  recordSweepTimer.unref();
  const sweepTimer = setInterval(sweepTrajectories, TRAJECTORY_SWEEP_INTERVAL_MS);
  sweepTimer.unref();

  startingStep = null;
  logger.info(
    {
      concurrency: env.workerConcurrency,
      url,
      listen: http ? `${host}:${(http.address() as AddressInfo).port}` : null,
      sandboxDriver: env.sandboxDriver,
    },
    'worker started',
  );

  let closed: Promise<void> | null = null;
  return {
    jobWorker: started,
    metrics,
    url,
    close() {
      closed ??= (async () => {
        closing = true;
        clearInterval(sweepTimer);
        clearInterval(recordSweepTimer);
        await started.close();
        for (const stop of stoppers) await stop();
        await records.close();
        for (const c of connections) await closeRedis(c);
        policyStore.close();
        await closeHttp();
        logger.info('worker stopped');
      })();
      return closed;
    },
  };
}

/** The URL a local client reaches a server bound to `host:port` at (all interfaces: loopback). */
function httpUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/** The modules a job needs and an idle worker does not, imported once on first use. */
let pipelineModules:
  | Promise<
      Pick<typeof import('../../pipeline/run-job.js'), 'runJob'> &
        Pick<typeof import('../../github-app/pull-request.js'), 'publishPullRequest'> &
        Pick<typeof import('../../llm/sglang-client.js'), 'createSglangClient'> &
        Pick<typeof import('../../pipeline/publish-change.js'), 'noreplyEmail'> &
        Pick<typeof import('../../pipeline/sources/repository-policy.js'), 'createRepositoryPolicyResolver'> &
        Pick<typeof import('../../pipeline/sources/github-issue-source.js'), 'tokenFromOctokit'> &
        Pick<typeof import('../../pipeline/run-follow-up.js'), 'runFollowUp'> &
        Pick<typeof import('../../pipeline/publishers/follow-up-publisher.js'), 'createFollowUpPublisher'> &
        Pick<typeof import('../../github-app/follow-up-pull-request.js'), 'createFollowUpPullRequest'>
    >
  | undefined;

function loadPipeline(): NonNullable<typeof pipelineModules> {
  pipelineModules ??= Promise.all([
    import('../../pipeline/run-job.js'),
    import('../../github-app/pull-request.js'),
    import('../../llm/sglang-client.js'),
    import('../../pipeline/publish-change.js'),
    import('../../pipeline/sources/repository-policy.js'),
    import('../../pipeline/run-follow-up.js'),
    import('../../pipeline/publishers/follow-up-publisher.js'),
    import('../../github-app/follow-up-pull-request.js'),
    import('../../pipeline/sources/github-issue-source.js'),
  ]).then(([job, pr, llm, publish, policy, followUp, followUpPublisher, followUpPr, issueSource]) => ({
    runJob: job.runJob,
    publishPullRequest: pr.publishPullRequest,
    createSglangClient: llm.createSglangClient,
    noreplyEmail: publish.noreplyEmail,
    createRepositoryPolicyResolver: policy.createRepositoryPolicyResolver,
    runFollowUp: followUp.runFollowUp,
    createFollowUpPublisher: followUpPublisher.createFollowUpPublisher,
    createFollowUpPullRequest: followUpPr.createFollowUpPullRequest,
    tokenFromOctokit: issueSource.tokenFromOctokit,
  }));
  return pipelineModules;
}

/**
 * At start: the clones and sandbox folders of jobs that are not active (a worker killed mid-job
 * leaves them). Active jobs keep theirs: a re-run of a job removes its own leftovers first.
 */
async function removeKilledJobsFolders(
  env: AppEnv,
  redis: Redis,
  sandboxFactory: SandboxFactory,
  logger: Logger,
): Promise<void> {
  const { Queue } = await import('bullmq');
  const queue = new Queue(env.queueName, { connection: redis, prefix: env.queuePrefix });
  try {
    const active = (await queue.getJobs(['active'])).flatMap((j) => (j.id ? [j.id] : []));
    // Imported here, not at the top: the pipeline is loaded with the first job (loadPipeline).
    const { sweepLeftoverFolders } = await import('../../pipeline/run-job.js');
    const removed = await sweepLeftoverFolders({
      workDir: env.workDir,
      sandboxFactory,
      activeJobIds: active,
    });
    if (removed.length > 0) logger.info({ removed }, 'removed the folders of killed jobs');
  } catch (err) {
    logger.warn({ err }, 'could not look for the folders of killed jobs');
  } finally {
    await queue.close().catch(() => undefined);
  }
}

/**
 * The production job runner: the pipeline's `runJob` with dependencies built from the environment.
 * Dependencies that hold no per-job state (sandbox factory, model client factory) are made once.
 */
function createPipelineRunner(input: {
  env: AppEnv;
  logger: Logger;
  options: StartWorkerOptions;
  policyStore: PolicyStore;
  botLogin: () => string | undefined;
  records: RecordServices;
  sandboxFactory: SandboxFactory;
}): { run: JobRunner<InstallationOctokit>; runFollowUp: FollowUpRunner<InstallationOctokit> } {
  const { env, logger, options, policyStore, sandboxFactory } = input;
  const recorder = createRunRecorder({
    writer: input.records.writer,
    trajectoryDir: env.trajectoryDir,
    model: { name: env.modelName, url: env.modelUrl, apiKey: env.modelApiKey },
    logger,
  });
  const host = env.gheHost ?? 'github.com';

  /** The dependencies both runners share, for one job. */
  const depsFor = async (
    data: JobRequest,
    ctx: JobRunContext<InstallationOctokit>,
  ): Promise<{
    deps: Omit<RunJobDeps, 'publishPullRequest'>;
    run: RunCollector;
    login: string;
    modules: Awaited<ReturnType<typeof loadPipeline>>;
  }> => {
    // The pipeline (agent loop, model client, git, pull request) is loaded with the first job, so
    // an idle worker does not hold it (issue 12 item 13: memory high-water mark).
    const modules = await loadPipeline();
    const createModel =
      options.createModel ??
      ((context: ModelContext) =>
        modules.createSglangClient({
          baseURL: env.modelUrl,
          model: env.modelName,
          apiKey: env.modelApiKey ?? undefined,
          maxCompletionTokens: context.maxCompletionTokens,
          logger,
        }));
    const login = input.botLogin() ?? 'frognano[bot]';
    const run = recorder.begin(data, ctx.jobId, ctx.client);
    const deps = {
      octokit: ctx.client,
      gitBaseUrl: env.githubWebUrl,
      sandboxFactory,
      createModel,
      modelUrl: env.modelUrl,
      egressProbeTargets: env.egressProbeTargets,
      workDir: env.workDir,
      trajectoryDir: env.trajectoryDir,
      resolvePolicy: modules.createRepositoryPolicyResolver(ctx.client, () => policyStore.current()),
      appIdentity: { name: login, email: modules.noreplyEmail({ login }, host) },
      onFacts: (facts: Parameters<RunCollector['onFacts']>[0]) => run.onFacts(facts),
    };
    return { deps, run, login, modules };
  };
  const runContext = (ctx: JobRunContext<InstallationOctokit>) => ({
    signal: ctx.signal,
    logger: ctx.logger,
    progress: ctx.progress,
    jobId: ctx.jobId,
  });

  const runFirst: JobRunner<InstallationOctokit> = async (data, ctx) => {
    const { deps, run, modules } = await depsFor(data, ctx);
    const outcome = await modules.runJob(
      data,
      { ...deps, publishPullRequest: run.wrapPublish(modules.publishPullRequest) },
      runContext(ctx),
    );
    // The outcome stands whatever happens to the record; the status comment says where it is.
    return { ...outcome, record: await run.finish(outcome) };
  };
  const runFollowUp: FollowUpRunner<InstallationOctokit> = async (request, ctx) => {
    const { deps, run, login, modules } = await depsFor(request, ctx);
    const getInstallationToken = () => modules.tokenFromOctokit(ctx.client);
    const publisher = modules.createFollowUpPublisher({
      ...deps,
      getInstallationToken,
      followUpPullRequest: modules.createFollowUpPullRequest({ appId: env.appId }),
    });
    const outcome = await modules.runFollowUp(
      request,
      { ...deps, getInstallationToken, appLogin: login, publisher },
      runContext(ctx),
    );
    return { ...outcome, record: await run.finish(outcome) };
  };
  return { run: runFirst, runFollowUp };
}

/**
 * The sandbox factory of SANDBOX_DRIVER. The Kubernetes client is imported only for that driver:
 * loading it takes seconds. With Kubernetes, the janitor also starts: now and every few minutes it
 * deletes sandbox pods and NetworkPolicies whose job is no longer queued or running (a worker that
 * died mid-job leaves them behind) or whose deadline passed. Its stop goes into `stoppers`.
 */
async function createSandboxFactory(
  env: AppEnv,
  logger: Logger,
  redis: Redis,
  stoppers: Array<() => Promise<void>>,
): Promise<SandboxFactory> {
  if (env.sandboxDriver === 'local') {
    const { createLocalSandboxFactory } = await import('../../sandbox/local/local-sandbox.js');
    // The worker refuses sandboxes whose whole-sandbox limits this host cannot enforce, unless
    // the admin says otherwise (SANDBOX_ALLOW_UNLIMITED=true): then it warns once.
    return createLocalSandboxFactory({
      logger,
      unenforcedLimits: env.sandboxAllowUnlimited ? 'warn' : 'refuse',
      hostUid: env.sandboxHostUid,
    });
  }
  if (!env.sandboxImage) {
    throw new AppError('CONFIG_INVALID', 'SANDBOX_IMAGE: required when SANDBOX_DRIVER is kubernetes');
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { createKubernetesSandboxFactory } = await import('../../sandbox/kubernetes/kubernetes-sandbox.js');
  const { createSandboxJanitor } = await import('../../sandbox/kubernetes/sandbox-janitor.js');
  const { Queue } = await import('bullmq');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  // Sandbox job ids are the BullMQ job id, or it plus a suffix (`-a2`, `-tests-head`).
  const queue = new Queue(env.queueName, { connection: redis, prefix: env.queuePrefix });
  const janitor = createSandboxJanitor({
    kubeConfig,
    namespace: env.sandboxNamespace,
    logger,
    isJobActive: async (sandboxJobId) => {
      const jobs = await queue.getJobs(['active', 'waiting', 'delayed', 'prioritized'], 0, 999);
      return jobs.some(
        (j) => j.id !== undefined && (sandboxJobId === j.id || sandboxJobId.startsWith(`${j.id}-`)),
      );
    },
  });
  janitor.start(SANDBOX_JANITOR_INTERVAL_MS);
  stoppers.push(async () => {
    await janitor.stop();
    await queue.close();
  });
  return createKubernetesSandboxFactory({
    kubeConfig,
    namespace: env.sandboxNamespace,
    image: env.sandboxImage,
    serviceAccountName: env.sandboxServiceAccount ?? undefined,
    runtimeClassName: env.sandboxRuntimeClass ?? undefined,
    logger,
  });
}

/** `frognano-bot worker`: read the environment, work until SIGTERM/SIGINT, hand jobs back, return 0. */
export async function main(argv: string[]): Promise<number> {
  return runService(
    argv,
    USAGE,
    (env, logger) => startWorker({ env, logger }),
    'stopping: no new jobs; waiting for running ones',
  );
}
