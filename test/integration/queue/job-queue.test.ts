import { UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { createIssueGuard } from '../../../src/queue/issue-guard.js';
import type { JobData } from '../../../src/queue/job-data.js';
import { createJobQueue, RESERVATION_GRACE_MS, type JobQueue } from '../../../src/queue/job-queue.js';
import { appKeys, issueKey, makeJobId, type IssueRef } from '../../../src/queue/queue-keys.js';
import { closeRedis, createRedisConnection } from '../../../src/queue/redis-connection.js';
import { closedPort, connectTestRedis, deletePrefix, uniquePrefix, waitFor } from './redis-helper.js';

const logger = createSilentLogger();
let admin: Redis;
let producer: Redis;
let prefix: string;
let jobs: JobQueue;
let clock = Date.now();

const ref: IssueRef = { owner: 'Octo', repo: 'calc', issueNumber: 9 };
const data = (deliveryId: string): JobData => ({
  version: 1,
  deliveryId,
  installationId: 7,
  owner: ref.owner,
  repo: ref.repo,
  issueNumber: ref.issueNumber,
  label: 'frognano',
  triggeredBy: { login: 'alice' },
  enqueuedAt: new Date().toISOString(),
});

beforeAll(async () => {
  admin = await connectTestRedis();
});
afterAll(() => admin?.disconnect());

beforeEach(async () => {
  prefix = uniquePrefix('queue');
  producer = createRedisConnection('redis://127.0.0.1:6379', 'producer', { logger });
  await waitFor(() => producer.status === 'ready', 'producer ready', 5000);
  clock = Date.now();
  jobs = createJobQueue({
    redis: producer,
    prefix,
    queueName: 'jobs',
    attempts: 2,
    logger,
    now: () => clock,
  });
});

afterEach(async () => {
  await jobs.close();
  await closeRedis(producer);
  await deletePrefix(admin, prefix);
});

describe('issue guard', () => {
  it('lets exactly one of many concurrent reservations for an issue win', async () => {
    const guard = createIssueGuard(admin, appKeys(prefix));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => guard.acquire('o/r#1', `job-${i}`, `delivery-${i}`)),
    );
    expect(results.filter((r) => r.result === 'acquired')).toHaveLength(1);
    expect(results.filter((r) => r.result === 'busy')).toHaveLength(19);
  });

  it('releases only for the holder (compare-and-delete)', async () => {
    const guard = createIssueGuard(admin, appKeys(prefix));
    await guard.acquire('o/r#1', 'job-a', 'd-a');
    expect(await guard.release('o/r#1', 'job-b')).toBe(false);
    expect((await guard.holder('o/r#1'))?.jobId).toBe('job-a');
    expect(await guard.release('o/r#1', 'job-a')).toBe(true);
    expect(await guard.holder('o/r#1')).toBeNull();
  });
});

describe('job queue', () => {
  it('reserves, enqueues, recognises a repeated delivery and a busy issue', async () => {
    const r = await jobs.reserve(ref, 'd-1');
    expect(r).toEqual({ status: 'reserved', jobId: makeJobId(ref, 'd-1'), position: 1 });
    if (r.status !== 'reserved') throw new Error('unreachable');
    await jobs.enqueue(r.jobId, data('d-1'));
    expect(await jobs.reserve({ ...ref, owner: 'octo' }, 'd-1')).toEqual({
      status: 'duplicate_delivery',
      jobId: r.jobId,
    });
    expect(await jobs.reserve(ref, 'd-2')).toEqual({ status: 'busy', jobId: r.jobId, state: 'waiting' });
    // Another issue is next in line behind the first.
    expect(await jobs.reserve({ ...ref, issueNumber: 10 }, 'd-3')).toMatchObject({
      status: 'reserved',
      position: 2,
    });
  });

  it('validates job data before adding it', async () => {
    const r = await jobs.reserve(ref, 'd-1');
    if (r.status !== 'reserved') throw new Error('not reserved');
    await expect(
      jobs.enqueue(r.jobId, { ...data('d-1'), version: 2 } as unknown as JobData),
    ).rejects.toThrow();
    expect(await jobs.queue.getJobCounts('waiting')).toEqual({ waiting: 0 });
  });

  it('starts a new job once the previous one has finished, even if its guard was never released', async () => {
    const r = await jobs.reserve(ref, 'd-1');
    if (r.status !== 'reserved') throw new Error('not reserved');
    await jobs.enqueue(r.jobId, data('d-1'));
    // A bare BullMQ worker fails the job without releasing the guard (as a crash at the wrong moment would).
    const worker = createRedisConnection('redis://127.0.0.1:6379', 'worker', { logger });
    const bare = new Worker(
      'jobs',
      async () => {
        throw new UnrecoverableError('crashed');
      },
      { connection: worker, prefix },
    );
    await waitFor(async () => (await jobs.queue.getJobState(r.jobId)) === 'failed', 'job failed');
    await bare.close();
    await closeRedis(worker);
    expect((await jobs.guard.holder(issueKey(ref)))?.jobId).toBe(r.jobId);
    expect(await jobs.reserve(ref, 'd-2')).toMatchObject({
      status: 'reserved',
      jobId: makeJobId(ref, 'd-2'),
    });
  });

  it('takes over a reservation whose enqueue never happened, after the grace period', async () => {
    const r = await jobs.reserve(ref, 'd-1');
    expect(r.status).toBe('reserved');
    // No enqueue (the process died). Within the grace period the issue counts as busy…
    expect(await jobs.reserve(ref, 'd-2')).toMatchObject({ status: 'busy', state: 'queuing' });
    // …and the same delivery as a duplicate.
    expect(await jobs.reserve(ref, 'd-1')).toMatchObject({ status: 'duplicate_delivery' });
    clock += RESERVATION_GRACE_MS + 1;
    // A redelivery of the failed delivery is handled again, and takes the issue over.
    expect(await jobs.reserve(ref, 'd-1')).toMatchObject({
      status: 'reserved',
      jobId: makeJobId(ref, 'd-1'),
    });
  });

  it('abandon() undoes a reservation so a redelivery works at once', async () => {
    const r = await jobs.reserve(ref, 'd-1');
    if (r.status !== 'reserved') throw new Error('not reserved');
    await jobs.abandon(ref, r.jobId, 'd-1');
    expect(await jobs.guard.holder(issueKey(ref))).toBeNull();
    expect(await jobs.reserve(ref, 'd-1')).toMatchObject({ status: 'reserved' });
  });

  it('cancel(): removes a waiting job, signals an active one, and reports none otherwise', async () => {
    expect(await jobs.cancel(ref, { by: 'x', reason: 'r' })).toEqual({ status: 'none' });
    const r = await jobs.reserve(ref, 'd-1');
    if (r.status !== 'reserved') throw new Error('not reserved');
    await jobs.enqueue(r.jobId, { ...data('d-1'), statusCommentId: 55 });
    const removed = await jobs.cancel(ref, { by: 'trish', reason: 'label removed' });
    expect(removed).toMatchObject({ status: 'removed', jobId: r.jobId, data: { statusCommentId: 55 } });
    expect(await jobs.queue.getJob(r.jobId)).toBeUndefined();
    expect(await jobs.guard.holder(issueKey(ref))).toBeNull();
    expect(await jobs.cancelRequests.get(r.jobId)).toBeNull();

    // Reserved but not yet enqueued (enqueue in flight): the request is recorded for the worker.
    const r2 = await jobs.reserve(ref, 'd-2');
    if (r2.status !== 'reserved') throw new Error('not reserved');
    expect(await jobs.cancel(ref, { by: 'trish', reason: 'label removed' })).toEqual({
      status: 'signalled',
      jobId: r2.jobId,
    });
    expect(await jobs.cancelRequests.get(r2.jobId)).toMatchObject({ by: 'trish', reason: 'label removed' });
  });

  it('fails fast with a retryable QUEUE_UNAVAILABLE when Redis is down', async () => {
    const dead = createRedisConnection(`redis://127.0.0.1:${await closedPort()}`, 'producer', { logger });
    const q = createJobQueue({ redis: dead, prefix, queueName: 'jobs', attempts: 1, logger });
    const err = await q.reserve(ref, 'd-1').then(
      () => null,
      (e: unknown) => e,
    );
    expect(isAppError(err, 'QUEUE_UNAVAILABLE') && err.retryable).toBe(true);
    dead.disconnect();
    await q.close().catch(() => undefined);
  });
});
