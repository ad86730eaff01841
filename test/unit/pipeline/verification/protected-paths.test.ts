import { describe, expect, it } from 'vitest';
import {
  resolveEffectivePolicy,
  EMPTY_ADMIN_POLICY,
  parseAdminPolicy,
} from '../../../../src/config/policy.js';
import {
  createProtectedPathMatcher,
  describeProtectedPathRefusal,
  findProtectedPaths,
} from '../../../../src/pipeline/verification/protected-paths.js';

describe('findProtectedPaths', () => {
  const builtIn = resolveEffectivePolicy({ policy: EMPTY_ADMIN_POLICY, repo: 'acme/widgets' });

  it('refuses workflows, local actions and CODEOWNERS by default, and lets the rest through', () => {
    const hits = findProtectedPaths(
      [
        'src/app.py',
        '.github/workflows/ci.yml',
        '.github/actions/setup/action.yml',
        'CODEOWNERS',
        '.github/CODEOWNERS',
        '.github/ISSUE_TEMPLATE/bug.md',
        'docs/CODEOWNERS.md',
        'sub/CODEOWNERS',
      ],
      builtIn,
    );
    expect(hits.map((h) => [h.path, h.pattern])).toEqual([
      ['.github/workflows/ci.yml', '.github/workflows/**'],
      ['.github/actions/setup/action.yml', '.github/actions/**'],
      ['CODEOWNERS', 'CODEOWNERS'],
      ['.github/CODEOWNERS', '.github/CODEOWNERS'],
    ]);
    expect(hits[0]?.why).toMatch(/secrets/);
  });

  it('matches case variants and normalises ./ and doubled slashes', () => {
    const hits = findProtectedPaths(['./.GitHub/Workflows/x.yml', '.github//workflows/y.yml'], builtIn);
    expect(hits.map((h) => h.path)).toEqual(['.GitHub/Workflows/x.yml', '.github/workflows/y.yml']);
  });

  it('adds the admin policy’s and the repository’s globs to the built-in ones', () => {
    const policy = parseAdminPolicy('defaults:\n  protectedPaths: ["deploy/**"]\n', 'policy.yml');
    const effective = resolveEffectivePolicy({
      policy,
      repo: 'acme/widgets',
      repoConfig: {
        source: 'acme/widgets:.github/frognano.yml',
        settings: { protectedPaths: ['migrations/*.sql'] },
      },
    });
    const hits = findProtectedPaths(
      ['deploy/k8s/app.yaml', 'migrations/001.sql', 'migrations/sub/002.sql', '.github/workflows/a.yml'],
      effective,
    );
    expect(hits.map((h) => [h.path, h.pattern])).toEqual([
      ['deploy/k8s/app.yaml', 'deploy/**'],
      ['migrations/001.sql', 'migrations/*.sql'],
      ['.github/workflows/a.yml', '.github/workflows/**'],
    ]);
    expect(hits[0]?.why).toMatch(/platform admins or the repository/);
  });

  it('reports each path once', () => {
    const match = createProtectedPathMatcher(['CODEOWNERS']);
    expect(match(['CODEOWNERS', 'CODEOWNERS'])).toHaveLength(1);
  });
});

describe('describeProtectedPathRefusal', () => {
  it('names the path, the glob and why, and says no pull request was opened', () => {
    const text = describeProtectedPathRefusal(
      findProtectedPaths(['.github/workflows/ci.yml'], { protectedPaths: ['.github/workflows/**'] }),
    );
    expect(text).toContain(
      '`.github/workflows/ci.yml` (protected by `.github/workflows/**`: workflow files run in CI',
    );
    expect(text).toContain('No pull request was opened');
  });
});
