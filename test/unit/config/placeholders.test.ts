import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  findManifestPlaceholders,
  isDocumentationAddress,
  isExampleHost,
} from '../../../src/config/placeholders.js';
import { renderKustomization } from '../../helpers/kube-standin/render-kustomize.js';

describe('placeholders', () => {
  it('recognises the RFC 5737 documentation ranges, and nothing wider or real', () => {
    for (const v of ['192.0.2.0/24', '192.0.2.10/32', '198.51.100.7', '203.0.113.0/24'])
      expect(isDocumentationAddress(v), v).toBe(true);
    for (const v of ['10.20.30.0/24', '10.0.0.1/32', '192.0.0.0/16', '0.0.0.0/0', '192.0.3.1', 'x'])
      expect(isDocumentationAddress(v), v).toBe(false);
  });

  it('recognises reserved example hosts in host names, URLs and image references', () => {
    for (const v of [
      'github.example.com',
      'github.example.com:8443',
      'https://sglang.example.org/v1',
      'redis://:pw@redis.example.net:6379',
      'registry.example.com/frognano/frognano-sandbox:0.1.0',
      'ghe.corp.example',
      'ghe.invalid',
    ])
      expect(isExampleHost(v), v).toBe(true);
    for (const v of [
      'github.acme.com',
      'frognano-sandbox:dev',
      'http://frognano-sglang:30000/v1',
      'example',
      'a text mentioning example.com',
    ])
      expect(isExampleHost(v), v).toBe(false);
  });

  it('finds every placeholder the production overlay ships, and none once they are replaced', () => {
    const objects = renderKustomization('deploy/overlays/production');
    const found = findManifestPlaceholders(objects);
    expect(found.map((p) => p.where).sort()).toEqual([
      'ConfigMap/frognano/frognano-env data.GHE_HOST',
      'ConfigMap/frognano/frognano-env data.SANDBOX_IMAGE',
      'Deployment/frognano/frognano-server spec.template.spec.containers[0].image',
      'Deployment/frognano/frognano-worker spec.template.spec.containers[0].image',
      'NetworkPolicy/frognano/apiserver-egress spec.egress[0].to[0].ipBlock.cidr',
      'NetworkPolicy/frognano/github-egress spec.egress[0].to[0].ipBlock.cidr',
    ]);
    // A site's own values: the same objects with every placeholder replaced pass.
    const own = JSON.parse(
      JSON.stringify(objects)
        .replaceAll('github.example.com', 'github.acme.internal')
        .replaceAll('registry.example.com', 'registry.acme.internal')
        .replaceAll('192.0.2.10/32', '10.20.30.0/24')
        .replaceAll('192.0.2.20/32', '10.0.0.1/32'),
    ) as Record<string, unknown>[];
    expect(findManifestPlaceholders(own)).toEqual([]);

    // scripts/check-placeholders.mjs, as an admin runs it on rendered YAML (it needs dist/).
    const dir = mkdtempSync(join(tmpdir(), 'placeholders-'));
    try {
      const check = (objs: Record<string, unknown>[]) => {
        const file = join(dir, 'rendered.yaml');
        writeFileSync(file, objs.map((o) => stringify(o)).join('---\n'));
        return spawnSync(process.execPath, ['scripts/check-placeholders.mjs', file], { encoding: 'utf8' });
      };
      const refused = check(objects);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('still has 6 placeholder(s)');
      expect(refused.stderr).toContain(
        'NetworkPolicy/frognano/github-egress spec.egress[0].to[0].ipBlock.cidr: 192.0.2.10/32',
      );
      const accepted = check(own);
      expect([accepted.status, accepted.stdout]).toEqual([
        0,
        `check-placeholders: ${join(dir, 'rendered.yaml')}: no placeholder in ${objects.length} objects\n`,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
