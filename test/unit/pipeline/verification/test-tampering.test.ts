import { describe, expect, it } from 'vitest';
import { parsePatch, type PatchFile } from '../../../../src/pipeline/verification/parse-patch.js';
import { compareTestRuns } from '../../../../src/pipeline/verification/compare-test-runs.js';
import {
  describeTampering,
  detectTestTampering,
  isTestPath,
  TESTS_MODIFIED_LABEL,
} from '../../../../src/pipeline/verification/test-tampering.js';

function file(
  path: string,
  added: string[],
  removed: string[] = [],
  status: PatchFile['status'] = 'modified',
): PatchFile {
  return {
    path,
    status,
    oldMode: status === 'added' ? null : '100644',
    newMode: status === 'deleted' ? null : '100644',
    binary: false,
    addedLines: added.map((text, i) => ({ line: i + 1, text })),
    removedLines: removed.map((text, i) => ({ line: i + 10, text })),
  };
}

describe('isTestPath', () => {
  it.each([
    ['test_calc.py', true],
    ['pkg/calc_test.py', true],
    ['tests/helpers.py', true],
    ['conftest.py', true],
    ['src/__tests__/a.js', true],
    ['src/a.test.ts', true],
    ['web/a.spec.tsx', true],
    ['calc_test.go', true],
    ['src/main/java/FooTest.java', true],
    ['calc.py', false],
    ['src/testing_utils.py', false],
    ['contest.py', false],
    ['README.md', false],
  ])('%s → %s', (path, expected) => {
    expect(isTestPath(path)).toBe(expected);
  });
});

describe('detectTestTampering', () => {
  it('does not flag a change that leaves the tests alone, nor a fixed assertion', () => {
    const r = detectTestTampering({
      files: [
        file('calc.py', ['    return a + b'], ['    return a - b']),
        file('test_calc.py', ['    assert add(2, 3) == 5'], ['    assert add(2, 3) == -1']),
      ],
    });
    expect(r).toEqual({
      changedTestFiles: [{ path: 'test_calc.py', status: 'modified', added: 1, removed: 1 }],
      flags: [],
      flagged: false,
    });
  });

  it('flags a deleted test file', () => {
    const r = detectTestTampering({
      files: [file('tests/test_calc.py', [], ['def test_add():', '    assert add(2, 3) == 5'], 'deleted')],
    });
    expect(r.flags).toEqual([{ kind: 'deleted_test_file', path: 'tests/test_calc.py', removed: 2 }]);
    expect(r.flagged).toBe(true);
  });

  it('flags removed test definitions unless they were moved elsewhere', () => {
    const r = detectTestTampering({
      files: [
        file('test_a.py', [], ['def test_gone():', '    assert x', 'def test_moved():']),
        file('test_b.py', ['def test_moved():'], [], 'added'),
        file('calc_test.go', [], ['func TestAdd(t *testing.T) {']),
        file('a.test.ts', [], ["  it('adds numbers', () => {"]),
      ],
    });
    expect(r.flags.filter((f) => f.kind === 'removed_test')).toEqual([
      { kind: 'removed_test', path: 'test_a.py', line: 10, name: 'test_gone' },
      { kind: 'removed_test', path: 'calc_test.go', line: 10, name: 'TestAdd' },
      { kind: 'removed_test', path: 'a.test.ts', line: 10, name: 'adds numbers' },
    ]);
  });

  it('flags newly added skip, xfail and only markers of pytest, unittest, jest/vitest and go', () => {
    const markers = [
      '@pytest.mark.skip(reason="flaky")',
      '@pytest.mark.xfail',
      '    pytest.skip("later")',
      '@unittest.skip("x")',
      '        self.skipTest("x")',
      "it.skip('adds', () => {",
      "describe.only('math', () => {",
      "xit('adds', () => {",
      "xdescribe('math', () => {",
      "test.concurrent.skip('x', async () => {})",
      '\tt.Skip("not now")',
      '#[ignore]',
    ];
    const r = detectTestTampering({ files: [file('tests/test_all.py', markers)] });
    expect(r.flags.map((f) => (f.kind === 'skip_marker' ? f.marker : f.kind))).toEqual([
      'pytest.mark.skip',
      'pytest.mark.xfail',
      'pytest.skip()',
      '@unittest.skip',
      'skipTest()',
      'it.skip',
      'describe.only',
      'xit()',
      'xdescribe()',
      'test.concurrent.skip',
      't.Skip()',
      '#[ignore]',
    ]);
  });

  it('does not flag markers that were already there (moved lines) or that sit outside test files', () => {
    const r = detectTestTampering({
      files: [
        file('tests/test_a.py', ['@pytest.mark.skip(reason="old")'], ['@pytest.mark.skip(reason="old")']),
        file('src/stream.js', ['reader.skip(4)', 'it.only = 1']),
      ],
    });
    expect(r.flags).toEqual([]);
  });

  it('flags lost assertions and runner options that leave tests out', () => {
    const r = detectTestTampering({
      files: [
        file('tests/test_a.py', ['    pass'], ['    assert add(2, 3) == 5', '    assert add(0, 0) == 0']),
        file('pytest.ini', ['addopts = --deselect tests/test_a.py::test_add']),
        file('conftest.py', ['collect_ignore = ["tests/test_b.py"]']),
      ],
    });
    expect(r.flags).toEqual([
      { kind: 'assertions_removed', path: 'tests/test_a.py', removed: 2, added: 0 },
      { kind: 'test_selection', path: 'pytest.ini', line: 1, option: '--deselect' },
      { kind: 'test_selection', path: 'conftest.py', line: 1, option: 'collect_ignore' },
    ]);
  });

  it('flags tests that ran on base and are gone on head, unless head failed to collect', () => {
    const base = {
      passed: false,
      completed: true,
      format: 'junit-xml' as const,
      tests: [
        { id: 'test_calc::test_add', status: 'failed' as const },
        { id: 'test_calc::test_param[1]', status: 'passed' as const },
      ],
    };
    const head = { ...base, tests: [{ id: 'test_calc::test_add', status: 'passed' as const }] };
    const r = detectTestTampering({
      files: [file('calc.py', ['x'])],
      comparison: compareTestRuns(base, head),
    });
    expect(r.flags).toEqual([{ kind: 'tests_gone', ids: ['test_calc::test_param[1]'] }]);

    const broken = { ...base, tests: [{ id: 'test_calc', status: 'failed' as const }] };
    expect(
      detectTestTampering({ files: [file('calc.py', ['x'])], comparison: compareTestRuns(base, broken) })
        .flags,
    ).toEqual([]);
  });

  it('does not report a test twice when the patch removed its definition', () => {
    const patch = [
      'diff --git a/test_calc.py b/test_calc.py',
      'index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644',
      '--- a/test_calc.py',
      '+++ b/test_calc.py',
      '@@ -1,6 +1,2 @@',
      ' from calc import add',
      '-',
      '-',
      '-def test_add():',
      '-    assert add(2, 3) == 5',
      ' ',
      '',
    ].join('\n');
    const base = {
      passed: false,
      completed: true,
      format: 'junit-xml' as const,
      tests: [{ id: 'test_calc::test_add', status: 'failed' as const }],
    };
    const head = { ...base, passed: true, tests: [] };
    const r = detectTestTampering({ files: parsePatch(patch), comparison: compareTestRuns(base, head) });
    expect(r.flags).toEqual([
      { kind: 'removed_test', path: 'test_calc.py', line: 4, name: 'test_add' },
      { kind: 'assertions_removed', path: 'test_calc.py', removed: 1, added: 0 },
    ]);
  });
});

describe('describeTampering', () => {
  it('lists every flag in words a reviewer can check', () => {
    const r = detectTestTampering({
      files: [
        file('tests/test_old.py', [], ['def test_x():'], 'deleted'),
        file('tests/test_a.py', ['@pytest.mark.xfail']),
      ],
    });
    expect(TESTS_MODIFIED_LABEL).toBe('frognano:tests-modified');
    expect(describeTampering(r)).toBe(
      'This change modifies the tests in ways that can hide a bug instead of fixing it. Check these before trusting the test results:\n' +
        '- test file `tests/test_old.py` deleted (1 line)\n' +
        '- `pytest.mark.xfail` added at line 1 of `tests/test_a.py`',
    );
  });
});
