/**
 * The running product for end-to-end tests: the GitHub Enterprise stand-in with repositories, a
 * Redis key prefix of its own, the scripted model server, the real `serve` and (optionally) the real
 * `worker` in-process, all configured through the same environment variables as production.
 *
 * Needs Redis on 127.0.0.1:6379 (`bash scripts/setup.sh` starts it); fails saying so otherwise.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { startServe, type RunningServe } from '../../src/bin/commands/serve.js';
import { startWorker, type RunningWorker, type StartWorkerOptions } from '../../src/bin/commands/worker.js';
import { loadEnv, type AppEnv } from '../../src/config/env.js';
import type { ChatModel } from '../../src/llm/chat-model.js';
import { createSilentLogger, type Logger } from '../../src/observability/logger.js';
import { connectTestRedis, deletePrefix, uniquePrefix } from '../integration/queue/redis-helper.js';
import { startGheStandin, type GheStandin } from './ghe-standin/index.js';
import {
  startScriptedModelServer,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedTurn,
} from './scripted-model-server.js';

/** Options of {@link startE2eStack}. */
export interface E2eStackOptions {
  /** Short name used in the Redis key prefix (`t-<name>-<random>`) and the temporary folder. */
  name: string;
  /** Owner of every repository in `repos`. */
  owner: string;
  /** Repositories to create on the stand-in: name → files (path → content); `alice` gets write. */
  repos: Record<string, Record<string, string>>;
  /** The scripted model's answer to each chat completion request. */
  script: (request: RecordedRequest) => ScriptedTurn;
  /** Admin policy YAML; written to `<root>/policy/policy.yaml` and passed as POLICY_FILE. */
  policy?: string;
  /** Extra environment variables (override the defaults). */
  env?: Record<string, string>;
  /**
   * The in-process worker: false for none (start one later with `startWorker`); otherwise options
   * passed to `startWorker` on top of the test defaults (no throttling, no health port, no progress
   * delay). `createModel` gets the stack, so it can point at `model.url`.
   */
  worker?:
    | false
    | (Pick<StartWorkerOptions, 'port'> & {
        createModel?: (context: { candidate: number }, stack: E2eStack) => ChatModel;
      });
}

/** A running end-to-end stack. */
export interface E2eStack {
  ghe: GheStandin;
  /** A connection of the test itself (the stack's services have their own). */
  redis: Redis;
  model: ScriptedModelServer;
  /** The Redis key prefix (QUEUE_PREFIX) of this stack. */
  prefix: string;
  /** Temporary folder holding `work/`, `trajectories/` and `policy/`; removed by `close()`. */
  root: string;
  /** TRAJECTORY_DIR. */
  trajectoryDir: string;
  /** RECORD_DIR: the volume record store (unless `env` selects another). */
  recordDir: string;
  /** POLICY_FILE, or null without `policy`. */
  policyFile: string | null;
  /** The environment variables given to `loadEnv` (for a worker child process). */
  vars: Record<string, string>;
  env: AppEnv;
  logger: Logger;
  serve: RunningServe;
  /** The in-process worker, or null with `worker: false`. */
  worker: RunningWorker | null;
  /**
   * As alice: open an issue in `<owner>/<repo>`, add the `frognano` label and send the signed
   * `issues.labeled` webhook to serve. Resolves to the issue number, the payload and serve's HTTP status.
   */
  labelNewIssue(
    repo: string,
    issue: { title: string; body: string },
  ): Promise<{ number: number; payload: ReturnType<GheStandin['labelIssue']>; status: number }>;
  /** Start another in-process worker with the same options; `close()` stops it too. */
  startWorker(): Promise<RunningWorker>;
  /** Stop workers, serve, model server and stand-in; delete the Redis keys and the folder. Idempotent. */
  close(): Promise<void>;
}

/**
 * Start the stand-in, the scripted model server, `serve` and (unless `worker: false`) `worker`.
 * On a failure part-way, whatever was started is stopped before the error is rethrown.
 *
 * @throws Error when Redis is not reachable (with how to start it), or whatever a service throws.
 */
export async function startE2eStack(options: E2eStackOptions): Promise<E2eStack> {
  const logger = createSilentLogger();
  const closers: Array<() => Promise<void> | void> = [];
  let closed: Promise<void> | null = null;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      const errors: unknown[] = [];
      while (closers.length > 0) {
        try {
          await closers.pop()?.();
        } catch (err) {
          errors.push(err);
        }
      }
      if (errors.length > 0) throw new AggregateError(errors, 'closing the e2e stack failed');
    })());

  try {
    const root = await mkdtemp(join(tmpdir(), `frognano-${options.name}-`));
    // A root worker's sandboxes run as an unprivileged uid, which must traverse (not list) it.
    await chmod(root, 0o711);
    closers.push(() => rm(root, { recursive: true, force: true }));
    const ghe = await startGheStandin();
    closers.push(() => ghe.close());
    for (const [repo, files] of Object.entries(options.repos)) {
      await ghe.createRepo(options.owner, repo, { files });
      ghe.setPermission(options.owner, repo, 'alice', 'write');
    }
    const redis = await connectTestRedis();
    const prefix = uniquePrefix(options.name);
    closers.push(async () => {
      try {
        await deletePrefix(redis, prefix);
      } finally {
        redis.disconnect();
      }
    });
    const model = await startScriptedModelServer({ script: (request) => options.script(request) });
    closers.push(() => model.close());

    let policyFile: string | null = null;
    if (options.policy !== undefined) {
      // A folder of its own: the policy store watches the file's directory.
      await mkdir(join(root, 'policy'));
      policyFile = join(root, 'policy', 'policy.yaml');
      await writeFile(policyFile, options.policy);
    }
    const trajectoryDir = join(root, 'trajectories');
    const vars: Record<string, string> = {
      APP_ID: String(ghe.appId),
      PRIVATE_KEY: ghe.privateKey,
      WEBHOOK_SECRET: ghe.webhookSecret,
      GHE_HOST: ghe.host,
      GHE_PROTOCOL: 'http',
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: prefix,
      MODEL_URL: model.url,
      SANDBOX_DRIVER: 'local',
      WORKER_PORT: '0',
      WORK_DIR: join(root, 'work'),
      TRAJECTORY_DIR: trajectoryDir,
      RECORD_DIR: join(root, 'records'),
      RECORD_SPOOL_DIR: join(root, 'record-spool'),
      RECORD_RETRY_MS: '500',
      ...(policyFile ? { POLICY_FILE: policyFile } : {}),
      LOG_LEVEL: 'silent',
      SHUTDOWN_TIMEOUT_MS: '2000',
      CANCEL_POLL_MS: '200',
      ...options.env,
    };
    const env = loadEnv(vars);
    const serve = await startServe({ env, logger, port: 0, host: '127.0.0.1' });
    closers.push(() => serve.close());

    const workerOptions = options.worker === false ? {} : (options.worker ?? {});
    const stack: E2eStack = {
      ghe,
      redis,
      model,
      prefix,
      root,
      trajectoryDir,
      recordDir: join(root, 'records'),
      policyFile,
      vars,
      env,
      logger,
      serve,
      worker: null,
      async labelNewIssue(repo, issue) {
        const { number } = ghe.createIssue(options.owner, repo, { ...issue, user: 'alice' });
        const payload = ghe.labelIssue({
          owner: options.owner,
          repo,
          issueNumber: number,
          sender: 'alice',
          label: 'frognano',
        });
        const res = await ghe.sendWebhook(serve.webhookUrl, 'issues', payload);
        return { number, payload, status: res.status };
      },
      async startWorker() {
        const { createModel } = workerOptions;
        const worker = await startWorker({
          env,
          logger,
          throttle: false,
          port: workerOptions.port ?? null,
          progressIntervalMs: 0,
          ...(createModel ? { createModel: (context) => createModel(context, stack) } : {}),
        });
        closers.push(() => worker.close());
        return worker;
      },
      close,
    };
    if (options.worker !== false) stack.worker = await stack.startWorker();
    return stack;
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
