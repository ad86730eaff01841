import { createKubernetesSandboxFactory } from '../../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { startKubeStandin } from '../../helpers/kube-standin/kube-standin.js';
import { KUBERNETES_MARKERS } from '../../helpers/kubernetes-markers.js';
import { describeSandboxContract } from '../../helpers/sandbox-contract.js';

/** Grace of the call deadlines in the contract run (ms): short, so that hostile cases end fast. */
const GRACE_MS = 3_000;

// The shared sandbox contract, run on the Kubernetes driver against the loopback API stand-in (pods
// are bubblewrap sandboxes; exec speaks v4.channel.k8s.io). Driver-specific behaviour (faults,
// recovery, janitor, egress) is in kubernetes-driver.test.ts. Its channel to the worker is the
// exec WebSocket, held by the API server and kubelet outside the pod: a command can only print, so
// the hostile section's takeover and forged-frame cases do not apply; markers, floods, escaped
// processes and cancellation do.
describeSandboxContract('kubernetes (API stand-in)', async () => {
  const standin = await startKubeStandin({ namespaces: ['sandboxes'] });
  const factory = createKubernetesSandboxFactory({
    kubeConfig: standin.kubeConfig(),
    namespace: 'sandboxes',
    image: 'frognano-sandbox:test',
    pollIntervalMs: 10,
    callGraceMs: GRACE_MS,
  });
  return {
    factory,
    cleanup: () => standin.close(),
    hostile: { graceMs: GRACE_MS, markerScript: KUBERNETES_MARKERS },
  };
});
