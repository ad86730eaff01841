/**
 * What the webhook-side integration tests (`serve` alone, or `serve` plus a queue worker) share: the
 * GitHub Enterprise stand-in holding one repository, a scripted model server with no turns (only its
 * `/models` readiness probe is used), a Redis connection of the test's own, and the `AppEnv` for one
 * queue prefix.
 *
 * Needs Redis on 127.0.0.1:6379 (`bash scripts/setup.sh` starts it); fails saying so otherwise.
 */
import type { Redis } from 'ioredis';
import { loadEnv, type AppEnv } from '../../src/config/env.js';
import { connectTestRedis } from '../integration/queue/redis-helper.js';
import { startGheStandin, type GheStandin, type RepoRole } from './ghe-standin/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from './scripted-model-server.js';

/** Options of {@link startWebhookFixture}. */
export interface WebhookFixtureOptions {
  owner: string;
  repo: string;
  /** Collaborators of the repository: login → role. */
  roles: Record<string, RepoRole>;
}

/** A running {@link startWebhookFixture}. */
export interface WebhookFixture {
  ghe: GheStandin;
  model: ScriptedModelServer;
  /** For the test's own checks and clean-up (e.g. `deletePrefix`). */
  redis: Redis;
  /**
   * The environment of serve / worker on queue prefix `prefix`, pointed at the stand-in and the
   * model server (REDIS_URL: the default 127.0.0.1:6379); `overrides` win.
   */
  envFor(prefix: string, overrides?: Record<string, string>): AppEnv;
  /**
   * `ghe.labelIssue` on the fixture's repository: `sender` adds `label` (default `frognano`) to
   * issue `issueNumber`; returns the `issues.labeled` payload (to send with `ghe.sendWebhook`).
   */
  labeled(issueNumber: number, sender: string, label?: string): ReturnType<GheStandin['labelIssue']>;
  /** Stop the stand-in and the model server, disconnect Redis. */
  close(): Promise<void>;
}

/**
 * Start the stand-in with `owner/repo` and its collaborators, the model server and a Redis connection.
 *
 * @throws Error when Redis is not reachable (with how to start it).
 */
export async function startWebhookFixture(options: WebhookFixtureOptions): Promise<WebhookFixture> {
  const { owner, repo } = options;
  const redis = await connectTestRedis();
  const ghe = await startGheStandin().catch((err: unknown) => {
    redis.disconnect();
    throw err;
  });
  let model: ScriptedModelServer | undefined;
  const close = async (): Promise<void> => {
    await ghe.close();
    await model?.close();
    redis.disconnect();
  };
  try {
    model = await startScriptedModelServer({ script: [] });
    await ghe.createRepo(owner, repo);
    for (const [user, role] of Object.entries(options.roles)) ghe.setPermission(owner, repo, user, role);
  } catch (err) {
    await close();
    throw err;
  }
  const started = model;
  return {
    ghe,
    model: started,
    redis,
    envFor: (prefix, overrides = {}) =>
      loadEnv({
        APP_ID: String(ghe.appId),
        PRIVATE_KEY: ghe.privateKey,
        WEBHOOK_SECRET: ghe.webhookSecret,
        GHE_HOST: ghe.host,
        GHE_PROTOCOL: 'http',
        QUEUE_PREFIX: prefix,
        MODEL_URL: started.url,
        LOG_LEVEL: 'silent',
        ...overrides,
      }),
    labeled: (issueNumber, sender, label = 'frognano') =>
      ghe.labelIssue({ owner, repo, issueNumber, sender, label }),
    close,
  };
}
