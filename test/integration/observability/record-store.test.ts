/**
 * The record store contract, run against both drivers: files on a volume and a real S3-protocol
 * server (s3rver on loopback) through @aws-sdk/client-s3.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVolumeRecordStore, type RecordStore } from '../../../src/observability/record-store.js';
import { createS3RecordStore } from '../../../src/observability/s3-record-store.js';
import { startTestS3Server, type TestS3Server } from '../../helpers/s3-server.js';

function contract(
  name: string,
  open: () => Promise<{ store: RecordStore; down?: () => Promise<void>; up?: () => Promise<void> }>,
) {
  describe(`record store contract: ${name}`, () => {
    let store: RecordStore;
    let down: (() => Promise<void>) | undefined;
    let up: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ store, down, up } = await open());
    });

    it('puts, gets, lists by prefix in key order and deletes', async () => {
      await store.put('jobs/a.b.1/0000000001-record.json', '{"x":1}');
      await store.put('jobs/a.b.1/files/trajectory.json', new Uint8Array([123, 125]));
      await store.put('jobs/a.b.10/0000000000-record.json', 'ten');
      await store.put('chains/o/r/0000000000.json', 'link');
      expect((await store.get('jobs/a.b.1/0000000001-record.json'))?.toString()).toBe('{"x":1}');
      expect((await store.get('jobs/a.b.1/files/trajectory.json'))?.toString()).toBe('{}');
      expect(await store.get('jobs/a.b.1/nothing.json')).toBeNull();
      expect(await store.list('jobs/a.b.1/')).toEqual([
        'jobs/a.b.1/0000000001-record.json',
        'jobs/a.b.1/files/trajectory.json',
      ]);
      expect(await store.list('jobs/')).toHaveLength(3);
      await store.put('jobs/a.b.1/0000000001-record.json', 'replaced');
      expect((await store.get('jobs/a.b.1/0000000001-record.json'))?.toString()).toBe('replaced');
      await store.delete('jobs/a.b.1/0000000001-record.json');
      await store.delete('jobs/a.b.1/never-was.json');
      expect(await store.get('jobs/a.b.1/0000000001-record.json')).toBeNull();
      expect(await store.list('jobs/a.b.1/')).toEqual(['jobs/a.b.1/files/trajectory.json']);
    });

    it('refuses keys that could leave the store', async () => {
      for (const key of ['../etc/passwd', 'jobs/../../x', '/abs', 'jobs//x', 'jobs/a b']) {
        await expect(store.put(key, 'x')).rejects.toMatchObject({ code: 'RECORD_KEY_INVALID' });
      }
    });

    if (name === 's3')
      it('a store that is down fails with a retryable RECORD_STORE_UNAVAILABLE, and works again when back', async () => {
        await down?.();
        await expect(store.put('jobs/x/y.json', 'x')).rejects.toMatchObject({
          code: 'RECORD_STORE_UNAVAILABLE',
          retryable: true,
        });
        await up?.();
        await store.put('jobs/x/y.json', 'x');
        expect((await store.get('jobs/x/y.json'))?.toString()).toBe('x');
      });
  });
}

let dir: string;
let s3: TestS3Server;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frognano-records-'));
  s3 = await startTestS3Server();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await s3.close();
});

contract('volume', async () => ({ store: createVolumeRecordStore({ dir }) }));
contract('s3', async () => ({
  store: createS3RecordStore({
    bucket: s3.bucket,
    endpoint: s3.endpoint,
    credentials: s3.credentials,
    forcePathStyle: true,
    requestTimeoutMs: 2000,
  }),
  down: () => s3.stop(),
  up: () => s3.start(),
}));
