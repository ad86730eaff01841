import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAdminPolicy, resolveEffectivePolicy } from '../../../src/config/policy.js';
import { parseRepoConfig } from '../../../src/config/repo-config.js';

/** The annotated examples of docs/configuration.md (the README "Configuration" text) stay valid. */
describe('docs/configuration.md examples', () => {
  const text = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
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
