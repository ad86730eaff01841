import { describe, expect, it } from 'vitest';
import { parsePatch, type PatchFile } from '../../../../src/pipeline/verification/parse-patch.js';
import {
  checkPatchLimits,
  describePatchViolations,
  symlinkLeavesRepository,
} from '../../../../src/pipeline/verification/patch-limits.js';
import { findSecrets } from '../../../../src/pipeline/verification/secret-patterns.js';

/** A parsed file adding the given lines (1-based, in order). */
function added(path: string, lines: string[], extra: Partial<PatchFile> = {}): PatchFile {
  return {
    path,
    status: 'added',
    oldMode: null,
    newMode: '100644',
    binary: false,
    addedLines: lines.map((text, i) => ({ line: i + 1, text })),
    removedLines: [],
    ...extra,
  };
}

// Secret-shaped test values are assembled at run time so that this file itself holds no secret.
const GH_TOKEN = 'ghp_' + 'A1b2C3d4E5'.repeat(3) + 'F6g7H8';
const AWS_KEY_ID = 'AKIA' + 'Q3EGRX5ZB7NM4KPW';
const PEM = '-----BEGIN ' + 'RSA PRIVATE KEY-----';

describe('findSecrets', () => {
  it('finds private keys, cloud keys and tokens in added lines, with file and line', () => {
    const files = [
      added('config.py', ['x = 1', `TOKEN = "${GH_TOKEN}"`]),
      added('keys/id_rsa', [PEM, 'MIIEow...']),
      added('aws.env', [
        `AWS_ACCESS_KEY_ID=${AWS_KEY_ID}`,
        `aws_secret_access_key = ${'wJalrXUtnFEMI/K7MDENG/bPxRfiCY' + 'zZ9yQ1xR2b'}`,
      ]),
      added('slack.txt', ['xoxb-' + '1234567890-abcdefghij']),
      added('pat.txt', ['github_pat_' + 'a'.repeat(22) + '_' + 'B'.repeat(59)]),
    ];
    expect(findSecrets(files)).toEqual([
      { path: 'config.py', line: 2, kind: 'GitHub token' },
      { path: 'keys/id_rsa', line: 1, kind: 'private key' },
      { path: 'aws.env', line: 1, kind: 'AWS access key id' },
      { path: 'aws.env', line: 2, kind: 'AWS secret access key' },
      { path: 'slack.txt', line: 1, kind: 'Slack token' },
      { path: 'pat.txt', line: 1, kind: 'GitHub fine-grained token' },
    ]);
  });

  it('ignores removed lines, public keys, AWS’s documented example and look-alikes', () => {
    const file = added('a.txt', [
      '-----BEGIN PUBLIC KEY-----',
      'AKIAIOSFODNN7EXAMPLE',
      'ghp_short',
      'my_ghp_token_name = lookup()',
    ]);
    file.removedLines = [{ line: 1, text: PEM }];
    expect(findSecrets([file])).toEqual([]);
  });
});

describe('checkPatchLimits', () => {
  it('accepts a small text change', () => {
    expect(checkPatchLimits({ files: [added('a.py', ['x'])] })).toEqual([]);
  });

  it('counts files and lines against the limits', () => {
    const files = [added('a', ['1', '2', '3']), added('b', ['4', '5'])];
    expect(checkPatchLimits({ files, limits: { maxFilesChanged: 1, maxLinesChanged: 4 } })).toEqual([
      { kind: 'too_many_files', count: 2, limit: 1 },
      { kind: 'too_many_lines', count: 5, limit: 4 },
    ]);
  });

  it('refuses binary files unless allowed, but never a deleted one', () => {
    const bin = added('logo.png', [], { binary: true });
    const gone: PatchFile = {
      ...added('old.png', [], { binary: true }),
      status: 'deleted',
      newMode: null,
      oldMode: '100644',
    };
    expect(checkPatchLimits({ files: [bin, gone] })).toEqual([{ kind: 'binary_file', path: 'logo.png' }]);
    expect(checkPatchLimits({ files: [bin], limits: { allowBinary: true } })).toEqual([]);
  });

  it('refuses files above the size limit, from the patched tree’s facts', () => {
    const facts = new Map([
      ['big.json', { mode: '100644', sizeBytes: 2_000_000 }],
      ['small.py', { mode: '100644', sizeBytes: 10 }],
    ]);
    const violations = checkPatchLimits({
      files: [added('big.json', ['{}']), added('small.py', ['x'])],
      facts,
    });
    expect(violations).toEqual([
      { kind: 'file_too_large', path: 'big.json', sizeBytes: 2_000_000, limit: 1024 * 1024 },
    ]);
    expect(describePatchViolations(violations)).toEqual([
      '`big.json` would be 1.9 MiB; the limit per file is 1 MiB.',
    ]);
  });

  it('refuses symlinks out of the repository and submodules, from a real patch text', () => {
    const patch = [
      'diff --git a/data b/data',
      'new file mode 120000',
      'index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111',
      '--- /dev/null',
      '+++ b/data',
      '@@ -0,0 +1 @@',
      '+/etc/shadow',
      '\\ No newline at end of file',
      'diff --git a/docs/readme b/docs/readme',
      'new file mode 120000',
      'index 0000000000000000000000000000000000000000..2222222222222222222222222222222222222222',
      '--- /dev/null',
      '+++ b/docs/readme',
      '@@ -0,0 +1 @@',
      '+../README.md',
      '\\ No newline at end of file',
      'diff --git a/vendor/lib b/vendor/lib',
      'new file mode 160000',
      'index 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333',
      '--- /dev/null',
      '+++ b/vendor/lib',
      '@@ -0,0 +1 @@',
      '+Subproject commit 3333333333333333333333333333333333333333',
      '',
    ].join('\n');
    expect(checkPatchLimits({ files: parsePatch(patch) })).toEqual([
      { kind: 'symlink_outside', path: 'data', target: '/etc/shadow' },
      { kind: 'submodule', path: 'vendor/lib' },
    ]);
  });

  it('reports secrets by file and line without repeating them', () => {
    const violations = checkPatchLimits({ files: [added('deploy/key.pem', ['# key', PEM])] });
    expect(violations).toEqual([
      { kind: 'secret', path: 'deploy/key.pem', line: 2, secretKind: 'private key' },
    ]);
    const [text] = describePatchViolations(violations);
    expect(text).toBe(
      'Line 2 of `deploy/key.pem` adds what looks like a private key; secrets must never be committed (it is not repeated here).',
    );
    expect(text).not.toContain('BEGIN');
  });
});

describe('symlinkLeavesRepository', () => {
  it.each([
    ['a/link', '../b', false],
    ['a/link', '../../b', true],
    ['link', '/etc/passwd', true],
    ['link', '.git/config', true],
    ['a/link', '../.git', true],
    ['link', 'C:\\Windows', true],
    ['link', 'sub/./file', false],
    ['link', '', true],
  ])('%s -> %s: %s', (path, target, outside) => {
    expect(symlinkLeavesRepository(path, target)).toBe(outside);
  });
});
