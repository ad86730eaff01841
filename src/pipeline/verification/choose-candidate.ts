import type { TestComparison } from './compare-test-runs.js';

/**
 * Best-of-N (issue 6, "Best-of-N"): several independent agent runs ("candidates") on the same issue;
 * the pull request carries the best verified one. The rules, in order:
 *
 * 1. nothing broken (no test passing on the base tree fails on the patched tree, no new failing
 *    test, the run completed);
 * 2. most tests fixed (failing on base → passing on head);
 * 3. tests not tampered with (a tie-break added to the issue's rules: between two candidates that fix
 *    as much, the one that leaves the tests alone is the one to review);
 * 4. smallest diff (lines added plus removed);
 * 5. the earlier candidate.
 *
 * Only candidates whose patch passed the checks (protected paths, limits) and was tested can be
 * chosen; the others are listed with what became of them.
 */

/** What became of one candidate. */
export type CandidateStatus =
  /** Patch applied, checked and tested: it can be chosen. */
  | 'verified'
  /** The model changed nothing. */
  | 'no_change'
  /** The patch was refused by a check (protected path, limits, secret). */
  | 'refused'
  /** The run or its verification failed (model server, sandbox, time, patch not applying). */
  | 'failed';

/** One candidate, as the chooser sees it. */
export interface CandidateResult {
  /** 1-based candidate number. */
  candidate: number;
  status: CandidateStatus;
  /** For `verified`: the base → head comparison, or `null` when the repository has no tests. */
  comparison?: TestComparison | null;
  /** Lines added plus removed by the patch. */
  linesChanged?: number;
  filesChanged?: number;
  /** Whether the test-tampering check flagged the patch. */
  tampered?: boolean;
  /** For the other statuses: why, in one sentence (refusal reason, error message). */
  note?: string;
  /** The loop's exit reason and steps, for the table. */
  exitReason?: string | null;
  steps?: number;
}

/** One row of the candidates table. */
export interface CandidateRow {
  candidate: number;
  chosen: boolean;
  /** What the candidate achieved, for people: `1 fixed, 0 broken, 1 still failing; 4 lines in 1 file`. */
  result: string;
}

/** The decision. */
export interface CandidateChoice {
  /** The chosen candidate, or `null` when no candidate can be chosen. */
  winner: CandidateResult | null;
  /** Why, one or two sentences for the pull request (also when there is no winner). */
  reason: string;
  /** Every candidate, in candidate order. */
  rows: CandidateRow[];
}

interface Ranked {
  a: CandidateResult;
  nothingBroken: boolean;
  fixed: number;
  tampered: boolean;
  lines: number;
}

function rank(a: CandidateResult): Ranked {
  const c = a.comparison ?? null;
  return {
    a,
    nothingBroken: c ? c.nothingBroken : true,
    fixed: c ? c.fixed.length : 0,
    tampered: a.tampered === true,
    lines: a.linesChanged ?? 0,
  };
}

/** Negative when `x` is better than `y`. */
function compare(x: Ranked, y: Ranked): number {
  if (x.nothingBroken !== y.nothingBroken) return x.nothingBroken ? -1 : 1;
  if (x.fixed !== y.fixed) return y.fixed - x.fixed;
  if (x.tampered !== y.tampered) return x.tampered ? 1 : -1;
  if (x.lines !== y.lines) return x.lines - y.lines;
  return x.a.candidate - y.a.candidate;
}

/**
 * Choose the candidate to publish.
 *
 * @param candidates every candidate, in any order (rows come back in candidate order).
 */
export function chooseCandidate(candidates: readonly CandidateResult[]): CandidateChoice {
  const ordered = [...candidates].sort((x, y) => x.candidate - y.candidate);
  const eligible = ordered
    .filter((a) => a.status === 'verified')
    .map(rank)
    .sort(compare);
  const best = eligible[0];
  const rows = ordered.map((a) => ({
    candidate: a.candidate,
    chosen: best !== undefined && a === best.a,
    result: describeCandidate(a),
  }));
  if (!best) {
    return {
      winner: null,
      reason:
        ordered.length === 1
          ? 'The candidate produced no change that could be tested.'
          : `None of the ${ordered.length} candidates produced a change that passed the checks and could be tested.`,
      rows,
    };
  }
  return { winner: best.a, reason: explain(best, eligible[1], ordered.length), rows };
}

function explain(best: Ranked, next: Ranked | undefined, total: number): string {
  const w = `Candidate ${best.a.candidate}`;
  if (total === 1) return `${w} was the only candidate.`;
  if (!next) {
    return `${w} was chosen: it is the only one of ${total} candidates whose change passed the checks and could be tested.`;
  }
  const n = `candidate ${next.a.candidate}`;
  if (best.nothingBroken !== next.nothingBroken) {
    return `${w} was chosen: it breaks no test, while ${n} (the next best) ${brokenText(next)}.`;
  }
  const prefix = best.nothingBroken ? 'it breaks no test and ' : 'no candidate is free of broken tests; it ';
  if (best.fixed !== next.fixed) {
    return `${w} was chosen: ${prefix}fixes ${tests(best.fixed)}, more than any other (next best: ${n} with ${next.fixed === 0 ? 'none fixed' : `${next.fixed} fixed`}).`;
  }
  const same = `fixes ${tests(best.fixed)}, as many as ${n}`;
  if (best.tampered !== next.tampered) {
    return `${w} was chosen: ${prefix}${same}, and it leaves the tests alone while ${n} modifies them.`;
  }
  if (best.lines !== next.lines) {
    return `${w} was chosen: ${prefix}${same}, with the smaller change (${lines(best.lines)} against ${lines(next.lines)}).`;
  }
  return `${w} was chosen: ${prefix}${same}, with a change of the same size; the earlier candidate is kept.`;
}

function brokenText(r: Ranked): string {
  const c = r.a.comparison;
  const broken = (c?.broken.length ?? 0) + (c?.newTests.filter((t) => t.status === 'failed').length ?? 0);
  return broken > 0 ? `breaks ${tests(broken)}` : 'did not complete its test run';
}

function tests(n: number): string {
  return `${n} test${n === 1 ? '' : 's'}`;
}

function lines(n: number): string {
  return `${n} line${n === 1 ? '' : 's'}`;
}

/** One line about a candidate for the candidates table. */
export function describeCandidate(a: CandidateResult): string {
  switch (a.status) {
    case 'no_change':
      return 'no change';
    case 'refused':
      return `refused: ${a.note ?? 'a check refused the change'}`;
    case 'failed':
      return `failed: ${a.note ?? 'the candidate did not finish'}`;
    case 'verified': {
      const c = a.comparison;
      const parts: string[] = [];
      if (!c) parts.push('no tests to run');
      else {
        const newFailing = c.newTests.filter((t) => t.status === 'failed').length;
        parts.push(
          `${c.fixed.length} fixed, ${c.broken.length} broken, ${c.stillFailing.length} still failing`,
        );
        if (newFailing > 0) parts.push(`${newFailing} new failing`);
        if (c.removedTests.length > 0) parts.push(`${c.removedTests.length} removed`);
      }
      const size =
        a.linesChanged !== undefined
          ? `${lines(a.linesChanged)}${a.filesChanged !== undefined ? ` in ${a.filesChanged} file${a.filesChanged === 1 ? '' : 's'}` : ''}`
          : null;
      return [parts.join(', '), size, a.tampered ? 'tests modified' : null]
        .filter((p) => p !== null)
        .join('; ');
    }
  }
}
