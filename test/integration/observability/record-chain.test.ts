/**
 * The per-repository hash chain on a real store (volume), with the Redis chain lock against real
 * Redis for concurrent appends: verify passes on an intact chain and names the first entry that an
 * edit, a removal or a reordering breaks; a retention sweep keeps it verifiable and is listed.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createProcessChainLock, createRedisChainLock } from '../../../src/observability/chain-lock.js';
import {
  appendEntry,
  linkKey,
  readJobEntries,
  sweepChain,
  verifyChain,
} from '../../../src/observability/record-chain.js';
import { createVolumeRecordStore, type RecordStore } from '../../../src/observability/record-store.js';
import { connectTestRedis, deletePrefix, uniquePrefix } from '../queue/redis-helper.js';

const REPO = 'Octo-Org/Calc';
let dir: string;
let store: RecordStore;
let redis: Redis;
let prefix: string;

beforeAll(async () => {
  redis = await connectTestRedis();
  prefix = uniquePrefix('chain');
});
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});
beforeEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'frognano-chain-'));
  store = createVolumeRecordStore({ dir });
});

const lock = createProcessChainLock();
const record = (jobId: string, at: string) =>
  appendEntry(store, lock, REPO, {
    kind: 'record',
    jobId,
    at: new Date(at),
    body: { schema: 'test', runId: `run-${jobId}` },
  });

describe('record chain', () => {
  it('chains entries: each carries the previous hash; verify passes', async () => {
    const a = await record('job.1', '2026-01-01T00:00:00Z');
    const b = await record('job.2', '2026-01-02T00:00:00Z');
    const c = await appendEntry(store, lock, REPO, {
      kind: 'approval',
      jobId: 'job.1',
      body: { id: 'review-7' },
    });
    expect([a.seq, b.seq, c.seq]).toEqual([0, 1, 2]);
    expect(a.prevHash).toBeNull();
    expect(b.prevHash).toBe(a.hash);
    expect(c.prevHash).toBe(b.hash);
    expect(a.repo).toBe('octo-org/calc');
    const report = await verifyChain(store, REPO);
    expect(report).toMatchObject({ broken: null, checked: 3, last: 2 });
    // The same record sent again (a spool retry) is not chained twice.
    const again = await record('job.1', '2026-01-03T00:00:00Z');
    expect(again.seq).toBe(0);
    expect((await readJobEntries(store, 'job.1')).map((e) => e.entry.kind)).toEqual(['record', 'approval']);
  });

  it('names the first entry an edit breaks', async () => {
    await record('job.1', '2026-01-01T00:00:00Z');
    const b = await record('job.2', '2026-01-02T00:00:00Z');
    await record('job.3', '2026-01-03T00:00:00Z');
    const path = join(dir, 'jobs', 'job.2', '0000000001-record.json');
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace('run-job.2', 'run-job.2-edited'));
    const report = await verifyChain(store, REPO);
    expect(report.broken).toMatchObject({ seq: b.seq, jobId: 'job.2' });
    expect(report.broken?.problem).toMatch(/changed after it was written/);
  });

  it('names an entry whose file was removed, and one whose link was removed', async () => {
    await record('job.1', '2026-01-01T00:00:00Z');
    await record('job.2', '2026-01-02T00:00:00Z');
    await record('job.3', '2026-01-03T00:00:00Z');
    await rm(join(dir, 'jobs', 'job.2', '0000000001-record.json'));
    expect((await verifyChain(store, REPO)).broken).toMatchObject({
      seq: 1,
      jobId: 'job.2',
      problem: expect.stringMatching(/missing \(removed\)/),
    });
    await rm(join(dir, 'jobs', 'job.2'), { recursive: true });
    await store.delete(linkKey('octo-org/calc', 1));
    expect((await verifyChain(store, REPO)).broken).toMatchObject({
      seq: 1,
      problem: expect.stringMatching(/missing from the chain/),
    });
  });

  it('--since: an edit before the date is not reported, one after it is', async () => {
    await record('job.1', '2026-01-01T00:00:00Z');
    await record('job.2', '2026-03-01T00:00:00Z');
    const path = join(dir, 'jobs', 'job.1', '0000000000-record.json');
    await writeFile(path, (await readFile(path, 'utf8')).replace('run-job.1', 'run-job.1-edited'));
    expect((await verifyChain(store, REPO)).broken?.jobId).toBe('job.1');
    const recent = await verifyChain(store, REPO, { since: new Date('2026-02-01T00:00:00Z') });
    expect(recent).toMatchObject({ broken: null, checked: 1 });
    const path2 = join(dir, 'jobs', 'job.2', '0000000001-record.json');
    await writeFile(path2, (await readFile(path2, 'utf8')).replace('run-job.2', 'run-job.2-edited'));
    expect((await verifyChain(store, REPO, { since: new Date('2026-02-01T00:00:00Z') })).broken?.jobId).toBe(
      'job.2',
    );
  });

  it('detects entries swapped (reordered) and the last entry removed', async () => {
    await record('job.1', '2026-01-01T00:00:00Z');
    await record('job.2', '2026-01-02T00:00:00Z');
    await record('job.3', '2026-01-03T00:00:00Z');
    // Swap the links of 1 and 2 (and renumber the entries as a forger would have to).
    const l1 = await store.get(linkKey('octo-org/calc', 1));
    const l2 = await store.get(linkKey('octo-org/calc', 2));
    await store.put(linkKey('octo-org/calc', 1), l2!);
    await store.put(linkKey('octo-org/calc', 2), l1!);
    expect((await verifyChain(store, REPO)).broken?.seq).toBe(1);
    await store.put(linkKey('octo-org/calc', 1), l1!);
    await store.put(linkKey('octo-org/calc', 2), l2!);
    expect((await verifyChain(store, REPO)).broken).toBeNull();
    await store.delete(linkKey('octo-org/calc', 2));
    await rm(join(dir, 'jobs', 'job.3'), { recursive: true });
    expect((await verifyChain(store, REPO)).broken).toMatchObject({
      seq: 2,
      problem: expect.stringMatching(/missing from the chain/),
    });
    // Removing the head too is what a forger would do: the chain then ends one entry early, and the
    // head no longer matches.
    await store.put('chains/octo-org/calc/head.json', JSON.stringify({ seq: 2, hash: 'f'.repeat(64) }));
    await store.put(linkKey('octo-org/calc', 2), l2!);
    expect((await verifyChain(store, REPO)).broken?.seq).toBe(2);
  });

  it('a retention sweep removes old entries and their job folders, writes a chained sweep entry, and verify passes', async () => {
    await record('job.1', '2026-01-01T00:00:00Z');
    await store.put('jobs/job.1/files/trajectory.json', '{}');
    await record('job.2', '2026-01-02T00:00:00Z');
    await record('job.3', '2026-03-01T00:00:00Z');
    const result = await sweepChain(store, lock, REPO, {
      cutoff: new Date('2026-02-01T00:00:00Z'),
      retentionDays: 30,
      reason: 'older than the retention of 30 days',
      now: new Date('2026-03-03T00:00:00Z'),
    });
    expect(result).toMatchObject({ removedEntries: 2, removedJobs: ['job.1', 'job.2'] });
    expect(await store.list('jobs/job.1/')).toEqual([]);
    expect(await store.list('jobs/job.3/')).toHaveLength(1);
    const report = await verifyChain(store, REPO);
    expect(report.broken).toBeNull();
    expect(report.start).toBe(2);
    expect(report.sweeps).toEqual([
      expect.objectContaining({ seq: 3, removed: 2, reason: 'older than the retention of 30 days' }),
    ]);
    // The sweep entry is itself chained: editing it breaks the chain.
    const sweepFile = join(dir, 'repos', 'octo-org', 'calc', '0000000003-sweep.json');
    await writeFile(sweepFile, (await readFile(sweepFile, 'utf8')).replace('older than', 'younger than'));
    expect((await verifyChain(store, REPO)).broken?.seq).toBe(3);
  });

  it('two writers appending at once through the Redis lock get consecutive sequence numbers', async () => {
    const locks = [createRedisChainLock({ redis, prefix }), createRedisChainLock({ redis, prefix })];
    const stores = [createVolumeRecordStore({ dir }), createVolumeRecordStore({ dir })];
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        appendEntry(stores[i % 2]!, locks[i % 2]!, REPO, {
          kind: 'record',
          jobId: `job.${i}`,
          body: { runId: `r${i}` },
        }),
      ),
    );
    const report = await verifyChain(store, REPO);
    expect(report).toMatchObject({ broken: null, checked: 12, last: 11 });
  });
});
