import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis the integration tests use (DESIGN.md "Testing": real Redis on 127.0.0.1:6379). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Connect to the test Redis, or fail with how to start it (tests never skip silently).
 */
export async function connectTestRedis(): Promise<Redis> {
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new Error(
      `Redis is not reachable at ${TEST_REDIS_URL} (${(err as Error).message}). Start it with ` +
        '`redis-server --daemonize yes` (Debian/Ubuntu: `apt-get install redis-server`), or set TEST_REDIS_URL.',
      { cause: err },
    );
  }
  return redis;
}

/** A key prefix no other test uses: `t-<name>-<random>`. */
export function uniquePrefix(name: string): string {
  return `t-${name}-${randomBytes(4).toString('hex')}`;
}

/** Delete every key under `prefix:` (BullMQ's and the app's). */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

/** A TCP port on 127.0.0.1 where nothing listens (for "Redis is down"). */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Poll `check` every 25 ms until it returns a truthy value or `timeoutMs` passes (then throws `what`). */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
