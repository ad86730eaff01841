import type { RecordStoreEnv } from '../config/env.js';
import { createVolumeRecordStore, type RecordStore } from './record-store.js';

/**
 * The record store RECORD_STORE selects: `volume` (RECORD_DIR) or `s3` (RECORD_S3_*). The AWS SDK
 * is loaded on the first call of an `s3` store only: a volume deployment (and every process start)
 * does not pay for it.
 *
 * @throws Error for `s3` without a bucket (`loadEnv` refuses that configuration first).
 */
export function createRecordStore(env: RecordStoreEnv): RecordStore {
  if (env.driver === 'volume') return createVolumeRecordStore({ dir: env.dir });
  const s3 = env.s3;
  if (!s3) throw new Error('RECORD_STORE=s3 needs RECORD_S3_BUCKET');
  let loaded: Promise<RecordStore> | null = null;
  let store: RecordStore | null = null;
  const get = (): Promise<RecordStore> =>
    (loaded ??= import('./s3-record-store.js').then(({ createS3RecordStore }) => {
      store = createS3RecordStore({
        bucket: s3.bucket,
        endpoint: s3.endpoint ?? undefined,
        region: s3.region,
        prefix: s3.prefix ?? undefined,
        forcePathStyle: s3.forcePathStyle,
        credentials: s3.credentials ?? undefined,
      });
      return store;
    }));
  const prefix = s3.prefix ? `/${s3.prefix.replace(/^\/+|\/+$/g, '')}` : '';
  return {
    location: `s3://${s3.bucket}${prefix}`,
    put: async (key, body) => (await get()).put(key, body),
    get: async (key) => (await get()).get(key),
    list: async (prefix) => (await get()).list(prefix),
    delete: async (key) => (await get()).delete(key),
    close: () => store?.close(),
  };
}
