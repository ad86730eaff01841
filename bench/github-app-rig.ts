/**
 * What the GitHub App benchmarks share: the GitHub Enterprise stand-in, a scripted model server
 * (only `/readyz` of `serve` asks it anything), an admin Redis connection, a temp folder, and a
 * cleanup stack that removes every Redis key, server and folder they created.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { createSilentLogger, type Logger } from '../src/observability/logger.js';
import { startGheStandin, type GheStandin } from '../test/helpers/ghe-standin/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../test/helpers/scripted-model-server.js';
import { connectTestRedis, deletePrefix, TEST_REDIS_URL } from '../test/integration/queue/redis-helper.js';

/** Organisation of every benchmark repository in the stand-in. */
export const BENCH_OWNER = 'octo-org';
/** The person (write access) who labels the issues. */
export const BENCH_SENDER = 'alice';

/** Shared resources of one `benchGithubApp` run. */
export interface BenchRig {
  ghe: GheStandin;
  /** Scripted model server with an empty script: `MODEL_URL` for `serve` and the pick-up worker. */
  model: ScriptedModelServer;
  /** Connection for checks and cleanup (not used by the code under measurement). */
  redis: Redis;
  redisUrl: string;
  /** Temp folder of this run (work dirs, trajectories, child TMPDIR); removed at the end. */
  root: string;
  logger: Logger;
  /** A fresh queue prefix `bench-gh-<name>-<hex>`; its keys are deleted at the end. */
  newPrefix(name: string): string;
  /**
   * The process environment of `serve` and `worker` (the variables of src/config/env.ts) pointed at
   * the stand-in, Redis and the model server, with the queue `prefix`; `extra` overrides.
   */
  envVars(prefix: string, extra?: Record<string, string>): Record<string, string>;
  /** Run `fn` at {@link RigHandle.close}, in reverse order of registration. */
  defer(what: string, fn: () => Promise<unknown> | unknown): void;
}

/** A started rig and how to take it down. */
export interface RigHandle {
  rig: BenchRig;
  /**
   * Run the deferred cleanups (last first), delete every key of every prefix, close the servers and
   * remove the temp folder. Never throws; returns the problems met, one line each.
   */
  close(): Promise<string[]>;
}

/**
 * Start the rig.
 *
 * @throws Error saying how to start Redis when `TEST_REDIS_URL` (default redis://127.0.0.1:6379) does
 *   not answer,
 *   and on stand-in start-up failures; nothing is left running in either case.
 */
export async function startRig(): Promise<RigHandle> {
  const redisUrl = TEST_REDIS_URL;
  const redis = await connectTestRedis();
  const prefixes: string[] = [];
  const deferred: Array<{ what: string; fn: () => Promise<unknown> | unknown }> = [];
  let ghe: GheStandin | undefined;
  let model: ScriptedModelServer | undefined;
  let root: string | undefined;

  const close = async (): Promise<string[]> => {
    const problems: string[] = [];
    const attempt = async (what: string, fn: () => Promise<unknown> | unknown) => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${what}: ${(err as Error).message}`);
      }
    };
    while (deferred.length > 0) {
      const d = deferred.pop()!;
      await attempt(d.what, d.fn);
    }
    for (const p of prefixes) await attempt(`delete Redis keys ${p}:*`, () => deletePrefix(redis, p));
    for (const p of prefixes) {
      await attempt(`check Redis keys ${p}:*`, async () => {
        const [, left] = await redis.scan('0', 'MATCH', `${p}:*`, 'COUNT', 1000);
        if (left.length > 0) throw new Error(`${left.length} keys left`);
      });
    }
    if (ghe) await attempt('close the GitHub stand-in', () => ghe!.close());
    if (model) await attempt('close the model server', () => model!.close());
    if (root)
      await attempt(`remove ${root}`, () => rm(root!, { recursive: true, force: true, maxRetries: 3 }));
    redis.disconnect();
    return problems;
  };

  try {
    root = await mkdtemp(join(tmpdir(), 'frognano-bench-gh-'));
    // A root worker's sandboxes run as an unprivileged uid, which must traverse (not list) it.
    await chmod(root, 0o711);
    ghe = await startGheStandin();
    model = await startScriptedModelServer({ script: [] });
  } catch (err) {
    await close();
    throw err;
  }
  const g = ghe;
  const m = model;
  const r = root;
  const rig: BenchRig = {
    ghe: g,
    model: m,
    redis,
    redisUrl,
    root: r,
    logger: createSilentLogger(),
    newPrefix(name) {
      const prefix = `bench-gh-${name}-${randomBytes(4).toString('hex')}`;
      prefixes.push(prefix);
      return prefix;
    },
    envVars(prefix, extra = {}) {
      return {
        APP_ID: String(g.appId),
        PRIVATE_KEY: g.privateKey,
        WEBHOOK_SECRET: g.webhookSecret,
        GHE_HOST: g.host,
        GHE_PROTOCOL: 'http',
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: prefix,
        MODEL_URL: m.url,
        SANDBOX_DRIVER: 'local',
        WORKER_PORT: '0',
        WORK_DIR: join(r, prefix, 'work'),
        TRAJECTORY_DIR: join(r, prefix, 'trajectories'),
        LOG_LEVEL: 'silent',
        SHUTDOWN_TIMEOUT_MS: '2000',
        ...extra,
      };
    },
    defer(what, fn) {
      deferred.push({ what, fn });
    },
  };
  return { rig, close };
}
