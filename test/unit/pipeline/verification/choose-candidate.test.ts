import { describe, expect, it } from 'vitest';
import {
  chooseCandidate,
  type CandidateResult,
} from '../../../../src/pipeline/verification/choose-candidate.js';
import type { TestComparison } from '../../../../src/pipeline/verification/compare-test-runs.js';

function comparison(fixed: number, broken: number, stillFailing = 0): TestComparison {
  const ids = (n: number, p: string): string[] => Array.from({ length: n }, (_, i) => `${p}${i}`);
  return {
    granularity: 'per-test',
    fixed: ids(fixed, 'f'),
    broken: ids(broken, 'b'),
    stillFailing: ids(stillFailing, 's'),
    newTests: [],
    removedTests: [],
    passingOnBoth: 3,
    baseCounts: null,
    headCounts: null,
    nothingBroken: broken === 0,
  };
}

function verified(
  candidate: number,
  fixed: number,
  broken: number,
  lines: number,
  tampered = false,
): CandidateResult {
  return {
    candidate,
    status: 'verified',
    comparison: comparison(fixed, broken, 1),
    linesChanged: lines,
    filesChanged: 1,
    tampered,
  };
}

describe('chooseCandidate', () => {
  it('prefers an attempt that breaks nothing over one that fixes more but breaks a test', () => {
    const choice = chooseCandidate([verified(1, 2, 1, 10), verified(2, 1, 0, 30)]);
    expect(choice.winner?.candidate).toBe(2);
    expect(choice.reason).toBe(
      'Candidate 2 was chosen: it breaks no test, while candidate 1 (the next best) breaks 1 test.',
    );
  });

  it('then prefers the attempt that fixes the most tests', () => {
    const choice = chooseCandidate([verified(1, 0, 0, 2), verified(2, 1, 0, 40), verified(3, 0, 0, 1)]);
    expect(choice.winner?.candidate).toBe(2);
    expect(choice.reason).toBe(
      'Candidate 2 was chosen: it breaks no test and fixes 1 test, more than any other (next best: candidate 3 with none fixed).',
    );
  });

  it('then the attempt that leaves the tests alone, then the smallest diff, then the earliest', () => {
    expect(chooseCandidate([verified(1, 1, 0, 2, true), verified(2, 1, 0, 9)]).reason).toBe(
      'Candidate 2 was chosen: it breaks no test and fixes 1 test, as many as candidate 1, and it leaves the tests alone while candidate 1 modifies them.',
    );
    const bySize = chooseCandidate([verified(1, 1, 0, 9), verified(2, 1, 0, 4), verified(3, 1, 0, 4)]);
    expect(bySize.winner?.candidate).toBe(2);
    expect(bySize.reason).toBe(
      'Candidate 2 was chosen: it breaks no test and fixes 1 test, as many as candidate 3, with a change of the same size; the earlier candidate is kept.',
    );
    expect(chooseCandidate([verified(1, 1, 0, 9), verified(2, 1, 0, 4)]).reason).toBe(
      'Candidate 2 was chosen: it breaks no test and fixes 1 test, as many as candidate 1, with the smaller change (4 lines against 9 lines).',
    );
  });

  it('never chooses a refused, failed or empty attempt, and lists every attempt in order', () => {
    const choice = chooseCandidate([
      { candidate: 3, status: 'failed', note: 'the model server did not answer' },
      { candidate: 1, status: 'refused', note: 'the change touches `.github/workflows/ci.yml`' },
      verified(2, 1, 0, 4),
      { candidate: 4, status: 'no_change' },
    ]);
    expect(choice.winner?.candidate).toBe(2);
    expect(choice.reason).toBe(
      'Candidate 2 was chosen: it is the only one of 4 candidates whose change passed the checks and could be tested.',
    );
    expect(choice.rows).toEqual([
      { candidate: 1, chosen: false, result: 'refused: the change touches `.github/workflows/ci.yml`' },
      { candidate: 2, chosen: true, result: '1 fixed, 0 broken, 1 still failing; 4 lines in 1 file' },
      { candidate: 3, chosen: false, result: 'failed: the model server did not answer' },
      { candidate: 4, chosen: false, result: 'no change' },
    ]);
  });

  it('has no winner when no attempt is a candidate', () => {
    const choice = chooseCandidate([
      { candidate: 1, status: 'no_change' },
      { candidate: 2, status: 'refused', note: 'secret' },
    ]);
    expect(choice.winner).toBeNull();
    expect(choice.reason).toBe(
      'None of the 2 candidates produced a change that passed the checks and could be tested.',
    );
  });

  it('takes a repository without tests as breaking nothing and fixing nothing', () => {
    const choice = chooseCandidate([
      { candidate: 1, status: 'verified', comparison: null, linesChanged: 8 },
      { candidate: 2, status: 'verified', comparison: null, linesChanged: 3, tampered: false },
    ]);
    expect(choice.winner?.candidate).toBe(2);
    expect(choice.rows[1]?.result).toBe('no tests to run; 3 lines');
  });
});
