import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cloneFolderPrefix, jobFolders, writeOwner } from '../../sandbox/local/leftover-folders.js';
import type { JobContext } from '../job-context.js';
import type { JobSource, PreparedJob } from '../sources/job-source.js';

/**
 * Step 1 of the chain: remove what an earlier, killed run of this job left, make the job's
 * workspace (`<workDir>/<jobId>-XXXXXX`, `onWorkspace` learns it at once so cleanup removes it),
 * and let the source prepare the checkout and the policy in it.
 *
 * @throws whatever the source throws (refusals, GitHub and clone errors); `CANCELLED`.
 */
export async function prepare<T>(
  ctx: JobContext,
  source: JobSource<T>,
  onWorkspace: (path: string) => void,
): Promise<PreparedJob<T>> {
  ctx.signal.throwIfAborted();
  await removeLeftovers(ctx);
  await ctx.progress({ stage: 'preparing' });
  await mkdir(ctx.workDir, { recursive: true });
  const workspace = await mkdtemp(join(ctx.workDir, cloneFolderPrefix(ctx.jobId)));
  onWorkspace(workspace);
  await writeOwner(workspace);
  const job = await source.prepare(ctx, workspace);
  ctx.onFacts({ policy: job.policy, baseSha: job.baseSha, dir: job.dir });
  ctx.signal.throwIfAborted();
  return job;
}

/**
 * Remove what earlier runs of this job left when their worker was killed: clones in the work
 * folder (`<jobId>-XXXXXX`) and the sandbox driver's folders. A job id runs once at a time (the
 * BullMQ lock), so whatever carries it now is a leftover. Never throws.
 */
async function removeLeftovers(ctx: JobContext): Promise<void> {
  const removed: string[] = [];
  for (const f of await jobFolders(ctx.workDir, 'clone', ctx.jobId)) {
    await rm(f.path, { recursive: true, force: true }).then(
      () => removed.push(f.path),
      (err: unknown) =>
        ctx.logger.warn(
          { err: { message: (err as Error).message }, dir: f.path },
          'cannot remove a leftover clone',
        ),
    );
  }
  removed.push(...((await ctx.sandboxes.factory.removeLeftovers?.(ctx.jobId).catch(() => [])) ?? []));
  if (removed.length > 0)
    ctx.logger.info({ removed }, 'removed the folders of an earlier, killed run of this job');
}
