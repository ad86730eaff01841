import { isAppError } from '../app-error.js';
import type { JobContext } from './job-context.js';
import type { Outcome } from './outcome.js';
import type { FinishedJob, JobPublisher } from './publishers/job-publisher.js';
import type { JobSource } from './sources/job-source.js';
import { chooseWinner } from './steps/choose-candidate.js';
import { classifyJobError } from './steps/classify-job-error.js';
import { cleanup } from './steps/cleanup.js';
import { prepare } from './steps/prepare.js';
import { publish } from './steps/publish.js';
import { runCandidates } from './steps/run-candidates.js';
import { verifyCandidates } from './steps/verify-candidates.js';

/**
 * The chain of DESIGN.md ("The way a job flows"), the same for every source and publisher:
 * prepare → candidates (the agent runs) → verify → choose → publish, then one classification of
 * whatever was thrown, then cleanup. Never throws: every error becomes an {@link Outcome}.
 *
 * One candidate and N candidates take the same path; a source (a GitHub issue, a local folder…)
 * and a publisher (a draft pull request, an output folder…) are plugged in.
 */
export async function runPipeline<T>(
  ctx: JobContext,
  source: JobSource<T>,
  publisher: JobPublisher<T>,
): Promise<Outcome> {
  const finished: Omit<FinishedJob<T>, 'outcome'> & { candidates: FinishedJob<T>['candidates'] } = {
    candidates: [],
  };
  let workspace: string | undefined;
  let outcome: Outcome;
  try {
    const job = await prepare(ctx, source, (path) => (workspace = path));
    finished.job = job;
    finished.candidates = await runCandidates(ctx, job);
    finished.summary = finished.candidates.find((c) => c.summary)?.summary;
    await verifyCandidates(ctx, job, finished.candidates);
    const decision = await chooseWinner(ctx, finished.candidates);
    finished.choice = decision.choice;
    if (decision.chosen) {
      finished.chosen = decision.chosen;
      finished.summary = decision.chosen.summary;
      outcome = await publish(ctx, job, decision.chosen, decision.choice, publisher);
    } else {
      outcome = decision.outcome;
    }
  } catch (err) {
    if (!ctx.signal.aborted && !isAppError(err, 'CANCELLED')) ctx.logger.warn({ err }, 'job failed');
    outcome = classifyJobError(err, ctx.signal, finished.summary);
  }
  await cleanup(ctx, publisher, { ...finished, outcome }, workspace, ctx.keepWorkspace);
  return outcome;
}
