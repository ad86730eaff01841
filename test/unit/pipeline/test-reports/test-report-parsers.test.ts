import { describe, expect, it } from 'vitest';
import {
  parseGoTestJson,
  parseJestJson,
  parseJUnitXml,
  type TestCaseResult,
} from '../../../../src/pipeline/test-reports/test-report-parsers.js';
import {
  compareTestRuns,
  WHOLE_SUITE,
  type TestRunResult,
} from '../../../../src/pipeline/verification/compare-test-runs.js';

/** Shaped like pytest 9's `--junitxml` output (xunit2). */
const PYTEST_XML = `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="2" skipped="2" tests="6"><testcase classname="test_a" name="test_ok" time="0.001" /><testcase classname="test_a" name="test_bad" time="0.001"><failure message="AssertionError: one &amp; &lt;two&gt;&#10;assert 1 == 2">&gt;   def test_bad(): assert 1 == 2</failure></testcase><testcase classname="test_a" name="test_skip" time="0.005"><skipped type="pytest.skip" message="no">skip</skipped></testcase><testcase classname="test_a" name="test_xf" time="0.001"><skipped type="pytest.xfail" message="" /></testcase><testcase classname="test_a" name="test_p[2]" time="0.001"><error message="fixture 'db' not found">E</error></testcase><testcase classname="test_a.TestK" name="test_m" time="0.001" /></testsuite></testsuites>`;

/** Shaped like vitest's junit reporter: nested suites, classname = file. */
const VITEST_XML = `<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="2" failures="1" errors="0" time="0.01">
    <testsuite name="test/a.test.ts" timestamp="2026-01-01T00:00:00" hostname="h" tests="2" failures="1" errors="0" skipped="0" time="0.01">
        <testcase classname="test/a.test.ts" name="math &gt; adds" time="0.001">
        </testcase>
        <testcase classname="test/a.test.ts" name="math &gt; subtracts" time="0.002">
            <failure message="expected 1 to be 2 // Object.is equality" type="AssertionError">
AssertionError: expected 1 to be 2
            </failure>
        </testcase>
    </testsuite>
</testsuites>`;

describe('parseJUnitXml', () => {
  it('reads pytest’s report: failures, errors, skips and xfails, with ids classname::name', () => {
    expect(parseJUnitXml(PYTEST_XML)).toEqual([
      { id: 'test_a::test_ok', status: 'passed' },
      { id: 'test_a::test_bad', status: 'failed', message: 'AssertionError: one & <two>' },
      { id: 'test_a::test_skip', status: 'skipped' },
      { id: 'test_a::test_xf', status: 'skipped' },
      { id: 'test_a::test_p[2]', status: 'failed', message: "fixture 'db' not found" },
      { id: 'test_a.TestK::test_m', status: 'passed' },
    ]);
  });

  it('reads vitest’s report with a bare testsuite root too', () => {
    expect(parseJUnitXml(VITEST_XML)).toEqual([
      { id: 'test/a.test.ts::math > adds', status: 'passed' },
      {
        id: 'test/a.test.ts::math > subtracts',
        status: 'failed',
        message: 'expected 1 to be 2 // Object.is equality',
      },
    ]);
    expect(parseJUnitXml('<testsuite><testcase name="solo"/></testsuite>')).toEqual([
      { id: 'solo', status: 'passed' },
    ]);
  });

  it('keeps the worst status of a test reported twice', () => {
    const xml =
      '<testsuite><testcase name="t"/><testcase name="t"><failure/></testcase><testcase name="t"/></testsuite>';
    expect(parseJUnitXml(xml)).toEqual([{ id: 't', status: 'failed' }]);
  });

  it('returns null for text that is not a JUnit report', () => {
    expect(parseJUnitXml('not xml <<')).toBeNull();
    expect(parseJUnitXml('<html><body/></html>')).toBeNull();
    expect(parseJUnitXml('')).toBeNull();
  });
});

describe('parseGoTestJson', () => {
  const ev = (o: Record<string, unknown>): string => JSON.stringify({ Time: '2026-01-01T00:00:00Z', ...o });
  it('reads test2json events, subtests, package failures outside tests, and rebuilds the text output', () => {
    const text = [
      ev({ Action: 'start', Package: 'example.com/calc' }),
      ev({ Action: 'run', Package: 'example.com/calc', Test: 'TestAdd' }),
      ev({ Action: 'output', Package: 'example.com/calc', Test: 'TestAdd', Output: '=== RUN   TestAdd\n' }),
      ev({
        Action: 'output',
        Package: 'example.com/calc',
        Test: 'TestAdd',
        Output: '    calc_test.go:9: add(2, 3) = -1, want 5\n',
      }),
      ev({ Action: 'fail', Package: 'example.com/calc', Test: 'TestAdd', Elapsed: 0 }),
      ev({ Action: 'pass', Package: 'example.com/calc', Test: 'TestSub/negative', Elapsed: 0 }),
      ev({ Action: 'pass', Package: 'example.com/calc', Test: 'TestSub', Elapsed: 0 }),
      ev({ Action: 'skip', Package: 'example.com/calc', Test: 'TestSlow', Elapsed: 0 }),
      ev({ Action: 'fail', Package: 'example.com/calc', Elapsed: 0.01 }),
      '# example.com/broken',
      'broken/x.go:3:1: syntax error',
      ev({ Action: 'fail', Package: 'example.com/broken', Elapsed: 0, FailedBuild: 'example.com/broken' }),
      ev({ Action: 'skip', Package: 'example.com/empty', Elapsed: 0 }),
      '',
    ].join('\n');
    const parsed = parseGoTestJson(text);
    expect(parsed?.tests).toEqual([
      { id: 'example.com/calc/TestAdd', status: 'failed', message: 'calc_test.go:9: add(2, 3) = -1, want 5' },
      { id: 'example.com/calc/TestSub/negative', status: 'passed' },
      { id: 'example.com/calc/TestSub', status: 'passed' },
      { id: 'example.com/calc/TestSlow', status: 'skipped' },
      { id: 'example.com/calc [package]', status: 'passed' },
      {
        id: 'example.com/broken [package]',
        status: 'failed',
        message: 'the package failed outside its tests (build failure or panic)',
      },
    ]);
    expect(parsed?.output).toBe(
      '=== RUN   TestAdd\n    calc_test.go:9: add(2, 3) = -1, want 5\n# example.com/broken\nbroken/x.go:3:1: syntax error\n',
    );
  });

  it('returns null when no line is an event', () => {
    expect(parseGoTestJson('ok  \texample.com/calc\t0.01s\n')).toBeNull();
  });
});

describe('parseJestJson', () => {
  it('reads assertion results with file ids relative to the workspace, and files that failed to run', () => {
    const report = {
      numTotalTests: 3,
      testResults: [
        {
          name: '/workspace/src/a.test.js',
          status: 'failed',
          assertionResults: [
            { fullName: 'adds numbers', title: 'adds numbers', status: 'passed', failureMessages: [] },
            {
              fullName: 'subtracts',
              status: 'failed',
              failureMessages: ['Error: expect(received).toBe(expected)\n  at x'],
            },
            { fullName: 'later', status: 'pending' },
          ],
        },
        {
          name: '/workspace/src/b.test.js',
          status: 'failed',
          message: 'SyntaxError: Unexpected token',
          assertionResults: [],
        },
      ],
    };
    expect(parseJestJson(JSON.stringify(report), '/workspace')).toEqual([
      { id: 'src/a.test.js::adds numbers', status: 'passed' },
      { id: 'src/a.test.js::subtracts', status: 'failed', message: 'Error: expect(received).toBe(expected)' },
      { id: 'src/a.test.js::later', status: 'skipped' },
      { id: 'src/b.test.js [file]', status: 'failed', message: 'SyntaxError: Unexpected token' },
    ]);
    expect(parseJestJson('{"foo":1}', '/workspace')).toBeNull();
    expect(parseJestJson('nope', '/workspace')).toBeNull();
  });
});

function run(
  tests: Array<[string, TestCaseResult['status']]> | null,
  passed = false,
  completed = true,
): TestRunResult {
  return {
    passed,
    completed,
    tests: tests ? tests.map(([id, status]) => ({ id, status })) : null,
    format: tests ? 'junit-xml' : null,
  };
}

describe('compareTestRuns', () => {
  it('sorts tests into fixed, broken, still failing, new and removed', () => {
    const base = run([
      ['t::issue', 'failed'],
      ['t::unrelated', 'failed'],
      ['t::ok', 'passed'],
      ['t::fragile', 'passed'],
      ['t::gone', 'passed'],
      ['t::skipped', 'skipped'],
    ]);
    const head = run([
      ['t::issue', 'passed'],
      ['t::unrelated', 'failed'],
      ['t::ok', 'passed'],
      ['t::fragile', 'failed'],
      ['t::skipped', 'skipped'],
      ['t::added', 'passed'],
    ]);
    const c = compareTestRuns(base, head);
    expect(c).toMatchObject({
      granularity: 'per-test',
      fixed: ['t::issue'],
      broken: ['t::fragile'],
      stillFailing: ['t::unrelated'],
      newTests: [{ id: 't::added', status: 'passed' }],
      removedTests: [{ id: 't::gone', status: 'passed' }],
      passingOnBoth: 1,
      baseCounts: { passed: 3, failed: 2, skipped: 1 },
      headCounts: { passed: 3, failed: 2, skipped: 1 },
      nothingBroken: false,
    });
  });

  it('is "nothing broken" with a fix and an unrelated failure, but not with a new failing test or an incomplete run', () => {
    const base = run([
      ['a', 'failed'],
      ['b', 'failed'],
      ['c', 'passed'],
    ]);
    expect(
      compareTestRuns(
        base,
        run([
          ['a', 'passed'],
          ['b', 'failed'],
          ['c', 'passed'],
        ]),
      ).nothingBroken,
    ).toBe(true);
    expect(
      compareTestRuns(
        base,
        run([
          ['a', 'passed'],
          ['b', 'failed'],
          ['c', 'passed'],
          ['mod', 'failed'],
        ]),
      ).nothingBroken,
    ).toBe(false);
    expect(
      compareTestRuns(
        base,
        run(
          [
            ['a', 'passed'],
            ['b', 'failed'],
            ['c', 'passed'],
          ],
          false,
          false,
        ),
      ).nothingBroken,
    ).toBe(false);
  });

  it('falls back to exit codes when either side has no per-test results', () => {
    expect(compareTestRuns(run(null, false), run([['a', 'passed']], true))).toMatchObject({
      granularity: 'suite',
      fixed: [WHOLE_SUITE],
      broken: [],
      nothingBroken: true,
    });
    expect(compareTestRuns(run(null, true), run(null, false))).toMatchObject({
      broken: [WHOLE_SUITE],
      nothingBroken: false,
    });
    expect(compareTestRuns(run(null, false), run(null, false))).toMatchObject({
      stillFailing: [WHOLE_SUITE],
      nothingBroken: true,
    });
    expect(compareTestRuns(run(null, true), run(null, true))).toMatchObject({
      passingOnBoth: 1,
      fixed: [],
      nothingBroken: true,
    });
  });
});
