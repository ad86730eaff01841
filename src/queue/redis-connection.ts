import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../observability/logger.js';

/**
 * What a Redis connection is for; each role has the options BullMQ and this app need
 * (https://docs.bullmq.io/guide/going-to-production):
 *
 * - `producer` (the `serve` process: enqueue, guards, cancel requests): fails fast while Redis is
 *   unreachable (`enableOfflineQueue: false`, one retry per command) so a webhook gets a 5xx at once
 *   and GitHub can deliver it again, instead of hanging past GitHub's 10 s webhook timeout.
 * - `worker` (BullMQ `Worker` and the worker's own commands): `maxRetriesPerRequest: null`, as BullMQ
 *   requires for blocking commands; commands wait for a reconnect, so a Redis restart does not fail
 *   running jobs.
 * - `subscriber` (pub/sub for cancel requests): like `worker`; a connection in subscriber mode can
 *   run no other command.
 */
export type RedisRole = 'producer' | 'worker' | 'subscriber';

/**
 * Open an ioredis connection for `role` (ioredis v6, https://github.com/redis/ioredis). The
 * connection reconnects forever with backoff; `error` events are logged (at most one line per
 * 10 s per connection, so an outage does not flood the log) and never crash the process.
 *
 * @param url `redis://` or `rediss://` URL (REDIS_URL).
 */
export function createRedisConnection(
  url: string,
  role: RedisRole,
  options: { logger: Logger; name?: string },
): Redis {
  const common: RedisOptions = {
    connectionName: options.name ?? `frognano-${role}`,
    // Reconnect forever; the delay grows to 2 s so a restarted Redis is seen quickly.
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2000),
    connectTimeout: 5000,
  };
  const byRole: Record<RedisRole, RedisOptions> = {
    producer: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 10_000 },
    worker: { maxRetriesPerRequest: null },
    subscriber: { maxRetriesPerRequest: null },
  };
  const redis = new Redis(url, { ...common, ...byRole[role] });
  let lastLogged = 0;
  redis.on('error', (err: Error) => {
    const now = Date.now();
    if (now - lastLogged < 10_000) return;
    lastLogged = now;
    options.logger.warn({ err, role }, 'redis connection error');
  });
  return redis;
}

/**
 * Close a connection: QUIT when connected (pending replies arrive first), else disconnect at once.
 * Never throws.
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      return;
    } catch {
      // fall through to disconnect
    }
  }
  redis.disconnect();
}
