import type { RecordStoreEnv } from '../config/env.js';
import { createVolumeRecordStore, type RecordStore } from './record-store.js';
import { createS3RecordStore } from './s3-record-store.js';

/**
 * The record store RECORD_STORE selects: `volume` (RECORD_DIR) or `s3` (RECORD_S3_*).
 *
 * @throws AppError `CONFIG_INVALID` is raised earlier by `loadEnv` (s3 without a bucket); here an
 *   s3 configuration without a bucket throws a plain Error (a programming error).
 */
export function createRecordStore(env: RecordStoreEnv): RecordStore {
  if (env.driver === 'volume') return createVolumeRecordStore({ dir: env.dir });
  if (!env.s3) throw new Error('RECORD_STORE=s3 needs RECORD_S3_BUCKET');
  return createS3RecordStore({
    bucket: env.s3.bucket,
    endpoint: env.s3.endpoint ?? undefined,
    region: env.s3.region,
    prefix: env.s3.prefix ?? undefined,
    forcePathStyle: env.s3.forcePathStyle,
    credentials: env.s3.credentials ?? undefined,
  });
}
