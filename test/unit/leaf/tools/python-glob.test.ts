import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fnmatchToRegExp, pythonGlob } from '../../../../src/leaf/tools/python-glob.js';
import { pathlibNormalize } from '../../../../src/leaf/tools/tool-path.js';
import { runPython } from './run-python.js';

const FILES = [
  'a.py',
  'b2.py',
  'ab.py',
  'a1.py',
  'README.md',
  '.hidden.yml',
  '.github/workflows/ci.yml',
  '.github/ci.yml',
  'conf/app.yml',
  'src/a.ts',
  'src/b/c.ts',
  'src/.secret/x.ts',
  'lib/d.ts',
  'd/e/f.txt',
  'd/g.txt',
  'sp ace.txt',
  '{x}.py',
  'a*b.txt',
  ']x',
  '-dash',
  'z1.txt',
  'é.py',
  'back\\slash.txt',
  '+(x).py',
];

/** Like Sandbox.list: files below dir, relative, skipping .git; null when dir is missing. */
function walk(dir: string): string[] | null {
  const out: string[] = [];
  const visit = (abs: string, rel: string): void => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== '.git') visit(join(abs, entry.name), childRel);
      } else {
        out.push(childRel);
      }
    }
  };
  try {
    visit(dir, '');
  } catch {
    return null;
  }
  return out;
}

let root = '';

beforeAll(() => {
  root = join(mkdtempSync(join(tmpdir(), 'leaf-glob-')), 'repo');
  for (const file of FILES) {
    mkdirSync(join(root, file, '..'), { recursive: true });
    writeFileSync(join(root, file), '');
  }
  // No empty directory: Sandbox.list reports files only, so the emulation cannot know one (it only
  // matters for a `..` after a wildcard, e.g. `*/../x`, documented in python-glob.ts).
});

afterAll(() => {
  if (root) rmSync(join(root, '..'), { recursive: true, force: true });
});

describe('pythonGlob', () => {
  it('finds the same files as Python glob.glob(recursive=True), duplicates included', async () => {
    const patterns = [
      '**/*.py',
      '*.md',
      '**',
      '*',
      '.*',
      '.github/**/*.yml',
      '**/*.yml',
      '[ab]?.py',
      '[!a]*.py',
      '[a-c]*',
      '[z-a]*',
      '[]]*',
      '[!]]*',
      '[a-]*',
      '[--z]*',
      '[\\]*',
      'src/**',
      'src/*/*.ts',
      '**/**/*.py',
      '*/../*.py',
      'a**b*',
      '**/.secret/*',
      'src',
      'src/a.ts',
      'nope/*',
      'a.py/*',
      '**/',
      '*.{py,md}',
      '{x}.py',
      '+(x).py',
      'sp ace*',
      '**/*[0-9]*',
      '?',
      '.*/**',
      'src/../src/*.ts',
      '**/d*/**/*.txt',
      '[[]*',
      'back\\*',
      '**/.*',
      'd/**/*',
    ];
    const absolute = patterns.map((p) => pathlibNormalize(`${root}/${p}`));
    const expected = runPython<string[][]>(
      'import glob, os\nresult = [sorted(m for m in glob.glob(p, recursive=True) if os.path.isfile(m)) for p in data]',
      absolute,
    );
    const actual: string[][] = [];
    for (const pattern of absolute) {
      const found = await pythonGlob(pattern, async (dir) => walk(dir));
      actual.push(found.sort());
    }
    const rows = (lists: string[][]): Record<string, string[]> =>
      Object.fromEntries(patterns.map((p, i) => [p, lists[i] ?? []]));
    // Python sorts by code point; plain sort is fine for comparing two lists of the same strings.
    expect(rows(actual)).toEqual(rows(expected.map((l) => [...l].sort())));
  });
});

describe('fnmatchToRegExp', () => {
  it('matches names exactly like fnmatch.fnmatchcase', () => {
    const patterns = [
      '*',
      '?',
      '[ab]',
      '[!ab]',
      '[a-c]x',
      '[!a-c]',
      '[]',
      '[!]',
      '[!]]',
      '[]-a]',
      '[^a]',
      '[a-]',
      '[-a]',
      '[z-a]',
      '[!b-a]',
      '[a-c-e]',
      '[\\]',
      '\\*',
      '*.py',
      'a*b*c',
      '[*]',
      '[?]',
      '[&&]',
      '[~|]',
      '😀?',
    ];
    const names = [
      'a',
      'b',
      'c',
      'd',
      'x',
      'ax',
      'bx',
      'dx',
      ']',
      '-',
      '^',
      '\\',
      '*',
      '?',
      '&',
      '~',
      '|',
      'x.py',
      'abc',
      'aXbYc',
      '😀x',
      '😀',
      '[]',
      '[!]',
      'e',
      '',
    ];
    const expected = runPython<boolean[][]>(
      'import fnmatch\nresult = [[fnmatch.fnmatchcase(n, p) for n in data["names"]] for p in data["patterns"]]',
      { patterns, names },
    );
    const actual = patterns.map((p) => names.map((n) => fnmatchToRegExp(p).test(n)));
    const table = (m: boolean[][]): Record<string, string> =>
      Object.fromEntries(patterns.map((p, i) => [p, names.filter((_, j) => m[i]?.[j]).join(' ')]));
    expect(table(actual)).toEqual(table(expected));
  });
});
