import { classifyError, type Outcome, type RunSummary } from '../outcome.js';

/**
 * The outcome of an error that ended a job (or of a loop that stopped for a reason that is an
 * error): a job whose signal aborted was cancelled, whatever the interrupted call threw, so
 * `signal.reason` (an AppError `CANCELLED` with `details.by`, set by whoever aborted) is classified
 * instead of `err`.
 */
export function classifyJobError(
  err: unknown,
  signal: AbortSignal,
  summary: RunSummary | undefined,
): Outcome {
  return classifyError(signal.aborted ? signal.reason : err, { summary });
}
