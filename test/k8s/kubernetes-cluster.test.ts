import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import tarStream from 'tar-stream';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/app-error.js';
import { runDoctorChecks } from '../../src/bin/commands/doctor.js';
import {
  createKubernetesSandboxFactory,
  KUBERNETES_SANDBOX_DEFAULTS,
} from '../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { createSandboxJanitor } from '../../src/sandbox/kubernetes/sandbox-janitor.js';
import type { Sandbox } from '../../src/sandbox/sandbox.js';
import { idOf, renderKustomization } from '../helpers/kube-standin/render-kustomize.js';
import { KUBERNETES_MARKERS } from '../helpers/kubernetes-markers.js';
import { describeSandboxContract } from '../helpers/sandbox-contract.js';

/**
 * The Kubernetes driver against a real cluster: `KUBECONFIG=~/.kube/config npm run test:k8s`
 * (kind works; see deploy/README.md "Testing against a cluster"). Without KUBECONFIG the suite is
 * skipped with a message: it is the one suite that may skip.
 *
 * Environment:
 * - `FROGNANO_K8S_NAMESPACE` (default `frognano-k8s-test`): created when missing, deleted at the end
 *   when this suite created it;
 * - `FROGNANO_K8S_IMAGE` (default `python:3.12-slim`): a sandbox image with sh, bash, coreutils,
 *   util-linux and tar (deploy/docker/sandbox.Dockerfile builds the real one);
 * - `FROGNANO_K8S_RUNTIME_CLASS` (optional): e.g. `gvisor`.
 */
const KUBECONFIG = process.env.KUBECONFIG;
const NAMESPACE = process.env.FROGNANO_K8S_NAMESPACE ?? 'frognano-k8s-test';
const IMAGE = process.env.FROGNANO_K8S_IMAGE ?? 'python:3.12-slim';
const RUNTIME_CLASS = process.env.FROGNANO_K8S_RUNTIME_CLASS;

if (!KUBECONFIG) {
  console.warn(
    'test/k8s skipped: KUBECONFIG is not set. To run the real-cluster suite: `kind create cluster` then ' +
      '`KUBECONFIG=$HOME/.kube/config npm run test:k8s` (see deploy/README.md).',
  );
}

const suite = KUBECONFIG ? describe : describe.skip;

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

function factory(extra: { egress?: boolean } = {}) {
  const kc = kubeConfig();
  return createKubernetesSandboxFactory({
    kubeConfig: kc,
    namespace: NAMESPACE,
    image: IMAGE,
    runtimeClassName: RUNTIME_CLASS,
    cpuCores: 0.5,
    memoryMiB: 512,
    workspaceMiB: 1024,
    tmpMiB: 512,
    jobTimeLimitMs: 30 * 60_000,
    startTimeoutMs: 240_000,
    // The API server is a host every sandbox must not reach.
    egressProbeTargets: extra.egress
      ? [{ name: 'Kubernetes API server', url: kc.getCurrentCluster()!.server }]
      : undefined,
  });
}

suite('Kubernetes driver on a real cluster', () => {
  let createdNamespace = false;

  beforeAll(async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    try {
      await core.readNamespace({ name: NAMESPACE });
    } catch {
      await core.createNamespace({
        body: { metadata: { name: NAMESPACE, labels: { 'frognano.dev/test': 'true' } } },
      });
      createdNamespace = true;
    }
  });
  afterAll(async () => {
    if (createdNamespace) await kubeConfig().makeApiClient(CoreV1Api).deleteNamespace({ name: NAMESPACE });
  });

  describeSandboxContract(`kubernetes (${IMAGE})`, async () => ({
    factory: factory(),
    hostile: { graceMs: KUBERNETES_SANDBOX_DEFAULTS.callGraceMs, markerScript: KUBERNETES_MARKERS },
  }));

  describe('driver', () => {
    const sandboxes: Sandbox[] = [];
    afterAll(async () => {
      for (const sb of sandboxes) await sb.destroy();
    });

    it('starts a sandbox whose egress is blocked (the cluster enforces NetworkPolicy)', async () => {
      const sb = await factory({ egress: true }).create({ jobId: 'k8s-egress' });
      sandboxes.push(sb);
      expect((await sb.exec('id -u', { timeoutMs: 30_000 })).stdout.toString()).toBe('1000\n');
    });

    it('copies a 200 MB repository whole', async () => {
      const sb = await factory().create({ jobId: 'k8s-copy' });
      sandboxes.push(sb);
      const pack = tarStream.pack();
      const hash = createHash('sha256');
      const chunk = randomBytes(1024 * 1024);
      for (let i = 0; i < 200; i++) {
        pack.entry({ name: `repo/blob-${i}.bin` }, chunk);
        hash.update(chunk);
      }
      pack.finalize();
      await sb.copyIn(pack as unknown as Readable, { timeoutMs: 600_000 });
      const r = await sb.exec('cat repo/blob-*.bin | sha256sum | cut -c1-64', { timeoutMs: 120_000 });
      // The glob sorts blob-1, blob-10…; all chunks are equal, so the order does not matter.
      expect(r.stdout.toString().trim()).toBe(hash.digest('hex'));
    });

    it('recovers from a deleted pod by replaying the calls', async () => {
      const sb = await factory().create({ jobId: 'k8s-recover' });
      sandboxes.push(sb);
      await sb.writeFile('a.txt', 'written\n');
      await sb.exec('echo executed >> a.txt', { timeoutMs: 30_000 });
      const core = kubeConfig().makeApiClient(CoreV1Api);
      const pods = await core.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: 'frognano.dev/job-id=k8s-recover',
      });
      expect(pods.items).toHaveLength(1);
      await core.deleteNamespacedPod({
        name: pods.items[0]!.metadata!.name!,
        namespace: NAMESPACE,
        gracePeriodSeconds: 0,
      });
      expect((await sb.readFile('a.txt')).toString()).toBe('written\nexecuted\n');
    });

    it('the janitor removes the sandbox of an inactive job', async () => {
      const sb = await factory().create({ jobId: 'k8s-janitor' });
      const janitor = createSandboxJanitor({
        kubeConfig: kubeConfig(),
        namespace: NAMESPACE,
        minAgeMs: 0,
        isJobActive: async (id) => id !== 'k8s-janitor',
      });
      const report = await janitor.sweep();
      expect(report.pods.some((p) => p.includes('k8s-janitor'))).toBe(true);
      expect(report.networkPolicies.some((p) => p.includes('k8s-janitor'))).toBe(true);
      // The sandbox notices, recreates its NetworkPolicy and its pod, and goes on.
      expect((await sb.exec('echo back', { timeoutMs: 60_000 })).stdout.toString()).toBe('back\n');
      await sb.destroy();
      expect(isAppError(await sb.exec('true').catch((e: unknown) => e), 'SANDBOX_GONE')).toBe(true);
    });

    it('doctor: every Kubernetes verb is allowed and a sandbox starts', async () => {
      const checks = await runDoctorChecks({
        github: { apiUrl: 'http://127.0.0.1:9/api/v3', appId: 1, privateKey: 'unused' },
        redisUrl: 'redis://127.0.0.1:9',
        model: { url: 'http://127.0.0.1:9/v1', name: 'unused' },
        sandbox: {
          driver: 'kubernetes',
          kubeConfig: kubeConfig(),
          namespace: NAMESPACE,
          image: IMAGE,
          runtimeClassName: RUNTIME_CLASS,
        },
        timeoutMs: 10_000,
      });
      const kube = checks.filter(
        (c) =>
          c.name.startsWith('may ') ||
          c.name.startsWith('Kubernetes API') ||
          c.name.startsWith('sandbox pod'),
      );
      expect(kube.filter((c) => c.status !== 'ok')).toEqual([]);
    });
  });

  describe('deploy/', () => {
    it('the test renderer agrees with `kubectl kustomize` on both overlays', () => {
      for (const overlay of ['dev', 'production']) {
        let text: string;
        try {
          text = execFileSync('kubectl', ['kustomize', `deploy/overlays/${overlay}`], { encoding: 'utf8' });
        } catch (err) {
          throw new Error(`kubectl kustomize failed (is kubectl on PATH?): ${(err as Error).message}`, {
            cause: err,
          });
        }
        const theirs = parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>);
        const byId = (l: Record<string, unknown>[]) => Object.fromEntries(l.map((o) => [idOf(o), o]));
        expect(byId(renderKustomization(`deploy/overlays/${overlay}`))).toEqual(byId(theirs));
      }
    });
  });
});
