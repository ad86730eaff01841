import type { Redis } from 'ioredis';
import type { AppEnv } from '../config/env.js';
import { createRedisChainLock, type ChainLock } from './chain-lock.js';
import type { Logger } from './logger.js';
import { createRecordSpool } from './record-spool.js';
import { createRecordStore } from './record-store-config.js';
import type { RecordStore } from './record-store.js';
import { createRecordWriter, type RecordWriter } from './record-writer.js';

/** The record store of a process, its chain lock (Redis) and a writer with a local spool. */
export interface RecordServices {
  store: RecordStore;
  lock: ChainLock;
  writer: RecordWriter;
  /** Stop the retry loop (after a drain in progress) and release the store's connections. */
  close(): Promise<void>;
}

/**
 * Build the record services of `serve` or `worker` from the environment: the store RECORD_STORE
 * selects, appends serialised by a Redis lock under QUEUE_PREFIX, pending entries in
 * RECORD_SPOOL_DIR retried every RECORD_RETRY_MS (the loop starts here).
 */
export function createRecordServices(env: AppEnv, redis: Redis, logger: Logger): RecordServices {
  const store = createRecordStore(env.record);
  const lock = createRedisChainLock({ redis, prefix: env.queuePrefix });
  const spool = createRecordSpool({ dir: env.record.spoolDir, logger });
  const writer = createRecordWriter({ store, lock, spool, logger, retryMs: env.record.retryMs });
  const stop = writer.start();
  return {
    store,
    lock,
    writer,
    async close() {
      await stop();
      store.close();
    },
  };
}
