import { createKubernetesSandboxFactory } from '../../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { startKubeStandin } from '../../helpers/kube-standin/kube-standin.js';
import { describeSandboxContract } from '../../helpers/sandbox-contract.js';

// The shared sandbox contract, run on the Kubernetes driver against the loopback API stand-in (pods
// are bubblewrap sandboxes; exec speaks v4.channel.k8s.io). Driver-specific behaviour (faults,
// recovery, janitor, egress) is in kubernetes-driver.test.ts.
describeSandboxContract('kubernetes (API stand-in)', async () => {
  const standin = await startKubeStandin({ namespaces: ['sandboxes'] });
  const factory = createKubernetesSandboxFactory({
    kubeConfig: standin.kubeConfig(),
    namespace: 'sandboxes',
    image: 'frognano-sandbox:test',
    pollIntervalMs: 10,
  });
  return { factory, cleanup: () => standin.close() };
});
