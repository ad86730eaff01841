import { describe, expect, it } from 'vitest';
import {
  buildSandboxNetworkPolicy,
  buildSandboxPod,
  cpuQuantity,
  sandboxName,
  SANDBOX_SELECTOR,
  toLabelValue,
  type SandboxObjectOptions,
} from '../../../../src/sandbox/kubernetes/sandbox-objects.js';
import { validateKubernetesObject } from '../../../helpers/kube-standin/validate-object.js';

const base: SandboxObjectOptions = {
  name: sandboxName('acme/widgets#42', 'ab12cd'),
  namespace: 'frognano-sandboxes',
  jobId: 'acme/widgets#42',
  image: 'registry.example.com/frognano/frognano-sandbox:0.1.0',
  cpuCores: 1.5,
  memoryMiB: 3072,
  workspaceMiB: 2048,
  tmpMiB: 512,
  activeDeadlineSeconds: 4200,
  deadline: new Date('2026-01-01T00:00:00Z'),
};
const full: SandboxObjectOptions = {
  ...base,
  runtimeClassName: 'gvisor',
  nodeSelector: { 'frognano.dev/sandbox-node': 'true' },
  tolerations: [{ key: 'frognano.dev/sandbox', operator: 'Exists', effect: 'NoSchedule' }],
  imagePullSecret: 'registry',
  serviceAccountName: 'frognano-sandbox',
};

describe('sandbox objects', () => {
  it('validate against the Kubernetes OpenAPI schema, with and without the optional fields', () => {
    for (const o of [base, full]) {
      expect(validateKubernetesObject(buildSandboxPod(o))).toEqual([]);
      expect(validateKubernetesObject(buildSandboxPod(o, 2))).toEqual([]);
      expect(validateKubernetesObject(buildSandboxNetworkPolicy(o))).toEqual([]);
    }
  });

  it('the validation catches a wrong type and an unknown field', () => {
    const pod = buildSandboxPod(base) as unknown as {
      spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
    };
    pod.spec.activeDeadlineSeconds = 'soon';
    pod.spec.containers[0]!.securityContext = { runAsUserr: 1000 };
    const problems = validateKubernetesObject(pod);
    expect(problems.join('\n')).toContain('activeDeadlineSeconds must be integer');
    expect(problems.join('\n')).toContain('unknown field .spec.containers[0].securityContext.runAsUserr');
  });

  it('hardens the pod as the security model says', () => {
    const pod = buildSandboxPod(full, 1);
    const spec = pod.spec!;
    const c = spec.containers[0]!;
    expect(pod.metadata?.name).toBe(`${full.name}-1`);
    expect(spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(c.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.activeDeadlineSeconds).toBe(4200);
    expect([spec.hostNetwork, spec.hostPID, spec.hostIPC]).toEqual([false, false, false]);
    expect(spec.runtimeClassName).toBe('gvisor');
    expect(spec.nodeSelector).toEqual(full.nodeSelector);
    expect(spec.tolerations).toEqual(full.tolerations);
    expect(spec.serviceAccountName).toBe('frognano-sandbox');
    // Requests = limits for cpu, memory and ephemeral storage (Guaranteed QoS).
    expect(c.resources?.requests).toEqual({ cpu: '1500m', memory: '3072Mi', 'ephemeral-storage': '2816Mi' });
    expect(c.resources?.limits).toEqual(c.resources?.requests);
    // No environment from secrets or config maps; nothing but the fixed variables.
    expect(c.envFrom).toBeUndefined();
    expect(c.env?.every((e) => e.value !== undefined && e.valueFrom === undefined)).toBe(true);
    expect(spec.volumes).toEqual([
      { name: 'workspace', emptyDir: { sizeLimit: '2048Mi' } },
      { name: 'tmp', emptyDir: { sizeLimit: '512Mi' } },
    ]);
    expect(c.volumeMounts?.map((m) => m.mountPath)).toEqual(['/workspace', '/tmp']);
  });

  it('labels name the job and the app, and the policy denies everything for exactly this sandbox', () => {
    const pod = buildSandboxPod(base);
    const policy = buildSandboxNetworkPolicy(base);
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/name': 'frognano-bot',
      'app.kubernetes.io/component': 'sandbox',
      'app.kubernetes.io/managed-by': 'frognano-bot',
      'frognano.dev/job-id': 'acme-widgets-42',
      'frognano.dev/sandbox': base.name,
    });
    expect(pod.metadata?.annotations).toEqual({
      'frognano.dev/job-id': 'acme/widgets#42',
      'frognano.dev/deadline': '2026-01-01T00:00:00.000Z',
    });
    expect(policy.metadata?.labels).toEqual(pod.metadata?.labels);
    expect(policy.spec).toEqual({
      podSelector: { matchLabels: { 'frognano.dev/sandbox': base.name } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [],
    });
    expect(SANDBOX_SELECTOR).toBe(
      'app.kubernetes.io/component=sandbox,app.kubernetes.io/managed-by=frognano-bot',
    );
  });

  it('makes DNS-1123 names and label values from any job id', () => {
    for (const id of ['A/B#1', '---', 'x'.repeat(200), 'ünïcödé', '']) {
      const name = sandboxName(id, 'Zz9!');
      expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      expect(`${name}-2`.length).toBeLessThanOrEqual(63);
      expect(toLabelValue(id)).toMatch(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
      expect(toLabelValue(id).length).toBeLessThanOrEqual(63);
    }
    expect(cpuQuantity(2)).toBe('2');
    expect(cpuQuantity(0.25)).toBe('250m');
    expect(() => cpuQuantity(0)).toThrow(RangeError);
  });
});
