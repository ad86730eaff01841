import type { Logger } from '../observability/logger.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { JobData } from './job-data.js';

/**
 * What the worker reports about one job as it moves on. The queue defines it and knows nothing of
 * where it is shown: `bin` wires the GitHub status comment (`src/github-app/status-comment.ts`),
 * whose states are these plus the ones only `serve` shows.
 */
export type JobReport =
  /** In the queue; `position` 1 means next to start. */
  | {
      phase: 'queued';
      position: number | null;
      triggeredBy?: string;
      /** Set when a worker handed the job back (shutdown): why it waits again. */
      again?: string;
    }
  /** The agent loop is running: `step` of `maxSteps` (null when unknown yet). */
  | { phase: 'running'; step: number; maxSteps: number | null }
  /** Setting up: clone, sandbox, egress probe. */
  | { phase: 'preparing' }
  /** Running the repository's tests on the patched tree. */
  | { phase: 'testing'; command?: string | null }
  /** Pushing the branch and opening the pull request. */
  | { phase: 'publishing' }
  /**
   * An infrastructure error; the queue runs the job again: retry `retry` (1 = the first re-run after
   * the first try) of `maxRetries` (JOB_RETRIES or the admin policy).
   */
  | { phase: 'retrying'; retry: number; maxRetries: number; reason: string }
  /** The job ended. */
  | { phase: 'finished'; outcome: Outcome };

/** Where one job's reports go. */
export interface JobReporter {
  /**
   * Show `report`. Calls are made in order; the worker logs a rejection and goes on (the final
   * report is tried three times).
   */
  update(report: JobReport): Promise<unknown>;
}

/**
 * Makes the reporter of one job, given the client the worker obtained for the job's installation
 * (`JobWorkerOptions.getClient`). Must not throw.
 */
export type JobReporterFactory<Client> = (
  client: Client,
  data: JobData,
  context: { jobId: string; logger: Logger },
) => JobReporter;
