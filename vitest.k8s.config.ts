import { defineConfig } from 'vitest/config';

// The real-cluster suite (`npm run test:k8s`): test/k8s/ against the cluster of KUBECONFIG.
// Pods take seconds to start on a real cluster, so the timeouts are longer than the main suite's.
export default defineConfig({
  test: {
    include: ['test/k8s/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    pool: 'forks',
  },
});
