import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPatch } from '../../../../src/git/apply-patch.js';
import { parsePatch } from '../../../../src/pipeline/verification/parse-patch.js';
import { checkPatch } from '../../../../src/pipeline/verification/check-patch.js';
import { checkPatchLimits } from '../../../../src/pipeline/verification/patch-limits.js';
import { readPatchedFileFacts } from '../../../../src/pipeline/verification/patched-file-facts.js';
import { detectTestTampering } from '../../../../src/pipeline/verification/test-tampering.js';
import { createFixtureGit } from '../../../helpers/fixture-git.js';

/**
 * The patch checks on patches made by real git, in the form the sandbox produces them
 * (`git diff --cached --binary --no-renames --full-index`, see leaf/workspace-patch.ts), and the
 * facts read back from a real clone after `git apply --index`.
 */

const exec = promisify(execFile);

const git = createFixtureGit({
  identity: { name: 'T', email: 't@example.test' },
  config: ['core.quotepath=off'],
});

let root: string;
let work: string;
let clone: string;
let patch: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'frognano-checks-'));
  work = join(root, 'work');
  await mkdir(join(work, 'tests'), { recursive: true });
  await git(work, 'init', '-q', '-b', 'main');
  await writeFile(join(work, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(
    join(work, 'tests', 'test_calc.py'),
    'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
  );
  await writeFile(join(work, 'tests', 'test_old.py'), 'def test_old():\n    assert True\n');
  await writeFile(join(work, 'run.sh'), '#!/bin/sh\n');
  await git(work, 'add', '-A');
  await git(work, 'commit', '-q', '-m', 'base');
  await git(root, 'clone', '-q', work, 'clone');
  clone = join(root, 'clone');

  // The "agent's" change.
  await writeFile(join(work, 'calc.py'), 'def add(a, b):\n    return a + b\n');
  await writeFile(
    join(work, 'tests', 'test_calc.py'),
    'import pytest\nfrom calc import add\n\n\n@pytest.mark.skip(reason="later")\ndef test_add():\n    assert add(2, 3) == 5\n',
  );
  await unlink(join(work, 'tests', 'test_old.py'));
  await writeFile(join(work, 'big data é.json'), `[${'1,'.repeat(700_000)}1]\n`);
  await writeFile(join(work, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1, 2, 3]));
  await symlink('../../etc/passwd', join(work, 'escape'));
  await symlink('calc.py', join(work, 'inside'));
  await exec('chmod', ['+x', join(work, 'calc.py')]);
  await git(work, 'add', '-A');
  patch = await git(
    work,
    'diff',
    '--cached',
    '--binary',
    '--no-ext-diff',
    '--no-renames',
    '--full-index',
    'HEAD',
  );
  await applyPatch(clone, patch);
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('patch checks on a real git patch', () => {
  it('parses every file with its status, mode and lines', () => {
    const files = parsePatch(patch);
    expect(files.map((f) => [f.path, f.status, f.oldMode, f.newMode, f.binary]).sort()).toEqual(
      [
        ['big data é.json', 'added', null, '100644', false],
        ['calc.py', 'modified', '100644', '100755', false],
        ['escape', 'added', null, '120000', false],
        ['inside', 'added', null, '120000', false],
        ['logo.png', 'added', null, '100644', true],
        ['tests/test_calc.py', 'modified', '100644', '100644', false],
        ['tests/test_old.py', 'deleted', '100644', null, false],
      ].sort(),
    );
    const calc = files.find((f) => f.path === 'calc.py');
    expect(calc?.addedLines).toEqual([{ line: 2, text: '    return a + b' }]);
  });

  it('reads sizes and modes from the patched clone and finds every violation', async () => {
    const files = parsePatch(patch);
    const facts = await readPatchedFileFacts(
      clone,
      files.filter((f) => f.status !== 'deleted').map((f) => f.path),
    );
    expect(facts.get('big data é.json')).toEqual({ mode: '100644', sizeBytes: 1_400_004 });
    expect(facts.get('escape')).toEqual({ mode: '120000', sizeBytes: '../../etc/passwd'.length });
    expect(facts.get('calc.py')?.mode).toBe('100755');
    expect(facts.has('tests/test_old.py')).toBe(false);

    const violations = checkPatchLimits({ files, facts });
    expect(violations.map((v) => [v.kind, 'path' in v ? v.path : null]).sort()).toEqual(
      [
        ['binary_file', 'logo.png'],
        ['file_too_large', 'big data é.json'],
        ['symlink_outside', 'escape'],
      ].sort(),
    );
  });

  it('flags the deleted test file and the added skip marker', () => {
    const report = detectTestTampering({ files: parsePatch(patch) });
    expect(report.flags).toEqual(
      expect.arrayContaining([
        { kind: 'deleted_test_file', path: 'tests/test_old.py', removed: 2 },
        { kind: 'skip_marker', path: 'tests/test_calc.py', line: 5, marker: 'pytest.mark.skip' },
      ]),
    );
    expect(report.changedTestFiles.map((f) => f.path).sort()).toEqual([
      'tests/test_calc.py',
      'tests/test_old.py',
    ]);
  });
});

/** A fresh base repository and clone, the change made with `edit`, its patch applied to the clone. */
async function changed(edit: (dir: string) => Promise<void>): Promise<{ patch: string; clone: string }> {
  const base = await mkdtemp(join(root, 'case-'));
  const src = join(base, 'src');
  await mkdir(join(src, '.github', 'workflows'), { recursive: true });
  await git(src, 'init', '-q', '-b', 'main');
  await writeFile(join(src, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(join(src, '.github', 'workflows', 'ci.yml'), 'on: push\n');
  await git(src, 'add', '-A');
  await git(src, 'commit', '-q', '-m', 'base');
  await git(base, 'clone', '-q', src, 'clone');
  await edit(src);
  await git(src, 'add', '-A');
  const diff = await git(src, 'diff', '--cached', '--binary', '--no-renames', '--full-index', 'HEAD');
  await applyPatch(join(base, 'clone'), diff);
  return { patch: diff, clone: join(base, 'clone') };
}

describe('checkPatch', () => {
  it('lets a plain fix through with its size', async () => {
    const { patch: p, clone: c } = await changed((d) =>
      writeFile(join(d, 'calc.py'), 'def add(a, b):\n    return a + b\n'),
    );
    const result = await checkPatch({ patch: p, dir: c, protectedPaths: ['.github/workflows/**'] });
    expect(result).toMatchObject({ refused: false, linesChanged: 2 });
  });

  it('refuses a workflow edit, naming the path', async () => {
    const { patch: p, clone: c } = await changed((d) =>
      writeFile(join(d, '.github', 'workflows', 'ci.yml'), 'on: [push, pull_request]\n'),
    );
    const result = await checkPatch({ patch: p, dir: c, protectedPaths: ['.github/workflows/**'] });
    expect(result.refused).toBe(true);
    if (!result.refused) return;
    expect(result.check).toBe('protected_path');
    expect(result.reason).toContain('`.github/workflows/ci.yml` (protected by `.github/workflows/**`');
  });

  it('refuses a symbolic link pointing at a protected file', async () => {
    const { patch: p, clone: c } = await changed((d) =>
      symlink('.github/workflows/ci.yml', join(d, 'ci-link')),
    );
    const result = await checkPatch({ patch: p, dir: c, protectedPaths: ['.github/workflows/**'] });
    expect(result.refused && result.protectedPaths.map((h) => h.path)).toEqual(['.github/workflows/ci.yml']);
  });

  it('refuses a private key with file and line, never the key', async () => {
    const pem = '-----BEGIN ' + 'OPENSSH PRIVATE KEY-----';
    const { patch: p, clone: c } = await changed((d) =>
      writeFile(join(d, 'calc.py'), `def add(a, b):\n    return a + b\n# ${pem}\n`),
    );
    const result = await checkPatch({ patch: p, dir: c, protectedPaths: [] });
    expect(result.refused).toBe(true);
    if (!result.refused) return;
    expect(result.check).toBe('patch_limits');
    expect(result.details).toEqual([
      'Line 3 of `calc.py` adds what looks like a private key; secrets must never be committed (it is not repeated here).',
    ]);
    expect(JSON.stringify({ reason: result.reason, details: result.details })).not.toContain('BEGIN');
  });
});
