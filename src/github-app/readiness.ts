import type { Redis } from 'ioredis';
import type { Probot } from 'probot';
import { z } from 'zod';
import type { PolicyStore } from '../config/policy-store.js';
import type { Logger } from '../observability/logger.js';

/** One readiness check. */
export interface ReadinessCheck {
  ok: boolean;
  /** What failed, or a warning that does not fail readiness. */
  detail?: string;
  /** Validation messages (file, key path, problem) of a policy file that failed to reload. */
  messages?: string[];
  /** False for a check that is reported but does not decide readiness. */
  required?: boolean;
}

/** The `/readyz` body. */
export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, ReadinessCheck>;
}

/**
 * Readiness of the worker and of `serve`: Redis answers PING within 2 s; the model server answers
 * `GET <MODEL_URL>/models` (the OpenAI-compatible model list SGLang serves) with 2xx within 2 s; not
 * draining. The policy file's last reload error is reported as a warning: the last good policy
 * stays in force, so it does not take the process out of rotation.
 *
 * With `modelRequired: false` (serve) the model server is reported but does not decide readiness:
 * webhooks only need Redis, and taking the webhook receiver out of rotation while SGLang loads or
 * restarts would lose deliveries instead of queueing them.
 */
export async function checkReadiness(options: {
  redis: Redis;
  modelUrl: string;
  modelApiKey: string | null;
  policyStore?: PolicyStore;
  draining?: boolean;
  /** Default true. */
  modelRequired?: boolean;
}): Promise<ReadinessReport> {
  const [redis, model] = await Promise.all([
    checkRedis(options.redis),
    checkModel(options.modelUrl, options.modelApiKey),
  ]);
  if (options.modelRequired === false) model.required = false;
  const checks: Record<string, ReadinessCheck> = { redis, model };
  if (options.draining) checks.draining = { ok: false, detail: 'shutting down' };
  const policyError = options.policyStore?.lastError();
  if (options.policyStore) {
    checks.policy = policyError
      ? {
          ok: true,
          detail: `last reload failed at ${policyError.at.toISOString()}: ${policyError.message} (the previous policy is in force)`,
          messages: policyError.messages,
        }
      : { ok: true };
  }
  return { ready: Object.values(checks).every((c) => c.ok || c.required === false), checks };
}

async function checkRedis(redis: Redis): Promise<ReadinessCheck> {
  try {
    const pong = await Promise.race([
      redis.ping(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('no answer within 2000 ms')), 2000).unref(),
      ),
    ]);
    return pong === 'PONG' ? { ok: true } : { ok: false, detail: `unexpected answer ${String(pong)}` };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}

/** The model server answers `GET <modelUrl>/models` with 2xx within 2 s (also `frognano_model_server_up`). */
export async function checkModel(modelUrl: string, apiKey: string | null): Promise<ReadinessCheck> {
  try {
    const res = await fetch(`${modelUrl}/models`, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(2000),
    });
    await res.body?.cancel();
    return res.ok
      ? { ok: true }
      : { ok: false, detail: `GET ${modelUrl}/models answered HTTP ${res.status}` };
  } catch (err) {
    return { ok: false, detail: `GET ${modelUrl}/models failed: ${(err as Error).message}` };
  }
}

/** The app's bot login, looked up once through `GET /app` (App JWT) and cached. */
export interface BotLogin {
  /** `<app-slug>[bot]`, or undefined while unknown. */
  get(): string | undefined;
  /** Look it up now (bounded by `timeoutMs`), unless known or tried in the last minute. Never throws. */
  refresh(timeoutMs: number): Promise<void>;
}

/**
 * Resolve the bot login of the app behind `probot`. Used to ignore the app's own events and to find
 * its own status comment. Failure is logged and retried on a later call (at most once a minute).
 */
export function resolveBotLogin(probot: Probot, logger: Logger): BotLogin {
  let login: string | undefined;
  let lastTry = 0;
  return {
    get: () => login,
    async refresh(timeoutMs) {
      if (login !== undefined || Date.now() - lastTry < 60_000) return;
      lastTry = Date.now();
      try {
        const octokit = await probot.auth();
        const res = await octokit.request('GET /app', {
          request: { signal: AbortSignal.timeout(timeoutMs) },
        });
        const slug = z.object({ slug: z.string().min(1) }).parse(res.data).slug;
        login = `${slug}[bot]`;
      } catch (err) {
        logger.warn({ err }, 'could not look up the app (GET /app); will retry');
      }
    },
  };
}
