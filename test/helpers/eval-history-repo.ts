import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createFixtureGit } from './fixture-git.js';

const git = createFixtureGit({ identity: { name: 'Dev', email: 'dev@example.com' } });

const CALC_V1 = `def add(a, b):
    """Add two numbers."""
    return a + b


def mean(xs):
    return sum(xs) / len(xs)


def clamp(x, lo, hi):
    return max(lo, x)
`;

const TESTS_V1 = `from calc import add, clamp


def test_add():
    assert add(2, 3) == 5


def test_clamp_lower():
    assert clamp(-5, 0, 10) == 0
`;

/** The five commits of {@link createHistoryRepo}, oldest first, with what `eval mine` must make of them. */
export interface HistoryRepo {
  dir: string;
  /** sha by role. */
  commits: {
    initial: string;
    fixMean: string;
    fixTypo: string;
    refactor: string;
    fixClamp: string;
  };
}

async function commit(dir: string, files: Record<string, string>, message: string): Promise<string> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', message);
  return (await git(dir, 'rev-parse', 'HEAD')).trim();
}

/**
 * A small Python repository (pytest) with five first-parent commits: an initial import (a
 * "refactor" without fix keyword), a fix with a test (`mean([])`), a fix without tests (a
 * docstring typo), a refactor, and a fix with a test (`clamp` ignored its upper bound).
 */
export async function createHistoryRepo(root: string): Promise<HistoryRepo> {
  const dir = join(root, 'calc');
  await mkdir(dir, { recursive: true });
  await git(dir, 'init', '-q', '-b', 'main');
  const initial = await commit(
    dir,
    { 'calc.py': CALC_V1, 'tests/test_calc.py': TESTS_V1 },
    'Add calc module',
  );
  const calc2 = CALC_V1.replace(
    '    return sum(xs) / len(xs)',
    '    if not xs:\n        return 0\n    return sum(xs) / len(xs)',
  );
  const tests2 = `${TESTS_V1.replace('import add, clamp', 'import add, clamp, mean')}

def test_mean_empty():
    assert mean([]) == 0
`;
  const fixMean = await commit(
    dir,
    { 'calc.py': calc2, 'tests/test_calc.py': tests2 },
    'Fix mean of an empty list\n\nIt raised ZeroDivisionError. Fixes #1.',
  );
  const calc3 = calc2.replace('Add two numbers.', 'Add two numbers and return the sum.');
  const fixTypo = await commit(dir, { 'calc.py': calc3 }, 'fix: docstring of add');
  const calc4 =
    calc3.replace('    return sum(xs) / len(xs)', '    return _total(xs) / len(xs)') +
    '\n\ndef _total(xs):\n    return sum(xs)\n';
  const refactor = await commit(
    dir,
    { 'calc.py': calc4, 'README.md': '# calc\n' },
    'Refactor: extract _total',
  );
  const calc5 = calc4.replace('    return max(lo, x)', '    return max(lo, min(x, hi))');
  const tests5 = `${tests2}

def test_clamp_upper():
    assert clamp(50, 0, 10) == 10
`;
  const fixClamp = await commit(
    dir,
    { 'calc.py': calc5, 'tests/test_calc.py': tests5 },
    'Bug: clamp ignored its upper bound',
  );
  return { dir, commits: { initial, fixMean, fixTypo, refactor, fixClamp } };
}
