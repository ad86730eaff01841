import { describe, expect, it } from 'vitest';
import { chooseCandidate } from '../../../../src/pipeline/verification/choose-candidate.js';
import {
  buildEvidence,
  renderTestComparison,
  testVerdict,
} from '../../../../src/pipeline/verification/evidence-markdown.js';
import type { TestCaseResult } from '../../../../src/pipeline/test-reports/test-report-parsers.js';
import { compareTestRuns } from '../../../../src/pipeline/verification/compare-test-runs.js';
import {
  detectTestTampering,
  TESTS_MODIFIED_LABEL,
} from '../../../../src/pipeline/verification/test-tampering.js';

const side = (tests: Array<[string, TestCaseResult['status']]>, passed = false) => ({
  passed,
  completed: true,
  format: 'junit-xml' as const,
  tests: tests.map(([id, status]) => ({ id, status })),
});
const BASE = side([
  ['test_calc::test_add', 'failed'],
  ['test_other::test_unrelated', 'failed'],
  ['test_calc::test_sub', 'passed'],
]);
const RUN = {
  command: 'python3 -m pytest -q',
  passed: false,
  exitCode: 1,
  timedOut: false,
  durationMs: 1234,
};
const NO_TAMPERING = detectTestTampering({ files: [] });

describe('renderTestComparison', () => {
  it('shows one fixed, one still failing and nothing broken as a table without empty rows, and the base run', () => {
    const c = compareTestRuns(
      BASE,
      side([
        ['test_calc::test_add', 'passed'],
        ['test_other::test_unrelated', 'failed'],
        ['test_calc::test_sub', 'passed'],
      ]),
    );
    expect(renderTestComparison(c, { base: RUN, head: RUN })).toBe(
      [
        'With this change 1 test that failed on the base branch passes, and no test that passed breaks.',
        '',
        '| Result | Count | Tests |',
        '|---|---:|---|',
        '| Fixed (failed → passed) | 1 | `test_calc::test_add` |',
        '| Still failing | 1 | `test_other::test_unrelated` |',
        '| Passing on both | 1 |  |',
        '',
        // The patched run is described once, in the pull request's Tests section: only its counts here.
        'Base branch: `python3 -m pytest -q` failed (exit 1) in 1.2 s — 1 passed, 2 failed, in a fresh sandbox. ' +
          'This change: 2 passed, 1 failed (the run under Tests above).',
      ].join('\n'),
    );
  });

  it('makes no claim of a fix when no failing test passes, and neutralises odd test names', () => {
    const c = compareTestRuns(
      BASE,
      side([
        ['test_other::test_unrelated', 'failed'],
        ['test_calc::test_sub', 'passed'],
        ['t::a|b`c\n@team', 'passed'],
      ]),
    );
    const md = renderTestComparison(c);
    expect(testVerdict(c)).toBe(
      'No test that failed on the base branch passes with this change (1 new test passes): the tests do not show that it fixes the issue. Nothing that passed breaks.',
    );
    expect(md).toContain("| New tests | 1 | `t::a\\|b'c @team` |");
    expect(md).toContain('| Removed tests | 1 | `test_calc::test_add (was failed)` |');
  });

  it('explains a comparison by exit code', () => {
    const c = compareTestRuns({ ...BASE, tests: null }, { ...BASE, tests: null, passed: true });
    const md = renderTestComparison(c);
    expect(md).toContain('The test suite failed on the base branch and passes with this change');
    expect(md).toContain('compared by exit code');
    expect(md).not.toContain('New tests');
  });
});

describe('buildEvidence', () => {
  it('puts the tampering warning first, adds the label and lists changed test files', () => {
    const tampering = detectTestTampering({
      files: [
        {
          path: 'test_calc.py',
          status: 'deleted',
          oldMode: '100644',
          newMode: null,
          binary: false,
          addedLines: [],
          removedLines: [{ line: 1, text: 'def test_add():' }],
        },
      ],
    });
    const c = compareTestRuns(
      BASE,
      side([
        ['test_other::test_unrelated', 'failed'],
        ['test_calc::test_sub', 'passed'],
      ]),
    );
    const evidence = buildEvidence({ comparison: c, tampering, base: RUN, head: RUN });
    expect(evidence.labels).toEqual([TESTS_MODIFIED_LABEL]);
    expect(evidence.warnings).toHaveLength(1);
    expect(evidence.warnings[0]).toMatch(/^This change modifies the tests/);
    expect(evidence.sections.map((s) => s.title)).toEqual(['Tests on base and head', 'Changed test files']);
    expect(evidence.sections[1]?.markdown).toBe(
      '| File | Change | Added | Removed |\n|---|---|---:|---:|\n| `test_calc.py` | deleted | +0 | −1 |',
    );
  });

  it('warns when tests break, and adds the attempts section with more than one attempt', () => {
    const c = compareTestRuns(
      BASE,
      side([
        ['test_calc::test_add', 'passed'],
        ['test_other::test_unrelated', 'failed'],
        ['test_calc::test_sub', 'failed'],
      ]),
    );
    const choice = chooseCandidate([
      { candidate: 1, status: 'refused', note: 'protected path' },
      { candidate: 2, status: 'verified', comparison: c, linesChanged: 2, filesChanged: 1 },
    ]);
    const evidence = buildEvidence({ comparison: c, tampering: NO_TAMPERING, choice });
    expect(evidence.labels).toEqual([]);
    expect(evidence.warnings).toEqual([
      'This change BREAKS 1 test that passed on the base branch. Do not merge it before that is understood.',
    ]);
    const attempts = evidence.sections.find((s) => s.title === 'Candidates')?.markdown ?? '';
    expect(attempts).toContain('Candidate 2 was chosen');
    expect(attempts).toContain('| Candidate | Result |\n|---:|---|\n| 1 | refused: protected path |');
    expect(attempts).toContain('| 2 | **chosen** — 1 fixed, 1 broken, 1 still failing; 2 lines in 1 file |');
  });

  it('has no attempts section for a single attempt and no table without tests', () => {
    const choice = chooseCandidate([{ candidate: 1, status: 'verified', comparison: null, linesChanged: 1 }]);
    expect(buildEvidence({ comparison: null, tampering: NO_TAMPERING, choice })).toEqual({
      warnings: [],
      sections: [],
      labels: [],
    });
  });
});
