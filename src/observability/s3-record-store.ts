import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { assertRecordKey, storeUnavailable, type RecordStore } from './record-store.js';

/** Options of {@link createS3RecordStore} (RECORD_S3_* variables). */
export interface S3RecordStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket (no leading or trailing `/`), or empty. */
  prefix?: string;
  /** Endpoint URL of an S3-compatible server (MinIO, Ceph RGW…); default AWS for `region`. */
  endpoint?: string;
  region?: string;
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`): what MinIO and most on-prem servers need. */
  forcePathStyle?: boolean;
  /** Static credentials; without them the SDK's default chain (env, web identity, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Per-request timeout, milliseconds (default 10 000), so a hung store does not hold a job. */
  requestTimeoutMs?: number;
}

/**
 * The S3 driver of {@link RecordStore}, through `@aws-sdk/client-s3` (the maintained AWS SDK v3
 * client; S3 API reference: https://docs.aws.amazon.com/AmazonS3/latest/API/). `PutObject` replaces
 * an object atomically, as the volume driver's rename does. The SDK retries throttling and 5xx
 * answers itself (3 attempts); what still fails is AppError `RECORD_STORE_UNAVAILABLE`.
 */
export function createS3RecordStore(options: S3RecordStoreOptions): RecordStore {
  const prefix = options.prefix ? `${options.prefix.replace(/^\/+|\/+$/g, '')}/` : '';
  const location = `s3://${options.bucket}${prefix ? `/${prefix.slice(0, -1)}` : ''}`;
  const timeout = options.requestTimeoutMs ?? 10_000;
  const client = new S3Client({
    region: options.region ?? 'us-east-1',
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle ?? true,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    requestHandler: { requestTimeout: timeout, connectionTimeout: timeout },
  });
  const Bucket = options.bucket;
  const full = (key: string): string => {
    assertRecordKey(key);
    return `${prefix}${key}`;
  };
  return {
    location,
    async put(key, body) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket,
            Key: full(key),
            Body: typeof body === 'string' ? Buffer.from(body) : body,
          }),
        );
      } catch (err) {
        throw storeUnavailable(location, `write ${key}`, err);
      }
    },
    async get(key) {
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: full(key) }));
        if (!res.Body) return Buffer.alloc(0);
        return Buffer.from(await res.Body.transformToByteArray());
      } catch (err) {
        if (
          err instanceof S3ServiceException &&
          (err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404)
        )
          return null;
        throw storeUnavailable(location, `read ${key}`, err);
      }
    },
    async list(listPrefix) {
      assertRecordKey(listPrefix, { prefix: true });
      const keys: string[] = [];
      let token: string | undefined;
      try {
        do {
          const res = await client.send(
            new ListObjectsV2Command({ Bucket, Prefix: `${prefix}${listPrefix}`, ContinuationToken: token }),
          );
          for (const o of res.Contents ?? []) if (o.Key) keys.push(o.Key.slice(prefix.length));
          token = res.IsTruncated ? res.NextContinuationToken : undefined;
        } while (token);
      } catch (err) {
        throw storeUnavailable(location, `list ${listPrefix}`, err);
      }
      return keys.sort();
    },
    async delete(key) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket, Key: full(key) }));
      } catch (err) {
        throw storeUnavailable(location, `delete ${key}`, err);
      }
    },
    close() {
      client.destroy();
    },
  };
}
