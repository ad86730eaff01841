import { AppError, isAppError } from '../../app-error.js';
import { resetToHead } from '../../git/apply-patch.js';
import type { JobContext } from '../job-context.js';
import { sandboxSettingsOf } from '../sandbox-settings.js';
import type { PreparedJob } from '../sources/job-source.js';
import { verifyPatch, type BaseTestsMemo } from '../verify-patch.js';
import { errorNote, type CandidateState } from './candidate-state.js';

/**
 * Step 3 of the chain: verify, candidate by candidate, in the checkout — the patch applied (a
 * candidate whose patch does not apply fails), the checks that refuse a patch (protected paths,
 * patch limits, secrets), the tests on the base tree (once, shared) and on the patched tree, each
 * in a fresh probed sandbox, the base → head comparison and the test-tampering check. Fills
 * `verified` (or `error`) of each candidate that has a patch; the checkout is reset after each.
 * With `job.wholeChange` (a follow-up round), what is verified is the whole change since the base
 * (kept as the candidate's `change`).
 *
 * @throws AppError `CANCELLED` (the signal's reason), `EGRESS_NOT_BLOCKED`.
 */
export async function verifyCandidates(
  ctx: JobContext,
  job: PreparedJob,
  candidates: readonly CandidateState[],
): Promise<void> {
  const base: BaseTestsMemo = {};
  const toVerify = candidates.filter((c) => c.trajectory && !c.ended);
  if (toVerify.length > 0) await ctx.progress({ stage: 'testing' });
  for (const c of toVerify) {
    ctx.signal.throwIfAborted();
    try {
      const patch = await changeToVerify(job, c);
      c.verified = await verifyPatch({
        dir: job.dir,
        patch,
        jobId: ctx.jobId,
        sandboxFactory: ctx.sandboxes.factory,
        sandboxSettings: sandboxSettingsOf(job.policy),
        testCommand: job.policy.testCommand,
        skipTests: ctx.skipTests,
        setupCommand: job.policy.setupCommand,
        testTimeoutMs: ctx.testTimeoutMs,
        protectedPaths: job.policy.protectedPaths,
        limits: ctx.patchLimits,
        base,
        headName: c.names.headName,
        store: ctx.store,
        signal: ctx.signal,
        logger: c.names.logger,
      });
    } catch (err) {
      ctx.signal.throwIfAborted();
      if (isAppError(err, 'CANCELLED') || isAppError(err, 'EGRESS_NOT_BLOCKED')) throw err;
      c.error = err;
      c.note = errorNote(err);
    } finally {
      await resetToHead(job.dir).catch((err: unknown) =>
        ctx.logger.warn({ err }, 'could not reset the clone'),
      );
    }
  }
}

/** The agent's patch, or the whole change since the base it makes (kept in `c.change`). */
async function changeToVerify(job: PreparedJob, c: CandidateState): Promise<string> {
  const patch = c.trajectory?.patch ?? '';
  if (!job.wholeChange) return patch;
  c.change = await job.wholeChange(patch);
  if (c.change === '') {
    throw new AppError(
      'PATCH_FAILED',
      "the change undoes the pull request's whole change: nothing would be left to review",
    );
  }
  return c.change;
}
