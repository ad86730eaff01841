import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminPolicy, resolveEffectivePolicy } from '../../../src/config/policy.js';
import { createSglangClient } from '../../../src/llm/sglang-client.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { runJob } from '../../../src/pipeline/run-job.js';
import { createKubernetesSandboxFactory } from '../../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import { startKubeStandin, type KubeStandin } from '../../helpers/kube-standin/kube-standin.js';
import { startScriptedModelServer } from '../../helpers/scripted-model-server.js';
import { fixingScript, OWNER, REPO, startPipelineFixture, type PipelineFixture } from './pipeline-fixture.js';

// Issue 12 items 1–3: the admin policy's sandbox settings reach every sandbox a job creates.
const POLICY = `
defaults:
  maxTimeSec: 1800
rules:
  - match: "${OWNER}/${REPO}"
    maxTokensPerTurn: 777
    sandbox:
      image: registry.example/sandbox-go:1.22
      runtimeClassName: gvisor
      resources:
        requests: { cpu: 250m, memory: 512Mi }
        limits: { cpu: "3", memory: 3Gi, ephemeral-storage: 6Gi }
`;

let fx: PipelineFixture;
let kube: KubeStandin;

beforeAll(async () => {
  fx = await startPipelineFixture();
  kube = await startKubeStandin({ namespaces: ['sandboxes'] });
});

afterAll(async () => {
  await kube?.close();
  await fx?.close();
});

const policy = () =>
  resolveEffectivePolicy({ policy: parseAdminPolicy(POLICY, 'policy.yaml'), repo: `${OWNER}/${REPO}` });

describe("the policy's sandbox settings", () => {
  it('reach the agent, base-test and head-test pods on the Kubernetes driver, with the deadline from maxTimeSec', async () => {
    const model = await startScriptedModelServer({ script: fixingScript() });
    const logger = createSilentLogger();
    try {
      const deps = fx.deps(model);
      const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
      const outcome = await runJob(
        data,
        {
          ...deps,
          sandboxFactory: createKubernetesSandboxFactory({
            kubeConfig: kube.kubeConfig(),
            namespace: 'sandboxes',
            image: 'frognano-sandbox:env-default',
            runtimeClassName: 'runc-from-env',
            pollIntervalMs: 10,
          }),
          createModel: (context) =>
            createSglangClient({
              baseURL: model.url,
              model: 'microsoft/FrogNano-4B-2609',
              maxRetries: 0,
              maxCompletionTokens: context.maxCompletionTokens,
              logger,
            }),
          resolvePolicy: async () => policy(),
        },
        { signal: new AbortController().signal, logger, progress: async () => undefined },
      );
      expect(outcome.kind).toBe('pr_opened');

      const pods = kube.createdPods;
      const jobs = pods.map((p) => String(p.metadata.annotations['frognano.dev/job-id']));
      expect(jobs).toHaveLength(3);
      expect(jobs[1]).toMatch(/-tests-base$/);
      expect(jobs[2]).toMatch(/-tests-head$/);
      for (const pod of pods) {
        expect(pod.spec.containers[0].image).toBe('registry.example/sandbox-go:1.22');
        expect(pod.spec.runtimeClassName).toBe('gvisor');
        expect(pod.spec.containers[0].resources).toEqual({
          requests: { cpu: '250m', memory: '512Mi', 'ephemeral-storage': '6Gi' },
          limits: { cpu: '3', memory: '3Gi', 'ephemeral-storage': '6Gi' },
        });
      }
      // Agent: maxTimeSec (1800 s) + the setup command's 600 s + the driver's 10 min margin.
      expect(pods[0]?.spec.activeDeadlineSeconds).toBe(1800 + 600 + 600);
      // Tests: setup + tests, each bounded by the test timeout (60 s here), + the margin.
      expect(pods[1]?.spec.activeDeadlineSeconds).toBe(120 + 600);
      // maxTokensPerTurn is the request's max_completion_tokens.
      expect(model.requests.map((r) => r.body.max_completion_tokens)).toEqual([777, 777, 777]);
    } finally {
      await model.close();
    }
  });

  it('set the local driver’s memory, /tmp and workspace limits', async () => {
    const factory = createLocalSandboxFactory({ workRoot: fx.sandboxRoot });
    const sandbox = await factory.create({
      jobId: 'settings-local',
      settings: { resources: { limits: { memory: '1536Mi', 'ephemeral-storage': '300Mi' } } },
    });
    try {
      const r = await sandbox.exec(
        "ulimit -v; df -m /tmp | awk 'NR==2 {print $2}'; df -m . | awk 'NR==2 {print $2}'",
      );
      const [addressSpace, tmp, workspace] = r.stdout.toString().trim().split('\n').map(Number);
      // memory → the per-process limit, and /tmp is a quarter of it (counted in the memory cgroup).
      expect([addressSpace, tmp]).toEqual([1536 * 1024, 1536 / 4]);
      // ephemeral-storage → the size of the workspace's own file system (ext4 keeps a little).
      if (sandbox.enforced.disk) {
        expect(workspace).toBeGreaterThan(250);
        expect(workspace).toBeLessThanOrEqual(300);
      }
    } finally {
      await sandbox.destroy();
    }
  });
});
