import { describe, expect, it } from 'vitest';
import { toPathPattern } from '../../../src/leaf/tools/glob.js';
import { buildGlobTree, globInTree } from '../../../src/leaf/tools/python-glob.js';
import { compilePathPattern, pathMatches } from '../../../src/sandbox/path-pattern.js';

const FILES = [
  'a.py',
  '.h.py',
  'src/a.py',
  'src/b.txt',
  'src/.hidden/c.py',
  'src/pkg/d.py',
  'src/pkg/deep/e.py',
  'src/pkg/deep/.f.py',
  'docs/a.py',
  'docs/x/y/z.md',
  '.github/workflows/ci.yml',
];

const PATTERNS = [
  '**',
  '**/*.py',
  '**/a.py',
  'src/**',
  'src/**/*.py',
  '*/*.py',
  '*/**/deep/*',
  '.*',
  '.github/**/*.yml',
  '**/.*',
  '**/**/*.py',
  'src/p?g/**',
  '*/[a-d]*',
  'src/*',
];

describe('path patterns against glob', () => {
  it('keep every file glob can match (the sandbox may prune nothing glob needs)', () => {
    const tree = buildGlobTree(FILES);
    for (const pattern of PATTERNS) {
      const components = pattern.split('/');
      const compiled = compilePathPattern(toPathPattern(components) ?? []);
      const globbed = [
        ...new Set(globInTree(tree, '/w', components).map((p) => p.slice('/w/'.length))),
      ].sort();
      const kept = FILES.filter((f) => pathMatches(compiled, f)).sort();
      expect(kept, pattern).toEqual(globbed);
    }
  });

  it('leaves a pattern with .. to a whole listing', () => {
    expect(toPathPattern(['*', '..', 'a.py'])).toBeUndefined();
  });
});
