import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadEnv, loadRecordEnv } from '../../../src/config/env.js';

const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs1', format: 'pem' })
  .toString();
const APP = { APP_ID: '1', PRIVATE_KEY: PEM, WEBHOOK_SECRET: 'a-webhook-secret' };

describe('RECORD_* variables', () => {
  it('default to the volume store with a year of retention', () => {
    const env = loadEnv(APP);
    expect(env.record).toMatchObject({ driver: 'volume', s3: null, retentionDays: 365, retryMs: 30_000 });
    expect(env.record.dir).toMatch(/records$/);
  });

  it('select an S3-compatible bucket, credentials only when both keys are given', () => {
    const env = loadRecordEnv({
      RECORD_STORE: 's3',
      RECORD_S3_BUCKET: 'audit',
      RECORD_S3_ENDPOINT: 'http://minio:9000/',
      RECORD_S3_ACCESS_KEY_ID: 'AKIA',
      RECORD_S3_SECRET_ACCESS_KEY: 'shh',
    });
    expect(env.s3).toEqual({
      bucket: 'audit',
      endpoint: 'http://minio:9000',
      region: 'us-east-1',
      prefix: null,
      forcePathStyle: true,
      credentials: { accessKeyId: 'AKIA', secretAccessKey: 'shh' },
    });
  });

  it('refuse s3 without a bucket, half a key pair and a bad driver, naming each variable and no secret', () => {
    let message = '';
    try {
      loadEnv({
        ...APP,
        RECORD_STORE: 's3',
        RECORD_S3_SECRET_ACCESS_KEY: 'do-not-print',
        RECORD_RETENTION_DAYS: '0',
      });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('RECORD_S3_BUCKET: required when RECORD_STORE is s3');
    expect(message).toContain('RECORD_S3_ACCESS_KEY_ID and RECORD_S3_SECRET_ACCESS_KEY: set both or neither');
    expect(message).toContain('RECORD_RETENTION_DAYS: must be a whole number from 1 to 36500');
    expect(message).not.toContain('do-not-print');
    expect(() => loadRecordEnv({ RECORD_STORE: 'disk' })).toThrow(/RECORD_STORE: must be volume or s3/);
  });
});
