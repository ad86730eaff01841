import { describe, expect, it } from 'vitest';
import { looksLikeFix, referencedIssues, testLists } from '../../../src/eval/mine-tasks.js';
import { decideResolved } from '../../../src/eval/grade-task.js';

describe('looksLikeFix', () => {
  it('takes fix words and closing references, case-insensitively, as whole words', () => {
    for (const m of [
      'Fix rounding',
      'fixes #12',
      'FIXED the parser',
      'bug: empty list',
      'Bugfix for x',
      'hotfix',
      'Closes #3',
      'resolves #44',
    ]) {
      expect(looksLikeFix(m), m).toBe(true);
    }
    for (const m of [
      'Refactor parser',
      'prefix the names',
      'debug logging',
      'fixture cleanup',
      'close the file',
      'Add bugle',
    ]) {
      expect(looksLikeFix(m), m).toBe(false);
    }
  });
  it('finds the issues a message fixes or closes, in order and once', () => {
    expect(referencedIssues('Fix x (fixes #12, closes #3); see #99. Fixes #12')).toEqual([12, 3]);
    expect(referencedIssues('Fix x')).toEqual([]);
  });
});

describe('testLists', () => {
  const map = (o: Record<string, 'passed' | 'failed' | 'skipped'>) => new Map(Object.entries(o));
  it('FAIL_TO_PASS: failing or missing before and passing after; PASS_TO_PASS: passing on both', () => {
    const before = map({ a: 'passed', b: 'failed', c: 'failed', s: 'skipped' });
    const after = map({ a: 'passed', b: 'passed', c: 'failed', n: 'passed', s: 'skipped' });
    expect(testLists(before, after)).toEqual({ failToPass: ['b', 'n'], passToPass: ['a'] });
  });
  it('drops a commit whose tests fail after the fix, or do not fail before it', () => {
    expect(testLists(map({ a: 'passed' }), map({ a: 'failed' }))).toBe('tests fail after the fix');
    expect(testLists(map({}), map({ n: 'failed' }))).toBe('tests fail after the fix');
    expect(testLists(map({ a: 'passed' }), map({ a: 'passed' }), true)).toBe('tests fail after the fix');
    expect(testLists(map({ a: 'passed' }), map({ a: 'passed' }))).toBe('tests do not fail before the fix');
  });
});

describe('decideResolved', () => {
  const task = { FAIL_TO_PASS: ['f1', 'f2'], PASS_TO_PASS: ['p1', 'p2'] };
  it('is resolved only when every FAIL_TO_PASS and PASS_TO_PASS test passed', () => {
    const all = new Map([
      ['f1', 'passed'],
      ['f2', 'passed'],
      ['p1', 'passed'],
      ['p2', 'passed'],
      ['x', 'failed'],
    ] as const);
    expect(decideResolved(task, all)).toMatchObject({ resolved: true, reason: null });
  });
  it('names the tests that failed or did not run', () => {
    const some = new Map([
      ['f1', 'passed'],
      ['f2', 'skipped'],
      ['p1', 'failed'],
    ] as const);
    const r = decideResolved(task, some);
    expect(r.resolved).toBe(false);
    expect(r.failToPass).toEqual({ passed: ['f1'], failed: ['f2'], missing: [] });
    expect(r.passToPass).toEqual({ passed: [], failed: ['p1'], missing: ['p2'] });
    expect(r.reason).toBe(
      '1 FAIL_TO_PASS test(s) fail: f2; 1 PASS_TO_PASS test(s) fail: p1; 1 PASS_TO_PASS test(s) did not run: p2',
    );
  });
});
