import { z } from 'zod';
import type { AppEnv } from '../../config/env.js';
import {
  checkTriggerAllowed,
  createTeamMembershipCheck,
  resolveEffectivePolicy,
} from '../../config/policy.js';
import { createPolicyStore, createStaticPolicyStore, type PolicyStore } from '../../config/policy-store.js';
import { loadRepoConfigs } from '../../config/repo-config.js';
import { createAdminRouter } from '../../github-app/admin-routes.js';
import { createInstallationClients } from '../../github-app/github-client.js';
import { createReviewPolicyLookup, registerReviewHandler } from '../../github-app/review-handler.js';
import { startServer, type RunningServer } from '../../github-app/server.js';
import type { TriggerCheck } from '../../github-app/trigger-rules.js';
import { writeApproval } from '../../observability/approval-entry.js';
import type { Logger } from '../../observability/logger.js';
import { createRecordServices } from '../../observability/record-services.js';
import { closeRedis, createRedisConnection } from '../../queue/redis-connection.js';
import { runService } from './run-service.js';

const USAGE = `usage: frognano-bot serve

Start the GitHub App server: the webhook route (WEBHOOK_PATH, default /api/github/webhooks),
/healthz, /readyz, /metrics and /admin. Configuration comes from environment variables (see the
README: APP_ID, PRIVATE_KEY or PRIVATE_KEY_PATH, WEBHOOK_SECRET, GHE_HOST, REDIS_URL, …).
SIGTERM or SIGINT drains in-flight requests, then exits 0.
`;

/** Options of {@link startServe}. */
export interface StartServeOptions {
  env: AppEnv;
  logger: Logger;
  /** Admin policy store; default: from POLICY_FILE (watched), else built-in defaults. */
  policyStore?: PolicyStore;
  /** Port and bind address overriding PORT and HOST (port 0: any free port, for tests). */
  port?: number;
  host?: string;
}

/** A running `serve` with its policy store. */
export interface RunningServe extends RunningServer {
  policyStore: PolicyStore;
}

/**
 * `frognano-bot serve` as a function (the e2e test calls it in-process): the server of
 * `github-app/server.ts` wired to the admin policy (trigger label, attempts, allowed repositories
 * and teams), the `/admin` views and the pull request review handler.
 */
export async function startServe(options: StartServeOptions): Promise<RunningServe> {
  const { env, logger } = options;
  const policyStore =
    options.policyStore ??
    (env.policyFile ? createPolicyStore({ path: env.policyFile, logger }) : createStaticPolicyStore());
  const effective = (repo: string) => resolveEffectivePolicy({ policy: policyStore.current(), repo });

  const checkTrigger: TriggerCheck = async ({ owner, repo, sender, octokit }) => {
    const fullName = `${owner}/${repo}`;
    const decision = await checkTriggerAllowed(effective(fullName), {
      repo: fullName,
      sender,
      isTeamMember: createTeamMembershipCheck(octokit),
    });
    return decision.allowed ? { allowed: true } : { allowed: false, reason: decision.reason };
  };
  const clients = createInstallationClients({ ...env, logger, throttle: false });

  // Approvals go into the run record chain; the lock and spool need a connection of their own.
  const recordRedis = createRedisConnection(env.redisUrl, 'worker', {
    logger,
    name: 'frognano-serve-records',
  });
  const records = createRecordServices(env, recordRedis, logger);
  const closeRecords = async (): Promise<void> => {
    await records.close();
    await closeRedis(recordRedis);
  };
  let server: RunningServer;
  try {
    server = await startServer({
      env,
      logger,
      policyStore,
      port: options.port,
      host: options.host,
      // The admin policy may set another label for some repositories; else the env value. (The policy's
      // `candidates` is best-of-N inside one job; BullMQ retries after infrastructure errors are JOB_RETRIES.)
      triggerLabel: (repo) => {
        const p = effective(repo);
        return p.sources.label && p.sources.label !== 'default' ? p.label : env.triggerLabel;
      },
      attemptsFor: () => env.jobAttempts,
      maxFollowUpsFor: (repo) => effective(repo).maxFollowUps,
      checkTriggerAllowed: checkTrigger,
      admin: ({ queue, probot }) =>
        createAdminRouter({
          queues: [queue],
          policyStore,
          adminUser: env.adminUser ?? undefined,
          adminPassword: env.adminPassword ?? undefined,
          readOnly: !env.adminActions,
          basePath: '/admin',
          logger,
          records: records.store,
          loadRepoConfigs: async (owner, name) => {
            const app = await probot.auth();
            const installation = await app.request('GET /repos/{owner}/{repo}/installation', {
              owner,
              repo: name,
            });
            const octokit = await clients.get(z.object({ id: z.number() }).parse(installation.data).id);
            const repo = await octokit.request('GET /repos/{owner}/{repo}', { owner, repo: name });
            const defaultBranch = z.object({ default_branch: z.string() }).parse(repo.data).default_branch;
            return loadRepoConfigs(octokit, owner, name, defaultBranch);
          },
        }),
      extraHandlers: [
        (app) =>
          registerReviewHandler(app, {
            appId: env.appId,
            reviewPolicy: createReviewPolicyLookup(() => policyStore.current()),
            recordApproval: (approval) => writeApproval(records.writer, approval),
          }),
      ],
    });
  } catch (err) {
    policyStore.close();
    await closeRecords();
    throw err;
  }
  const close = server.close.bind(server);
  return Object.assign(server, {
    policyStore,
    async close() {
      await close();
      policyStore.close();
      await closeRecords();
    },
  });
}

/** `frognano-bot serve`: read the environment, serve until SIGTERM/SIGINT, drain, return 0. */
export async function main(argv: string[]): Promise<number> {
  return runService(argv, USAGE, (env, logger) => startServe({ env, logger }), 'stopping');
}
