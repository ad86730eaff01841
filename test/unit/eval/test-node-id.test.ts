import { describe, expect, it } from 'vitest';
import { statusesByNodeId, toTestNodeId } from '../../../src/eval/test-node-id.js';

const files = new Set([
  'tests/test_calc.py',
  'pkg/sub/test_x.py',
  'test_root.py',
  'pkg/__init__.py',
  'a.test.ts',
]);

describe('toTestNodeId', () => {
  it('maps pytest JUnit ids to the node ids SWE-bench lists', () => {
    expect(toTestNodeId('tests.test_calc::test_add', files)).toBe('tests/test_calc.py::test_add');
    expect(toTestNodeId('pkg.sub.test_x.TestA::test_b[1-2]', files)).toBe(
      'pkg/sub/test_x.py::TestA::test_b[1-2]',
    );
    expect(toTestNodeId('pkg.sub.test_x.TestA.TestInner::test_c', files)).toBe(
      'pkg/sub/test_x.py::TestA::TestInner::test_c',
    );
    expect(toTestNodeId('test_root::test_y[a.b::c]', files)).toBe('test_root.py::test_y[a.b::c]');
  });
  it('leaves ids of other runners and classnames that name no file unchanged', () => {
    expect(toTestNodeId('example.com/m/pkg/TestX', files)).toBe('example.com/m/pkg/TestX');
    expect(toTestNodeId('a.test.ts::suite > case', files)).toBe('a.test.ts::suite > case');
    expect(toTestNodeId('test/a.test.ts::suite > case', files)).toBe('test/a.test.ts::suite > case');
    expect(toTestNodeId('tests.test_gone::test_a', files)).toBe('tests.test_gone::test_a');
    expect(toTestNodeId('pkg::test', files)).toBe('pkg::test');
  });
});

describe('statusesByNodeId', () => {
  it('keys statuses by node id, a duplicate keeping the worst', () => {
    const m = statusesByNodeId(
      [
        { id: 'tests.test_calc::test_add', status: 'passed' },
        { id: 'tests.test_calc::test_add', status: 'failed' },
        { id: 'tests.test_calc::test_sub', status: 'skipped' },
        { id: 'tests.test_calc::test_sub', status: 'passed' },
      ],
      files,
    );
    expect([...m]).toEqual([
      ['tests/test_calc.py::test_add', 'failed'],
      ['tests/test_calc.py::test_sub', 'passed'],
    ]);
  });
});
