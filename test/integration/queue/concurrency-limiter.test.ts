import { randomUUID } from 'node:crypto';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createConcurrencyLimiter, type ConcurrencyLimiter } from '../../../src/queue/concurrency-limiter.js';
import { connectTestRedis } from './redis-helper.js';

/**
 * The per-repository limit and global cap on real Redis (127.0.0.1:6379), alone and driving a real
 * BullMQ worker with the moveToDelayed + DelayedError pattern documented in concurrency-limiter.ts.
 */
const REDIS = { host: '127.0.0.1', port: 6379 };
let redis: Redis;
const prefixes: string[] = [];

/** A limiter with a key prefix of its own (removed after the test). */
function limiter(options: { globalLimit?: number; leaseMs?: number } = {}): ConcurrencyLimiter {
  const keyPrefix = `frognano-test:{limiter-${randomUUID()}}`;
  prefixes.push(keyPrefix);
  return createConcurrencyLimiter({
    redis,
    keyPrefix,
    globalLimit: options.globalLimit ?? 0,
    leaseMs: options.leaseMs ?? 30_000,
  });
}

async function waitFor<T>(promise: Promise<T>, limitMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${limitMs} ms waiting for ${what}`)), limitMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  redis = await connectTestRedis();
});
afterEach(async () => {
  for (const prefix of prefixes.splice(0)) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
});
afterAll(async () => {
  await redis?.quit();
});

describe('concurrency limiter on real Redis', () => {
  it('with a limit of 1, only one of many simultaneous acquires of a repository wins; another repository is not held back', async () => {
    const l = limiter();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => l.tryAcquire('acme/widgets', `job-${i}`, 1)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await l.tryAcquire('acme/other', 'job-other', 1)).toBe(true);
    expect(await l.holders('acme/widgets')).toHaveLength(1);
    expect((await l.holders()).sort()).toEqual([`job-${results.indexOf(true)}`, 'job-other'].sort());
  });

  it('counts repositories case-insensitively, re-acquiring is idempotent, release frees the slot', async () => {
    const l = limiter();
    expect(await l.tryAcquire('Acme/Widgets', 'a', 1)).toBe(true);
    expect(await l.tryAcquire('acme/widgets', 'a', 1)).toBe(true);
    expect(await l.acquire('acme/widgets', 'b', 1)).toEqual({ acquired: false, limit: 'repo' });
    await l.release('ACME/widgets', 'a');
    await l.release('acme/widgets', 'a'); // idempotent
    expect(await l.tryAcquire('acme/widgets', 'b', 1)).toBe(true);
    expect(await l.tryAcquire('acme/widgets', 'c', 2)).toBe(true); // a higher per-repo limit admits a second job
  });

  it('applies the global cap across repositories', async () => {
    const l = limiter({ globalLimit: 2 });
    expect(await l.tryAcquire('a/one', 'j1', 5)).toBe(true);
    expect(await l.tryAcquire('a/two', 'j2', 5)).toBe(true);
    expect(await l.acquire('a/three', 'j3', 5)).toEqual({ acquired: false, limit: 'global' });
    await l.release('a/one', 'j1');
    expect(await l.tryAcquire('a/three', 'j3', 5)).toBe(true);
  });

  it('frees the slot of a worker that died (its lease expires) and tells a late renewer it lost the slot', async () => {
    const l = limiter({ leaseMs: 200 });
    expect(await l.tryAcquire('acme/widgets', 'dead-worker-job', 1)).toBe(true);
    expect(await l.renew('acme/widgets', 'dead-worker-job')).toBe(true);
    expect(await l.tryAcquire('acme/widgets', 'next-job', 1)).toBe(false);
    // The dead worker never renews or releases. Poll until the lease has run out (bounded).
    const deadline = Date.now() + 5_000;
    let acquired = false;
    while (!acquired && Date.now() < deadline) {
      acquired = await l.tryAcquire('acme/widgets', 'next-job', 1);
      if (!acquired) await new Promise((r) => setTimeout(r, 25));
    }
    expect(acquired).toBe(true);
    expect(await l.holders('acme/widgets')).toEqual(['next-job']);
    expect(await l.renew('acme/widgets', 'dead-worker-job')).toBe(false);
  });

  it('keepAlive extends the lease of a live job, and reports a slot that is gone', async () => {
    const l = limiter({ leaseMs: 60_000 });
    const keyPrefix = prefixes.at(-1)!;
    const score = async (): Promise<number> =>
      Number(await redis.zscore(`${keyPrefix}:repo:acme/widgets`, 'live'));
    expect(await l.tryAcquire('acme/widgets', 'live', 1)).toBe(true);
    const first = await score();
    let lost = false;
    const stop = l.keepAlive('acme/widgets', 'live', { intervalMs: 20, onLost: () => (lost = true) });
    try {
      const deadline = Date.now() + 5_000;
      while ((await score()) <= first) {
        if (Date.now() > deadline) throw new Error('keepAlive did not renew the lease within 5 s');
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(lost).toBe(false);
      // The slot disappears (as after an expired lease purged by another worker): onLost fires.
      await l.release('acme/widgets', 'live');
      const lostBy = Date.now() + 5_000;
      while (!lost) {
        if (Date.now() > lostBy) throw new Error('onLost was not called within 5 s');
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      stop();
    }
  });

  it('rejects invalid settings', () => {
    expect(() => createConcurrencyLimiter({ redis, keyPrefix: 'x', globalLimit: 0, leaseMs: 0 })).toThrow(
      /leaseMs/,
    );
    expect(() => createConcurrencyLimiter({ redis, keyPrefix: 'x', globalLimit: -1, leaseMs: 10 })).toThrow(
      /globalLimit/,
    );
  });
});

describe('concurrency limiter driving a BullMQ worker', () => {
  it('never runs two jobs of one repository at once, while a job of another repository runs alongside', async () => {
    const id = randomUUID();
    const bullPrefix = `frognano-test:{bull-${id}}`;
    prefixes.push(bullPrefix);
    const l = limiter();
    const queue = new Queue(`limiter-${id}`, { connection: REDIS, prefix: bullPrefix });
    const running = new Map<string, number>();
    const maxRunning = new Map<string, number>();
    let delays = 0;
    let releaseB!: () => void;
    const bStarted = new Promise<void>((resolve) => (releaseB = resolve));
    let widgetsRunningWhenBStarted = -1;

    const processor = async (job: Job<{ repo: string }>, token?: string): Promise<string> => {
      const { repo } = job.data;
      if (!(await l.tryAcquire(repo, job.id!, 1))) {
        delays++;
        await job.moveToDelayed(Date.now() + 20, token);
        throw new DelayedError();
      }
      try {
        running.set(repo, (running.get(repo) ?? 0) + 1);
        maxRunning.set(repo, Math.max(maxRunning.get(repo) ?? 0, running.get(repo)!));
        if (repo === 'acme/b') {
          widgetsRunningWhenBStarted = running.get('acme/widgets') ?? 0;
          releaseB();
        } else {
          // Each widgets job holds its slot until the other repository's job has started: if the
          // limiter held that job back, this would never end and the test would time out.
          await waitFor(bStarted, 10_000, 'the job of acme/b to start while acme/widgets holds its slot');
          await new Promise((r) => setTimeout(r, 10));
        }
        running.set(repo, running.get(repo)! - 1);
        return repo;
      } finally {
        await l.release(repo, job.id!);
      }
    };
    const worker = new Worker(`limiter-${id}`, processor, {
      connection: REDIS,
      prefix: bullPrefix,
      concurrency: 4,
    });
    try {
      await queue.addBulk([
        { name: 'w1', data: { repo: 'acme/widgets' } },
        { name: 'w2', data: { repo: 'acme/widgets' } },
        { name: 'w3', data: { repo: 'acme/widgets' } },
        { name: 'b1', data: { repo: 'acme/b' } },
      ]);
      const deadline = Date.now() + 20_000;
      let counts = await queue.getJobCounts('completed', 'failed');
      while ((counts.completed ?? 0) + (counts.failed ?? 0) < 4) {
        if (Date.now() > deadline)
          throw new Error(`jobs did not finish within 20 s: ${JSON.stringify(counts)}`);
        await new Promise((r) => setTimeout(r, 25));
        counts = await queue.getJobCounts('completed', 'failed');
      }
      expect(counts).toEqual({ completed: 4, failed: 0 });
      expect(maxRunning.get('acme/widgets')).toBe(1);
      expect(widgetsRunningWhenBStarted).toBe(1);
      expect(delays).toBeGreaterThan(0); // the worker did pick widgets jobs up together, and the limiter held them back
      expect(await l.holders()).toEqual([]);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
