import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseAdminPolicy } from '../../../src/config/policy.js';
import { idOf, renderKustomization } from '../../helpers/kube-standin/render-kustomize.js';
import { validateKubernetesObject } from '../../helpers/kube-standin/validate-object.js';

// deploy/ rendered as `kubectl kustomize deploy/overlays/<name>` would (test/helpers/kube-standin/
// render-kustomize.ts; compared with the real `kubectl kustomize` below where kubectl is installed,
// and in CI by scripts/check-deploy.sh), every object validated against the Kubernetes OpenAPI
// schema, and the security fields checked.

/** Rendered YAML, read freely (each object is schema-validated in the first test). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;
const overlays: Record<'dev' | 'production', Obj[]> = {
  dev: renderKustomization('deploy/overlays/dev'),
  production: renderKustomization('deploy/overlays/production'),
};
const find = (objs: Obj[], kind: string, name: string, namespace?: string): Obj => {
  const o = objs.find(
    (x) =>
      x.kind === kind &&
      x.metadata?.name === name &&
      (namespace === undefined || x.metadata?.namespace === namespace),
  );
  if (!o) throw new Error(`no ${kind}/${name} in the rendered overlay`);
  return o;
};
const podSpec = (o: Obj): Obj => o.spec.template.spec;

describe.each(Object.entries(overlays))('deploy/overlays/%s', (_name, objects) => {
  it('renders objects that all validate against the Kubernetes OpenAPI schema', () => {
    expect(objects.length).toBeGreaterThan(25);
    expect(objects.flatMap((o) => validateKubernetesObject(o))).toEqual([]);
    const ids = objects.map(idOf);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('has the two namespaces, the sandbox one under Pod Security "restricted"', () => {
    expect(find(objects, 'Namespace', 'frognano').metadata.name).toBe('frognano');
    expect(
      find(objects, 'Namespace', 'frognano-sandboxes').metadata.labels['pod-security.kubernetes.io/enforce'],
    ).toBe('restricted');
  });

  it('gives the worker only the verbs the sandbox driver uses, in the sandbox namespace only', () => {
    const role = find(objects, 'Role', 'frognano-sandbox-driver', 'frognano-sandboxes');
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'list', 'delete'] },
      { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
      { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      {
        apiGroups: ['networking.k8s.io'],
        resources: ['networkpolicies'],
        verbs: ['create', 'get', 'list', 'delete'],
      },
    ]);
    const binding = find(objects, 'RoleBinding', 'frognano-sandbox-driver', 'frognano-sandboxes');
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'frognano-worker', namespace: 'frognano' },
    ]);
    expect(objects.filter((o) => ['ClusterRole', 'ClusterRoleBinding'].includes(o.kind))).toEqual([]);
    expect(
      find(objects, 'ServiceAccount', 'frognano-sandbox', 'frognano-sandboxes').automountServiceAccountToken,
    ).toBe(false);
    expect(podSpec(find(objects, 'Deployment', 'frognano-worker')).serviceAccountName).toBe(
      'frognano-worker',
    );
  });

  it('hardens every workload: non-root, no escalation, no capabilities, seccomp, resources, probes', () => {
    const workloads = objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind));
    expect(workloads.map((o) => o.metadata.name).sort()).toEqual([
      'frognano-redis',
      'frognano-server',
      'frognano-sglang',
      'frognano-worker',
    ]);
    for (const w of workloads) {
      const spec = podSpec(w);
      expect(spec.securityContext?.seccompProfile?.type, w.metadata.name).toBe('RuntimeDefault');
      expect(spec.enableServiceLinks, w.metadata.name).toBe(false);
      for (const c of spec.containers) {
        const where = `${w.metadata.name}/${c.name}`;
        expect(c.securityContext?.allowPrivilegeEscalation, where).toBe(false);
        expect(c.securityContext?.capabilities?.drop, where).toEqual(['ALL']);
        expect(c.resources?.requests?.memory, where).toBeDefined();
        expect(c.resources?.limits?.memory, where).toBe(c.resources?.requests?.memory);
        expect(c.resources?.limits?.cpu, where).toBeDefined();
        expect(c.readinessProbe, where).toBeDefined();
        expect(c.livenessProbe, where).toBeDefined();
      }
    }
    for (const name of ['frognano-server', 'frognano-worker', 'frognano-redis']) {
      const w = workloads.find((o) => o.metadata.name === name)!;
      expect(podSpec(w).securityContext.runAsNonRoot, name).toBe(true);
      expect(podSpec(w).containers[0].securityContext.readOnlyRootFilesystem, name).toBe(true);
    }
    for (const name of ['frognano-server', 'frognano-redis', 'frognano-sglang']) {
      expect(
        podSpec(workloads.find((o) => o.metadata.name === name)!).automountServiceAccountToken,
        name,
      ).toBe(false);
    }
    for (const name of ['frognano-server', 'frognano-worker']) {
      const pdb = find(objects, 'PodDisruptionBudget', name, 'frognano');
      expect(pdb.spec.selector.matchLabels).toEqual(
        find(objects, 'Deployment', name).spec.selector.matchLabels,
      );
    }
    expect(find(objects, 'Service', 'frognano-server').spec.ports[0].targetPort).toBe('http');
  });

  it('runs SGLang with one GPU, weights from a PVC, the parsers and readiness on /health', () => {
    const sglang = find(objects, 'Deployment', 'frognano-sglang');
    const c = podSpec(sglang).containers[0];
    const args = c.command.join(' ');
    expect(args).toContain('--reasoning-parser qwen3');
    expect(args).toContain('--tool-call-parser qwen3_coder');
    expect(args).toContain('--context-length 131072');
    expect(c.resources.limits['nvidia.com/gpu']).toBe('1');
    expect(c.readinessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(
      podSpec(sglang).volumes.find((v: Obj) => v.name === 'weights').persistentVolumeClaim.claimName,
    ).toBe('frognano-model-weights');
    expect(
      find(objects, 'PersistentVolumeClaim', 'frognano-model-weights').spec.resources.requests.storage,
    ).toBeDefined();
    expect(find(objects, 'Service', 'frognano-sglang').spec.ports[0].port).toBe(30000);
  });

  it('keeps Redis in a StatefulSet with append-only persistence', () => {
    const redis = find(objects, 'StatefulSet', 'frognano-redis');
    const args: string[] = podSpec(redis).containers[0].args;
    expect(args[args.indexOf('--appendonly') + 1]).toBe('yes');
    expect(redis.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
  });

  it('closes the sandbox namespace: default deny, quota and limits', () => {
    const deny = find(objects, 'NetworkPolicy', 'default-deny', 'frognano-sandboxes');
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    const quota = find(objects, 'ResourceQuota', 'sandboxes', 'frognano-sandboxes');
    for (const key of ['pods', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage'])
      expect(quota.spec.hard[key], key).toBeDefined();
    const limits = find(objects, 'LimitRange', 'sandboxes', 'frognano-sandboxes');
    expect(limits.spec.limits[0].max).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
  });

  it('lets the server reach Redis and SGLang, and the worker Redis, SGLang, the GitHub host and the API server', () => {
    const egressTo = (policy: Obj) => policy.spec.egress as Obj[];
    const appDeny = find(objects, 'NetworkPolicy', 'default-deny', 'frognano');
    expect(appDeny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    const server = find(objects, 'NetworkPolicy', 'server', 'frognano');
    // SGLang: serve's /readyz lists the models (GET <MODEL_URL>/models); only the SGLang port.
    expect(egressTo(server)).toEqual([
      {
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'redis' } } }],
        ports: [{ protocol: 'TCP', port: 6379 }],
      },
      {
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'model-server' } } }],
        ports: [{ protocol: 'TCP', port: 30000 }],
      },
    ]);
    const worker = find(objects, 'NetworkPolicy', 'worker', 'frognano');
    expect(
      egressTo(worker).map((e) => [
        e.to[0].podSelector.matchLabels['app.kubernetes.io/component'],
        e.ports[0].port,
      ]),
    ).toEqual([
      ['redis', 6379],
      ['model-server', 30000],
    ]);
    const github = find(objects, 'NetworkPolicy', 'github-egress', 'frognano');
    expect(github.spec.podSelector.matchExpressions[0].values).toEqual(['server', 'worker']);
    expect(egressTo(github)[0]!.ports).toEqual([{ protocol: 'TCP', port: 443 }]);
    const api = find(objects, 'NetworkPolicy', 'apiserver-egress', 'frognano');
    expect(api.spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe('worker');
    const redis = find(objects, 'NetworkPolicy', 'redis', 'frognano');
    expect(redis.spec.ingress[0].from[0].podSelector.matchExpressions[0].values).toEqual([
      'server',
      'worker',
    ]);
    const modelServer = find(objects, 'NetworkPolicy', 'model-server', 'frognano');
    expect(modelServer.spec.ingress).toEqual([
      {
        from: [
          {
            podSelector: {
              matchExpressions: [
                { key: 'app.kubernetes.io/component', operator: 'In', values: ['server', 'worker'] },
              ],
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 30000 }],
      },
    ]);
    const env = find(objects, 'ConfigMap', 'frognano-env', 'frognano').data;
    expect(env).toMatchObject({
      SANDBOX_DRIVER: 'kubernetes',
      SANDBOX_NAMESPACE: 'frognano-sandboxes',
      REDIS_URL: 'redis://frognano-redis:6379',
    });
  });
});

describe('overlay differences', () => {
  it('production: two replicas each, gVisor sandboxes, its registry and CIDRs', () => {
    const p = overlays.production;
    expect(find(p, 'Deployment', 'frognano-server').spec.replicas).toBe(2);
    expect(find(p, 'Deployment', 'frognano-worker').spec.replicas).toBe(2);
    expect(podSpec(find(p, 'Deployment', 'frognano-worker')).containers[0].resources.limits.memory).toBe(
      '1Gi',
    );
    expect(podSpec(find(p, 'Deployment', 'frognano-worker')).containers[0].envFrom).toHaveLength(2);
    expect(find(p, 'ConfigMap', 'frognano-env').data.SANDBOX_RUNTIME_CLASS).toBe('gvisor');
    expect(find(p, 'RuntimeClass', 'gvisor').handler).toBe('runsc');
    expect(podSpec(find(p, 'Deployment', 'frognano-server')).containers[0].image).toBe(
      'registry.example.com/frognano/frognano-bot:0.1.0',
    );
    // Placeholders from the documentation range, which scripts/check-placeholders.mjs refuses.
    expect(find(p, 'NetworkPolicy', 'github-egress').spec.egress[0].to[0].ipBlock.cidr).toBe('192.0.2.10/32');
    expect(find(p, 'NetworkPolicy', 'apiserver-egress').spec.egress[0].to[0].ipBlock.cidr).toBe(
      '192.0.2.20/32',
    );
  });

  it('dev: one replica, debug logs, a small sandbox quota, local images, egress that works on kind', () => {
    const d = overlays.dev;
    expect(find(d, 'Deployment', 'frognano-worker').spec.replicas).toBe(1);
    expect(find(d, 'ConfigMap', 'frognano-env').data).toMatchObject({
      LOG_LEVEL: 'debug',
      SANDBOX_IMAGE: 'frognano-sandbox:dev',
    });
    expect(find(d, 'ConfigMap', 'frognano-env').data.SANDBOX_RUNTIME_CLASS).toBeUndefined();
    expect(find(d, 'ResourceQuota', 'sandboxes').spec.hard.pods).toBe('4');
    expect(podSpec(find(d, 'Deployment', 'frognano-worker')).containers[0].image).toBe('frognano-bot:dev');
    // Not the base's placeholder ranges, which match nothing: any HTTPS address, and the API server
    // on the ports kind/k3d (6443) and minikube (8443) serve it on.
    expect(find(d, 'NetworkPolicy', 'github-egress').spec.egress).toEqual([
      { to: [{ ipBlock: { cidr: '0.0.0.0/0' } }], ports: [{ protocol: 'TCP', port: 443 }] },
    ]);
    const api = find(d, 'NetworkPolicy', 'apiserver-egress').spec.egress;
    expect(api).toHaveLength(1);
    expect(api[0].to).toEqual([{ ipBlock: { cidr: '0.0.0.0/0' } }]);
    expect(api[0].ports.map((p: Obj) => p.port)).toEqual([443, 6443, 8443]);
  });
});

describe('Dockerfiles', () => {
  it('builds the app in stages and runs it as a non-root user', () => {
    const app = readFileSync('deploy/docker/app.Dockerfile', 'utf8');
    expect(app.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(app).toMatch(/^COPY --from=build /m);
    expect(app).toMatch(/^USER 10001:10001$/m);
    // The local sandbox's launcher: built with libseccomp in its own stage, copied into the runtime.
    expect(app).toMatch(/^FROM \S+ AS native$/m);
    expect(app).toMatch(/libseccomp-dev/);
    expect(app).toMatch(/^COPY --from=native \/src\/native\/build \.\/native\/build$/m);
  });

  it('builds both app stages on Node 24 LTS pinned by digest, the tag beside it', () => {
    const app = readFileSync('deploy/docker/app.Dockerfile', 'utf8');
    expect(app).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim@sha256:[0-9a-f]{64}$/m);
    expect(app.match(/^FROM \$\{NODE_IMAGE\} AS (build|runtime)$/gm)).toHaveLength(2);
    expect(readFileSync('deploy/docker/sandbox.Dockerfile', 'utf8')).toMatch(
      /^ARG DEBIAN_IMAGE=debian:bookworm-slim@sha256:[0-9a-f]{64}$/m,
    );
  });

  it('builds the sandbox image non-root (uid 1000) with git, bash, coreutils, python3 and pytest', () => {
    const sandbox = readFileSync('deploy/docker/sandbox.Dockerfile', 'utf8');
    expect(sandbox).toMatch(/^USER 1000:1000$/m);
    for (const pkg of [
      'git',
      'bash',
      'coreutils',
      'util-linux',
      'findutils',
      'tar',
      'python3',
      'python3-pytest',
    ]) {
      expect(sandbox).toMatch(new RegExp(`\\s${pkg}\\s`));
    }
  });
});

describe('generated and optional parts', () => {
  it('generates the frognano-policy ConfigMap from deploy/base/policy.yaml, a valid admin policy', () => {
    const text = readFileSync('deploy/base/policy.yaml', 'utf8');
    for (const objects of Object.values(overlays)) {
      const cm = find(objects, 'ConfigMap', 'frognano-policy', 'frognano');
      expect(cm.data).toEqual({ 'policy.yaml': text });
    }
    expect(() => parseAdminPolicy(text, 'deploy/base/policy.yaml')).not.toThrow();
    // The Deployments mount it under its own name (no hash suffix: the file is reloaded in place).
    const volumes = podSpec(find(overlays.production, 'Deployment', 'frognano-worker')).volumes as Obj[];
    expect(volumes.find((v) => v.name === 'policy')?.configMap.name).toBe('frognano-policy');
  });

  it('the internal-ca component mounts the CA bundle read-only and points Node and git at it', () => {
    const objects = renderKustomization('test/fixtures/deploy/production-internal-ca');
    expect(objects.flatMap((o) => validateKubernetesObject(o))).toEqual([]);
    expect(find(objects, 'ConfigMap', 'frognano-env').data).toMatchObject({
      NODE_EXTRA_CA_CERTS: '/etc/frognano/ca/ca.crt',
      GIT_SSL_CAINFO: '/etc/frognano/ca/ca.crt',
    });
    for (const name of ['frognano-server', 'frognano-worker']) {
      const spec = podSpec(find(objects, 'Deployment', name));
      expect(spec.volumes).toContainEqual({
        name: 'ca-bundle',
        configMap: { name: 'frognano-ca-bundle', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
      });
      expect(spec.containers[0].volumeMounts).toContainEqual({
        name: 'ca-bundle',
        mountPath: '/etc/frognano/ca',
        readOnly: true,
      });
      // Still the hardened container: the bundle did not need a writable root filesystem.
      expect(spec.containers[0].securityContext.readOnlyRootFilesystem).toBe(true);
    }
  });

  const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!hasKubectl)(
    'the test renderer agrees with `kubectl kustomize` (where kubectl is installed)',
    () => {
      for (const dir of [
        'deploy/overlays/dev',
        'deploy/overlays/production',
        'test/fixtures/deploy/production-internal-ca',
      ]) {
        const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
        const theirs = parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>);
        const byId = (l: Record<string, unknown>[]) => Object.fromEntries(l.map((o) => [idOf(o), o]));
        expect(byId(renderKustomization(dir)), dir).toEqual(byId(theirs));
      }
    },
  );
});
