import { rm } from 'node:fs/promises';
import type { JobContext } from '../job-context.js';
import type { FinishedJob, JobPublisher } from '../publishers/job-publisher.js';

/**
 * The last step, whatever the outcome: the publisher's `finish` (errors logged), every sandbox
 * still alive destroyed, the job's workspace removed (unless `keepWorkspace`). Never throws.
 */
export async function cleanup<T>(
  ctx: JobContext,
  publisher: JobPublisher<T>,
  finished: FinishedJob<T>,
  workspace: string | undefined,
  keepWorkspace = false,
): Promise<void> {
  try {
    await publisher.finish?.(ctx, finished);
  } catch (err) {
    ctx.logger.error({ err }, 'the publisher could not finish');
  }
  await ctx.sandboxes.destroyAll();
  if (workspace && !keepWorkspace)
    await rm(workspace, { recursive: true, force: true }).catch(() => undefined);
}
