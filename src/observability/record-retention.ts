import type { ChainLock } from './chain-lock.js';
import type { Logger } from './logger.js';
import { listChains, sweepChain, type SweepResult } from './record-chain.js';
import type { RecordStore } from './record-store.js';

/**
 * The retention sweep of every chain in the store: entries older than `retentionDays` are removed
 * and a chained sweep entry says what and why (see `sweepChain`). A chain that fails is logged and
 * the others go on.
 *
 * @returns `swept`: one result per repository that had something to remove; `failed`: the
 *   repositories whose sweep failed, with the error message (they are tried again next time).
 */
export async function sweepRecords(options: {
  store: RecordStore;
  lock: ChainLock;
  retentionDays: number;
  now?: Date;
  logger?: Logger;
  /** Only this repository (`owner/name`). */
  repo?: string;
}): Promise<{ swept: SweepResult[]; failed: Array<{ repo: string; error: string }> }> {
  const now = options.now ?? new Date();
  const cutoff = new Date(now.getTime() - options.retentionDays * 24 * 3600 * 1000);
  const reason = `retention: older than ${options.retentionDays} days (RECORD_RETENTION_DAYS), cutoff ${cutoff.toISOString()}`;
  const results: SweepResult[] = [];
  const failed: Array<{ repo: string; error: string }> = [];
  const repos = options.repo ? [options.repo.toLowerCase()] : await listChains(options.store);
  for (const repo of repos) {
    try {
      const r = await sweepChain(options.store, options.lock, repo, {
        cutoff,
        retentionDays: options.retentionDays,
        reason,
        now,
      });
      if (r.entry) {
        results.push(r);
        options.logger?.info(
          { repo, removedEntries: r.removedEntries, removedJobs: r.removedJobs.length },
          'run record retention sweep',
        );
      }
    } catch (err) {
      failed.push({ repo, error: err instanceof Error ? err.message : String(err) });
      options.logger?.warn({ err, repo }, 'run record retention sweep failed for a repository');
    }
  }
  return { swept: results, failed };
}
