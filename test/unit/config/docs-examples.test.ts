import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAdminPolicy, resolveEffectivePolicy } from '../../../src/config/policy.js';
import { parseRepoConfig } from '../../../src/config/repo-config.js';

/** The annotated examples of the README's "Configuration" section stay valid. */
describe('README "Configuration" examples', () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('\n## Configuration\n');
  const end = readme.indexOf('\n## ', start + 1);
  if (start < 0) throw new Error('README.md has no "## Configuration" section');
  const text = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');

  it('has a valid admin policy and a valid repository configuration that combine as documented', () => {
    expect(blocks).toHaveLength(2);
    const policy = parseAdminPolicy(blocks[0]!, 'docs policy example');
    const repoConfig = parseRepoConfig(blocks[1]!, '.github/frognano.yml');
    const monorepo = resolveEffectivePolicy({ policy, repo: 'acme/monorepo', repoConfig });
    expect(monorepo).toMatchObject({ enabled: true, maxSteps: 60, concurrencyPerRepo: 2, clamps: [] });
    expect(monorepo.sandbox.resources.limits).toEqual({
      cpu: '2',
      memory: '8Gi',
      'ephemeral-storage': '10Gi',
    });
    expect(resolveEffectivePolicy({ policy, repo: 'acme/legacy' }).enabled).toBe(false);
    expect(resolveEffectivePolicy({ policy, repo: 'elsewhere/x' }).enabled).toBe(false);
    expect(resolveEffectivePolicy({ policy, repo: 'acme/infra-dns' }).allowedTriggerTeams).toEqual([
      'acme/platform',
    ]);
    const widgets = resolveEffectivePolicy({
      policy,
      repo: 'acme/widgets',
      repoConfig: parseRepoConfig('maxSteps: 150\n', 'r'),
    });
    expect(widgets.clamps).toEqual([
      expect.objectContaining({ key: 'maxSteps', requested: 150, applied: 100 }),
    ]);
  });
});
