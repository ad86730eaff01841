import type { JobContext } from '../job-context.js';
import type { Outcome, RunSummary } from '../outcome.js';
import type { PreparedJob } from '../sources/job-source.js';
import type { CandidateState } from '../steps/candidate-state.js';
import type { ChosenCandidate } from '../steps/choose-candidate.js';
import type { CandidateChoice } from '../verification/choose-candidate.js';

/** What the chain knows when a job has ended, whatever the outcome (for {@link JobPublisher.finish}). */
export interface FinishedJob<T = unknown> {
  outcome: Outcome;
  /** Absent when the job ended before its source was prepared (refused, cancelled…). */
  job?: PreparedJob<T>;
  /** Every candidate, in candidate order (empty when none ran). */
  candidates: readonly CandidateState[];
  /** The choice between the candidates, once made. */
  choice?: CandidateChoice;
  /** The chosen candidate, when there was one to publish. */
  chosen?: ChosenCandidate;
  /** The run summary the outcome carries (of the chosen, else the first candidate). */
  summary?: RunSummary;
}

/**
 * Where a job's result goes (DESIGN.md "publish"): a draft pull request; an output folder
 * (`frognano-bot run`); next, the results of an evaluation. The chain calls `publish` with the
 * chosen, verified candidate (its checkout at `job.dir`, at the base commit with a clean index),
 * then `finish` once with the job's outcome, whatever it is, before cleanup.
 */
export interface JobPublisher<T = unknown> {
  /**
   * Publish the chosen candidate and say how the job ended (`pr_opened`, `tests_failing`,
   * `patch_ready`…). Errors it throws are classified like any other (`classifyError`).
   */
  publish(
    ctx: JobContext,
    job: PreparedJob<T>,
    chosen: ChosenCandidate,
    choice: CandidateChoice,
  ): Promise<Outcome>;
  /** Called once with every outcome (after `publish`, or instead of it); errors are logged, not fatal. */
  finish?(ctx: JobContext, finished: FinishedJob<T>): Promise<void>;
}
