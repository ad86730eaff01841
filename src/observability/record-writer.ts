import { readFile } from 'node:fs/promises';
import type { ChainLock } from './chain-lock.js';
import type { Logger } from './logger.js';
import { appendEntry } from './record-chain.js';
import type { RecordSpool, SpoolItem } from './record-spool.js';
import type { RecordStore } from './record-store.js';

/** One entry to store, with the files that go with it (uploaded first). */
export interface EntryToWrite {
  repository: string;
  kind: 'record' | 'approval';
  jobId: string | null;
  body: Record<string, unknown>;
  at: Date;
  /** A local file (`path`) or bytes (`data`) to put at `key`. */
  files: Array<{ key: string; path?: string; data?: string | Uint8Array }>;
}

/** `stored`: in the store and chained; `pending`: kept in the spool, retried until stored. */
export type WriteState = 'stored' | 'pending';

/**
 * Writes entries to the record store without ever failing the caller: a store that is down, slow
 * (over `timeoutMs`) or locked puts the entry in the {@link RecordSpool}, and {@link RecordWriter.start}
 * retries it every `retryMs` until it is stored. Storing is idempotent (the chain de-duplicates by
 * run id / entry id), so a write that timed out here but landed later is not chained twice.
 */
export interface RecordWriter {
  readonly store: RecordStore;
  readonly lock: ChainLock;
  write(entry: EntryToWrite): Promise<WriteState>;
  /** Try the pending entries once. */
  drain(): Promise<{ stored: number; waiting: number }>;
  /** Retry pending entries now and every `retryMs`; returns the stop function (awaits a drain in progress). */
  start(): () => Promise<void>;
}

/** Create a {@link RecordWriter}. `timeoutMs` (default 15 000) bounds one direct write. */
export function createRecordWriter(options: {
  store: RecordStore;
  lock: ChainLock;
  spool: RecordSpool;
  logger: Logger;
  retryMs: number;
  timeoutMs?: number;
}): RecordWriter {
  const { store, lock, spool, logger } = options;
  const storeNow = async (
    entry: Omit<EntryToWrite, 'files' | 'at'> & { at: Date },
    files: Array<{ key: string; read: () => Promise<Buffer | string | Uint8Array> }>,
  ): Promise<void> => {
    for (const f of files) await store.put(f.key, await f.read());
    await appendEntry(store, lock, entry.repository, {
      kind: entry.kind,
      jobId: entry.jobId,
      body: entry.body,
      at: entry.at,
    });
  };
  const writeSpooled = async (item: SpoolItem, readOf: (name: string) => Promise<Buffer>): Promise<void> =>
    storeNow(
      {
        repository: item.repository,
        kind: item.kind,
        jobId: item.jobId,
        body: item.body,
        at: new Date(item.at),
      },
      item.files.map((f) => ({ key: f.key, read: () => readOf(f.name) })),
    );
  let draining: Promise<{ stored: number; waiting: number }> | null = null;
  const drain = (): Promise<{ stored: number; waiting: number }> =>
    (draining ??= spool.drain(writeSpooled).finally(() => {
      draining = null;
    }));
  return {
    store,
    lock,
    async write(entry) {
      const files = entry.files.map((f) => ({
        key: f.key,
        read: async () => (f.path ? await readFile(f.path) : (f.data ?? '')),
      }));
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          storeNow(entry, files),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(new Error(`the record store did not answer within ${options.timeoutMs ?? 15_000} ms`)),
              options.timeoutMs ?? 15_000,
            );
          }),
        ]);
        return 'stored';
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        logger.warn(
          { err: { message }, jobId: entry.jobId, kind: entry.kind },
          'run record store unavailable; record kept pending',
        );
        await spool.add(
          {
            repository: entry.repository,
            kind: entry.kind,
            jobId: entry.jobId,
            body: entry.body,
            at: entry.at.toISOString(),
          },
          entry.files,
          message,
        );
        return 'pending';
      } finally {
        clearTimeout(timer);
      }
    },
    drain,
    start() {
      const tick = (): void => {
        drain()
          .then((r) => {
            if (r.waiting > 0)
              logger.warn({ waiting: r.waiting }, 'run records still waiting for the record store');
          })
          .catch((err: unknown) => logger.warn({ err }, 'could not retry pending run records'));
      };
      tick();
      const timer = setInterval(tick, options.retryMs);
      timer.unref();
      return async () => {
        clearInterval(timer);
        await draining?.catch(() => undefined);
      };
    },
  };
}
