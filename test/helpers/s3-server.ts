/**
 * A real S3-protocol server for tests: `s3rver` (npm) on 127.0.0.1, a free port, objects in a
 * temporary folder, one bucket created. It speaks the S3 REST API (SigV4-signed requests accepted
 * with its fixed credentials `S3RVER`/`S3RVER`), so the AWS SDK talks to it as to MinIO.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error -- s3rver ships no type declarations; only the constructor, run() and close() are used.
import S3rver from 's3rver';

/** A running S3-protocol server. */
export interface TestS3Server {
  /** `http://127.0.0.1:<port>` (path-style). */
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Environment variables selecting this server as the record store. */
  env: Record<string, string>;
  /** Stop answering (connections refused) without losing objects; `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

/** Start s3rver with `bucket` (default `frognano-records`). */
export async function startTestS3Server(bucket = 'frognano-records'): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'frognano-s3-'));
  let port = 0;
  let server: S3rverInstance | null = null;
  const start = async (): Promise<void> => {
    const s = new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory,
      configureBuckets: [{ name: bucket }],
    }) as S3rverInstance;
    const address = await s.run();
    port = address.port;
    server = s;
  };
  await start();
  const stop = async (): Promise<void> => {
    const s = server;
    server = null;
    if (s) await s.close();
  };
  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  return {
    endpoint,
    bucket,
    credentials,
    env: {
      RECORD_STORE: 's3',
      RECORD_S3_BUCKET: bucket,
      RECORD_S3_ENDPOINT: endpoint,
      RECORD_S3_REGION: 'us-east-1',
      RECORD_S3_ACCESS_KEY_ID: credentials.accessKeyId,
      RECORD_S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
    stop,
    start,
    async close() {
      await stop();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
