import { AppError } from '../../app-error.js';
import type { EffectivePolicy } from '../../config/policy.js';
import { loopFailure, type Trajectory } from '../../leaf/trajectory.js';
import type { JobPolicy } from '../job-context.js';
import type { Outcome, RunSummary } from '../outcome.js';
import type { RefusedPatch, VerifiedPatch } from '../verify-patch.js';
import { classifyJobError } from './classify-job-error.js';
import type { CandidateNames } from './candidate-names.js';

/** What became of one candidate (one independent agent run) while the job ran. */
export interface CandidateState {
  names: CandidateNames;
  trajectory?: Trajectory;
  summary?: RunSummary;
  /** Set when the loop ended without a patch to verify (no change, model or sandbox failure…). */
  ended?: Outcome;
  verified?: RefusedPatch | VerifiedPatch;
  /**
   * The change that was verified, when it is not the trajectory's patch (a follow-up round: the
   * whole change since the base, `PreparedJob.wholeChange`).
   */
  change?: string;
  /** An error that ended the candidate (its sandbox failed, its patch did not apply…). */
  error?: unknown;
  /** One sentence about how it ended, for the candidates table. */
  note?: string;
}

/**
 * How many independent candidates a job runs (best-of-N): the policy's `attempts` (built-in
 * default 1; best-of-N costs N model runs, so an admin or the repository asks for it, within the
 * admin cap that `resolveEffectivePolicy` clamps to).
 */
export function bestOfN(policy: Pick<Partial<EffectivePolicy>, 'attempts'>): number {
  return Math.max(1, Math.floor(policy.attempts ?? 1));
}

/** The state of a candidate whose loop returned `trajectory`. */
export function finishedCandidate(
  names: CandidateNames,
  trajectory: Trajectory,
  jobId: string,
  policy: JobPolicy,
  signal: AbortSignal,
): CandidateState {
  const summary = summarize(jobId, trajectory, policy);
  if (names.of > 1) summary.attempt = { number: names.candidate, of: names.of };
  const ended = loopOutcome(trajectory, summary, signal);
  return {
    names,
    trajectory,
    summary,
    ...(ended ? { ended, note: outcomeNote(ended) } : {}),
  };
}

/** One line of an error's message, at most 200 characters. */
export function errorNote(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

function outcomeNote(outcome: Outcome): string {
  switch (outcome.kind) {
    case 'no_change':
      return 'no change';
    case 'llm_unreachable':
    case 'sandbox_failed':
    case 'timed_out':
    case 'github_error':
    case 'failed':
      return errorNote(outcome.message);
    case 'cancelled':
      return 'cancelled';
    default:
      return outcome.kind;
  }
}

/**
 * The outcome of a loop that cannot go on to verify, or `null` when its patch should be verified:
 * cancelled; model server or sandbox failure (by the loop's error code); out of time; no change.
 * A loop that hit the step, context or per-turn token cap with a patch goes on: the tests decide,
 * and the pull request names the exit reason.
 */
function loopOutcome(trajectory: Trajectory, summary: RunSummary, signal: AbortSignal): Outcome | null {
  const fail = (err: AppError): Outcome => classifyJobError(err, signal, summary);
  // The loop keeps the error that ended it whole (code, details): nothing is rebuilt from its text.
  const failure = loopFailure(trajectory);
  if (failure) return fail(failure);
  if (trajectory.patch === null) {
    return fail(
      new AppError('PATCH_FAILED', trajectory.error ?? 'the change could not be read from the sandbox'),
    );
  }
  if (trajectory.patch === '') return { kind: 'no_change', summary };
  return null;
}

/** The run's facts, with the caps it ran under and the clamps, so the comment can name a cap that stopped it. */
function summarize(jobId: string, t: Trajectory, policy: JobPolicy): RunSummary {
  const source = (key: 'maxSteps' | 'maxTimeSec'): string => policy.sources?.[key] ?? 'default';
  return {
    jobId,
    exitReason: t.exitReason,
    steps: t.steps.length,
    maxSteps: policy.maxSteps,
    promptTokens: t.totalTokens.prompt,
    completionTokens: t.totalTokens.completion,
    elapsedMs: t.elapsedMs,
    finalMessage: t.finalMessage,
    caps: {
      maxSteps: { value: policy.maxSteps, source: source('maxSteps') },
      maxTimeSec: { value: policy.maxTimeSec, source: source('maxTimeSec') },
    },
    ...(policy.clamps?.length ? { clamps: policy.clamps } : {}),
  };
}
