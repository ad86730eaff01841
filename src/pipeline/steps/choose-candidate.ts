import { AppError } from '../../app-error.js';
import type { JobContext } from '../job-context.js';
import type { Outcome, RunSummary } from '../outcome.js';
import {
  chooseCandidate,
  type CandidateChoice,
  type CandidateResult,
} from '../verification/choose-candidate.js';
import type { VerifiedPatch } from '../verify-patch.js';
import type { CandidateState } from './candidate-state.js';

/** The candidate chosen for publishing, with what the publisher shows about it. */
export interface ChosenCandidate {
  state: CandidateState;
  /**
   * The change to publish (`git diff --binary` against the base; not empty): the agent's patch, or
   * for a follow-up round the whole change since the base (`CandidateState.change`).
   */
  patch: string;
  verified: VerifiedPatch;
  summary: RunSummary;
  /** Whether its tests count as failing ({@link testsFail}). */
  testsFailing: boolean;
}

/** What step 4 decided: the choice (always), and the chosen candidate or the job's outcome without one. */
export type CandidateDecision =
  | { choice: CandidateChoice; chosen: ChosenCandidate }
  | { choice: CandidateChoice; chosen: null; outcome: Outcome };

/**
 * Step 4 of the chain: choose the best verified candidate (`chooseCandidate`'s rules). With several
 * candidates the choice is stored (`candidates.json`, for `frognano-bot trajectory`), and the chosen
 * trajectory as `trajectory.json`. Without a candidate to publish: a refusal first (people need to
 * know a check stopped the change), then "no change", then the first failure.
 *
 * @throws the error of the first failed candidate when that is all there is.
 */
export async function chooseWinner(
  ctx: JobContext,
  candidates: readonly CandidateState[],
): Promise<CandidateDecision> {
  const choice = chooseCandidate(candidates.map(toAttemptResult));
  if (candidates.length > 1) await saveChoice(ctx, candidates, choice);
  const state = candidates.find((c) => c.names.candidate === choice.winner?.attempt);
  const verified = state?.verified;
  if (!state || !verified || verified.refused || !state.trajectory || !state.summary) {
    return { choice, chosen: null, outcome: noWinner(candidates, choice) };
  }
  const summary = state.summary;
  return {
    choice,
    chosen: {
      state,
      patch: state.change ?? state.trajectory.patch ?? '',
      verified,
      summary,
      testsFailing: testsFail(verified),
    },
  };
}

function toAttemptResult(c: CandidateState): CandidateResult {
  const base = {
    attempt: c.names.candidate,
    exitReason: c.trajectory?.exitReason,
    steps: c.trajectory?.steps.length,
  };
  const v = c.verified;
  if (v?.refused) {
    const detail = v.details[0];
    return { ...base, status: 'refused', note: detail ? `${v.reason} ${detail}` : v.reason };
  }
  if (v) {
    return {
      ...base,
      status: 'verified',
      comparison: v.comparison,
      linesChanged: v.linesChanged,
      filesChanged: v.files.length,
      tampered: v.tampering.flagged,
    };
  }
  if (c.ended?.kind === 'no_change') return { ...base, status: 'no_change' };
  return { ...base, status: 'failed', note: c.note };
}

function noWinner(candidates: readonly CandidateState[], choice: CandidateChoice): Outcome {
  const first = candidates.find((c) => c.verified?.refused);
  if (first?.verified?.refused) {
    const single = candidates.length === 1;
    return {
      kind: 'refused',
      stage: 'patch',
      reason: single
        ? first.verified.reason
        : `None of the ${candidates.length} attempts can be published. Attempt ${first.names.candidate}: ${first.verified.reason}`,
      details: single ? first.verified.details : choice.rows.map((r) => `Attempt ${r.attempt}: ${r.result}`),
      summary: first.summary,
    };
  }
  const unchanged = candidates.find((c) => c.ended?.kind === 'no_change');
  if (unchanged?.ended) return unchanged.ended;
  const failed = candidates.find((c) => c.ended || c.error !== undefined);
  if (failed?.ended) return failed.ended;
  throw failed?.error ?? new AppError('INTERNAL', 'no attempt ended with a result');
}

/**
 * Whether the tests count as failing with the change (outcome `tests_failing`: no pull request unless
 * the policy allows drafts). With per-test results: when anything broke (see
 * `TestComparison.nothingBroken`), or when the suite still fails and the change made no failing test
 * pass — unless it changed the tests in a flagged way: such a change is always shown to a person,
 * with the tampering warning, rather than only described in the status comment. With exit codes
 * only: when the suite fails on the patched tree.
 */
export function testsFail(v: VerifiedPatch): boolean {
  if (!v.tests) return false;
  const c = v.comparison;
  if (c?.granularity === 'per-test') {
    if (!c.nothingBroken) return true;
    return !v.tests.passed && c.fixed.length === 0 && !v.tampering.flagged;
  }
  return !v.tests.passed;
}

/** `candidates.json` (the choice, for `frognano-bot trajectory`) and the chosen trajectory as `trajectory.json`. */
async function saveChoice(
  ctx: JobContext,
  candidates: readonly CandidateState[],
  choice: CandidateChoice,
): Promise<void> {
  try {
    await ctx.store.saveJson(ctx.jobId, 'candidates', {
      chosen: choice.winner?.attempt ?? null,
      reason: choice.reason,
      rows: choice.rows,
    });
    const chosen = candidates.find((c) => c.names.candidate === choice.winner?.attempt)?.trajectory;
    if (chosen) await ctx.store.saveJson(ctx.jobId, 'trajectory', chosen);
  } catch (err) {
    ctx.logger.warn({ err }, 'could not store the candidates summary');
  }
}
